// Threads outside the browser. Node runs the single-thread wasm build whatever env.threads says (Emscripten
// 3.1.6's thread worker script needs require(), which this "type": "module" package does not give it) and says so
// in engineInfo(); the native CLI runs the thread pool, and its output is the same bytes with ATTNLAB_THREADS=1, 2
// and 3 on the shipped translator (beam 4) and captioner; an ATTNLAB_THREADS that is no thread count is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { encodePng, patternPixels } from './caption_fixture.mjs';
import { CLI, repoRoot, requireModel } from './fixture_model.mjs';
import { engineInfo, env, loadModel } from '../../web/lib/index.mjs';

const TRANSLATOR = join(repoRoot, 'models/weights/bahdanau-en-de.q8_0.gguf');
const TRANSFORMER = join(repoRoot, 'models/weights/transformer-en-de.q8_0.gguf');
const CAPTIONER = join(repoRoot, 'models/weights/captioner-flickr8k.q8_0.gguf');
const TEXT = 'A man in a blue shirt is riding a bicycle down the street.';

test('Node: the single-thread build, also when env.threads asks for more', async () => {
  const before = env.threads;
  env.threads = 2;
  try {
    const info = await engineInfo();
    assert.equal(info.build, 'single-thread');
    assert.equal(info.threads, 1);
    assert.equal(info.maxThreads, 1);
    const model = await loadModel(requireModel());
    assert.ok((await model.translate(TEXT)).targetTokens.length > 0);
    await model.dispose();
  } finally {
    env.threads = before;
  }
});

test('env.threads other than auto or 1..16 is refused when the engine loads', async () => {
  const { engineBuild } = await import('../../web/lib/engine.mjs');
  for (const bad of [0, 17, 1.5, 'two', null]) assert.throws(() => engineBuild(bad), /env\.threads/, String(bad));
  assert.deepEqual(engineBuild('auto'), { threaded: false, threads: 1 });  // Node
});

test('a bad env.threads: loadModel() and engineInfo() reject with BAD_OPTIONS, and work once it is set right', async () => {
  const before = env.threads;
  try {
    for (const bad of [0, 17, 'two']) {
      env.threads = bad;
      const refused = { code: 'ATTNLAB_BAD_OPTIONS', message: /^attnlab: env\.threads must be 'auto' or a whole number from 1 to 16/ };
      await assert.rejects(loadModel(requireModel()), refused, String(bad));
      await assert.rejects(engineInfo(), refused, String(bad));
    }
    env.threads = 2;  // Node: the single-thread build, the one already running here
    assert.equal((await engineInfo()).build, 'single-thread');
  } finally {
    env.threads = before;
  }
});

function cli(args, threads) {
  return execFileSync(CLI, args, { encoding: 'utf8', env: { ...process.env, ATTNLAB_THREADS: String(threads) } });
}

test('native CLI: ATTNLAB_THREADS=1, 2 and 3 give the same bytes (translations at beam 4, a caption)', () => {
  requireModel();
  const dir = mkdtempSync(join(tmpdir(), 'attnlab-threads-'));
  const image = join(dir, 'pattern.png');
  writeFileSync(image, encodePng(patternPixels(300, 200)));
  const runs = [
    ['translate', '--model', TRANSLATOR, '--json', '--beam', '4', TEXT],
    ['translate', '--model', TRANSFORMER, '--json', '--beam', '4', TEXT],
    ['caption', '--model', CAPTIONER, '--json', '--beam', '3', image],
  ];
  for (const args of runs) {
    const one = cli(args, 1);
    assert.ok(JSON.parse(one).text.length > 0, `${args[0]}: some output`);
    for (const threads of [2, 3]) assert.equal(cli(args, threads), one, `${args[0]} ${args[2]} with ${threads} threads`);
  }
});

test('native CLI: an ATTNLAB_THREADS that is no thread count is refused with a message', () => {
  for (const bad of ['two', '-1', '65', '1.5']) {
    const run = spawnSync(CLI, ['translate', '--model', TRANSLATOR, TEXT], {
      encoding: 'utf8', env: { ...process.env, ATTNLAB_THREADS: bad },
    });
    assert.notEqual(run.status, 0, `ATTNLAB_THREADS=${bad} was accepted`);
    assert.match(run.stderr, new RegExp(`ATTNLAB_THREADS=${bad.replace('.', '\\.')}: not a thread count`), run.stderr);
  }
});
