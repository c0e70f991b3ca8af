// The module in headless Chromium when things go wrong: an engine error inside the Web Worker reaches the caller
// as a rejected promise carrying the engine's message (web/lib/worker.mjs's { id, error } reply), a worker that
// fails to start or dies rejects the load instead of hanging, and a corrupt copy in the Cache API is thrown away
// and downloaded again (web/lib/download.mjs checks the cached bytes against the expected SHA-256).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { PROBE } from '../js/bad_input_cases.mjs';
import { cliTranslate, repoRoot } from '../js/fixture_model.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';

const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');
const WEIGHTS_PATH = '/models/weights/translator.gguf';
// A blank page under the app's own security headers, so that the module runs as it does on the page.
const BLANK_PATH = '/__tests__/blank.html';

let site;
let origin;
let context;
let requests;
let expected;
let sha256;
let securityHeaders;

before(async () => {
  expected = cliTranslate(PROBE, {}, TRANSLATOR).text;
  sha256 = createHash('sha256').update(await readFile(TRANSLATOR)).digest('hex');
  site = await startSite({ prefix: 'attnlab-e2e-worker-', unlisted: { 'translator.gguf': TRANSLATOR } });
  ({ origin, context, requests } = site);
  const appHeaders = Object.fromEntries((await fetch(`${origin}/`)).headers);
  securityHeaders = Object.fromEntries(Object.entries(appHeaders).filter(([name]) =>
    /^(content-security-policy|cross-origin-(opener|embedder)-policy)$/.test(name)));
  if (!securityHeaders['content-security-policy']) throw new Error('the app server sent no Content-Security-Policy');
  await context.route(`${origin}${BLANK_PATH}`, (route) => route.fulfill({
    status: 200, body: '<!doctype html><title>attnlab worker and cache</title>',
    headers: { 'content-type': 'text/html; charset=utf-8', ...securityHeaders },
  }));
});

after(async () => {
  await site?.close();
});

async function blankPage() {
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${origin}${BLANK_PATH}`);
  return { page, pageErrors };
}

function assertStayedLocal() {
  const offsite = offsiteRequests(requests, origin);
  assert.deepEqual(offsite, [], `requests left localhost: ${offsite.join(', ')}`);
}

test('worker: engine errors inside the worker come back as rejections with the engine\'s message', { timeout: 120_000 }, async () => {
  const { page, pageErrors } = await blankPage();
  try {
    const outcome = await page.evaluate(async ({ weightsPath, probe }) => {
      const bytes = new Uint8Array(await (await fetch(weightsPath)).arrayBuffer());
      const wasmBinary = new Uint8Array(await (await fetch('/dist/attnlab.wasm')).arrayBuffer());
      // The worker's own protocol: { id, method, args } in, { id, result } or { id, error } out, in order.
      const worker = new Worker('/lib/worker.mjs', { type: 'module' });
      const replies = new Map();
      worker.addEventListener('message', (event) => replies.get(event.data.id)?.(event.data));
      let nextId = 1;
      const call = (method, args) => new Promise((resolve) => {
        const id = nextId++;
        replies.set(id, resolve);
        worker.postMessage({ id, method, args });
      });
      const raw = {
        beforeLoad: await call('translate', { text: probe, options: {} }),
        unknown: await call('frobnicate', {}),
        badBytes: await call('load', { bytes: new Uint8Array([...new TextEncoder().encode('GGUF'), ...new Uint8Array(60).fill(0xab)]),
                                      wasmBinary: wasmBinary.slice() }),
        load: await call('load', { bytes: bytes.slice(), wasmBinary: wasmBinary.slice() }),
        tooLong: await call('translate', { text: 'word '.repeat(500), options: {} }),
        badBeam: await call('translate', { text: probe, options: { beam: 1000 } }),
        after: await call('translate', { text: probe, options: {} }),
      };
      worker.terminate();

      // The same through the public API: errors the main thread cannot see coming (it does not tokenize, nor
      // parse GGUF) are raised by the engine in the worker and must arrive as rejections with its message.
      const { loadModel } = await import('/lib/index.mjs');
      const settle = (promise) => promise.then((value) => ({ value }), (error) => ({ error: error?.message ?? String(error) }));
      const corrupt = bytes.slice();
      corrupt.set(new TextEncoder().encode('GGUF'), 0);
      new DataView(corrupt.buffer).setUint32(4, 99, true);  // version 99
      const badLoad = await settle(loadModel(corrupt));
      const model = await loadModel(bytes.slice());
      const api = {
        inWorker: model.inWorker,
        badLoad: badLoad.error ?? 'resolved',
        tooLong: (await settle(model.translate('word '.repeat(500)))).error ?? 'resolved',
        after: (await model.translate(probe)).text,
      };
      model.terminate();
      return { raw, api };
    }, { weightsPath: WEIGHTS_PATH, probe: PROBE });

    const { raw, api } = outcome;
    assert.deepEqual(Object.keys(raw.beforeLoad), ['id', 'error']);
    // An error travels as { name, code, message } (web/lib/errors.mjs), rebuilt as an AttnlabError on the page.
    assert.deepEqual(raw.beforeLoad.error, { name: 'AttnlabError', code: 'ATTNLAB_CLOSED', message: 'attnlab: no model is loaded' });
    assert.equal(raw.unknown.error.message, 'attnlab: unknown worker method frobnicate');
    assert.match(raw.badBytes.error.message, /^attnlab: .*unsupported GGUF version 2880154539/);
    assert.equal(raw.badBytes.error.code, 'ATTNLAB_BAD_MODEL');
    assert.equal(raw.load.error, undefined, raw.load.error);
    assert.match(JSON.stringify(raw.load.result), /"task":"translate"/, 'the load reply carries the model info');
    assert.match(raw.tooLong.error.message, /the input is too long: \d+ tokens, at most 400 are accepted/);
    assert.equal(raw.tooLong.error.code, 'ATTNLAB_BAD_INPUT');
    assert.match(raw.badBeam.error.message, /beam/);
    assert.equal(raw.badBeam.error.code, 'ATTNLAB_BAD_OPTIONS');
    assert.equal(raw.after.error, undefined, raw.after.error);
    assert.equal(raw.after.result.text, expected, 'the worker still translates after the errors');

    assert.equal(api.inWorker, true, 'the model did not run in a Web Worker');
    assert.match(api.badLoad, /unsupported GGUF version 99 \(attnlab reads versions 2 and 3\)/);
    assert.match(api.tooLong, /the input is too long: \d+ tokens, at most 400 are accepted/);
    assert.equal(api.after, expected);
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
  }
  assertStayedLocal();
});

test('worker: one that cannot start, or dies, makes loadModel reject with a message; the next load works', { timeout: 120_000 }, async () => {
  const { page, pageErrors } = await blankPage();
  const broken = {
    'a missing script (404)': { status: 404, body: 'not found', contentType: 'text/plain' },
    'a script that throws as it starts': { status: 200, body: 'throw new Error("no engine here");' },
    'a script with a syntax error': { status: 200, body: 'export const = ;' },
    'a worker that dies on its first request': {
      status: 200, body: 'self.onmessage = () => { setTimeout(() => { throw new Error("engine crashed"); }); };',
    },
  };
  try {
    for (const [what, { status, body, contentType = 'text/javascript; charset=utf-8' }] of Object.entries(broken)) {
      const workerUrl = `${origin}/lib/worker.mjs`;
      // With the app's headers (COEP among them), so that only the script itself is broken.
      const handler = (route) => route.fulfill({ status, body, headers: { 'content-type': contentType, ...securityHeaders } });
      await page.route(workerUrl, handler);
      const served = requests.filter((url) => url === workerUrl).length;
      const error = await page.evaluate(async (path) => {
        const { loadModel } = await import('/lib/index.mjs');
        const bytes = new Uint8Array(await (await fetch(path)).arrayBuffer());
        const timeout = new Promise((resolve) => { setTimeout(() => resolve('hang: no answer in 30 s'), 30_000); });
        return Promise.race([loadModel(bytes).then((model) => { model.terminate(); return 'resolved'; },
                                                   (e) => e.message), timeout]);
      }, WEIGHTS_PATH);
      await page.unroute(workerUrl, handler);
      assert.ok(requests.filter((url) => url === workerUrl).length > served, `${what}: the worker script was not requested`);
      assert.match(error, /^attnlab: the engine worker failed: /, `${what}: ${error}`);
      if (what.includes('dies')) assert.match(error, /engine crashed/, `${what}: the worker's own error is lost`);
    }
    const text = await page.evaluate(async ({ path, probe }) => {
      const { loadModel } = await import('/lib/index.mjs');
      const model = await loadModel(new Uint8Array(await (await fetch(path)).arrayBuffer()));
      const t = await model.translate(probe);
      model.terminate();
      return t.text;
    }, { path: WEIGHTS_PATH, probe: PROBE });
    assert.equal(text, expected, 'a load after the broken workers');
    // The broken workers' errors are reported through loadModel, not left uncaught in the page.
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
  }
  assertStayedLocal();
});

test('cache: a cached copy whose bytes do not match the expected SHA-256 is discarded and downloaded again', { timeout: 120_000 }, async () => {
  const { page, pageErrors } = await blankPage();
  const weightsUrl = `${origin}${WEIGHTS_PATH}`;
  const downloads = () => requests.filter((url) => url === weightsUrl).length;
  try {
    // Corrupt copy in the cache: the real file with one byte changed, same size.
    const planted = await page.evaluate(async ({ path }) => {
      const { CACHE_NAME } = await import('/lib/index.mjs');
      const url = new URL(path, location.href).href;
      const good = new Uint8Array(await (await fetch(url, { cache: 'no-store' })).arrayBuffer());
      const corrupt = good.slice();
      corrupt[corrupt.length >> 1] ^= 0xff;
      const cache = await caches.open(CACHE_NAME);
      await cache.put(url, new Response(corrupt, { headers: { 'content-type': 'application/octet-stream' } }));
      return (await (await cache.match(url)).arrayBuffer()).byteLength === good.length;
    }, { path: WEIGHTS_PATH });
    assert.equal(planted, true);
    const before = downloads();
    const first = await page.evaluate(async ({ path, sha256, probe }) => {
      const { CACHE_NAME, loadModel, sha256Hex } = await import('/lib/index.mjs');
      const model = await loadModel(path, { sha256 });
      const text = (await model.translate(probe)).text;
      const { fromCache } = model;
      model.terminate();
      const cached = await (await caches.open(CACHE_NAME)).match(new URL(path, location.href).href);
      return { fromCache, text, cachedSha256: cached ? await sha256Hex(new Uint8Array(await cached.arrayBuffer())) : null };
    }, { path: WEIGHTS_PATH, sha256, probe: PROBE });
    assert.equal(first.fromCache, false, 'the corrupt cached copy was used');
    assert.equal(downloads() - before, 1, 'the file was not downloaded again');
    assert.equal(first.text, expected);
    assert.equal(first.cachedSha256, sha256, 'the cache does not hold the good copy now');

    // Control: the good copy now in the cache is used as is, without a download.
    const between = downloads();
    const second = await page.evaluate(async ({ path, sha256 }) => {
      const { loadModel } = await import('/lib/index.mjs');
      const model = await loadModel(path, { sha256 });
      const { fromCache } = model;
      model.terminate();
      return { fromCache };
    }, { path: WEIGHTS_PATH, sha256 });
    assert.equal(second.fromCache, true, 'a good cached copy was not used');
    assert.equal(downloads(), between, 'a good cached copy was downloaded again');
    assert.deepEqual(pageErrors, []);
  } finally {
    await page.close();
  }
  assertStayedLocal();
});
