// The Compare tab and the neuron view (issue 23), in headless Chromium at 1280×800 and 390×844. The sample pair is whole
// words in the shipped EN→DE models. Compare: two
// sentences through one model, q8_0 and f16 weights, beam 1 and a wider beam, each side the Node module's
// translation and the summary's numbers the module's (the largest attention difference between the formats, the
// log-probabilities of the beams). The neuron view of the Self-attention tab: q·k ÷ √d_k of the engine's queries
// and keys is the engine's raw score, its softmax the engine's weight, for the head and query picked; the line
// tooltips carry the raw scores. Attention explained's scaled dot-product panel, opened from the neuron view:
// the q·k it computes from the engine's q and k, ÷ √d_k, and its softmax equal the engine's scores and weights
// (1e-4), for the head and word picked there and for its own pickers. No console errors, nothing off the origin,
// nothing wider than a phone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { loadModel } from '../../web/lib/index.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';
import { R, WIDTHS, close, firstLineTip, isPhone, newPage as newPageOf, pageFits, row, runSelfAttention } from './page_helpers.mjs';

const PAIR = ['The animal is not crossing the street because it is too tired.',
              'The animal is not crossing the street because it is too wide.'];
const SMALL = 'models/weights/additive-small-en-de';

let site;
let origin;
let context;
const modules = {};

before(async () => {
  const model = (id, src, extra) => ({ from: R + src, id, label: id, ...extra });
  const translator = { task: 'translate', src: 'en', tgt: 'de' };
  site = await startSite({
    prefix: 'page-compare-',
    models: [
      model('small', `${SMALL}.q8_0.gguf`, { ...translator, arch: 'bahdanau', dtype: 'q8_0' }),
      model('small-f16', `${SMALL}.f16.gguf`, { ...translator, arch: 'bahdanau', dtype: 'f16' }),
      model('tf', 'tests/fixtures/transformer/tiny.gguf', { ...translator, arch: 'transformer', dtype: 'f32' }),
    ],
  });
  ({ origin, context } = site);
  modules.q8 = await loadModel(`${R}${SMALL}.q8_0.gguf`);
  modules.f16 = await loadModel(`${R}${SMALL}.f16.gguf`);
  modules.tf = await loadModel(R + 'tests/fixtures/transformer/tiny.gguf');
});

after(async () => {
  for (const m of Object.values(modules)) await m.dispose();
  await site?.close();
});

const head = (t, l, h) => ({ rows: t.rows, cols: t.cols, data: t.data.subarray((l * t.heads + h) * t.rows * t.cols, (l * t.heads + h + 1) * t.rows * t.cols) });
const minus = (x) => (x < 0 ? `−${(-x).toFixed(2)}` : x.toFixed(2));

const newPage = (viewport) => newPageOf(context, viewport);

// Runs the Compare tab in a mode and waits for the two sides.
async function compare(page, mode) {
  await page.locator(`input[name="pair-mode"][value="${mode}"]`).check();
  await page.locator('#pair-run:not([disabled])').waitFor({ timeout: 30_000 });
  await page.getByTestId('pair-summary').evaluate((node) => { node.textContent = ''; });
  await page.click('#pair-run');
  await page.waitForFunction(() => !document.getElementById('pair-result').hidden &&
                                   document.getElementById('pair-summary').textContent !== '', null, { timeout: 60_000 });
  const out = (id) => page.locator(`#${id} .output`).textContent();
  return { left: await out('pair-a'), right: await out('pair-b'), summary: await page.getByTestId('pair-summary').textContent() };
}

test('the Compare tab\'s sample pair is whole words in the shipped EN→DE Transformer and RNN', async () => {
  // Every word one piece (a piece that starts a word, or the full stop), so each heatmap column is a word.
  for (const file of ['models/weights/transformer-en-de.q8_0.gguf', 'models/weights/bahdanau-en-de.q8_0.gguf']) {
    const model = await loadModel(R + file);
    try {
      for (const text of PAIR) {
        const pieces = (await model.translate(text, { beam: 1 })).sourceTokens.filter((p) => p !== '</s>' && p !== '.');
        assert.deepEqual(pieces.filter((p) => !p.startsWith('▁')), [], `${file}: ${text}`);
        assert.equal(pieces.length, text.split(' ').length, `${file}: ${text}`);
      }
    } finally {
      await model.dispose();
    }
  }
});

for (const viewport of WIDTHS) {
  const phone = isPhone(viewport);
  test(`compare at ${viewport.width}×${viewport.height}: two sentences, two formats, two beams, the module's numbers`, async () => {
    const { page, errors } = await newPage(viewport);
    await page.goto(`${origin}/#tab=compare`);
    await page.getByRole('tab', { name: 'Compare' }).click();
    await page.getByTestId('pair-model').selectOption('small');

    // Two sentences: the sample pair by default, each side the module's translation at the picked beam.
    assert.equal(await page.getByTestId('pair-input-a').inputValue(), PAIR[0]);
    assert.equal(await page.getByTestId('pair-input-b').inputValue(), PAIR[1]);
    let shown = await compare(page, 'sentences');
    const [a, b] = [await modules.q8.translate(PAIR[0], { beam: 4 }), await modules.q8.translate(PAIR[1], { beam: 4 })];
    assert.equal(shown.left, a.text);
    assert.equal(shown.right, b.text);
    assert.match(shown.summary, /The sentences differ in \d+ source pieces?/);
    const tired = a.sourceTokens.findIndex((p) => p.includes('tired'));
    if (tired >= 0) {
      let best = 0;
      for (let i = 1; i < a.attention.rows; ++i) if (a.attention.data[i * a.attention.cols + tired] > a.attention.data[best * a.attention.cols + tired]) best = i;
      assert.ok(shown.summary.includes(`(${a.attention.data[best * a.attention.cols + tired].toFixed(2)})`), shown.summary);
    }
    assert.equal(await page.locator('#pair-a .heatmap .cell').count(), a.attention.rows * a.attention.cols);

    // Two formats: the left side q8_0, the right f16; the summary's largest difference is the module's.
    shown = await compare(page, 'formats');
    assert.equal(await page.getByTestId('pair-input-b').isVisible(), false);
    const [q8, f16] = [await modules.q8.translate(PAIR[0], { beam: 4 }), await modules.f16.translate(PAIR[0], { beam: 4 })];
    assert.equal(shown.left, q8.text);
    assert.equal(shown.right, f16.text);
    let max = 0;
    let rows = 0;
    for (let i = 0; i < Math.min(q8.attention.rows, f16.attention.rows) && q8.targetIds[i] === f16.targetIds[i]; ++i, ++rows) {
      row(q8.attention, i).forEach((w, j) => { max = Math.max(max, Math.abs(w - row(f16.attention, i)[j])); });
    }
    assert.ok(rows > 0);
    assert.match(shown.summary, new RegExp(`Over the ${rows} rows they share, the largest attention difference is ${max.toFixed(4)}`), shown.summary);
    assert.match(shown.summary, /from q8_0 and f16 weights/);

    // Two beams: greedy on the left, beam 4 on the right, with their trees and the module's log-probabilities.
    shown = await compare(page, 'beams');
    const [g, w] = [await modules.q8.translate(PAIR[0], { beam: 1, beamTree: true }), await modules.q8.translate(PAIR[0], { beam: 4, beamTree: true })];
    assert.equal(shown.left, g.text);
    assert.equal(shown.right, w.text);
    assert.ok(shown.summary.includes(`Beam 1: Σ log p ${minus(g.logProbability)} over ${g.targetTokens.length} tokens, ${g.beamTree.nodes.length} hypotheses kept`), shown.summary);
    assert.ok(shown.summary.includes(`Beam 4: Σ log p ${minus(w.logProbability)}`), shown.summary);
    assert.equal(await page.locator('#pair-a .beam-node').count(), g.beamTree.nodes.length);
    assert.equal(await page.locator('#pair-b .beam-node').count(), w.beamTree.nodes.length);

    // The URL names the mode, model and beam; an empty box is one error next to the button, the result gone.
    const hash = new URLSearchParams(new URL(page.url()).hash.slice(1));
    assert.deepEqual([hash.get('tab'), hash.get('mode'), hash.get('model'), hash.get('beam')], ['compare', 'beams', 'small', '4']);
    await page.fill('#pair-input-a', '   ');
    await page.click('#pair-run');
    await page.getByTestId('pair-error').waitFor({ state: 'visible' });
    assert.equal(await page.locator('#pair-result').isHidden(), true);

    if (phone) assert.ok(await pageFits(page), 'the page is wider than the phone');
    assert.deepEqual(errors, []);
    assert.deepEqual(offsiteRequests(site.requests, origin), []);
    await page.close();
  });

  test(`neuron view at ${viewport.width}×${viewport.height}: q·k ÷ √d_k is the engine's raw score, its softmax the weight`, async () => {
    const { page, errors } = await newPage(viewport);
    const text = 'A dog runs on the beach.';
    const t = await modules.tf.translate(text, { beam: 4, queryKey: true });
    await runSelfAttention(page, origin, text, t.text);

    const heads = t.encoderSelfAttention.heads;
    const layer = t.encoderSelfAttention.layers - 1;
    await page.getByTestId('sa-layer').selectOption(String(layer));
    await page.getByTestId('sa-neuron-head').selectOption(String(heads - 1));
    await page.getByTestId('sa-neuron-query').selectOption('1');
    const table = page.getByTestId('neuron-table');
    const drawn = await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => ({
      dot: Number(r.dataset.dot), score: Number(r.dataset.score), weight: Number(r.dataset.weight) })));
    const S = t.sourceTokens.length;
    assert.equal(drawn.length, S);
    const hd = t.encoderQueries.cols;
    const scores = head(t.encoderSelfScores, layer, heads - 1);
    const weights = head(t.encoderSelfAttention, layer, heads - 1);
    const top = Math.max(...drawn.map((r) => r.score));
    const sum = drawn.reduce((s, r) => s + Math.exp(r.score - top), 0);
    drawn.forEach((r, j) => {
      close(r.dot / Math.sqrt(hd), r.score, `q·k / √d_k of key ${j}`, 1e-4);
      close(r.score, scores.data[1 * S + j], `engine raw score of key ${j}`, 1e-5);
      close(r.weight, weights.data[1 * S + j], `engine weight of key ${j}`, 1e-5);
      close(Math.exp(r.score - top) / sum, r.weight, `softmax of the scores, key ${j}`, 1e-4);
    });
    assert.match(await table.locator('caption').textContent(), new RegExp(`Layer ${layer + 1}, head ${heads}: .*d_k = ${hd},`));
    assert.equal(await page.locator('#sa-neuron [data-testid="legend"]').isVisible(), true);

    // A line's tooltip (keyboard: query 1, its first line) carries each head's raw score.
    const tipText = await firstLineTip(page);
    for (let h = 0; h < heads; ++h) {
      const s = head(t.encoderSelfScores, layer, h).data[1 * S + 0];
      assert.ok(tipText.includes(`head ${h + 1}: weight`) && tipText.includes(`raw score ${s.toFixed(3)}`), tipText);
    }

    if (phone) assert.ok(await pageFits(page), 'the page is wider than the phone');
    assert.deepEqual(errors, []);
    assert.deepEqual(offsiteRequests(site.requests, origin), []);
    await page.close();
  });

  test(`attention explained at ${viewport.width}×${viewport.height}: the softmax of q·k ÷ √d_k worked on the page is the engine's weights`, async () => {
    const { page, errors } = await newPage(viewport);
    const text = 'A dog runs on the beach.';
    const t = await modules.tf.translate(text, { beam: 1, queryKey: true });
    await runSelfAttention(page, origin, text, t.text);
    const S = t.sourceTokens.length;
    const hd = t.encoderQueries.cols;
    const { layers, heads } = t.encoderSelfAttention;

    // The rows of one stage of the panel: the number computed on the page and, beside it, the engine's.
    const stage = (id) => page.locator(`#${id} .bar-row:not(.bar-head)`).evaluateAll((rows) => rows.map((r) => ({
      here: Number(r.dataset.value), engine: r.dataset.engine === undefined ? null : Number(r.dataset.engine) })));
    async function assertPanel(layer, h, i) {
      assert.equal(await page.getByTestId('explain-head-layer').inputValue(), String(layer));
      assert.equal(await page.getByTestId('explain-head-head').inputValue(), String(h));
      assert.equal(await page.locator('#explain-head-picker [aria-checked="true"]').getAttribute('data-index'), String(i));
      const [q, k] = [head(t.encoderQueries, layer, h), head(t.encoderKeys, layer, h)];
      const [scores, weights] = [head(t.encoderSelfScores, layer, h), head(t.encoderSelfAttention, layer, h)];
      const [dots, scaled, softmax] = [await stage('explain-head-dots'), await stage('explain-head-scores'), await stage('explain-head-weights')];
      assert.deepEqual([dots.length, scaled.length, softmax.length], [S, S, S]);
      for (let j = 0; j < S; ++j) {
        let dot = 0;
        for (let c = 0; c < hd; ++c) dot += q.data[i * hd + c] * k.data[j * hd + c];
        close(dots[j].here, dot, `q·k of key ${j}`, 1e-4);
        close(scaled[j].here, dots[j].here / Math.sqrt(hd), `÷ √d_k of key ${j}`, 1e-9);
        close(scaled[j].engine, scores.data[i * S + j], `the engine's raw score shown for key ${j}`, 1e-6);
        close(softmax[j].here, weights.data[i * S + j], `the page's softmax against the engine's weight, key ${j}`, 1e-4);
        close(softmax[j].engine, weights.data[i * S + j], `the engine's weight shown for key ${j}`, 1e-6);
      }
      close(softmax.reduce((sum, r) => sum + r.here, 0), 1, 'the softmax sums to 1', 1e-9);
      assert.match(await page.getByTestId('explain-head-match').textContent(),
                   new RegExp(`^Layer ${layer + 1}, head ${h + 1}, query “.+”: the largest difference from the engine's numbers is \\d\\.\\de[-+]\\d+ in the scores`));
    }

    // The head and query word picked in the Self-attention tab's neuron view open in Attention explained.
    const [layer, h, query] = [layers - 1, heads - 1, 2];
    await page.getByTestId('sa-layer').selectOption(String(layer));
    await page.getByTestId('sa-neuron-head').selectOption(String(h));
    await page.getByTestId('sa-neuron-query').selectOption(String(query));
    await page.getByTestId('sa-neuron-explain').click();
    assert.equal(await page.getByRole('tab', { name: 'Attention explained' }).getAttribute('aria-selected'), 'true');
    await page.locator('#explain-head-body:not([hidden])').waitFor();
    await assertPanel(layer, h, query);
    assert.equal(await page.locator('#explain-head [data-testid="legend"]:visible').count(), 3);
    // Each colour swatch sits on the line of the word it names ("positive", "negative"), even where the legend
    // wraps on a phone.
    const apart = await page.evaluate(() => [...document.querySelectorAll('#explain-head .legend-swatch')]
      .filter((swatch) => swatch.offsetParent !== null)
      .map((swatch) => {
        const range = document.createRange();
        const word = swatch.nextSibling;
        range.selectNodeContents(word);
        const [a, b] = [swatch.getBoundingClientRect(), range.getBoundingClientRect()];
        return { word: word.textContent.trim().split(' ')[0], gap: Math.abs((a.top + a.bottom) / 2 - (b.top + b.bottom) / 2) };
      })
      .filter((x) => x.gap > 6));
    assert.deepEqual(apart, [], 'a legend swatch is on another line than its word');

    // Its own pickers: another layer and head, and the next query word by the arrow keys.
    await page.getByTestId('explain-head-layer').selectOption('0');
    await page.getByTestId('explain-head-head').selectOption('0');
    await page.locator('#explain-head-picker [role="radio"]').nth(query).focus();
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.index), String(query + 1));
    await assertPanel(0, 0, query + 1);
    if (phone) assert.ok(await pageFits(page), 'the page is wider than the phone');

    // A new sentence in the Self-attention tab clears its result: the panel shows no stale numbers.
    await page.getByRole('tab', { name: 'Self-attention' }).click();
    await page.fill('#sa-input', 'A cat sleeps.');
    await page.getByRole('tab', { name: 'Attention explained' }).click();
    assert.equal(await page.locator('#explain-head-body').isHidden(), true);
    assert.equal(await page.locator('#explain-head-empty').isVisible(), true);
    assert.deepEqual(errors, []);
    assert.deepEqual(offsiteRequests(site.requests, origin), []);
    await page.close();
  });
}
