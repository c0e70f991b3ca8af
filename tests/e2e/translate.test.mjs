// Browser end to end: web/server.mjs on a free port serving a manifest with the test model, headless Chromium
// (playwright-core, /usr/bin/chromium) translates a sample in the page: the text equals the native CLI's, the
// heatmap has the right shape, a reload takes the weights from the Cache API, and no request leaves localhost.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { cliTranslate, requireModel } from '../js/fixture_model.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';
import { screenshotPath } from './page_helpers.mjs';

const SAMPLE = 'A dog runs on the beach.';  // one of the page's EN samples

let site;
let origin;
let context;
let requests;

before(async () => {
  // A models folder with just the test model, listed as the EN→DE translator.
  site = await startSite({
    prefix: 'attnlab-e2e-',
    models: [{ from: requireModel(), name: 'test.gguf', id: 'bahdanau-en-de', label: 'EN→DE', task: 'translate',
               arch: 'bahdanau', src: 'en', tgt: 'de', dtype: 'f32' }],
    viewport: { width: 1100, height: 900 },
  });
  ({ origin, context, requests } = site);
});

after(async () => {
  await site?.close();
});

async function translateSample(page) {
  await page.getByRole('button', { name: SAMPLE }).waitFor();
  await page.locator('[data-testid="translate-run"]:not([disabled])').waitFor({ timeout: 60_000 });
  await page.getByTestId('translate-input').fill(SAMPLE);
  await page.getByTestId('translate-run').click();
  const output = page.getByTestId('translate-output');
  await page.waitForFunction(() => document.getElementById('translate-output')?.textContent.length > 0 ||
                                   !document.getElementById('translate-error').hidden, null, { timeout: 60_000 });
  assert.equal(await page.locator('#translate-error').isHidden(), true,
               `the page reported an error: ${await page.locator('#translate-error').textContent()}`);
  return output.textContent();
}

test('translate in the browser: same text as the CLI, heatmap shape, cached weights, nothing leaves localhost', async () => {
  const cli = cliTranslate(SAMPLE, { beam: 4 });  // the page's default beam width is 4
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
  page.on('pageerror', (error) => consoleErrors.push(error.message));

  await page.goto(`${origin}/`);
  assert.equal(await page.getByTestId('beam-select').inputValue(), '4');
  assert.equal(await translateSample(page), cli.text);
  const heatmap = page.getByTestId('translate-heatmap');
  assert.equal(await heatmap.getAttribute('data-rows'), String(cli.target_tokens.length));
  assert.equal(await heatmap.getAttribute('data-cols'), String(cli.source_tokens.length));
  assert.equal(await heatmap.locator('.cell').count(), cli.target_tokens.length * cli.source_tokens.length);
  assert.equal(await page.getByTestId('model-status').getAttribute('data-source'), 'network');

  // Hovering an output word lights its row.
  await page.locator('#target-tokens .token').first().hover();
  assert.equal(await heatmap.locator('.cell.lit').count(), cli.source_tokens.length);

  // The explain tab draws the engine's three stages for the first output word.
  await page.getByRole('tab', { name: 'Attention explained' }).click();
  assert.equal(await page.locator('#explain-scores .bar-row').count(), cli.source_tokens.length);
  assert.equal(await page.locator('#explain-strips .strip-row').count(), cli.source_tokens.length + 1);
  const firstWeight = Number(await page.locator('#explain-weights .bar-value').first().textContent());
  assert.ok(Math.abs(firstWeight - cli.attention[0][0]) < 1e-3);
  await page.getByRole('tab', { name: 'Translate' }).click();
  await page.screenshot({ path: screenshotPath('translate'), fullPage: true });

  // Second visit: the weights and the wasm come from the Cache API.
  await page.reload();
  assert.equal(await translateSample(page), cli.text);
  assert.equal(await page.getByTestId('model-status').getAttribute('data-source'), 'cache');
  assert.match(await page.getByTestId('model-status').textContent(), /from cache/);
  await page.getByRole('tab', { name: 'Engine' }).click();  // the page's own engine instance, also from the cache
  await page.waitForFunction(() => document.getElementById('engine-status').textContent === 'ready');
  await page.getByRole('tab', { name: 'Translate' }).click();
  assert.equal(requests.filter((url) => url.endsWith('.gguf')).length, 1, 'the .gguf was fetched once');
  assert.equal(requests.filter((url) => url.endsWith('.wasm')).length, 1, 'the .wasm was fetched once');

  // Phone width.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: screenshotPath('translate-390'), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than a 390px screen`);

  const offsite = offsiteRequests(requests, origin);
  assert.deepEqual(offsite, [], 'requests left the page origin');
  assert.deepEqual(consoleErrors, []);
  await page.close();
});

test('in the browser the module runs in a worker, rejects bad input, and terminate() rejects pending calls', async () => {
  const page = await context.newPage();
  await page.goto(`${origin}/`);
  const result = await page.evaluate(async (url) => {
    const { loadModel } = await import('/lib/index.mjs');
    const message = (promise) => promise.then(() => 'resolved', (error) => error.message);
    const out = {};
    out.sha = await message(loadModel(url, { sha256: '0'.repeat(64) }));
    out.bytes = await message(loadModel(new Uint8Array(100)));
    out.aborted = await message(loadModel(url, { signal: AbortSignal.abort() }));
    const model = await loadModel(url);
    out.inWorker = model.inWorker;
    out.empty = await message(model.translate(''));
    out.text = (await model.translate('A dog runs on the beach.', { beam: 4 })).text;
    const pending = [model.translate('A dog runs.'), model.translate('A cat sleeps.')];
    model.terminate();
    out.pending = await Promise.all(pending.map(message));
    out.later = await message(model.translate('A dog.'));
    return out;
  }, '/models/weights/test.gguf');
  assert.match(result.sha, /SHA-256 mismatch/);
  assert.match(result.bytes, /GGUF/);
  assert.match(result.aborted, /aborted/);
  assert.equal(result.inWorker, true);
  assert.match(result.empty, /empty/);
  assert.equal(result.text, cliTranslate(SAMPLE, { beam: 4 }).text);
  assert.deepEqual(result.pending.map((m) => /terminated/.test(m)), [true, true]);
  assert.match(result.later, /terminated/);
  await page.close();
});
