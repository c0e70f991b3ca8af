// Issue 22 item 5: every rejection from the module is an AttnlabError with a stable code and an "attnlab: " message,
// on the calling thread and through a worker (a Node worker_threads Worker here; the same protocol as the Web
// Worker); the engine's own errors carry a code and the prefix; an AbortSignal cancels a queued call and a running
// one in a worker, as an AbortError, and the model keeps translating as the CLI does.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { AttnlabError, ERROR_CODES, attentionHead, download, loadEngine, loadModel, matrixRow } from '../../web/lib/index.mjs';
import { cliTranslate, repoRoot } from './fixture_model.mjs';
import { CAPTION_MODEL } from './caption_fixture.mjs';

const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');
const TRANSFORMER = join(repoRoot, 'models/weights/transformer-en-de.q8_0.gguf');
const PROBE = 'A dog runs on the beach.';
const LONG = 'Two young men in red shirts are playing soccer with a small boy in a green park near the river, while an old woman watches them.';

let translatorBytes;
let expected;
before(async () => {
  translatorBytes = new Uint8Array(await readFile(TRANSLATOR));
  expected = cliTranslate(PROBE, {}, TRANSLATOR).text;
});

/** Awaits a rejection and checks it is an AttnlabError with `code`, whose message matches `re`. */
async function rejectsWith(promiseOrFn, code, re, label) {
  let promise;
  try {
    promise = typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn;
  } catch (error) {
    assert.fail(`${label}: threw synchronously: ${error?.message}`);
  }
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof AttnlabError, `${label}: ${error?.constructor?.name} is not an AttnlabError: ${error?.message}`);
    assert.ok(error instanceof Error);
    assert.equal(error.code, code, `${label}: ${error.message}`);
    assert.match(error.message, /^attnlab: /, label);
    assert.match(error.message, re, label);
    assert.equal(error.name, code === ERROR_CODES.ABORTED ? 'AbortError' : 'AttnlabError', label);
    return true;
  }, label);
}

test('ERROR_CODES: the documented set, each ATTNLAB_*', () => {
  assert.deepEqual(Object.values(ERROR_CODES).sort(), ['ATTNLAB_ABORTED', 'ATTNLAB_BAD_INPUT', 'ATTNLAB_BAD_MODEL',
    'ATTNLAB_BAD_OPTIONS', 'ATTNLAB_CLOSED', 'ATTNLAB_INTERNAL', 'ATTNLAB_LOAD_FAILED', 'ATTNLAB_WRONG_TASK']);
  const e = new AttnlabError(ERROR_CODES.BAD_INPUT, 'no prefix');
  assert.equal(e.message, 'attnlab: no prefix');
  assert.equal(new AttnlabError('NOT_A_CODE', 'x').code, ERROR_CODES.INTERNAL);
  assert.equal(new AttnlabError(ERROR_CODES.ABORTED, 'x').name, 'AbortError');
});

test('the engine itself throws with the "attnlab: " prefix and a code', async () => {
  const engine = await loadEngine();
  const buffer = new engine.ByteBuffer(8);
  buffer.view().set([0x47, 0x47, 0x4d, 0x4c, 3, 0, 0, 0]);
  assert.throws(() => new engine.Model(buffer), { code: 'ATTNLAB_BAD_MODEL', message: /^attnlab: not a GGUF file \(magic is 'GGML'/ });
  buffer.delete();
  const good = new engine.ByteBuffer(translatorBytes.length);
  good.view().set(translatorBytes);
  const model = new engine.Model(good);
  good.delete();
  try {
    assert.throws(() => model.translate('   ', 1, 0), { code: 'ATTNLAB_BAD_INPUT', message: /^attnlab: nothing to translate: the input is empty$/ });
    assert.throws(() => model.translate(PROBE, 1, 0, 1), { code: 'ATTNLAB_BAD_OPTIONS', message: /^attnlab: noRepeatNgram must be/ });
    assert.throws(() => model.caption(new Uint8Array(4), 1, 1, 1, 0, -1), { code: 'ATTNLAB_WRONG_TASK', message: /^attnlab: this model .* cannot caption/ });
  } finally {
    model.delete();
  }
});

for (const useWorker of [false, true]) {
  const where = useWorker ? 'in a worker_threads Worker' : 'on the calling thread';

  test(`every failure ${where} is an AttnlabError with its code`, { timeout: 120_000 }, async () => {
    const model = await loadModel(TRANSLATOR, { useWorker });
    assert.equal(model.inWorker, useWorker);
    const captioner = await loadModel(CAPTION_MODEL, { useWorker });
    try {
      await rejectsWith(model.translate(''), ERROR_CODES.BAD_INPUT, /empty/, 'empty text');
      await rejectsWith(model.translate('a'.repeat(20_000)), ERROR_CODES.BAD_INPUT, /too long/, 'too many bytes');
      await rejectsWith(model.translate('a '.repeat(500)), ERROR_CODES.BAD_INPUT, /too long: \d+ tokens/, 'too many tokens (the engine)');
      await rejectsWith(model.translate('A \uD800 dog'), ERROR_CODES.BAD_INPUT, /unpaired UTF-16 surrogate/, 'lone surrogate');
      await rejectsWith(model.translate(42), ERROR_CODES.BAD_INPUT, /string/, 'not a string');
      await rejectsWith(model.translate(PROBE, { beam: 65 }), ERROR_CODES.BAD_OPTIONS, /^attnlab: beam must be an integer from 1 to 64, got 65$/, 'beam');
      await rejectsWith(model.translate(PROBE, { maxLength: 1_000_000 }), ERROR_CODES.BAD_OPTIONS,
                        /^attnlab: maxLength must be an integer from 0 \(automatic\) to 1000, got 1000000$/, 'maxLength');
      await rejectsWith(model.translate(PROBE, { noRepeatNgram: 1 }), ERROR_CODES.BAD_OPTIONS,
                        /^attnlab: noRepeatNgram must be -1 \(the default\), 0 \(off\) or an integer from 2 to 8, got 1$/, 'noRepeatNgram');
      await rejectsWith(model.translate(PROBE, null), ERROR_CODES.BAD_OPTIONS, /options must be an object/, 'options null');
      await rejectsWith(model.translate(PROBE, { signal: 'stop' }), ERROR_CODES.BAD_OPTIONS, /signal must be an AbortSignal/, 'signal');
      await rejectsWith(model.caption({ data: new Uint8Array(4), width: 1, height: 1 }), ERROR_CODES.WRONG_TASK, /captioning model/, 'caption on a translator');
      await rejectsWith(captioner.translate(PROBE), ERROR_CODES.WRONG_TASK, /translation model/, 'translate on a captioner');
      await rejectsWith(captioner.caption('cat.jpg'), ERROR_CODES.BAD_INPUT, /caption\(\) needs an image/, 'not an image');
      await rejectsWith(captioner.caption({ data: new Uint8Array(4 * 8 * 8), width: 8, height: 8 }, { beam: 0 }),
                        ERROR_CODES.BAD_OPTIONS, /^attnlab: beam must be an integer from 1 to 64, got 0$/, 'caption beam');
      assert.equal((await model.translate(PROBE)).text, expected, 'still translates');
    } finally {
      model.terminate();
      captioner.terminate();
    }
    await rejectsWith(model.translate(PROBE), ERROR_CODES.CLOSED, /^attnlab: the model was terminated$/, 'after terminate()');
  });

  test(`loading failures ${where} are AttnlabErrors`, { timeout: 120_000 }, async () => {
    await rejectsWith(loadModel(new Uint8Array(0), { useWorker }), ERROR_CODES.BAD_MODEL, /empty/, 'empty bytes');
    await rejectsWith(loadModel(translatorBytes.slice(0, 100), { useWorker }), ERROR_CODES.BAD_MODEL, /GGUF|truncated|cannot fit/, 'truncated');
    await rejectsWith(loadModel(join(repoRoot, 'no/such/model.gguf'), { useWorker }), ERROR_CODES.LOAD_FAILED, /could not read/, 'missing file');
    await rejectsWith(loadModel(translatorBytes.slice(), { useWorker, sha256: '0'.repeat(64) }), ERROR_CODES.LOAD_FAILED,
                      /SHA-256 mismatch/, 'SHA-256 mismatch');
    await rejectsWith(loadModel(translatorBytes.slice(), { useWorker, sha256: 'xyz' }), ERROR_CODES.BAD_OPTIONS, /sha256 .*64 hex digits/, 'bad sha256');
    await rejectsWith(loadModel(translatorBytes.slice(), null), ERROR_CODES.BAD_OPTIONS, /options must be an object/, 'options null');
    await rejectsWith(loadModel(null, { useWorker }), ERROR_CODES.BAD_INPUT, /needs a URL or the model bytes/, 'no source');
    await rejectsWith(loadModel(TRANSLATOR, { useWorker, signal: AbortSignal.abort() }), ERROR_CODES.ABORTED, /aborted/, 'an aborted load');
  });

  test(`an AbortSignal ${where}: aborted before the call, or while it waits its turn`, { timeout: 120_000 }, async () => {
    const model = await loadModel(TRANSLATOR, { useWorker });
    try {
      await rejectsWith(model.translate(PROBE, { signal: AbortSignal.abort() }), ERROR_CODES.ABORTED,
                        /^attnlab: the translation was aborted$/, 'already aborted');
      const controller = new AbortController();
      const first = model.translate(LONG, { beam: 8 });
      const queued = model.translate(PROBE, { signal: controller.signal });
      const after = model.translate(PROBE);
      controller.abort();
      await rejectsWith(queued, ERROR_CODES.ABORTED, /the translation was aborted/, 'a queued call');
      assert.equal(typeof (await first).text, 'string');
      assert.equal((await after).text, expected, 'the call queued behind the aborted one');
      const signal = new AbortController().signal;  // never aborted: no effect on the result
      assert.equal((await model.translate(PROBE, { signal })).text, expected);
    } finally {
      await model.dispose();
    }
  });
}

test('aborting a running call in a worker: AbortError at once, then a new worker runs the queued calls', { timeout: 180_000 }, async () => {
  const model = await loadModel(TRANSFORMER, { useWorker: true });
  try {
    const reference = await model.translate(PROBE);
    const referenceBeam2 = await model.translate(PROBE, { beam: 2 });
    const controller = new AbortController();
    const long = model.translate(`${LONG} ${LONG}`, { beam: 64, signal: controller.signal });
    const queued = [model.translate(PROBE), model.translate(PROBE, { beam: 2 })];
    // Abort once the worker has the call: a timer cannot run until the main thread is free, which it is.
    setTimeout(() => controller.abort(new Error('the user pressed stop')), 50);
    await rejectsWith(long, ERROR_CODES.ABORTED, /^attnlab: the translation was aborted$/, 'the running call');
    await long.catch((error) => assert.equal(error.cause?.message, 'the user pressed stop'));
    const [again, beam2] = await Promise.all(queued);
    assert.equal(again.text, reference.text, 'the restarted worker translates as before');
    assert.deepEqual(again.attention.data, reference.attention.data);
    assert.equal(beam2.text, referenceBeam2.text, 'the queued beam-2 call runs in the restarted worker as before');
    assert.equal((await model.translate(PROBE)).text, reference.text);
  } finally {
    await model.dispose();
  }
});

test('download(), matrixRow() and attentionHead() fail with AttnlabErrors too', async () => {
  await rejectsWith(download(new URL(`file://${repoRoot}/no-such-file.gguf`)), ERROR_CODES.LOAD_FAILED, /./, 'download');
  assert.throws(() => matrixRow({ rows: 1, cols: 1, data: new Float32Array(1) }, 2), { code: 'ATTNLAB_BAD_INPUT', name: 'AttnlabError' });
  assert.throws(() => attentionHead(null, 0, 0), { code: 'ATTNLAB_BAD_INPUT', message: /^attnlab: attentionHead\(\) needs/ });
});
