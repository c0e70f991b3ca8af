// Browser end to end for the Self-attention tab: web/server.mjs serves a manifest that lists only the tiny
// Transformer fixture; headless Chromium (device pixel ratio 2) opens the tab, translates the long-range sample,
// and the model view, the head view canvas and its controls must show what the Node module computes for the same
// sentence, with no request leaving the origin. A decoder and a cross-attention line's tooltip carry each head's raw
// score: the module's, whose softmax over the row is the weight shown and whose rank is the rank shown; a masked
// (later) decoder position's is −∞; the head view's copied JSON carries the same raw scores (−∞ as null).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { repoRoot } from '../js/fixture_model.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';
import { copiedJson, screenshotPath } from './page_helpers.mjs';

const MODEL = join(repoRoot, 'tests/fixtures/transformer/tiny.gguf');
// A long-range sentence with "its" (the fixture's tokenizer splits it as "it" + "s"), typed into the box.
const SAMPLE = 'The Law will never be perfect, but its application should be just.';
const FIRST_CHIP = 'The woman is holding her baby while she walks.';  // the tab's first sample
const DPR = 2;

let site;
let origin;
let context;
let requests;
let expected;  // the Node module's translation of SAMPLE (greedy, as the tab runs it), with every raw score

before(async () => {
  const model = await loadModel(MODEL);
  expected = await model.translate(SAMPLE, { beam: 1, rawScores: true });
  await model.dispose();

  site = await startSite({
    prefix: 'attnlab-e2e-sa-',
    models: [{ from: MODEL, name: 'transformer.gguf', id: 'transformer-en-de', label: 'Transformer EN→DE',
               task: 'translate', arch: 'transformer', src: 'en', tgt: 'de', dtype: 'f32' }],
    viewport: { width: 1100, height: 900 },
    deviceScaleFactor: DPR,
  });
  ({ origin, context, requests } = site);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
});

after(async () => {
  await site?.close();
});

// Pixels of a canvas that are neither transparent nor white: the drawing is not blank.
function inkedPixels(page, selector) {
  return page.evaluate((sel) => {
    const canvas = document.querySelector(sel);
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let count = 0;
    for (let k = 0; k < data.length; k += 4) {
      if (data[k + 3] > 0 && (data[k] < 250 || data[k + 1] < 250 || data[k + 2] < 250)) ++count;
    }
    return count;
  }, selector);
}
const snapshot = (page) => page.evaluate(() => document.getElementById('sa-canvas').toDataURL());
// Mouse-driven redraws follow the event asynchronously: poll the head view for up to 5 s (a loaded machine can be
// slow to repaint) until `wanted(snapshot)` holds.
async function drawingBecomes(page, wanted) {
  for (let attempt = 0; attempt < 50; ++attempt) {
    if (wanted(await snapshot(page))) return true;
    await page.waitForTimeout(100);
  }
  return false;
}
const canvasData = async (page, name) => page.getByTestId('sa-canvas').getAttribute(`data-${name}`);

// The tooltip of the pinned query's next line (the keyboard: right arrow on the canvas), as its lines.
async function nextLineTip(page) {
  await page.getByTestId('sa-canvas').press('ArrowRight');
  const tip = page.getByTestId('figure-tip');
  await tip.waitFor({ state: 'visible' });
  return tip.locator('strong, span').allTextContents();
}

// One shown head's numbers from a line's tooltip: "head h: weight w (…), rank r of n, raw score s; entropy …".
function headNumbers(lines) {
  return lines.flatMap((line) => {
    const m = /^head (\d+): weight ([\d.]+) \([^)]*\), rank (\d+) of (\d+), raw score (−∞ \(masked\)|-?[\d.]+);/.exec(line);
    return m ? [{ head: Number(m[1]) - 1, weight: Number(m[2]), rank: Number(m[3]), of: Number(m[4]),
                  score: m[5].startsWith('−∞') ? -Infinity : Number(m[5]) }] : [];
  });
}

// Query i's row of one head of an AttentionTensor.
const headRow = (tensor, layer, head, i) =>
  Array.from(tensor.data.subarray(((layer * tensor.heads + head) * tensor.rows + i) * tensor.cols,
                                  ((layer * tensor.heads + head) * tensor.rows + i + 1) * tensor.cols));

test('self-attention tab: model view, head view drawn from the engine, controls redraw, nothing leaves the origin', async () => {
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
  page.on('pageerror', (error) => consoleErrors.push(error.message));
  await page.goto(`${origin}/`);

  const tab = page.getByRole('tab', { name: 'Self-attention' });
  await page.waitForFunction(() => !document.getElementById('tab-btn-selfattention').disabled);
  await tab.click();
  assert.equal(await tab.getAttribute('aria-selected'), 'true');
  assert.deepEqual(await page.locator('#sa-model option').allTextContents(), ['Transformer EN→DE']);
  assert.equal(await page.locator('#sa-samples .chip').first().textContent(), FIRST_CHIP);
  await page.locator('[data-testid="sa-run"]:not([disabled])').waitFor({ timeout: 60_000 });
  assert.equal(await page.getByTestId('sa-status').getAttribute('data-source'), 'network');

  await page.getByTestId('sa-input').fill(SAMPLE);
  await page.getByTestId('sa-run').click();
  await page.waitForFunction(() => document.getElementById('sa-output').textContent.length > 0 ||
                                   !document.getElementById('sa-error').hidden, null, { timeout: 60_000 });
  assert.equal(await page.locator('#sa-error').isHidden(), true, await page.locator('#sa-error').textContent());
  assert.equal(await page.getByTestId('sa-output').textContent(), expected.text);

  // Encoder self-attention: L × H heatmaps, and the head view shows the module's source tokens on both sides.
  const encoder = expected.encoderSelfAttention;
  const grid = page.getByTestId('sa-grid');
  assert.equal(await grid.locator('.sa-thumb').count(), encoder.layers * encoder.heads);
  assert.equal(await grid.getAttribute('data-layers'), String(encoder.layers));
  assert.ok(await inkedPixels(page, '#sa-grid .sa-thumb canvas') > 0, 'the first heatmap is blank');
  assert.deepEqual(JSON.parse(await canvasData(page, 'left-tokens')), expected.sourceTokens);
  assert.deepEqual(JSON.parse(await canvasData(page, 'right-tokens')), expected.sourceTokens);
  assert.equal(await page.locator('#sa-layer option').count(), encoder.layers);
  assert.equal(await page.locator('#sa-heads input[type="checkbox"]:checked').count(), encoder.heads);
  assert.match(await page.locator('.lead', { hasText: 'Source = Target' }).textContent(),
               /each word scores every other word in one step/);

  // The head view is drawn, crisp: the backing store is devicePixelRatio times its CSS size.
  const canvas = page.getByTestId('sa-canvas');
  const size = await canvas.evaluate((c) => ({ width: c.width, css: c.clientWidth, height: c.height, cssHeight: c.clientHeight }));
  assert.equal(size.width, Math.round(size.css * DPR));
  assert.equal(size.height, Math.round(size.cssHeight * DPR));
  assert.ok(await inkedPixels(page, '#sa-canvas') > 1000, 'the head view is blank');

  // Layer and head controls change the drawing.
  const layer1 = await snapshot(page);
  await page.getByTestId('sa-layer').selectOption('1');
  assert.equal(await canvasData(page, 'layer'), '1');
  const layer2 = await snapshot(page);
  assert.notEqual(layer2, layer1, 'switching the layer did not change the drawing');
  await page.locator('#sa-heads input[value="0"]').uncheck();
  assert.equal(await canvasData(page, 'heads'), Array.from({ length: encoder.heads - 1 }, (_, h) => h + 1).join(','));
  assert.notEqual(await snapshot(page), layer2, 'hiding a head did not change the drawing');

  // A heatmap of the model view opens in the head view.
  await grid.locator('.sa-thumb[data-layer="0"][data-head="2"]').click();
  assert.equal(await canvasData(page, 'layer'), '0');
  assert.equal(await canvasData(page, 'heads'), '2');
  assert.equal(await grid.locator('.sa-thumb[aria-pressed="true"]').count(), 1);
  assert.equal(await page.getByTestId('sa-layer').inputValue(), '0');

  // Hovering a token keeps only its lines, and the readout names it.
  const its = expected.sourceTokens.indexOf('s', expected.sourceTokens.indexOf('it'));
  assert.ok(its > 0, 'the sample has "its"');
  const all = await snapshot(page);
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + 12, box.y + 26 + (its + 0.5) * 22);
  assert.ok(await drawingBecomes(page, (now) => now !== all), 'hovering a token did not change the drawing');
  assert.match(await page.locator('#sa-readout').textContent(), /^“·s” attends most to/);
  await canvas.screenshot({ path: screenshotPath('selfattention-hover') });
  await page.mouse.move(box.x + box.width / 2, box.y - 40);  // leave the canvas: all lines again
  assert.ok(await drawingBecomes(page, (now) => now === all), 'leaving the canvas did not bring back every line');

  // The keyboard does the same: arrow keys on the canvas pick a token, the picker follows.
  await canvas.focus();
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.getByTestId('sa-focus').inputValue(), '0');
  await page.keyboard.press('Escape');
  assert.equal(await page.getByTestId('sa-focus').inputValue(), '');

  // Decoder self-attention and cross-attention: the decoder side is <s> then the output tokens but the last.
  const decoderInputs = ['<s>', ...expected.targetTokens.slice(0, -1)];
  for (const [kind, tensor, right] of [['decoder', expected.decoderSelfAttention, decoderInputs],
                                       ['cross', expected.crossAttention, expected.sourceTokens]]) {
    await page.locator(`input[name="sa-kind"][value="${kind}"]`).check();
    assert.equal(await canvasData(page, 'kind'), kind);
    assert.equal(await grid.locator('.sa-thumb').count(), tensor.layers * tensor.heads, kind);
    assert.deepEqual(JSON.parse(await canvasData(page, 'left-tokens')), decoderInputs, kind);
    assert.deepEqual(JSON.parse(await canvasData(page, 'right-tokens')), right, kind);
    assert.ok(await inkedPixels(page, '#sa-canvas') > 1000, `the ${kind} head view is blank`);
  }
  // A line's tooltip in either view carries each shown head's raw score: the module's, its softmax over the row the
  // weight shown, its rank among the row's scores the rank shown; the legend line says what the score is.
  for (const [kind, weights, scores, meaning] of [
    ['decoder', expected.decoderSelfAttention, expected.decoderSelfScores, /q and k of two decoder positions.*causal mask/],
    ['cross', expected.crossAttention, expected.crossScores, /q of the decoder position, k of the source token/]]) {
    await page.locator(`input[name="sa-kind"][value="${kind}"]`).check();
    await canvas.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');  // query 1: <s> and the first output word before it
    const lines = await nextLineTip(page);  // its line to key 0
    const layer = Number(/, layer (\d+)$/.exec(lines[0])[1]) - 1;
    const shown = headNumbers(lines);
    assert.ok(shown.length > 0, `${kind}: no head with a raw score in ${lines.join(' | ')}`);
    assert.match(lines.at(-1), meaning, kind);
    for (const { head, weight, rank, of, score } of shown) {
      const row = headRow(scores, layer, head, 1);
      assert.equal(of, row.length, `${kind} head ${head + 1}`);
      assert.ok(Number.isFinite(score) && Math.abs(score - row[0]) <= 1e-3, `${kind} head ${head + 1}: raw score ${score} vs ${row[0]}`);
      const top = Math.max(...row);
      const sum = row.reduce((acc, x) => acc + Math.exp(x - top), 0);
      assert.ok(Math.abs(Math.exp(row[0] - top) / sum - weight) <= 1e-3, `${kind} head ${head + 1}: softmax vs weight ${weight}`);
      assert.ok(Math.abs(headRow(weights, layer, head, 1)[0] - weight) <= 1e-3, `${kind} head ${head + 1}: the module's weight`);
      assert.equal(1 + row.filter((x) => x > row[0]).length, rank, `${kind} head ${head + 1}: rank by raw score`);
    }
    if (kind === 'decoder' && weights.rows > 2) {
      await nextLineTip(page);
      const masked = headNumbers(await nextLineTip(page));  // key 2, a later position than query 1
      assert.ok(masked.length > 0 && masked.every((n) => n.score === -Infinity && n.weight === 0), JSON.stringify(masked));
    }
    await page.keyboard.press('Escape');

    // The head view's JSON carries the same raw scores as the tooltips, every row of every shown head (the causal
    // mask's −∞ as null, which JSON can hold), next to the weights.
    const json = await copiedJson(page, '#sa-head-tools');
    assert.equal(json.kind, kind);
    assert.equal(json.layer, layer + 1);
    assert.match(json.rawScoreMeaning, meaning, kind);
    const exported = Object.keys(json.rawScores);
    assert.deepEqual(exported, Object.keys(json.weights), kind);
    assert.ok(exported.length > 0, kind);
    for (const name of exported) {
      const head = Number(name.replace('head ', '')) - 1;
      json.rawScores[name].forEach((got, i) => headRow(scores, layer, head, i).forEach((want, j) => {
        if (want === -Infinity) assert.equal(got[j], null, `${kind} ${name} [${i}][${j}]`);
        else assert.ok(Math.abs(got[j] - want) <= 1e-3, `${kind} ${name} [${i}][${j}]: ${got[j]} vs ${want}`);
      }));
      assert.equal(json.rawScores[name].length, scores.rows, `${kind} ${name}`);
    }
    if (kind === 'decoder') assert.ok(json.rawScores[exported[0]][0].slice(1).every((v) => v === null), 'row 0 is masked after key 0');
  }

  // The decoder heatmaps are causal with queries as rows: position 0 (<s>) sees only itself (weight 1, top left),
  // nothing above the diagonal (top right) is inked.
  await page.locator('input[name="sa-kind"][value="decoder"]').check();
  const corners = await page.evaluate(() => {
    const canvas = document.querySelector('#sa-grid .sa-thumb canvas');
    const ctx = canvas.getContext('2d');
    const pixel = (x, y) => Array.from(ctx.getImageData(x, y, 1, 1).data.subarray(0, 3));
    return { topLeft: pixel(1, 1), topRight: pixel(canvas.width - 2, 1) };
  });
  assert.deepEqual(corners.topRight, [255, 255, 255]);
  assert.ok(corners.topLeft.some((c) => c < 200), `top left ${corners.topLeft}`);
  await page.locator('input[name="sa-kind"][value="encoder"]').check();

  await page.screenshot({ path: screenshotPath('selfattention'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForFunction(() => document.getElementById('sa-canvas').clientWidth < 390);
  const phone = await canvas.evaluate((c) => ({ width: c.width, css: c.clientWidth }));
  assert.equal(phone.width, Math.round(phone.css * DPR), 'the head view was redrawn at the new width');
  await page.screenshot({ path: screenshotPath('selfattention-390'), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than a 390px screen`);

  const offsite = offsiteRequests(requests, origin);
  assert.deepEqual(offsite, [], 'requests left the origin');
  assert.deepEqual(consoleErrors, []);
  await page.close();
});
