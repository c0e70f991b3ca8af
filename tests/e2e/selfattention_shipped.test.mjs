// The Self-attention tab on the SHIPPED DE→EN Transformer (models/manifest.json's transformer-de-en, q8_0), in
// headless Chromium: the page's German long-range sample translates exactly as the Node module translates it, the
// model view has one heatmap per layer and head of the trained model, focusing "sie" ("she") reads out where it
// attends, the neuron view's table fits a phone, and an in-domain sample comes out as English about a dog on a beach. selfattention.test.mjs covers every control on the tiny fixture; this checks the trained weights
// load and run in the browser.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { repoRoot } from '../js/fixture_model.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';

const ID = 'transformer-de-en';
const SAMPLE = 'Eine Frau hält ihr Baby, während sie geht.';  // the tab's first DE sample

let site;
let entry;
let expected;

before(async () => {
  const manifest = JSON.parse(await readFile(join(repoRoot, 'models/manifest.json'), 'utf8'));
  entry = manifest.models.find((m) => m.id === ID);
  assert.ok(entry, `${ID} is not in models/manifest.json`);
  const model = await loadModel(join(repoRoot, entry.file));
  expected = await model.translate(SAMPLE, { beam: 1 });
  await model.dispose();
  site = await startSite({
    prefix: 'attnlab-e2e-sa-shipped-',
    models: [{ ...entry, from: join(repoRoot, entry.file), name: entry.file.split('/').pop() }],
    viewport: { width: 1100, height: 900 },
  });
});

after(async () => {
  await site?.close();
});

test('self-attention tab runs the shipped DE→EN Transformer as the Node module does', async () => {
  const page = await site.context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${site.origin}/`);
  await page.waitForFunction(() => !document.getElementById('tab-btn-selfattention').disabled);
  await page.getByRole('tab', { name: 'Self-attention' }).click();
  assert.equal(await page.locator('#sa-samples .chip').first().textContent(), SAMPLE);
  await page.locator('[data-testid="sa-run"]:not([disabled])').waitFor({ timeout: 120_000 });
  await page.locator('#sa-samples .chip').first().click();
  await page.waitForFunction((text) => document.getElementById('sa-output').textContent === text ||
                                       !document.getElementById('sa-error').hidden, expected.text, { timeout: 60_000 });
  assert.equal(await page.getByTestId('sa-output').textContent(), expected.text);

  const encoder = expected.encoderSelfAttention;
  assert.deepEqual([encoder.layers, encoder.heads], [3, 8]);
  assert.equal(await page.getByTestId('sa-grid').locator('.sa-thumb').count(), 24);
  assert.deepEqual(JSON.parse(await page.getByTestId('sa-canvas').getAttribute('data-left-tokens')),
                   expected.sourceTokens);

  // The sample is whole words in the model's tokenizer: every word one piece.
  assert.deepEqual(expected.sourceTokens.filter((p) => !p.startsWith('▁') && !/^[.,]$/.test(p) && p !== '</s>'), []);
  const sie = expected.sourceTokens.indexOf('▁sie');
  assert.ok(sie > 0, `no "▁sie" piece in ${expected.sourceTokens}`);
  await page.getByTestId('sa-focus').selectOption(String(sie));
  assert.match(await page.locator('#sa-readout').textContent(), /^“sie” attends most to/);
  // On a phone the neuron view's table of the trained head (d_k = 32: two 32-entry strips a row) shows every
  // column, ÷ √d_k and softmax included, without scrolling its box.
  await page.setViewportSize({ width: 390, height: 844 });
  const box = await page.locator('#sa-neuron .neuron-scroll').evaluate((b) => ({ scroll: b.scrollWidth, client: b.clientWidth }));
  assert.ok(box.client > 0 && box.client < 390, `the neuron view's box is ${box.client}px wide`);
  assert.ok(box.scroll <= box.client, `the neuron table is ${box.scroll - box.client}px wider than its box on a phone`);
  await page.setViewportSize({ width: 1100, height: 900 });
  // An in-domain sample (Multi30k describes photos) translates as a trained model should.
  await page.locator('#sa-samples .chip', { hasText: 'Ein Hund läuft am Strand.' }).click();
  await page.waitForFunction(() => /dog/i.test(document.getElementById('sa-output').textContent), null,
                             { timeout: 60_000 });
  assert.match(await page.getByTestId('sa-output').textContent(), /\bdog\b.*\bbeach\b/i);
  assert.deepEqual(errors, []);
  assert.deepEqual(offsiteRequests(site.requests, site.origin), []);
  await page.close();
});
