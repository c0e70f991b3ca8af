// A photo larger than the page draws it: the Caption tab sends it to the engine at full size, so its caption and
// attention equal the Node module's (and so the CLI's, tests/js/caption_large.test.mjs) on the file's own pixels,
// while the photo on screen is drawn at most 1024 pixels a side.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { loadModel, matrixRow } from '../../web/lib/index.mjs';
import { CAPTION_MODEL, encodePng, patternPixels } from '../js/caption_fixture.mjs';
import { startSite } from '../support/site.mjs';

let site;
let nodeModel;

before(async () => {
  site = await startSite({
    prefix: 'attnlab-e2e-caption-large-',
    models: [{ from: CAPTION_MODEL, name: 'captioner.gguf', id: 'captioner-test', label: 'Test captioner',
               task: 'caption', arch: 'show-attend-tell', src: 'image', tgt: 'en', dtype: 'f16' }],
    viewport: { width: 1100, height: 900 },
  });
  nodeModel = await loadModel(CAPTION_MODEL);
});

after(async () => {
  await nodeModel?.dispose();
  await site?.close();
});

// The readout the page writes for token 0, from the module's caption.
// The page shows first the word whose attention is most concentrated (lowest entropy, the earlier word on a tie).
function shownFirst(caption) {
  const entropy = (i) => matrixRow(caption.attention, i).reduce((h, w) => (w > 0 ? h - w * Math.log2(w) : h), 0);
  let sharpest = 0;
  for (let i = 1; i < caption.tokens.length; ++i) if (entropy(i) < entropy(sharpest) - 1e-9) sharpest = i;
  return sharpest;
}

function expectedReadout(caption) {
  const weights = matrixRow(caption.attention, shownFirst(caption));
  let best = 0;
  for (let k = 1; k < weights.length; ++k) if (weights[k] > weights[best]) best = k;
  const row = Math.floor(best / caption.gridWidth) + 1;
  const column = (best % caption.gridWidth) + 1;
  return `strongest attention ${(weights[best] * 100).toFixed(1)}% on cell (row ${row}, column ${column})`;
}

test('caption tab: a 2400 × 1800 upload is captioned at full size and drawn at 1024 × 768', async (t) => {
  const page = await site.context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${site.origin}/`);
  await page.waitForFunction(() => !document.getElementById('tab-btn-caption').disabled);
  await page.getByRole('tab', { name: 'Caption' }).click();
  await page.waitForFunction(() => /ready/.test(document.getElementById('cap-status-text').textContent), null, { timeout: 60_000 });
  await page.getByTestId('cap-beam').selectOption('1');

  const image = patternPixels(2400, 1800, 9);
  const png = join(site.workDir, 'large.png');
  await writeFile(png, encodePng(image));  // no colour profile: Chromium decodes exactly these bytes
  await page.getByTestId('cap-file').setInputFiles(png);
  await page.waitForFunction(() => document.getElementById('cap-output')?.dataset.text !== undefined ||
                                   !document.getElementById('cap-error').hidden, null, { timeout: 60_000 });
  assert.equal(await page.locator('#cap-error').isHidden(), true, await page.locator('#cap-error').textContent());

  const expected = await nodeModel.caption(image, { beam: 1 });
  assert.equal(await page.getByTestId('cap-output').getAttribute('data-text'), expected.text);
  assert.equal(await page.locator('#cap-output .cap-word').count(), expected.tokens.length);
  const readout = await page.getByTestId('cap-readout').textContent();
  assert.ok(readout.includes(expectedReadout(expected)), `page: ${readout}; module: ${expectedReadout(expected)}`);

  // What the page would have captioned had it shrunk the photo first: another input, which this test would catch
  // when the captions differ (reported either way).
  const shrunk = await page.evaluate(async () => {
    const photo = document.getElementById('cap-photo');
    const { data, width, height } = photo.getContext('2d').getImageData(0, 0, photo.width, photo.height);
    return { data: Array.from(data), width, height };
  });
  assert.deepEqual([shrunk.width, shrunk.height], [1024, 768], 'the photo is drawn at most 1024 pixels a side');
  const fromShrunk = await nodeModel.caption({ ...shrunk, data: Uint8Array.from(shrunk.data) }, { beam: 1 });
  const differs = fromShrunk.text !== expected.text || !readout.includes(expectedReadout(fromShrunk));
  t.diagnostic(`the 1024-pixel copy ${differs ? 'captions differently' : 'captions the same'}`);
  assert.deepEqual(errors, []);
  await page.close();
});
