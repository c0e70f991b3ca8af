// Issue 22 item 4: loadModel(source, { useWorker: true }) in Node runs the model in a worker_threads Worker with
// the same API, so a long call leaves the event loop free. Checked without timing: a 10 ms timer scheduled before
// a long call (beam 16 on a long sentence through the shipped Transformer, then ten such calls queued) fires
// before the call resolves, and the results equal the calling-thread path's exactly.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { repoRoot } from './fixture_model.mjs';

const TRANSFORMER = join(repoRoot, 'models/weights/transformer-en-de.q8_0.gguf');
const LONG = 'Two young men in red shirts are playing soccer with a small boy in a green park near the river, while ' +
             'an old woman with a big black dog sits on a wooden bench and watches them.';

let direct;
let worker;
before(async () => {
  direct = await loadModel(TRANSFORMER);
  worker = await loadModel(TRANSFORMER, { useWorker: true });
});
after(async () => {
  await direct?.dispose();
  await worker?.dispose();
});

/** Resolves to true when a 10 ms timer scheduled before `start()` fired before the promise it returns settled. */
async function timerFiresFirst(start) {
  let fired = false;
  setTimeout(() => { fired = true; }, 10);
  const result = await start();
  return { fired, result };
}

test('in a worker: the model says so and has the same info and limits', () => {
  assert.equal(worker.inWorker, true);
  assert.equal(direct.inWorker, false);
  assert.deepEqual(worker.info, direct.info);
  assert.deepEqual({ ...worker.limits }, { ...direct.limits });
});

test('a 10 ms timer fires before a long worker call resolves; on the calling thread it cannot', { timeout: 300_000 }, async () => {
  const inWorker = await timerFiresFirst(() => worker.translate(LONG, { beam: 16, allLayers: true }));
  assert.equal(inWorker.fired, true, 'the event loop ran while the worker translated');
  const onThread = await timerFiresFirst(() => direct.translate(LONG, { beam: 16, allLayers: true }));
  assert.equal(onThread.fired, false, 'control: the same call on the calling thread blocks the timer');
  for (const key of ['text', 'sourceTokens', 'targetTokens', 'targetIds', 'stopReason', 'warnings', 'logProbability']) {
    assert.deepEqual(inWorker.result[key], onThread.result[key], key);
  }
  for (const key of ['attention', 'scores', 'context', 'values']) assert.deepEqual(inWorker.result[key], onThread.result[key], key);
  for (const key of ['encoderSelfAttention', 'decoderSelfAttention', 'crossAttention']) {
    assert.deepEqual(inWorker.result[key], onThread.result[key], key);
  }
});

test('ten queued beam-16 calls: the timer fires first, results in order and equal to the calling thread\'s', { timeout: 600_000 }, async () => {
  const texts = Array.from({ length: 10 }, (_, i) => `${LONG.slice(0, 60 + 7 * i)}.`);
  const { fired, result } = await timerFiresFirst(() => Promise.all(texts.map((text) => worker.translate(text, { beam: 16 }))));
  assert.equal(fired, true);
  for (const [i, text] of texts.entries()) {
    const expected = await direct.translate(text, { beam: 16 });
    assert.equal(result[i].text, expected.text, `call ${i}`);
    assert.deepEqual(result[i].attention, expected.attention, `call ${i} attention`);
  }
});

test('a model in a worker does not keep the process alive once idle', { timeout: 120_000 }, async () => {
  const { spawnSync } = await import('node:child_process');
  const script = `import { loadModel } from ${JSON.stringify(join(repoRoot, 'web/lib/index.mjs'))};
    const m = await loadModel(${JSON.stringify(TRANSFORMER)}, { useWorker: true });
    console.log((await m.translate('A dog runs.')).text);`;  // no dispose()
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 110_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), (await direct.translate('A dog runs.')).text);
});
