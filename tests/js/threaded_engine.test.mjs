// The threaded wasm build (web/dist/attnlab-mt.*) on bad input and on a change of env.threads, in headless
// Chromium (Node runs only the single-thread build: tests/js/threads.test.mjs), on a page served with the app's
// COOP/COEP headers so that it is cross-origin isolated:
// - bad model files (wrong magic, cut at every part of the file, a tokenizer instead of a model, a tensor of the
//   wrong shape) and an engine-side call error give the same message and code from the threaded build as from the
//   single-thread build, in the page and in the module's worker;
// - the bad-input matrix that tests/js/bad_input.test.mjs runs in Node (bad_input_cases.mjs) passes against the
//   threaded build in the page's own realm;
// - env.threads changed between loads: each worker model starts the build asked for then (its worker's engine says
//   which build runs), and a realm whose engine is running refuses another build with BAD_OPTIONS (and works again
//   once env.threads is set back).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { CONCURRENT, PROBE, cases } from './bad_input_cases.mjs';
import { cliTranslate, repoRoot } from './fixture_model.mjs';
import { securityHeadersOf, startSite } from '../support/site.mjs';

const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');  // f32: its dims can be rewritten freely
const CAPTIONER = join(repoRoot, 'tests/fixtures/caption/tiny_encoder_model.gguf');
const TOKENIZER = join(repoRoot, 'models/tokenizers/multi30k.en.gguf');  // a GGUF file that is no model
const CASES_PATH = '/__tests__/bad_input_cases.mjs';
const ISOLATED_PATH = '/__tests__/isolated.html';

let site;
let expected;

before(async () => {
  for (const file of [TRANSLATOR, CAPTIONER, TOKENIZER, join(repoRoot, 'web/dist/attnlab-mt.wasm')]) {
    if (!existsSync(file)) throw new Error(`${file} does not exist: run npm run build`);
  }
  expected = {};
  for (const text of new Set([PROBE, ...CONCURRENT])) expected[text] = cliTranslate(text, {}, TRANSLATOR).text;
  site = await startSite({ prefix: 'attnlab-threaded-',
                           unlisted: { 'translator.gguf': TRANSLATOR, 'captioner.gguf': CAPTIONER, 'tokenizer.gguf': TOKENIZER } });
  const securityHeaders = await securityHeadersOf(site);
  assert.equal(securityHeaders['cross-origin-embedder-policy'], 'require-corp', 'the app server sends COEP');
  const casesSource = await readFile(join(repoRoot, 'tests/js/bad_input_cases.mjs'), 'utf8');
  await site.context.route(`${site.origin}${CASES_PATH}`, (route) => route.fulfill({
    status: 200, body: casesSource, headers: { 'content-type': 'text/javascript; charset=utf-8', ...securityHeaders },
  }));
  await site.context.route(`${site.origin}${ISOLATED_PATH}`, (route) => route.fulfill({
    status: 200, body: '<!doctype html><title>attnlab threaded engine</title>',
    headers: { 'content-type': 'text/html; charset=utf-8', ...securityHeaders },
  }));
});

after(async () => {
  await site?.close();
});

// Runs fn(arg) in a fresh cross-origin isolated page; resolves to its result and the console lines of the page and
// its workers. Uncaught page errors fail the test.
async function inIsolatedPage(fn, arg) {
  const page = await site.context.newPage();
  const pageErrors = [];
  const consoleLines = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => consoleLines.push(message.text()));
  try {
    await page.goto(`${site.origin}${ISOLATED_PATH}`);
    assert.equal(await page.evaluate(() => self.crossOriginIsolated), true, 'the page is cross-origin isolated');
    const result = await page.evaluate(fn, arg);
    assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
    return { result, consoleLines };
  } finally {
    await page.close();
  }
}

const fallbackNotes = (lines) => lines.filter((line) => /threaded engine did not start/.test(line));

// Every bad model file's { code, message }, loaded in the page and in a worker, with env.threads = threads.
async function badModelErrors(threads) {
  return inIsolatedPage(async ({ threads, casesPath }) => {
    const lib = await import('/lib/index.mjs');
    lib.env.threads = threads;
    const { walkGguf } = await import(casesPath);
    const bytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
    const translator = await bytes('/models/weights/translator.gguf');
    const layout = walkGguf(translator);
    const magic = translator.slice();
    magic.set([0x47, 0x47, 0x4d, 0x4c], 0);  // "GGML"
    const matrix = layout.tensors.find((t) => t.dims.length === 2 && t.dims[0] !== t.dims[1]);
    const transposed = translator.slice();
    [...matrix.dims].reverse().forEach((d, i) =>
      new DataView(transposed.buffer).setBigUint64(matrix.dimsOffset + 8 * i, BigInt(d), true));
    const bad = {
      'magic GGML': magic,
      'cut in the header': translator.slice(0, 12),
      'cut in the metadata': translator.slice(0, Math.floor((layout.metadataStart + layout.tensorInfoStart) / 2)),
      'cut in the tensor infos': translator.slice(0, Math.floor((layout.tensorInfoStart + layout.dataStart) / 2)),
      'cut in the tensor data': translator.slice(0, Math.floor((layout.dataStart + translator.length) / 2)),
      'one byte short': translator.slice(0, translator.length - 1),
      'a tokenizer file, not a model': await bytes('/models/weights/tokenizer.gguf'),
      [`${matrix.name} transposed`]: transposed,
    };
    const outcome = (promise) => promise.then((value) => {
      value?.terminate?.();
      return 'resolved';
    }, (error) => ({ code: error.code, message: error.message }));
    const errors = {};
    for (const useWorker of [false, true]) {
      for (const [label, data] of Object.entries(bad)) {
        errors[`${label}${useWorker ? ', in a worker' : ''}`] = await outcome(lib.loadModel(data.slice(), { useWorker }));
      }
    }
    // An error only the engine can find: the text is short enough in bytes, too long in tokens.
    const model = await lib.loadModel(translator.slice(), { useWorker: false });
    errors['translate 10,000 characters of words'] = await outcome(model.translate('a dog runs '.repeat(1000).slice(0, 10_000)));
    model.terminate();
    // The build the worker loads above started, asked of a worker that holds a model (a refused file leaves none).
    const worker = await lib.loadModel(translator.slice(), { useWorker: true });
    const workerInfo = await worker._engineInfo();
    worker.terminate();
    return { info: await lib.engineInfo(), workerInfo, errors };
  }, { threads, casesPath: CASES_PATH });
}

test('bad model files: the threaded build gives the single-thread build\'s message and code', { timeout: 300_000 }, async () => {
  const single = await badModelErrors(1);
  const threaded = await badModelErrors(2);
  assert.equal(single.result.info.build, 'single-thread');
  assert.equal(single.result.workerInfo.build, 'single-thread');
  assert.equal(threaded.result.info.build, 'threaded');
  assert.equal(threaded.result.info.threads, 2);
  assert.equal(threaded.result.workerInfo.build, 'threaded');
  assert.equal(threaded.result.workerInfo.threads, 2);
  assert.deepEqual(fallbackNotes(threaded.consoleLines), [], 'the worker models ran the threaded build too');
  for (const [label, error] of Object.entries(single.result.errors)) {
    assert.notEqual(error, 'resolved', `${label}: loaded`);
    assert.doesNotMatch(error.message, /unknown engine error/, `${label}, single-thread`);
    assert.equal(error.code, label.startsWith('translate') ? 'ATTNLAB_BAD_INPUT' : 'ATTNLAB_BAD_MODEL', label);
  }
  assert.deepEqual(threaded.result.errors, single.result.errors);
});

for (const name of Object.keys(cases)) {
  test(`threaded build, in the page: ${name}`, { timeout: 300_000 }, async (t) => {
    const { result } = await inIsolatedPage(async ({ name, expected, casesPath }) => {
      const lib = await import('/lib/index.mjs');
      lib.env.threads = 2;
      const { runCase } = await import(casesPath);
      const bytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
      const info = await lib.engineInfo();
      if (info.build !== 'threaded') throw new Error(`the page runs the ${info.build} build`);
      // As tests/js/bad_input.test.mjs in Node: every model in the calling realm, so on the threaded engine.
      const ctx = {
        loadModel: (source, options) => lib.loadModel(source, { ...options, useWorker: false }),
        translator: await bytes('/models/weights/translator.gguf'),
        captioner: await bytes('/models/weights/captioner.gguf'),
        expected,
      };
      return (await runCase(name, ctx)) ?? null;
    }, { name, expected, casesPath: CASES_PATH });
    if (result?.todo) t.todo(result.todo);
  });
}

// Worker models loaded one after another with env.threads set to each of `sequence` before its load, then this
// realm's own engine started with 2 threads and asked for 1.
async function changeThreads(sequence) {
  return inIsolatedPage(async ({ sequence, probe }) => {
    const lib = await import('/lib/index.mjs');
    const translator = new Uint8Array(await (await fetch('/models/weights/translator.gguf')).arrayBuffer());
    const outcome = (promise) => promise.then((value) => value, (error) => ({ code: error.code, message: error.message }));
    const workers = [];
    for (const threads of sequence) {
      lib.env.threads = threads;
      workers.push(await outcome(lib.loadModel(translator.slice()).then(async (model) => {
        const { text } = await model.translate(probe);
        const { build } = await model._engineInfo();  // the build the worker started, asked of its own engine
        model.terminate();
        return { threads, inWorker: model.inWorker, text, build };
      })));
    }
    lib.env.threads = 2;
    const started = await lib.engineInfo();
    lib.env.threads = 1;
    const refusedInfo = await outcome(lib.engineInfo());
    const refusedLoad = await outcome(lib.loadModel(translator.slice(), { useWorker: false }));
    lib.env.threads = 2;
    const direct = await lib.loadModel(translator.slice(), { useWorker: false });
    const again = { info: await lib.engineInfo(), text: (await direct.translate(probe)).text };
    direct.terminate();
    return { workers, started, refusedInfo, refusedLoad, again };
  }, { sequence, probe: PROBE });
}

test('env.threads changed after an engine loaded: worker models follow it; the running realm refuses with BAD_OPTIONS', { timeout: 300_000 }, async () => {
  for (const sequence of [[2, 1, 3], [1, 2]]) {
    const { result, consoleLines } = await changeThreads(sequence);
    result.workers.forEach((worker, i) => {
      const build = sequence[i] >= 2 ? 'threaded' : 'single-thread';
      assert.deepEqual(worker, { threads: sequence[i], inWorker: true, text: expected[PROBE], build }, `load ${i} of ${sequence}`);
    });
    assert.deepEqual(fallbackNotes(consoleLines), [], `${sequence}: every threaded worker started the threaded build`);
    assert.equal(result.started.build, 'threaded');
    for (const refused of [result.refusedInfo, result.refusedLoad]) {
      assert.equal(refused.code, 'ATTNLAB_BAD_OPTIONS', JSON.stringify(refused));
      assert.match(refused.message, /^attnlab: env\.threads is now 1, which picks the single-thread build, but this realm's engine was started for the threaded build on 2 threads/);
    }
    assert.equal(result.again.info.build, 'threaded');
    assert.equal(result.again.text, expected[PROBE]);
  }
});
