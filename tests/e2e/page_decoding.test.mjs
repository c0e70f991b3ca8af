// Step-by-step decoding and the beam tree on the page (issue 23), in headless Chromium at 1280×800 and 390×844:
// the Translate tab's stepper writes the output a token at a time and its attention row is the heatmap's row of
// that token (both equal to the Node module's numbers); the tree drawn is the module's beamTree, its winner's path
// is the output shown, its nodes answer hover, focus, tap and arrow keys with the module's log-probabilities; the
// same for the Caption tab, whose overlay follows the stepper; the Speech tab's stepper writes the shipped
// recognizer's transcript of a sample clip a character at a time, the attention row over the spectrogram and the
// readout on that character (the Node module's numbers). No console errors, nothing off the origin, nothing
// wider than a phone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

import { loadModel } from '../../web/lib/index.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';
import { R, WIDTHS, assertStepperFits, close, copiedJson, downloadOf, isPhone, newPage as newPageOf, pageFits, row, tap } from './page_helpers.mjs';

const SENTENCE = 'A dog runs.';
const SPEECH_MODEL = 'models/weights/speech-las.q8_0.gguf';  // the shipped interim recognizer
const SPEECH_CLIP = 'web/app/samples/speech/command.wav';      // its shortest sample clip

let site;
let origin;
let context;
let translator;
let expected;  // beam -> the Node module's translation of SENTENCE with its tree
let recognizer;
let heard;     // the Node module's transcription of SPEECH_CLIP

before(async () => {
  const model = (id, src, extra) => ({ from: R + src, id, label: id, dtype: 'f32', ...extra });
  site = await startSite({
    prefix: 'page-decoding-',
    models: [
      model('rnn-a', 'tests/fixtures/rnn/additive.gguf', { task: 'translate', arch: 'bahdanau', src: 'en', tgt: 'de' }),
      model('cap', 'tests/fixtures/caption/tiny_encoder_model.gguf', { task: 'caption', arch: 'show-attend-tell', src: 'image', tgt: 'en' }),
      model('speech', SPEECH_MODEL, { task: 'transcribe', arch: 'las', src: 'audio', tgt: 'en', dtype: 'q8_0' }),
    ],
  });
  ({ origin, context } = site);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  translator = await loadModel(R + 'tests/fixtures/rnn/additive.gguf');
  expected = {
    1: await translator.translate(SENTENCE, { beam: 1, beamTree: true }),
    4: await translator.translate(SENTENCE, { beam: 4, beamTree: true }),
  };
  recognizer = await loadModel(R + SPEECH_MODEL);
  // The tab's default beam width (4), on the bytes of the sample clip the test clicks.
  heard = await recognizer.transcribe(await readFile(R + SPEECH_CLIP), { beam: 4 });
});

after(async () => {
  await translator?.dispose();
  await recognizer?.dispose();
  await site?.close();
});

const path = (tree) => {
  const out = [];
  for (let n = tree.winner; n >= 0; n = tree.nodes[n].parent) out.unshift(n);
  return out;
};
const minus = (x) => (x < 0 ? `−${(-x).toFixed(3)}` : x.toFixed(3));

const newPage = (viewport) => newPageOf(context, viewport);

for (const viewport of WIDTHS) {
  const phone = isPhone(viewport);
  test(`translate step by step at ${viewport.width}×${viewport.height}: the row is the heatmap's, the tree is the module's`, async () => {
    const { page, errors } = await newPage(viewport);
    await page.goto(`${origin}/`);
    await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30_000 });
    await page.fill('#translate-input', SENTENCE);
    await page.click('#translate-run');
    await page.locator('#translate-steps:not([hidden])').waitFor({ timeout: 30_000 });
    const t = expected[4];
    assert.equal(await page.locator('#translate-output').textContent(), t.text);
    const T = t.targetTokens.length;
    assert.ok(T >= 2, `the fixture's translation has ${T} tokens`);

    // At first the whole output, nothing singled out; each Step writes one more token and lights its row.
    const stepper = page.getByTestId('translate-stepper');
    assert.equal(await stepper.locator('.step-token').count(), T);
    assert.equal(await page.locator('#translate-heatmap .cell.lit').count(), 0);
    const step = Math.min(2, T - 1);
    for (let k = 0; k <= step; ++k) await stepper.getByTestId('step-next').click();
    assert.equal(await stepper.locator('.step-token').count(), step + 1);
    // The written tokens read as the token line's, but a bare "▁" (a word's space) shows "␣" only while current.
    assert.deepEqual(await stepper.locator('.step-token').allTextContents(),
                     (await page.locator('#target-tokens .token').evaluateAll((nodes, n) => nodes.slice(0, n).map((x) => x.textContent), step + 1))
                       .map((text, k) => (text === '␣' && k !== step ? '' : text)));
    const drawn = JSON.parse(await page.getByTestId('translate-step-row').getAttribute('data-weights'));
    const heatRow = await page.locator(`#translate-heatmap .cell[data-row="${step}"]`)
      .evaluateAll((cells) => cells.map((c) => Number(c.style.getPropertyValue('--w'))));
    const moduleRow = row(t.attention, step);
    assert.equal(drawn.length, moduleRow.length);
    drawn.forEach((w, j) => {
      close(w, moduleRow[j], `step row weight ${j}`);
      close(w, heatRow[j], `heatmap row weight ${j}`, 1e-4);
    });
    assert.equal(await page.locator(`#translate-heatmap .cell.lit[data-row="${step}"]`).count(), moduleRow.length);
    assert.equal(await page.locator(`#translate-heatmap .cell.lit:not([data-row="${step}"])`).count(), 0);
    const winnerNode = t.beamTree.nodes[path(t.beamTree)[step]];
    assert.match(await stepper.getByTestId('step-where').textContent(), new RegExp(`log p ${minus(winnerNode.logProbability)}`));

    // Back, and the keyboard: arrow keys on the controls step too.
    await stepper.getByTestId('step-back').click();
    assert.equal(await page.locator(`#translate-heatmap .cell.lit[data-row="${step - 1}"]`).count(), moduleRow.length);
    await stepper.getByTestId('step-next').focus();
    await page.keyboard.press('ArrowRight');
    assert.equal(await stepper.getAttribute('data-step'), String(step));
    await page.keyboard.press('ArrowLeft');
    assert.equal(await stepper.getAttribute('data-step'), String(step - 1));
    // Play runs to the last token on its own.
    await stepper.getByTestId('step-play').click();
    await page.waitForFunction((last) => document.getElementById('translate-stepper').dataset.step === String(last), T - 1, { timeout: 20_000 });
    assert.equal(await stepper.locator('.step-token').count(), T);
    await stepper.getByTestId('step-all').click();
    assert.equal(await page.locator('#translate-heatmap .cell.lit').count(), 0);

    // The tree: the module's nodes; the winner's path is the output shown, then </s>; its numbers in the tooltip.
    const treeBox = page.getByTestId('translate-beam-tree');
    const json = await copiedJson(page, '#translate-beam-tree');
    assert.equal(json.beam, 4);
    assert.equal(json.winner, t.beamTree.winner);
    assert.equal(json.nodes.length, t.beamTree.nodes.length);
    json.nodes.forEach((node, n) => {
      const want = t.beamTree.nodes[n];
      assert.deepEqual([node.step, node.parent, node.piece, node.finished], [want.step, want.parent, want.piece, want.finished]);
      close(node.cumulative, want.cumulative, `node ${n} cumulative`);
    });
    assert.ok(t.beamTree.nodes.length > path(t.beamTree).length, 'beam 4 kept more than the winning path');
    const winners = await treeBox.locator('.beam-node[data-winner="true"]').evaluateAll((nodes) => nodes.map((g) => Number(g.dataset.node)));
    assert.deepEqual(winners, path(t.beamTree));
    assert.deepEqual(winners.map((n) => t.beamTree.nodes[n].piece), [...t.targetTokens, ...(t.stopReason === 'eos' ? ['</s>'] : [])]);
    assert.equal(await treeBox.locator('.beam-node[data-answer="true"]').getAttribute('data-node'), String(t.beamTree.winner));

    const answer = treeBox.locator('.beam-node[data-answer="true"]');
    const tip = page.getByTestId('figure-tip');
    const winner = t.beamTree.nodes[t.beamTree.winner];
    if (phone) await tap(page, answer);
    else await answer.hover();
    await tip.waitFor({ state: 'visible' });
    let text = await tip.textContent();
    assert.match(text, /the answer/);
    assert.match(text, new RegExp(`Σ log p ${minus(winner.cumulative)}`));
    close(winner.cumulative, t.logProbability, 'the winner\'s Σ log p is the translation\'s');
    assert.match(text, new RegExp(`ranking score ${minus(winner.score)}`));
    await page.keyboard.press('Escape');

    // Keyboard: one node in the tab order; Left walks to the parent, whose tooltip has its own numbers.
    assert.equal(await treeBox.locator('.beam-node[tabindex="0"]').count(), 1);
    await answer.focus();
    await page.keyboard.press('ArrowLeft');
    const parent = winner.parent;
    assert.equal(await page.evaluate(() => document.activeElement.dataset.node), String(parent));
    text = await tip.textContent();
    assert.match(text, new RegExp(`log p ${minus(t.beamTree.nodes[parent].logProbability)} `));
    assert.equal(await treeBox.locator('.beam-node:not([aria-label])').count(), 0);
    await page.keyboard.press('Escape');

    // Exports: an SVG that parses with a node per hypothesis.
    const svg = await downloadOf(page, page.locator('#translate-beam-tree [data-testid="export-svg"]'));
    const nodes = await page.evaluate((s) => {
      const doc = new DOMParser().parseFromString(s, 'image/svg+xml');
      return doc.querySelector('parsererror') ? -1 : doc.querySelectorAll('.beam-node').length;
    }, svg.bytes.toString('utf8'));
    assert.equal(nodes, t.beamTree.nodes.length);

    // Greedy: a one-path tree, the same output as the module's beam 1.
    await page.getByTestId('beam-select').selectOption('1');
    await page.waitForFunction((text) => document.getElementById('translate-output').textContent === text &&
                                        !document.getElementById('translate-steps').hidden, expected[1].text, { timeout: 30_000 });
    await page.waitForFunction((n) => document.querySelectorAll('#translate-beam-tree .beam-node').length === n,
                               expected[1].beamTree.nodes.length, { timeout: 10_000 });
    assert.equal(await treeBox.locator('.beam-node:not([data-winner])').count(), 0);

    await assertStepperFits(page, stepper, viewport);
    assert.deepEqual(errors, []);
    assert.deepEqual(offsiteRequests(site.requests, origin), []);
    await page.close();
  });

  test(`caption step by step at ${viewport.width}×${viewport.height}: the overlay follows the word, the tree's winner is the caption`, async () => {
    const { page, errors } = await newPage(viewport);
    await page.goto(`${origin}/#tab=caption`);
    await page.waitForFunction(() => !document.getElementById('tab-btn-caption').disabled);
    await page.getByRole('tab', { name: 'Caption' }).click();
    await page.waitForFunction(() => /ready/.test(document.getElementById('cap-status-text').textContent), null, { timeout: 30_000 });
    await page.locator('.cap-sample[data-sample="cat"]').click();
    await page.locator('#cap-result:not([hidden])').waitFor({ timeout: 30_000 });
    const words = await page.locator('#cap-output .cap-word').allTextContents();
    assert.ok(words.length >= 1);

    const tree = await copiedJson(page, '#cap-beam-tree');
    const winning = path(tree).map((n) => tree.nodes[n]);
    const pieces = winning.map((node) => node.piece).filter((piece) => piece !== '</s>');
    assert.equal(pieces.length, words.length);
    const sum = winning.reduce((s, node) => s + node.logProbability, 0);
    close(sum, winning.at(-1).cumulative, 'the path\'s log p adds up', 1e-3);

    // Each step selects the word being written: its button is pressed and the readout names it.
    const stepper = page.getByTestId('cap-stepper');
    const last = Math.min(1, words.length - 1);
    for (let k = 0; k <= last; ++k) {
      await stepper.getByTestId('step-next').click();
      assert.equal(await page.locator('#cap-output .cap-word').nth(k).getAttribute('aria-pressed'), 'true');
      assert.ok((await page.getByTestId('cap-readout').textContent()).includes(`“${words[k]}”`));
      assert.match(await stepper.getByTestId('step-where').textContent(), new RegExp(`log p ${winning[k].logProbability.toFixed(3)}`));
    }
    assert.equal(await page.locator('#cap-beam-tree .beam-node[data-answer="true"]').getAttribute('data-node'), String(tree.winner));

    // A cell's tooltip has the engine's raw score (the exported scores) beside the weight.
    const figure = await copiedJson(page, '#cap-tools');
    assert.equal(figure.scores.length, figure.attention.length);
    const word = Number(figure.selected);
    await page.locator('#cap-cells .cell[data-row="0"][data-col="1"]').focus();
    const tip = await page.getByTestId('figure-tip').textContent();
    assert.ok(tip.includes(`raw score ${figure.scores[word][1].toFixed(3)} `), tip);
    assert.ok(tip.includes(`weight ${figure.attention[word][1].toFixed(3)} `), tip);
    if (phone) assert.ok(await pageFits(page), 'the page is wider than the phone');
    assert.deepEqual(errors, []);
    assert.deepEqual(offsiteRequests(site.requests, origin), []);
    await page.close();
  });

  test(`speech step by step at ${viewport.width}×${viewport.height}: the transcript a character at a time, the attention row follows`, async () => {
    const { page, errors } = await newPage(viewport);
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => !document.getElementById('tab-btn-speech').disabled);
    await page.getByRole('tab', { name: 'Speech' }).click();
    await page.waitForFunction(() => /ready/.test(document.getElementById('sp-status-text').textContent), null, { timeout: 60_000 });
    await page.locator(`#sp-samples [data-sample="${SPEECH_CLIP.split('/').pop()}"]`).click();
    await page.locator('#sp-result:not([hidden])').waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId('sp-output').textContent(), heard.text);
    const N = heard.characters.length;
    assert.ok(N >= 3, `the clip's transcript has ${N} characters`);
    const shown = (k) => heard.characters.slice(0, k).map((c) => (c === ' ' ? '␣' : c)).join('');

    // At first the whole transcript; each Step writes one more character and moves the attention row to it.
    const stepper = page.getByTestId('sp-stepper');
    const written = async () => (await stepper.locator('.step-token').allTextContents()).join('');
    assert.equal(await written(), shown(N));
    const steps = Math.min(4, N);
    for (let k = 0; k < steps; ++k) {
      await stepper.getByTestId('step-next').click();
      assert.equal(await written(), shown(k + 1));
      assert.equal(await page.getByTestId('sp-attention').getAttribute('data-row'), String(k));
      assert.equal(await page.locator('#sp-chars button').nth(k).getAttribute('aria-pressed'), 'true');
      const weights = row(heard.attention, k);
      const peakAt = weights.indexOf(Math.max(...weights));
      const where = `peak weight ${weights[peakAt].toFixed(2)} on the frame at ${(peakAt * heard.frameSeconds).toFixed(2)} s`;
      assert.ok((await page.getByTestId('sp-readout').textContent()).includes(`(character ${k + 1} of ${N}): ${where}`),
                await page.getByTestId('sp-readout').textContent());
      assert.ok((await stepper.getByTestId('step-where').textContent()).startsWith(`Step ${k + 1} of ${N}: “${shown(k + 1).at(-1)}”. ${where}`));
    }
    // Back and the arrow keys move it too; Play writes to the last character on its own.
    await stepper.getByTestId('step-back').click();
    assert.equal(await page.getByTestId('sp-attention').getAttribute('data-row'), String(steps - 2));
    await stepper.getByTestId('step-next').focus();
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.getByTestId('sp-attention').getAttribute('data-row'), String(steps - 1));
    await stepper.getByTestId('step-play').click();
    await page.waitForFunction((last) => document.getElementById('sp-stepper').dataset.step === String(last), N - 1, { timeout: 60_000 });
    assert.equal(await written(), shown(N));
    assert.equal(await page.getByTestId('sp-attention').getAttribute('data-row'), String(N - 1));
    await stepper.getByTestId('step-all').click();
    assert.equal(await stepper.getAttribute('data-step'), '');

    await assertStepperFits(page, stepper, viewport);
    assert.deepEqual(errors, []);
    assert.deepEqual(offsiteRequests(site.requests, origin), []);
    await page.close();
  });
}
