// The bad-input matrix of issue 8 in headless Chromium: the same cases as tests/js/bad_input.test.mjs
// (tests/js/bad_input_cases.mjs), here through the module's Web Worker, on a blank same-origin page under the
// app server's CSP. The SHA-256 case also checks that a mismatching download leaves nothing in the Cache API.
import { test, before, after } from 'node:test';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

import { createAppServer } from '../../web/server.mjs';
import { CONCURRENT, PROBE, cases } from '../js/bad_input_cases.mjs';
import { cliTranslate, repoRoot } from '../js/fixture_model.mjs';
import { CHROMIUM, CHROMIUM_ARGS, offsiteRequests } from '../../scripts/chromium.mjs';

const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');
// A captioner with an image encoder (tiny_model.gguf has none: it captions only precomputed features).
const CAPTIONER = ['tiny_encoder_model.gguf', 'tiny_model.gguf'].map((f) => join(repoRoot, 'tests/fixtures/caption', f))
  .find((f) => existsSync(f));
// Served by page.route (the app server serves only the app, the module and models): the shared cases and a
// blank page carrying the app's security headers.
const CASES_PATH = '/__tests__/bad_input_cases.mjs';
const BLANK_PATH = '/__tests__/blank.html';

let workDir;
let server;
let origin;
let context;
let expected;
const requests = [];

before(async () => {
  expected = {};
  for (const text of new Set([PROBE, ...CONCURRENT])) expected[text] = cliTranslate(text, {}, TRANSLATOR).text;
  workDir = await mkdtemp(join(tmpdir(), 'attnlab-e2e-bad-'));
  const modelsDir = join(workDir, 'models');
  await mkdir(join(modelsDir, 'weights'), { recursive: true });
  await copyFile(TRANSLATOR, join(modelsDir, 'weights/translator.gguf'));
  await copyFile(CAPTIONER, join(modelsDir, 'weights/captioner.gguf'));
  await writeFile(join(modelsDir, 'manifest.json'), JSON.stringify({ models: [] }));
  server = createAppServer({ modelsDir });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://localhost:${server.address().port}`;

  const appHeaders = Object.fromEntries((await fetch(`${origin}/`)).headers);
  const securityHeaders = Object.fromEntries(Object.entries(appHeaders).filter(([name]) =>
    /^(content-security-policy|cross-origin-(opener|embedder)-policy)$/.test(name)));
  if (!securityHeaders['content-security-policy']) throw new Error('the app server sent no Content-Security-Policy');
  const casesSource = await readFile(join(repoRoot, 'tests/js/bad_input_cases.mjs'), 'utf8');

  context = await chromium.launchPersistentContext(join(workDir, 'profile'), {
    executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true,
  });
  context.on('request', (request) => requests.push(request.url()));
  await context.route(`${origin}${CASES_PATH}`, (route) => route.fulfill({
    status: 200, body: casesSource, headers: { 'content-type': 'text/javascript; charset=utf-8', ...securityHeaders },
  }));
  await context.route(`${origin}${BLANK_PATH}`, (route) => route.fulfill({
    status: 200, body: '<!doctype html><title>attnlab bad input</title>',
    headers: { 'content-type': 'text/html; charset=utf-8', ...securityHeaders },
  }));
});

after(async () => {
  await context?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
  if (workDir) await rm(workDir, { recursive: true, force: true });
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
