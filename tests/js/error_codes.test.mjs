// Error paths of web/lib that had no stable code: the worker protocol's "no model is loaded" (ATTNLAB_CLOSED), a
// worker's failed engine load (ATTNLAB_LOAD_FAILED, as on the calling thread), a bad env.wasmPaths (BAD_OPTIONS),
// decodeAudio() without an engine, sha256Hex() of a non-buffer, download() and loadModel() with a malformed sha256
// or dtype, a worker that dies while it loads (LOAD_FAILED), and a transcribe() whose Blob cannot be read in a
// worker. Each rejection is an AttnlabError with the
// code and an "attnlab: " message.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { AttnlabError, ERROR_CODES, decodeAudio, download, env, loadModel, matrixRow, sha256Hex } from '../../web/lib/index.mjs';
import { repoRoot } from './fixture_model.mjs';

const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');
const SPEECH = join(repoRoot, 'tests/fixtures/speech/las.q8_0.gguf');
const NO_ENGINE = { mjs: new URL('file:///nonexistent-attnlab-engine/attnlab.mjs').href,
                    wasm: new URL('file:///nonexistent-attnlab-engine/attnlab.wasm').href };

async function rejectsWith(promise, code, re, label) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof AttnlabError, `${label}: ${error?.constructor?.name} is not an AttnlabError: ${error?.message}`);
    assert.equal(error.code, code, `${label}: ${error.message}`);
    assert.match(error.message, /^attnlab: /, label);
    assert.match(error.message, re, label);
    return true;
  }, label);
}

// worker.mjs's protocol spoken directly to a Node worker running node_worker.mjs.
function protocolWorker() {
  const worker = new Worker(new URL('../../web/lib/node_worker.mjs', import.meta.url));
  const pending = new Map();
  let nextId = 1;
  worker.on('message', ({ id, ...answer }) => {
    pending.get(id)?.(answer);
    pending.delete(id);
  });
  return {
    request(method, args) {
      const id = nextId++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        worker.postMessage({ id, method, args });
      });
    },
    terminate: () => worker.terminate(),
  };
}

const workers = [];
after(() => Promise.all(workers.map((w) => w.terminate())));

test('worker protocol: a call with no model loaded is ATTNLAB_CLOSED, before a load and after dispose', { timeout: 120_000 }, async () => {
  const worker = protocolWorker();
  workers.push(worker);
  const closed = { name: 'AttnlabError', code: 'ATTNLAB_CLOSED', message: 'attnlab: no model is loaded' };
  for (const [method, args] of [['translate', { text: 'A dog.', options: {} }], ['caption', { image: { data: new Uint8Array(4), width: 1, height: 1 }, options: {} }],
    ['transcribe', { audio: { samples: new Float32Array(16), sampleRate: 16000 }, options: {} }], ['memoryStats', {}], ['engineInfo', {}]]) {
    assert.deepEqual(await worker.request(method, args), { error: closed }, `${method} before a load`);
  }
  assert.deepEqual(await worker.request('frobnicate', {}),
                   { error: { name: 'AttnlabError', code: 'ATTNLAB_INTERNAL', message: 'attnlab: unknown worker method frobnicate' } });
  const bytes = new Uint8Array(await readFile(TRANSLATOR));
  const loaded = await worker.request('load', { bytes, threads: undefined });
  assert.equal(loaded.error, undefined, loaded.error?.message);
  assert.equal((await worker.request('translate', { text: 'A dog.', options: {} })).error, undefined);
  assert.deepEqual((await worker.request('load', { bytes, threads: undefined })).error?.code, 'ATTNLAB_INTERNAL', 'a second load');
  assert.deepEqual(await worker.request('dispose', {}), { result: null });
  assert.deepEqual(await worker.request('translate', { text: 'A dog.', options: {} }), { error: closed }, 'after dispose');
});

test('worker protocol: an engine that cannot be loaded is ATTNLAB_LOAD_FAILED; bad model bytes stay ATTNLAB_BAD_MODEL', { timeout: 120_000 }, async () => {
  const broken = protocolWorker();
  workers.push(broken);
  const { error } = await broken.request('load', { bytes: new Uint8Array(await readFile(TRANSLATOR)), wasmPaths: NO_ENGINE });
  assert.equal(error?.code, 'ATTNLAB_LOAD_FAILED', error?.message);
  assert.match(error.message, /^attnlab: could not load the wasm engine: .*nonexistent-attnlab-engine/);
  const garbage = protocolWorker();
  workers.push(garbage);
  const bad = await garbage.request('load', { bytes: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]) });
  assert.equal(bad.error?.code, 'ATTNLAB_BAD_MODEL', bad.error?.message);
});

// Before any engine starts in this realm: env.wasmPaths is read when one does. The engine of this realm is left
// unstarted on purpose until the last test here that needs one.
test('an engine that cannot be loaded: LOAD_FAILED alike on this thread, in a worker and for decodeAudio(); a malformed env.wasmPaths is BAD_OPTIONS', { timeout: 120_000 }, async () => {
  try {
    env.wasmPaths = NO_ENGINE;
    await rejectsWith(loadModel(TRANSLATOR), ERROR_CODES.LOAD_FAILED, /could not load the wasm engine/, 'on this thread');
    await rejectsWith(loadModel(TRANSLATOR, { useWorker: true }), ERROR_CODES.LOAD_FAILED, /could not load the wasm engine/, 'in a worker');
    await rejectsWith(decodeAudio(new Uint8Array([82, 73, 70, 70])), ERROR_CODES.LOAD_FAILED, /could not load the wasm engine/, 'decodeAudio');
    env.wasmPaths = 42;
    await rejectsWith(loadModel(TRANSLATOR), ERROR_CODES.BAD_OPTIONS, /env\.wasmPaths must be/, 'wasmPaths 42, this thread');
    await rejectsWith(loadModel(TRANSLATOR, { useWorker: true }), ERROR_CODES.BAD_OPTIONS, /env\.wasmPaths must be/, 'wasmPaths 42, a worker');
  } finally {
    env.wasmPaths = undefined;
  }
  const model = await loadModel(TRANSLATOR);  // and the realm can still start its engine
  assert.ok((await model.translate('A dog.')).text.length > 0);
  await model.dispose();
});

test('a worker that dies while it loads the model: loadModel() rejects with LOAD_FAILED, and the next load works', { timeout: 120_000 }, async () => {
  // The "engine" a worker imports exits its thread, as a crash while loading would end it.
  const folder = mkdtempSync(join(tmpdir(), 'attnlab-dying-engine-'));
  try {
    writeFileSync(join(folder, 'attnlab.mjs'), 'process.exit(3);\n');
    env.wasmPaths = { mjs: pathToFileURL(join(folder, 'attnlab.mjs')).href, wasm: pathToFileURL(join(folder, 'attnlab.wasm')).href };
    await rejectsWith(loadModel(TRANSLATOR, { useWorker: true }), ERROR_CODES.LOAD_FAILED,
                      /^attnlab: the engine worker failed: the worker exited with code 3$/, 'a dying worker');
  } finally {
    env.wasmPaths = undefined;
    rmSync(folder, { recursive: true, force: true });
  }
  const model = await loadModel(TRANSLATOR, { useWorker: true });
  assert.ok((await model.translate('A dog.')).text.length > 0);
  await model.dispose();
});

test('sha256Hex, download and loadModel: malformed arguments are BAD_INPUT / BAD_OPTIONS, not a TypeError or LOAD_FAILED', { timeout: 60_000 }, async () => {
  await rejectsWith(sha256Hex('not bytes'), ERROR_CODES.BAD_INPUT, /sha256Hex\(\) needs an ArrayBuffer or a typed array/, 'sha256Hex of a string');
  assert.match(await sha256Hex(new Uint8Array(0)), /^e3b0c442/);
  // Refused before any request (port 9 would only fail with LOAD_FAILED).
  await rejectsWith(download('http://127.0.0.1:9/model.gguf', { sha256: 'xyz' }), ERROR_CODES.BAD_OPTIONS, /sha256 for .* is not 64 hex digits/, 'download sha256');
  await rejectsWith(loadModel('bahdanau-en-de', { dtype: 5 }), ERROR_CODES.BAD_OPTIONS, /dtype must be a string/, 'dtype 5');
});

test('transcribe() in a worker: a Blob that cannot be read is BAD_INPUT, as on this thread', { timeout: 120_000 }, async () => {
  class UnreadableBlob extends Blob {
    arrayBuffer() {
      return Promise.reject(new Error('the disk went away'));
    }
  }
  for (const useWorker of [false, true]) {
    const model = await loadModel(SPEECH, { useWorker });
    try {
      await rejectsWith(model.transcribe(new UnreadableBlob([new Uint8Array(8)])), ERROR_CODES.BAD_INPUT,
                        /the audio Blob could not be read \(the disk went away\)/, `useWorker ${useWorker}`);
    } finally {
      await model.dispose();
    }
  }
});

test('matrixRow() of something that is not a matrix throws BAD_INPUT, not a TypeError', () => {
  for (const bad of [null, undefined, {}, { rows: 2, cols: 2, data: [1, 2, 3, 4] }, { rows: 2, cols: 2, data: new Float32Array(3) }]) {
    assert.throws(() => matrixRow(bad, 0), (error) => error instanceof AttnlabError && error.code === ERROR_CODES.BAD_INPUT &&
                  /^attnlab: matrixRow\(\) needs a \{ rows, cols, data: Float32Array \} matrix$/.test(error.message), JSON.stringify(bad));
  }
  assert.deepEqual(Array.from(matrixRow({ rows: 2, cols: 2, data: new Float32Array([1, 2, 3, 4]) }, 1)), [3, 4]);
});
