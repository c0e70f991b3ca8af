// The bad-input matrix of issue 8 in headless Chromium: the same cases as tests/js/bad_input.test.mjs
// (tests/js/bad_input_cases.mjs), here through the module's Web Worker, on a blank same-origin page under the
// app server's CSP. The SHA-256 case also checks that a mismatching download leaves nothing in the Cache API.
import { test, before, after } from 'node:test';
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { CONCURRENT, PROBE, cases } from '../js/bad_input_cases.mjs';
import { cliTranslate, repoRoot } from '../js/fixture_model.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';

const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');
// A captioner with an image encoder (tiny_model.gguf has none: it captions only precomputed features).
const CAPTIONER = ['tiny_encoder_model.gguf', 'tiny_model.gguf'].map((f) => join(repoRoot, 'tests/fixtures/caption', f))
  .find((f) => existsSync(f));
// Served by page.route (the app server serves only the app, the module and models): the shared cases and a
// blank page carrying the app's security headers.
const CASES_PATH = '/__tests__/bad_input_cases.mjs';
const BLANK_PATH = '/__tests__/blank.html';

let site;
let origin;
let context;
let requests;
let expected;

before(async () => {
  expected = {};
  for (const text of new Set([PROBE, ...CONCURRENT])) expected[text] = cliTranslate(text, {}, TRANSLATOR).text;
  // The cases load the weights by URL or as bytes; none goes through the manifest, so it lists nothing.
  site = await startSite({
    prefix: 'attnlab-e2e-bad-',
    unlisted: { 'translator.gguf': TRANSLATOR, 'captioner.gguf': CAPTIONER },
  });
  ({ origin, context, requests } = site);

  const appHeaders = Object.fromEntries((await fetch(`${origin}/`)).headers);
  const securityHeaders = Object.fromEntries(Object.entries(appHeaders).filter(([name]) =>
    /^(content-security-policy|cross-origin-(opener|embedder)-policy)$/.test(name)));
  if (!securityHeaders['content-security-policy']) throw new Error('the app server sent no Content-Security-Policy');
  const casesSource = await readFile(join(repoRoot, 'tests/js/bad_input_cases.mjs'), 'utf8');

  await context.route(`${origin}${CASES_PATH}`, (route) => route.fulfill({
    status: 200, body: casesSource, headers: { 'content-type': 'text/javascript; charset=utf-8', ...securityHeaders },
  }));
  await context.route(`${origin}${BLANK_PATH}`, (route) => route.fulfill({
    status: 200, body: '<!doctype html><title>attnlab bad input</title>',
    headers: { 'content-type': 'text/html; charset=utf-8', ...securityHeaders },
  }));
});

after(async () => {
  await site?.close();
});

for (const name of Object.keys(cases)) {
  test(`browser worker: ${name}`, { timeout: 300_000 }, async (t) => {
    const page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      await page.goto(`${origin}${BLANK_PATH}`);
      const outcome = await page.evaluate(async ({ name, expected, casesPath }) => {
        const { loadModel, CACHE_NAME } = await import('/lib/index.mjs');
        const { runCase } = await import(casesPath);
        const bytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
        const ctx = {
          loadModel,
          translator: await bytes('/models/weights/translator.gguf'),
          captioner: await bytes('/models/weights/captioner.gguf'),
          expected,
          translatorUrl: '/models/weights/translator.gguf',
          cacheName: CACHE_NAME,
        };
        // Every model a case makes runs in a worker: check that, so this is not the Node path again.
        const probe = await loadModel(ctx.translator.slice());
        if (!probe.inWorker) throw new Error('the model did not run in a Web Worker');
        probe.terminate();
        return (await runCase(name, ctx)) ?? null;
      }, { name, expected, casesPath: CASES_PATH });
      if (outcome?.todo) t.todo(outcome.todo);
      if (pageErrors.length) throw new Error(`uncaught errors in the page: ${pageErrors.join('; ')}`);
    } finally {
      await page.close();
    }
    const offsite = offsiteRequests(requests, origin);
    if (offsite.length) throw new Error(`requests left localhost: ${offsite.join(', ')}`);
  });
}
