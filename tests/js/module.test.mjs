// The npm module in Node (no worker): translations equal the native CLI's, the stage-3 context is the weighted
// sum of the values, calls queue, and every bad input is a rejected promise with a message.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';

import { loadModel, matrixRow } from '../../web/lib/index.mjs';
import { SENTENCES, assertSameAsCli, cliTranslate, repoRoot, requireModel } from './fixture_model.mjs';

let modelFile;
let modelBytes;
before(async () => {
  modelFile = requireModel();
  modelBytes = new Uint8Array(await readFile(modelFile));
});

test('translations equal the CLI for greedy and beam search', async () => {
  const model = await loadModel(modelBytes);
  assert.equal(model.info.task, 'translate');
  assert.equal(model.info.architecture, 'attnlab.bahdanau');
  assert.equal(model.inWorker, false);
  for (const text of SENTENCES) {
    for (const options of [{ beam: 1 }, { beam: 4 }, { beam: 3, maxLength: 4 }]) {
      const got = await model.translate(text, options);
      assertSameAsCli(assert, got, cliTranslate(text, options), `${JSON.stringify(text)} ${JSON.stringify(options)}`);
    }
  }
  await model.dispose();
});

test('stage 3: each context row is the attention-weighted sum of the source annotations', async () => {
  const model = await loadModel(modelFile);
  const t = await model.translate(SENTENCES[1], { beam: 4 });
  const { attention, context, values } = t;
  assert.ok(attention.rows > 0);
  assert.equal(context.rows, attention.rows);
  assert.equal(values.rows, t.sourceTokens.length);
  assert.equal(context.cols, values.cols);
  assert.ok(context.cols > 0);
  for (let i = 0; i < context.rows; ++i) {
    const weights = matrixRow(attention, i);
    const row = matrixRow(context, i);
    for (let d = 0; d < context.cols; ++d) {
      let sum = 0;
      for (let s = 0; s < values.rows; ++s) sum += weights[s] * values.data[s * values.cols + d];
      assert.ok(Math.abs(sum - row[d]) < 1e-4, `context[${i}][${d}] = ${row[d]}, Σ α·h = ${sum}`);
    }
  }
  await model.dispose();
});

test('loads from a path with the right SHA-256, and concurrent calls queue in order', async () => {
  const sha256 = createHash('sha256').update(modelBytes).digest('hex');
  const progress = [];
  const model = await loadModel(modelFile, { sha256, onProgress: (p) => progress.push(p) });
  assert.deepEqual(progress.at(-1), { loaded: modelBytes.length, total: modelBytes.length });
  const sequential = [];
  for (const text of SENTENCES) sequential.push((await model.translate(text)).text);
  const concurrent = await Promise.all(SENTENCES.map((text) => model.translate(text)));
  assert.deepEqual(concurrent.map((t) => t.text), sequential);
  await model.dispose();
});

test('bad text and options are rejected with a message', async () => {
  const model = await loadModel(modelBytes);
  await assert.rejects(model.translate(''), /empty/);
  await assert.rejects(model.translate('   '), /empty/);
  await assert.rejects(model.translate(42), /string/);
  await assert.rejects(model.translate('A dog.', { beam: 0 }), /beam/);
  await assert.rejects(model.translate('A dog.', { beam: 1.5 }), /beam/);
  await assert.rejects(model.translate('A dog.', { maxLength: -1 }), /maxLength/);
  await assert.rejects(model.translate('word '.repeat(500)), /too long/);
  // The model still works after rejected calls.
  assert.equal((await model.translate(SENTENCES[0])).text, cliTranslate(SENTENCES[0]).text);
  await model.dispose();
});

test('bad model bytes are rejected with a message', async () => {
  await assert.rejects(loadModel(new Uint8Array(0)), /empty/);
  await assert.rejects(loadModel(new Uint8Array(1000).fill(7)), /attnlab|GGUF|magic/i);
  const truncated = modelBytes.slice(0, Math.floor(modelBytes.length / 2));
  await assert.rejects(loadModel(truncated), /truncat|beyond|end of|past|short/i);
  const wrongMagic = modelBytes.slice();
  wrongMagic.set([0x58, 0x58, 0x58, 0x58], 0);
  await assert.rejects(loadModel(wrongMagic), /magic|GGUF/i);
  // A valid GGUF file that is not a translation model.
  const notAModel = await readFile(`${repoRoot}/tests/fixtures/layers/attention.gguf`);
  await assert.rejects(loadModel(notAModel), /unsupported model architecture 'attnlab\.fixture'/);
  await assert.rejects(loadModel('tests/fixtures/does-not-exist.gguf'), /could not read/);
  await assert.rejects(loadModel(null), /URL or the model bytes/);
  await assert.rejects(loadModel({ length: 3 }), /ArrayBuffer/);
});

const captionModel = `${repoRoot}/tests/fixtures/caption/tiny_model.gguf`;
test('a model of another kind (the captioner) loads, but cannot translate', { skip: !existsSync(captionModel) && 'no captioner fixture' },
     async () => {
       const captioner = await loadModel(captionModel);
       assert.equal(captioner.info.task, 'caption');
       await assert.rejects(captioner.translate('A dog runs.'), /translate\(\) needs a translation model.*use caption\(\)/);
       await captioner.dispose();
     });

test('a SHA-256 mismatch is rejected before the model is used', async () => {
  await assert.rejects(loadModel(modelBytes, { sha256: '0'.repeat(64) }), /SHA-256 mismatch/);
  await assert.rejects(loadModel(modelFile, { sha256: 'f'.repeat(64) }), /SHA-256 mismatch/);
  await assert.rejects(loadModel(modelBytes, { sha256: 'abc' }), /64 hex/);
});

// A local server: /model.gguf sends the model slowly (for abort and timeout), /fast.gguf at once.
async function withServer(fn) {
  const server = createServer((request, response) => {
    if (request.url === '/fast.gguf') {
      response.writeHead(200, { 'Content-Length': modelBytes.length });
      response.end(modelBytes);
      return;
    }
    if (request.url !== '/model.gguf') {
      response.writeHead(404);
      response.end();
      return;
    }
    response.writeHead(200, { 'Content-Length': modelBytes.length });
    response.write(modelBytes.subarray(0, 1024));  // then stall
    request.on('close', () => response.destroy());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    return await fn(base);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

test('downloads report progress, check SHA-256, and can be aborted or time out', async () => {
  await withServer(async (base) => {
    const sha256 = createHash('sha256').update(modelBytes).digest('hex');
    const progress = [];
    const model = await loadModel(`${base}/fast.gguf`, { sha256, onProgress: (p) => progress.push(p) });
    assert.equal(progress.at(-1).loaded, modelBytes.length);
    assert.equal(progress.at(-1).total, modelBytes.length);
    assert.equal(model.fromCache, false);
    assert.equal((await model.translate(SENTENCES[0])).text, cliTranslate(SENTENCES[0]).text);
    await model.dispose();

    await assert.rejects(loadModel(`${base}/fast.gguf`, { sha256: '1'.repeat(64) }), /SHA-256 mismatch/);
    await assert.rejects(loadModel(`${base}/missing.gguf`), /HTTP 404/);

    const controller = new AbortController();
    const loading = loadModel(`${base}/model.gguf`, {
      signal: controller.signal,
      onProgress: ({ loaded }) => { if (loaded > 0) controller.abort(); },
    });
    await assert.rejects(loading, /aborted/);
    await assert.rejects(loadModel(`${base}/model.gguf`, { signal: AbortSignal.abort() }), /aborted/);
    await assert.rejects(loadModel(`${base}/model.gguf`, { timeout: 300 }), /timed out after 300 ms/);
  });
});

test('terminate() rejects pending and later calls; dispose() rejects later calls', async () => {
  const model = await loadModel(modelBytes);
  const first = model.translate(SENTENCES[0]);
  const second = model.translate(SENTENCES[1]);
  model.terminate();
  await assert.rejects(first, /terminated/);
  await assert.rejects(second, /terminated/);
  await assert.rejects(model.translate(SENTENCES[0]), /terminated/);

  const other = await loadModel(modelBytes);
  const queued = other.translate(SENTENCES[0]);
  await other.dispose();
  assert.equal((await queued).text, cliTranslate(SENTENCES[0]).text);
  await assert.rejects(other.translate(SENTENCES[0]), /disposed/);
});
