// The page as a place to read attention numbers, in headless Chromium at 1280×800 and 390×844 (issue 23): every
// heatmap cell's tooltip (hover, keyboard focus, touch tap) carries the module's weight, raw score, rank and row
// entropy; cells are an ARIA grid with a roving tabindex; each figure has a legend and exports a PNG that decodes,
// an SVG that parses and JSON on the clipboard equal to the module's numbers; the URL round-trips tab, model, input
// and word (reopening it reruns); errors sit under the control that caused them and clear the stale result; a cut
// paste, a paragraph and a stop at the maximum length are said; model and beam changes rerun; a failed download
// offers Retry; the tab strip scrolls on a phone with a cue.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';

import { loadModel } from '../../web/lib/index.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';
import { R, WIDTHS, copiedJson, downloadOf, firstLineTip, isPhone, newPage as newPageOf, row, runSelfAttention, tap } from './page_helpers.mjs';

const SENTENCE = 'A dog runs.';

let site;
let origin;
let context;
let modules;   // Node module models of the fixtures, for the expected numbers
let expected;  // the Node module's translations the page must show

before(async () => {
  const model = (id, src, extra) => ({ from: R + src, id, label: id, dtype: 'f32', ...extra });
  site = await startSite({
    prefix: 'page-figures-',
    models: [
      model('rnn-a', 'tests/fixtures/rnn/additive.gguf', { task: 'translate', arch: 'bahdanau', src: 'en', tgt: 'de' }),
      model('rnn-b', 'tests/fixtures/rnn/dot.gguf', { task: 'translate', arch: 'bahdanau', src: 'en', tgt: 'de' }),
      model('cmp-dot', 'tests/fixtures/rnn/dot.gguf', { task: 'translate', arch: 'luong-dot', src: 'en', tgt: 'de', group: 'score-functions' }),
      model('tf', 'tests/fixtures/transformer/tiny.gguf', { task: 'translate', arch: 'transformer', src: 'en', tgt: 'de' }),
      model('cap', 'tests/fixtures/caption/tiny_encoder_model.gguf', { task: 'caption', arch: 'show-attend-tell', src: 'image', tgt: 'en' }),
    ],
  });
  ({ origin, context } = site);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  modules = {
    a: await loadModel(R + 'tests/fixtures/rnn/additive.gguf'),
    b: await loadModel(R + 'tests/fixtures/rnn/dot.gguf'),
    tf: await loadModel(R + 'tests/fixtures/transformer/tiny.gguf'),
  };
  expected = {
    a: await modules.a.translate(SENTENCE, { beam: 4 }),
    a1: await modules.a.translate(SENTENCE, { beam: 1 }),
    b: await modules.b.translate(SENTENCE, { beam: 4 }),
  };
});

after(async () => {
  for (const m of Object.values(modules ?? {})) await m.dispose();
  await site?.close();
});

const entropy = (weights) => weights.reduce((h, w) => (w > 0 ? h - w * Math.log2(w) : h), 0);
const rank = (weights, j) => 1 + weights.filter((w) => w > weights[j]).length;

// What the tooltip of cell (i, j) must say, from the module's own numbers.
function assertCellTip(text, t, i, j) {
  const weights = row(t.attention, i);
  assert.match(text, new RegExp(`weight ${weights[j].toFixed(3)} `), text);
  assert.match(text, new RegExp(`rank ${rank(weights, j)} of ${weights.length} in the row`), text);
  assert.match(text, new RegExp(`raw score ${row(t.scores, i)[j].toFixed(3)} `), text);
  assert.match(text, new RegExp(`row entropy ${entropy(weights).toFixed(2)} bits`), text);
}

const newPage = (viewport) => newPageOf(context, viewport);

async function translate(page, text) {
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30_000 });
  await page.fill('#translate-input', text);
  await page.click('#translate-run');
  await page.waitForFunction(() => !document.getElementById('translate-result').hidden ||
                                   !document.getElementById('translate-error').hidden, null, { timeout: 30_000 });
}

// A PNG that decodes: signature, IHDR, and IDAT inflating to exactly height rows of (1 + width × channels) bytes.
function assertPngDecodes(bytes) {
  assert.deepEqual([...bytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], 'PNG signature');
  let offset = 8;
  let header = null;
  const idat = [];
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') header = { width: data.readUInt32BE(0), height: data.readUInt32BE(4), depth: data[8], colour: data[9] };
    if (type === 'IDAT') idat.push(data);
    offset += 12 + length;
  }
  assert.ok(header && header.width > 0 && header.height > 0, 'IHDR');
  const channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[header.colour];
  assert.equal(header.depth, 8);
  const pixels = inflateSync(Buffer.concat(idat));
  assert.equal(pixels.length, header.height * (1 + header.width * channels), 'IDAT inflates to the image size');
  return header;
}

const svgShape = (page, text) => page.evaluate((svg) => {
  const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
  return { error: doc.querySelector('parsererror')?.textContent ?? null, root: doc.documentElement.nodeName,
           rects: doc.querySelectorAll('rect').length, lines: doc.querySelectorAll('line').length };
}, text);

const contrast = (page, selector, property) => page.evaluate(([sel, prop]) => {
  const parse = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
  const lum = (rgb) => {
    const [r, g, b] = rgb.map((v) => { const c = v / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const node = document.querySelector(sel);
  let back = node.parentElement;
  while (back && getComputedStyle(back).backgroundColor === 'rgba(0, 0, 0, 0)') back = back.parentElement;
  const [a, b] = [lum(parse(getComputedStyle(node)[prop])), lum(parse(getComputedStyle(back ?? document.body).backgroundColor))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}, [selector, property]);

for (const viewport of WIDTHS) {
  const phone = isPhone(viewport);
  test(`translate at ${viewport.width}×${viewport.height}: tooltips, keyboard, legend, export, URL, errors, notices, reruns`, async () => {
    const { page, errors } = await newPage(viewport);
    await page.goto(`${origin}/`);
    await translate(page, SENTENCE);
    assert.equal(await page.locator('#translate-output').textContent(), expected.a.text);
    const heatmap = page.getByTestId('translate-heatmap');
    const t = expected.a;

    // Tooltip of a cell: by hover on a desktop, by a touch tap on a phone; both with the module's numbers.
    const cell = heatmap.locator('.cell[data-row="1"][data-col="2"]');
    if (phone) await tap(page, cell);
    else await cell.hover();
    const tip = page.getByTestId('figure-tip');
    await tip.waitFor({ state: 'visible' });
    assertCellTip(await tip.textContent(), t, 1, 2);
    assert.equal(await page.getByRole('tab', { name: 'Translate' }).getAttribute('aria-selected'), 'true');

    // The keyboard: one cell in the tab order, arrow keys move it, the tooltip follows; every cell has a name.
    assert.equal(await heatmap.getAttribute('role'), 'grid');
    await heatmap.locator('.cell[data-row="0"][data-col="0"]').focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowDown');
    const focused = await page.evaluate(() => ({ row: document.activeElement.dataset.row, col: document.activeElement.dataset.col,
                                                 label: document.activeElement.getAttribute('aria-label'),
                                                 described: document.activeElement.getAttribute('aria-describedby') }));
    assert.deepEqual([focused.row, focused.col], ['1', '1']);
    assert.match(focused.label, /weight \d\.\d\d$/);
    assert.equal(focused.described, 'figure-tip');
    assert.equal(await heatmap.locator('.cell[tabindex="0"]').count(), 1);
    assertCellTip(await tip.textContent(), t, 1, 1);
    assert.equal(await heatmap.locator('.cell:not([aria-label])').count(), 0);
    await page.keyboard.press('Escape');

    // Legend and contrast of the controls.
    assert.equal(await page.locator('#translate-tools [data-testid="legend"]').isVisible(), true);
    assert.ok(await contrast(page, '#translate-input', 'borderTopColor') >= 3, 'the text box border is under 3:1');
    assert.ok(await contrast(page, '#model-select', 'borderTopColor') >= 3, 'the select border is under 3:1');

    // Export: a PNG that decodes, an SVG that parses with a cell per weight, JSON equal to the module's numbers.
    const png = await downloadOf(page, page.locator('#translate-tools [data-testid="export-png"]'));
    assert.match(png.name, /\.png$/);
    assertPngDecodes(png.bytes);
    const svg = await downloadOf(page, page.locator('#translate-tools [data-testid="export-svg"]'));
    const shape = await svgShape(page, svg.bytes.toString('utf8'));
    assert.equal(shape.error, null);
    assert.equal(shape.root, 'svg');
    assert.ok(shape.rects >= t.attention.rows * t.attention.cols, `${shape.rects} rects`);
    const json = await copiedJson(page, '#translate-tools');
    assert.deepEqual(json.targetTokens, t.targetTokens);
    assert.ok(Math.abs(json.attention[1][2] - row(t.attention, 1)[2]) < 1e-4);
    assert.ok(Math.abs(json.scores[0][0] - row(t.scores, 0)[0]) < 1e-4);

    // Tapping (or clicking) an output word selects it and stays on the tab; the URL names it; reopening reruns.
    const word = page.locator('#target-tokens .token').nth(2);
    if (phone) await tap(page, word);
    else await word.click();
    assert.equal(await word.getAttribute('aria-pressed'), 'true');
    assert.equal(await page.getByRole('tab', { name: 'Translate' }).getAttribute('aria-selected'), 'true');
    const url = new URL(page.url());
    const hash = new URLSearchParams(url.hash.slice(1));
    assert.deepEqual([hash.get('tab'), hash.get('model'), hash.get('text'), hash.get('word'), hash.get('beam')],
                     ['translate', 'rnn-a', SENTENCE, '3', '4']);
    const { page: again } = await newPage(viewport);
    await again.goto(url.href);
    await again.waitForFunction((text) => document.getElementById('translate-output').textContent === text, t.text,
                                { timeout: 30_000 });
    assert.equal(await again.locator('#target-tokens .token').nth(2).getAttribute('aria-pressed'), 'true');
    assert.equal(await again.getByTestId('translate-heatmap').locator('.cell.lit').count(), t.attention.cols);
    await again.close();

    // The beam width reruns; so does the model (and the old result goes at once).
    await page.selectOption('#beam-select', '1');
    await page.waitForFunction((text) => document.getElementById('translate-output').textContent === text &&
                                         document.getElementById('translate-run').getAttribute('aria-busy') === null,
                               expected.a1.text, { timeout: 30_000 });
    await page.selectOption('#beam-select', '4');
    await page.waitForFunction(() => document.getElementById('translate-run').getAttribute('aria-busy') === null);
    await page.selectOption('#model-select', 'rnn-b');
    await page.waitForFunction((text) => document.getElementById('translate-output').textContent === text &&
                                         !document.getElementById('translate-result').hidden, expected.b.text, { timeout: 30_000 });
    await page.selectOption('#model-select', 'rnn-a');
    await page.waitForFunction((text) => document.getElementById('translate-output').textContent === text &&
                                         !document.getElementById('translate-result').hidden, expected.a.text, { timeout: 30_000 });

    // An error sits right under the button, and the stale result is gone.
    await page.fill('#translate-input', '   ');
    assert.equal(await page.locator('#translate-result').isHidden(), true, 'editing the text leaves the old result');
    await page.click('#translate-run');
    const error = page.getByTestId('translate-error');
    await error.waitFor({ state: 'visible' });
    assert.match(await error.textContent(), /empty/);
    const [run, box] = [await page.locator('#translate-run').boundingBox(), await error.boundingBox()];
    assert.ok(box.y >= run.y + run.height - 1 && box.y - (run.y + run.height) < 40,
              `the error is ${box.y - (run.y + run.height)} px below the button`);

    // A paste over the box's capacity is cut with a notice; a paragraph goes sentence by sentence.
    await page.fill('#translate-input', 'x'.repeat(5000));
    const notice = page.getByTestId('translate-input-notice');
    assert.equal(await notice.isVisible(), true);
    assert.match(await notice.textContent(), /the text had 5,000, so the last 3,000 were cut/);
    assert.equal((await page.inputValue('#translate-input')).length, 2000);
    await translate(page, 'A dog runs. A cat sleeps.');
    assert.equal(await notice.isHidden(), true);
    const sentences = page.getByTestId('translate-sentences').locator('[role="radio"]');
    assert.equal(await sentences.count(), 2);
    const second = await modules.a.translate('A cat sleeps.', { beam: 4 });
    await sentences.nth(1).click();
    assert.equal(await heatmap.getAttribute('data-rows'), String(second.attention.rows));
    assert.match(await page.locator('#translate-output').textContent(), new RegExp(second.text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));

    // A sentence the fixture decodes up to the automatic limit (1.5 × source tokens + 10) says so.
    const cut = await modules.a.translate('a a a a a a a', { beam: 4 });
    assert.equal(cut.targetTokens.length, Math.floor(1.5 * cut.sourceTokens.length + 10), 'the fixture no longer loops here');
    await translate(page, 'a a a a a a a');
    assert.match(await page.getByTestId('translate-notices').textContent(), /stopped at the maximum length \(22 tokens\)/);
    await translate(page, SENTENCE);   // the cut's notice goes (the random fixture is unsure of all it writes)
    assert.doesNotMatch(await page.getByTestId('translate-notices').textContent(), /maximum length/);

    // On a wide screen every tab is whole inside the strip (none cut off at its edge); on a phone the strip
    // scrolls, with a fade at the edge as the cue.
    if (!phone) {
      const cut = await page.evaluate(() => {
        const strip = document.querySelector('.tabs').getBoundingClientRect();
        return [...document.querySelectorAll('.tabs [role="tab"]')]
          .filter((b) => { const r = b.getBoundingClientRect(); return r.left < strip.left - 0.5 || r.right > strip.right + 0.5; })
          .map((b) => b.textContent);
      });
      assert.deepEqual(cut, [], 'tabs cut off at the edge of the strip');
    }
    if (phone) {
      const strip = await page.evaluate(() => {
        const tabs = document.querySelector('.tabs');
        return { overflow: tabs.scrollWidth > tabs.clientWidth, cue: tabs.classList.contains('more-right'),
                 page: document.documentElement.scrollWidth - window.innerWidth };
      });
      assert.deepEqual([strip.overflow, strip.cue], [true, true]);
      assert.ok(strip.page <= 0, `the page is ${strip.page}px wider than the screen`);
    }
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test('a failed download offers Retry, and Retry loads the model', async () => {
  const { page, errors } = await newPage(WIDTHS[0]);
  let fail = true;
  await page.route('**/models/weights/rnn-b.gguf', (route) => (fail ? route.abort('failed') : route.continue()));
  await page.goto(`${origin}/`);
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30_000 });
  await page.evaluate(() => caches.delete('attnlab-v1'));  // the tests above cached rnn-b: download it again
  await page.selectOption('#model-select', 'rnn-b');
  const retry = page.getByTestId('model-retry');
  await retry.waitFor({ state: 'visible', timeout: 30_000 });
  assert.equal(await page.locator('#model-status').getAttribute('class'), 'model-status error');
  assert.equal(await page.locator('#translate-run').isDisabled(), true);
  fail = false;
  await retry.click();
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30_000 });
  assert.match(await page.locator('#model-status-text').textContent(), /rnn-b ready/);
  assert.equal(await retry.count(), 0);
  assert.deepEqual(errors.filter((e) => !/Failed to load resource/.test(e)), []);
  await page.close();
});

test('score functions, the Transformer card: a cell\'s raw score is the last layer\'s mean over heads of q·k ÷ √d_k, and says so', async () => {
  const { page, errors } = await newPage(WIDTHS[0]);
  const text = 'A dog runs.';
  const t = await modules.tf.translate(text, { beam: 1, rawScores: true });
  await page.goto(`${origin}/`);
  await page.getByRole('tab', { name: 'Score functions' }).click();
  await page.fill('#compare-input', text);
  await page.selectOption('#compare-beam', '1');
  await page.click('#compare-run');
  await page.getByTestId('compare-conclusion').waitFor({ state: 'visible', timeout: 30_000 });
  const card = page.locator('#compare-grid .compare-card[data-arch="transformer"]');
  assert.equal(await card.locator('.output').textContent(), t.text);
  const [i, j] = [Math.min(1, t.attention.rows - 1), 1];
  await page.mouse.move(0, 0);  // a cell under a resting mouse would show its own tooltip
  await card.locator(`.cell[data-row="${i}"][data-col="${j}"]`).focus();
  const tipText = await page.getByTestId('figure-tip').textContent();
  assertCellTip(tipText, t, i, j);
  assert.match(tipText, /raw score -?[\d.]+ \(the last layer's mean over heads of q·k ÷ √d_k, before the softmax/, tipText);
  // Translation.scores is the search's own; the re-run's per-head scores average to it.
  const { layers, heads, rows, cols } = t.crossScores;
  let mean = 0;
  for (let h = 0; h < heads; ++h) mean += t.crossScores.data[(((layers - 1) * heads + h) * rows + i) * cols + j] / heads;
  assert.ok(Math.abs(mean - row(t.scores, i)[j]) < 1e-3, `${mean} vs ${row(t.scores, i)[j]}`);
  assert.deepEqual(errors, []);
  await page.close();
});

for (const viewport of WIDTHS) {
  test(`self-attention, score functions and engine at ${viewport.width}×${viewport.height}: line numbers, legends, exports, URL`, async () => {
    const { page, errors } = await newPage(viewport);
    const text = 'A dog runs on the beach.';
    const t = await modules.tf.translate(text, { beam: 1 });
    await runSelfAttention(page, origin, text, t.text);

    // Keyboard: pick query 1 (down twice from none), then walk its lines: the tooltip has every head's weight.
    const tipText = await firstLineTip(page);
    const e = t.encoderSelfAttention;
    for (let h = 0; h < e.heads; ++h) {
      const w = e.data[((0 * e.heads + h) * e.rows + 1) * e.cols + 0];
      assert.match(tipText, new RegExp(`head ${h + 1}: weight ${w.toFixed(3)} `), tipText);
    }
    assert.equal(await page.locator('#sa-head-tools [data-testid="legend"]').isVisible(), true);
    assert.equal(await page.locator('#sa-grid-tools [data-testid="legend"]').isVisible(), true);
    const svg = await downloadOf(page, page.locator('#sa-head-tools [data-testid="export-svg"]'));
    const shape = await svgShape(page, svg.bytes.toString('utf8'));
    assert.equal(shape.error, null);
    assert.ok(shape.lines > 0, 'the head view SVG has no lines');
    assertPngDecodes((await downloadOf(page, page.locator('#sa-head-tools [data-testid="export-png"]'))).bytes);
    assertPngDecodes((await downloadOf(page, page.locator('#sa-grid-tools [data-testid="export-png"]'))).bytes);

    // Layer, heads and word in the URL; a new page on it reruns and shows the same view.
    await page.getByTestId('sa-layer').selectOption('1');
    await page.locator('#sa-heads input[value="0"]').uncheck();
    const hash = new URLSearchParams(new URL(page.url()).hash.slice(1));
    assert.deepEqual([hash.get('tab'), hash.get('model'), hash.get('text'), hash.get('layer'), hash.get('word')],
                     ['selfattention', 'tf', text, '2', '2']);
    const { page: again } = await newPage(viewport);
    await again.goto(page.url());
    await again.waitForFunction(([out, heads]) => document.getElementById('sa-output').textContent === out &&
                                                  document.getElementById('sa-canvas').dataset.heads === heads,
                                [t.text, hash.get('heads').split(',').map((h) => Number(h) - 1).join(',')], { timeout: 30_000 });
    assert.equal(await again.getByTestId('sa-canvas').getAttribute('data-layer'), '1');
    assert.equal(await again.getByTestId('sa-focus').inputValue(), '1');
    await again.close();

    // Two sentences run as one input: the tab says so.
    await page.fill('#sa-input', 'A dog runs. A cat sleeps.');
    await page.click('#sa-run');
    await page.locator('#sa-notices:not([hidden])').waitFor({ timeout: 30_000 });
    assert.match(await page.locator('#sa-notices').textContent(), /These are 2 sentences, run as one input/);

    // Score functions: one error next to the box for an empty input; a conclusion; heatmaps inside their cards.
    await page.getByRole('tab', { name: 'Score functions' }).click();
    await page.fill('#compare-input', '');
    await page.click('#compare-run');
    assert.equal(await page.getByTestId('compare-error').isVisible(), true);
    assert.equal(await page.locator('#compare-grid .output.error').count(), 0);
    await page.fill('#compare-input', 'A dog runs.');
    await page.selectOption('#compare-beam', '1');
    await page.click('#compare-run');
    await page.getByTestId('compare-conclusion').waitFor({ state: 'visible', timeout: 30_000 });
    assert.match(await page.getByTestId('compare-conclusion').textContent(), /attends most sharply .* bits/);
    const dotCard = page.locator('#compare-grid .compare-card[data-arch="luong-dot"]');
    const dot = await modules.b.translate('A dog runs.', { beam: 1 });
    assert.equal(await dotCard.locator('.output').textContent(), dot.text);
    const fits = await page.evaluate(() => [...document.querySelectorAll('#compare-grid .heatmap-scroll')]
      .filter((box) => box.firstElementChild.childElementCount > 0)
      .map((box) => box.scrollWidth - box.clientWidth));
    assert.ok(fits.length >= 2 && fits.every((over) => over <= 1), `heatmaps wider than their cards by ${fits}`);
    assert.equal(await dotCard.locator('[data-testid="legend"]').isVisible(), true);
    await page.mouse.move(0, 0);  // a cell scrolled under a resting mouse would show its own tooltip
    await dotCard.locator('.cell[data-row="0"][data-col="0"]').focus();
    assertCellTip(await page.getByTestId('figure-tip').textContent(), dot, 0, 0);

    // Engine: the build, the loaded models with sizes, the cache with a Clear button that empties it.
    await page.getByRole('tab', { name: 'Engine' }).click();
    await page.waitForFunction(() => document.getElementById('engine-status').textContent === 'ready', null, { timeout: 30_000 });
    assert.match(await page.getByTestId('engine-threads').textContent(), /thread|isolated/);
    assert.match(await page.getByTestId('engine-models').textContent(), /tf \(f32, \d+ kB\)/);
    await page.waitForFunction(() => /\.gguf/.test(document.getElementById('engine-cache').textContent));
    await page.getByTestId('engine-clear').click();
    await page.waitForFunction(() => /Nothing stored/.test(document.getElementById('engine-cache').textContent));
    assert.deepEqual(await page.evaluate(() => caches.keys()), []);
    assert.deepEqual(errors, []);
    await page.close();
  });
}

for (const viewport of WIDTHS) {
  test(`caption at ${viewport.width}×${viewport.height}: the sharpest word first, cell numbers, legend, export, URL, rerun, errors`, async () => {
    const { page, errors } = await newPage(viewport);
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => !document.getElementById('tab-btn-caption').disabled);
    await page.getByRole('tab', { name: 'Caption' }).click();
    await page.waitForFunction(() => /ready/.test(document.getElementById('cap-status-text').textContent), null, { timeout: 30_000 });
    await page.locator('.cap-sample[data-sample="cat"]').click();
    await page.locator('#cap-result:not([hidden])').waitFor({ timeout: 30_000 });

    // The engine's numbers, through the JSON export (the clipboard).
    const json = await copiedJson(page, '#cap-tools');
    assert.equal(json.text, await page.getByTestId('cap-output').getAttribute('data-text'));
    const cells = json.gridHeight * json.gridWidth;
    assert.equal(json.attention.length, json.tokens.length);
    let sharpest = 0;
    json.attention.forEach((r, i) => { if (entropy(r) < entropy(json.attention[sharpest]) - 1e-9) sharpest = i; });
    assert.equal(json.selected, sharpest);
    assert.equal(await page.locator('#cap-output .cap-word').nth(sharpest).getAttribute('aria-pressed'), 'true');
    assert.match(await page.getByTestId('cap-readout').textContent(), /Shown first: the word whose attention is most concentrated/);

    // A cell's tooltip (focus, then a tap on a phone or a hover on a desktop) with that word's weight, rank, entropy.
    assert.equal(await page.locator('#cap-cells .cell').count(), cells);
    await page.mouse.move(0, 0);
    const cell = page.locator(`#cap-cells .cell[data-row="${json.gridHeight - 1}"][data-col="1"]`);
    await cell.focus();
    const k = (json.gridHeight - 1) * json.gridWidth + 1;
    const weights = json.attention[sharpest];
    const tip = page.getByTestId('figure-tip');
    for (const how of ['focus', isPhone(viewport) ? 'tap' : 'hover']) {
      if (how === 'tap') await tap(page, cell);
      if (how === 'hover') await cell.hover();
      const text = await tip.textContent();
      assert.match(text, new RegExp(`weight ${weights[k].toFixed(3)} `), `${how}: ${text}`);
      assert.match(text, new RegExp(`rank ${rank(weights, k)} of ${cells}`), `${how}: ${text}`);
      assert.match(text, new RegExp(`entropy ${entropy(weights).toFixed(2)} bits`), `${how}: ${text}`);
    }
    assert.equal(await page.locator('#cap-tools [data-testid="legend"]').isVisible(), true);
    assertPngDecodes((await downloadOf(page, page.locator('#cap-tools [data-testid="export-png"]'))).bytes);
    const shape = await svgShape(page, (await downloadOf(page, page.locator('#cap-tools [data-testid="export-svg"]'))).bytes.toString('utf8'));
    assert.equal(shape.error, null);
    assert.ok(shape.rects >= cells, `${shape.rects} rects for ${cells} cells`);

    // Another word, in the URL; a new page on it captions the same sample and shows that word.
    const other = sharpest === 0 ? 1 : 0;
    await page.locator('#cap-output .cap-word').nth(other).click();
    const hash = new URLSearchParams(new URL(page.url()).hash.slice(1));
    assert.deepEqual([hash.get('tab'), hash.get('model'), hash.get('sample'), hash.get('word'), hash.get('beam')],
                     ['caption', 'cap', 'cat', String(other + 1), '3']);
    const { page: again } = await newPage(viewport);
    await again.goto(page.url());
    await again.locator('#cap-result:not([hidden])').waitFor({ timeout: 30_000 });
    assert.equal(await again.getByTestId('cap-output').getAttribute('data-text'), json.text);
    assert.equal(await again.locator('#cap-output .cap-word').nth(other).getAttribute('aria-pressed'), 'true');
    await again.close();

    // A beam change captions the photo again (the old caption goes first); the URL follows.
    await page.getByTestId('cap-beam').selectOption('1');
    await page.locator('#cap-result:not([hidden])').waitFor({ timeout: 30_000 });
    await page.waitForFunction(() => document.getElementById('cap-stage').getAttribute('aria-busy') === null);
    assert.equal(new URLSearchParams(new URL(page.url()).hash.slice(1)).get('beam'), '1');

    // A file that is not an image: the error sits under the drop zone and the old caption is gone.
    await page.getByTestId('cap-file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') });
    const error = page.getByTestId('cap-error');
    await error.waitFor({ state: 'visible' });
    assert.match(await error.textContent(), /notes\.txt is not an image/);
    assert.equal(await page.locator('#cap-result').isHidden(), true, 'the old caption stayed next to the error');
    const [drop, box] = [await page.getByTestId('cap-drop').boundingBox(), await error.boundingBox()];
    assert.ok(box.y >= drop.y + drop.height - 1 && box.y - (drop.y + drop.height) < 40,
              `the error is ${box.y - (drop.y + drop.height)} px below the drop zone`);
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test('offline: once the engine and a model are cached, a reload without a network translates (still cross-origin isolated)', async () => {
  const { page, errors } = await newPage(WIDTHS[1]);
  await page.goto(`${origin}/`);
  await translate(page, SENTENCE);
  await page.waitForFunction(() => document.documentElement.dataset.offline === 'ready', null, { timeout: 30_000 });
  await context.setOffline(true);
  try {
    await page.reload();
    await translate(page, SENTENCE);
    assert.equal(await page.locator('#translate-output').textContent(), expected.a.text);
    assert.match(await page.locator('#model-status-text').textContent(), /from cache/);
    assert.equal(await page.evaluate(() => globalThis.crossOriginIsolated), true);
  } finally {
    await context.setOffline(false);
  }
  assert.deepEqual(errors, []);
  assert.deepEqual(offsiteRequests(site.requests, origin), []);
  await page.close();
});
