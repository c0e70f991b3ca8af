// Browser end to end for the Caption tab: web/server.mjs serves a manifest whose only model is the captioner test
// fixture (tests/fixtures/caption/tiny_encoder_model.gguf: tiny, but with an image encoder), headless Chromium
// (playwright-core, /usr/bin/chromium, a fake camera) captions a gallery sample, an uploaded file and a camera
// frame. The page's caption equals the Node module's on the very pixels the page decoded, and the native CLI's on
// a PNG of those pixels (and, when Chromium's JPEG decoder agrees with stb's, on the JPEG itself); the overlay is
// drawn for the selected word; the camera is stopped afterwards; no request leaves the origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { repoRoot } from '../js/fixture_model.mjs';
import { CAPTION_MODEL, assertSameCaption, cliCaption, encodePng } from '../js/caption_fixture.mjs';
import { CHROMIUM_ARGS, offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';
import { screenshotPath } from './page_helpers.mjs';

const CAMERA_ARGS = [...CHROMIUM_ARGS, '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream'];
const SAMPLES = join(repoRoot, 'web/app/samples');

let site;
let workDir;
let origin;
let context;
let requests;
let nodeModel;
// A shipped captioner whose file holds MobileNetV2's ImageNet classifier (the test fixture has none).
const RECOGNIZING_MODEL = join(repoRoot, 'models/weights/captioner-flickr8k-14x14.q8_0.gguf');

before(async () => {
  site = await startSite({
    prefix: 'attnlab-e2e-caption-',
    models: [{ from: CAPTION_MODEL, name: 'captioner.gguf', id: 'captioner-test', label: 'Test captioner',
               task: 'caption', arch: 'show-attend-tell', src: 'image', tgt: 'en', dtype: 'f16' },
             { from: RECOGNIZING_MODEL, name: 'captioner-14x14.gguf', id: 'captioner-14x14', label: 'Shipped 14×14',
               task: 'caption', arch: 'show-attend-tell', src: 'image', tgt: 'en', dtype: 'q8_0' }],
    args: CAMERA_ARGS,
    viewport: { width: 1100, height: 900 },
  });
  ({ workDir, origin, context, requests } = site);
  await context.grantPermissions(['camera'], { origin });
  nodeModel = await loadModel(CAPTION_MODEL);
});

after(async () => {
  await nodeModel?.dispose();
  await site?.close();
});

// The RGBA pixels Chromium decodes from a sample, read back from a canvas exactly as the page does.
async function pagePixels(page, file) {
  const { width, height, bytes } = await page.evaluate(async (src) => {
    const image = new Image();
    image.src = src;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.naturalWidth;
    canvas.height = image.naturalHeight;
    const context2d = canvas.getContext('2d', { willReadFrequently: true });
    context2d.drawImage(image, 0, 0);
    const { data } = context2d.getImageData(0, 0, canvas.width, canvas.height);
    let binary = '';
    for (let i = 0; i < data.length; i += 0x8000) binary += String.fromCharCode(...data.subarray(i, i + 0x8000));
    return { width: canvas.width, height: canvas.height, bytes: btoa(binary) };
  }, `/app/samples/${file}`);
  return { data: new Uint8Array(Buffer.from(bytes, 'base64')), width, height };
}

async function waitForCaption(page, previous = null) {
  await page.waitForFunction((before) => {
    const text = document.getElementById('cap-output')?.dataset.text;
    return (text !== undefined && text !== before) || !document.getElementById('cap-error').hidden;
  }, previous, { timeout: 60_000 });
  assert.equal(await page.locator('#cap-error').isHidden(), true,
               `the page reported an error: ${await page.locator('#cap-error').textContent()}`);
  return page.getByTestId('cap-output').getAttribute('data-text');
}

// Checks the page's caption of a sample against the Node module on the page's pixels, the CLI on a PNG of those
// pixels, and (reported, not required: two JPEG decoders) the CLI on the JPEG file.
async function checkSample(t, page, file, pageText, beam) {
  const pixels = await pagePixels(page, file);
  const fromNode = await nodeModel.caption(pixels, { beam });
  assert.equal(pageText, fromNode.text, `${file}: the page's caption equals the module's on the same pixels`);
  const png = join(workDir, `${file}.png`);
  await writeFile(png, encodePng(pixels));
  assertSameCaption(fromNode, cliCaption(png, { beam }), `${file} (page pixels as PNG, CLI)`);
  const fromJpeg = cliCaption(join(SAMPLES, file), { beam });
  if (fromJpeg.text !== pageText) t.diagnostic(`${file}: the CLI on the JPEG says "${fromJpeg.text}" (stb decodes it differently)`);
  return fromNode;
}

async function overlayStats(page) {
  return page.evaluate(() => {
    const canvas = document.getElementById('cap-overlay');
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let painted = 0;
    let sum = 0;
    for (let i = 3; i < data.length; i += 4) {
      if (data[i] > 0) painted += 1;
      sum += data[i] * (i % 97);
    }
    return { token: canvas.dataset.token, width: canvas.width, height: canvas.height, painted, pixels: data.length / 4, sum };
  });
}

test('caption tab: gallery, file upload and camera; same caption as the module and the CLI; overlay; offline-clean', async (t) => {
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
  page.on('pageerror', (error) => consoleErrors.push(error.message));
  await page.goto(`${origin}/`);

  const tab = page.getByRole('tab', { name: 'Caption' });
  await page.waitForFunction(() => !document.getElementById('tab-btn-caption').disabled);
  await tab.click();
  await page.waitForFunction(() => /ready/.test(document.getElementById('cap-status-text').textContent), null, { timeout: 60_000 });
  assert.equal(await page.getByTestId('cap-beam').inputValue(), '3');
  assert.equal(await page.locator('#cap-gallery .cap-sample').count(), 6);
  // No shippable dog photo was found: the gallery says so, and its button opens the file chooser for the visitor's.
  assert.match(await page.getByTestId('cap-no-dog').textContent(), /no dog among these samples[\s\S]*licence/i);
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByTestId('cap-own').click()]);
  assert.equal(chooser.isMultiple(), false);
  assert.equal(await chooser.element().getAttribute('data-testid'), 'cap-file');

  // A gallery sample.
  await page.locator('.cap-sample[data-sample="cat"]').click();
  const catText = await waitForCaption(page);
  const cat = await checkSample(t, page, 'cat.jpg', catText, 3);
  const words = page.locator('#cap-output .cap-word');
  assert.equal(await words.count(), cat.tokens.length);
  assert.match(await page.getByTestId('cap-timing').textContent(), /captioned in \d+ ms/);
  assert.equal(await page.locator('#cap-strip .cap-thumb').count(), cat.tokens.length);
  // A file without the ImageNet classifier says so where the encoder's classes would be.
  assert.match(await page.getByTestId('cap-recognized').textContent(), /no ImageNet classifier/);

  // The overlay is drawn first for the word whose attention is most concentrated (lowest entropy over the grid,
  // the earlier word on a tie), at the photo's size, and changes with the word.
  const entropy = (i) => {
    const row = cat.attention.data.subarray(i * cat.attention.cols, (i + 1) * cat.attention.cols);
    return row.reduce((h, w) => (w > 0 ? h - w * Math.log2(w) : h), 0);
  };
  let sharpest = 0;
  for (let i = 1; i < cat.tokens.length; ++i) if (entropy(i) < entropy(sharpest) - 1e-9) sharpest = i;
  const first = await overlayStats(page);
  assert.equal(first.token, String(sharpest));
  assert.equal(await words.nth(sharpest).getAttribute('aria-pressed'), 'true');
  assert.deepEqual([first.width, first.height], [451, 300]);
  assert.ok(first.painted > first.pixels / 2, `overlay painted ${first.painted} of ${first.pixels} pixels`);
  assert.ok(cat.tokens.length >= 2);
  const other = sharpest === 1 ? 0 : 1;
  await words.nth(other).hover();
  const second = await overlayStats(page);
  assert.equal(second.token, String(other));
  assert.notEqual(second.sum, first.sum, 'another word draws another overlay');
  assert.equal(await words.nth(other).getAttribute('aria-pressed'), 'true');
  await page.screenshot({ path: screenshotPath('caption'), fullPage: true });

  // Beside the caption of a file with the classifier, what the image encoder recognises: the module's top-5
  // ImageNet classes on the same pixels. Changing the model reruns the caption.
  await page.getByTestId('cap-model').selectOption('captioner-14x14');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="cap-classes"] li').length === 5, null,
                             { timeout: 60_000 });
  const recognizing = await loadModel(RECOGNIZING_MODEL);
  const { recognized } = await recognizing.caption(await pagePixels(page, 'cat.jpg'), { beam: 3, recognize: true });
  await recognizing.dispose();
  assert.deepEqual(await page.locator('[data-testid="cap-classes"] li').evaluateAll((items) => items.map((li) => Number(li.dataset.index))),
                   recognized.map((r) => r.index));
  assert.match(recognized[0].label, /cat/);
  assert.match(await page.getByTestId('cap-recognized').textContent(), /recognises[\s\S]*cat[\s\S]*Flickr8k alone/);
  await page.getByTestId('cap-model').selectOption('captioner-test');
  await page.waitForFunction(() => /no ImageNet classifier/.test(document.getElementById('cap-recognized').textContent),
                             null, { timeout: 60_000 });

  // Greedy on another sample.
  await page.getByTestId('cap-beam').selectOption('1');
  await page.locator('.cap-sample[data-sample="coffee"]').click();
  const coffeeText = await waitForCaption(page, catText);
  await checkSample(t, page, 'coffee.jpg', coffeeText, 1);
  assert.notEqual(coffeeText, catText);

  // A file upload (decoded by createImageBitmap rather than an <img>).
  await page.getByTestId('cap-file').setInputFiles(join(SAMPLES, 'rocket.jpg'));
  const rocketText = await waitForCaption(page, coffeeText);
  assert.equal(rocketText, (await nodeModel.caption(await pagePixels(page, 'rocket.jpg'), { beam: 1 })).text);

  // A file that is not an image is a message, and the tab still works afterwards.
  await page.getByTestId('cap-file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hi') });
  await page.waitForFunction(() => !document.getElementById('cap-error').hidden);
  assert.match(await page.locator('#cap-error').textContent(), /notes\.txt is not an image/);

  // The camera (Chromium's fake device): opened on click, one frame captioned, then stopped.
  await page.getByTestId('cap-camera').click();
  await page.waitForFunction(() => document.getElementById('cap-video').videoWidth > 0, null, { timeout: 20_000 });
  await page.locator('#cap-snap').click();
  const cameraText = await waitForCaption(page, rocketText);
  assert.ok(cameraText.length > 0);
  assert.equal(await page.locator('#cap-camera-box').isHidden(), true);
  assert.equal(await page.evaluate(() => document.getElementById('cap-video').srcObject), null, 'the camera stream is stopped');

  // Phone width.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: screenshotPath('caption-390'), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than a 390px screen`);

  const ggufs = requests.filter((url) => url.endsWith('.gguf'));
  assert.equal(ggufs.length, 2, 'each model file was fetched once (the second model back from the cache)');
  assert.equal(new Set(ggufs).size, 2);
  const offsite = offsiteRequests(requests, origin);
  assert.deepEqual(offsite, [], 'requests left the page origin');
  assert.deepEqual(consoleErrors, []);
  await page.close();
});

test('in the browser caption() takes ImageData, ImageBitmap (transferred), <img> and <canvas> in a worker', async () => {
  const page = await context.newPage();
  await page.goto(`${origin}/`);
  const result = await page.evaluate(async () => {
    const { loadModel } = await import('/lib/index.mjs');
    const message = (promise) => promise.then(() => 'resolved', (error) => error.message);
    const model = await loadModel('/models/weights/captioner.gguf');
    const image = new Image();
    image.src = '/app/samples/astronaut.jpg';
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.naturalWidth;
    canvas.height = image.naturalHeight;
    canvas.getContext('2d').drawImage(image, 0, 0);
    const imageData = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const bitmap = await createImageBitmap(canvas);
    const out = { inWorker: model.inWorker, task: model.info.task };
    const fromData = await model.caption(imageData, { beam: 2 });
    out.fromData = { text: fromData.text, rows: fromData.attention.rows, cols: fromData.attention.cols,
                     grid: [fromData.gridHeight, fromData.gridWidth], first: Array.from(fromData.attention.data.slice(0, 49)) };
    out.fromBitmap = (await model.caption(bitmap, { beam: 2 })).text;
    out.bitmapClosed = bitmap.width === 0;
    out.fromImage = (await model.caption(image, { beam: 2 })).text;
    out.fromCanvas = (await model.caption(canvas, { beam: 2 })).text;
    out.errors = {
      number: await message(model.caption(7)),
      zero: await message(model.caption(new ImageData(1, 1), { beam: 0 })),
      length: await message(model.caption({ data: new Uint8ClampedArray(10), width: 2, height: 2 })),
      huge: await message(model.caption({ data: new Uint8ClampedArray(4), width: 9000, height: 9000 })),
      closedBitmap: await message(model.caption(bitmap)),
      translate: await message(model.translate('A dog.')),
    };
    out.after = (await model.caption(imageData, { beam: 2 })).text;
    await model.dispose();
    return out;
  });
  assert.equal(result.inWorker, true);
  assert.equal(result.task, 'caption');
  const expected = await nodeModel.caption(await pagePixels(page, 'astronaut.jpg'), { beam: 2 });
  assert.equal(result.fromData.text, expected.text);
  assert.equal(result.fromData.rows, expected.tokens.length);
  assert.equal(result.fromData.cols, 49);
  assert.deepEqual(result.fromData.grid, [7, 7]);
  result.fromData.first.forEach((value, j) => assert.ok(Math.abs(value - expected.attention.data[j]) < 1e-6));
  assert.deepEqual([result.fromBitmap, result.fromImage, result.fromCanvas, result.after], Array(4).fill(expected.text));
  assert.equal(result.bitmapClosed, true, 'the ImageBitmap was transferred to the worker');
  assert.match(result.errors.number, /needs an image/);
  assert.match(result.errors.zero, /beam must be/);
  assert.match(result.errors.length, /10 bytes, but 2 × 2 RGBA needs 16/);
  assert.match(result.errors.huge, /too large/);
  assert.match(result.errors.closedBitmap, /ImageBitmap was closed/);
  assert.match(result.errors.translate, /translate\(\) needs a translation model/);
  await page.close();
});
