// The module imported from another origin, as from a CDN that serves npm packages (unpkg, jsDelivr): one server
// plays the CDN (the installed packages, with CORS), another the page. The worker script cannot be constructed
// cross-origin, so the engine runs in a same-origin blob: worker that imports it; where the page's CSP refuses
// blob: workers it runs on the page with one console note. Either way no SecurityError reaches the caller, and the
// translation (by URL and by name, weights and engine from the CDN) equals the CLI's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { SENTENCES, cliTranslate, requireModel } from '../js/fixture_model.mjs';
import { MODEL_NAME, MODEL_PACKAGE, browser, describeRun, freshDir, makeApp, packAttnlab, packFixtureModel, runApp,
         serveStatic } from './support.mjs';

const TEXT = SENTENCES[0];
let chromium;
let cdn;
let cli;

// The page: imports attnlab from the CDN origin given in the query, then runs what every packaging app runs.
const PAGE_MAIN = `
const params = new URLSearchParams(location.search);
const { env, loadModel } = await import(params.get('module'));
if (params.has('modelsBase')) env.modelsBase = params.get('modelsBase');
window.attnlabResult = (async () => {
  const model = await loadModel(params.get('model'));
  const t = await model.translate(params.get('text'));
  const result = { text: t.text, targetTokens: t.targetTokens, inWorker: model.inWorker };
  await model.dispose();
  return result;
})().catch((error) => ({ error: String(error?.message ?? error), name: error?.name }));
`;
const PAGE = '<!doctype html><meta charset="utf-8"><title>cdn</title><script type="module" src="/main.mjs"></script>';

before(async () => {
  requireModel();
  cli = cliTranslate(TEXT);
  const dir = await freshDir('cdn');
  const { tarball } = await packFixtureModel(dir);
  const appDir = await makeApp(join(dir, 'cdn'), [packAttnlab(dir), tarball]);
  cdn = await serveStatic(join(appDir, 'node_modules'), { headers: { 'access-control-allow-origin': '*' } });
  chromium = await browser();
});

after(async () => {
  await chromium?.close();
  await cdn?.close();
});

async function pageServer(csp) {
  const headers = csp ? { 'content-security-policy': csp } : {};
  const { writeFile, mkdtemp } = await import('node:fs/promises');
  const root = await mkdtemp(join(await freshDir('cdn-page'), 'site-'));
  await writeFile(join(root, 'main.mjs'), PAGE_MAIN);
  await writeFile(join(root, 'index.html'), PAGE);
  // localhost, not 127.0.0.1: another origin than the CDN's
  return serveStatic(root, { headers, host: 'localhost' });
}

function urls(page) {
  const module = `${cdn.origin}/attnlab/web/lib/index.mjs`;
  return {
    byUrl: `${page.origin}/?${new URLSearchParams({ module, text: TEXT,
      model: `${cdn.origin}/${MODEL_PACKAGE}/models/weights/${MODEL_NAME}.gguf` })}`,
    byName: `${page.origin}/?${new URLSearchParams({ module, text: TEXT, model: MODEL_NAME,
      modelsBase: `${cdn.origin}/attnlab-model-{name}/` })}`,
  };
}

function assertTranslated(result, label) {
  assert.equal(result.error, undefined, `${label}: ${describeRun(result)}`);
  assert.equal(result.text, cli.text, `${label}: text`);
  assert.deepEqual(result.targetTokens, cli.target_tokens, `${label}: tokens`);
  assert.deepEqual(result.pageErrors, [], `${label}: page errors`);
  assert.ok(!result.console.some((line) => /SecurityError/.test(line)), `${label}: ${result.console.join('\n')}`);
}

test('from a CDN origin: the engine runs in a blob: worker, by URL and by name', async () => {
  const page = await pageServer(null);
  try {
    for (const [how, url] of Object.entries(urls(page))) {
      const result = await runApp(chromium, url);
      assertTranslated(result, how);
      assert.equal(result.inWorker, true, `${how}: in a worker`);
    }
    assert.ok(cdn.requests.includes('/attnlab/web/lib/worker.mjs'), 'the worker script came from the CDN');
    assert.ok(cdn.requests.includes('/attnlab/web/dist/attnlab.wasm'), 'the wasm came from the CDN');
    assert.ok(cdn.requests.includes(`/${MODEL_PACKAGE}/models/manifest.json`), 'the manifest came from the CDN');
  } finally {
    await page.close();
  }
});

test('from a CDN origin under a CSP without blob: workers: no worker, one console note', async () => {
  const page = await pageServer(`default-src 'self' ${cdn.origin}; script-src 'self' ${cdn.origin} 'wasm-unsafe-eval'; worker-src 'self'`);
  try {
    const result = await runApp(chromium, urls(page).byName);
    assertTranslated(result, 'CSP worker-src self');
    assert.equal(result.inWorker, false, describeRun(result));
    assert.equal(result.console.filter((line) => /attnlab: the engine runs on this thread/.test(line)).length, 1,
                 result.console.join('\n'));
  } finally {
    await page.close();
  }
});
