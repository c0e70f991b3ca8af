// Issue 23 / 19 follow-ups, in Chromium on the fixture models: a Transformer whose manifest entry names its own
// example ("selfAttention": text, 1-based layer and head, the word) opens the Self-attention tab on it, and a link's
// state still wins; the stepper and Attention explained's "Source:" line join SentencePiece pieces as the
// detokenizer does (checked against the engine's own text); Attention explained has its own URL state (model,
// input, the word it explains) that a new page reopens; the Speech tab shows the "stopped at the maximum length"
// notice for a transcript the model did not end (finished: false, stubbed: no clip runs the fixture that long),
// and in Node an ended one gets none.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { noticesFor } from '../../web/app/widgets/text.mjs';
import { startSite } from '../support/site.mjs';
import { R, WIDTHS, newPage, screenshotPath } from './page_helpers.mjs';

const TRANSFORMER = join(R, 'tests/fixtures/transformer/tiny.gguf');
const RNN = join(R, 'tests/fixtures/rnn/additive.gguf');
const EXAMPLE = 'The Law will never be perfect, but its application should be just.';
// The fixture has 2 layers of 4 heads; the field is 1-based, as a model card names a head.
const OPENING = { text: EXAMPLE, layer: 2, head: 3, from: 'its' };
const SENTENCE = 'A dog runs on the beach.';
const SPEECH = join(R, 'tests/fixtures/speech/las.gguf');
const CLIP = join(R, 'tests/fixtures/audio/speech.wav');

let site;
let expected;     // the module's translation of EXAMPLE by the Transformer (greedy, as the tab runs it)
let translation;  // the module's translation of SENTENCE by the RNN at the Translate tab's default beam

before(async () => {
  const transformer = await loadModel(TRANSFORMER);
  expected = await transformer.translate(EXAMPLE, { beam: 1 });
  await transformer.dispose();
  site = await startSite({
    prefix: 'attnlab-e2e-state-',
    models: [
      { from: RNN, id: 'rnn-a', label: 'RNN EN→DE', task: 'translate', arch: 'bahdanau', src: 'en', tgt: 'de', dtype: 'f32' },
      { from: TRANSFORMER, id: 'tf', label: 'Transformer EN→DE', task: 'translate', arch: 'transformer', src: 'en',
        tgt: 'de', dtype: 'f32', selfAttention: OPENING },
      { from: SPEECH, id: 'las', label: 'Speech (fixture)', task: 'transcribe', arch: 'las', src: 'audio', tgt: 'en', dtype: 'f32' },
    ],
  });
});

after(async () => {
  await site?.close();
});

const hashOf = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1));

test('self-attention opens on the manifest entry\'s sample, layer, head and word; a link\'s state wins', async () => {
  const { page, errors } = await newPage(site.context, WIDTHS[0]);
  await page.goto(`${site.origin}/`);
  await page.waitForFunction(() => !document.getElementById('tab-btn-selfattention').disabled);
  assert.equal(await page.locator('#sa-input').inputValue(), EXAMPLE);
  await page.getByRole('tab', { name: 'Self-attention' }).click();
  // Opening the tab runs the example without a click, then picks the head and the word.
  await page.waitForFunction(() => document.getElementById('sa-focus').value !== '', null, { timeout: 30_000 });
  assert.equal(await page.getByTestId('sa-output').textContent(), expected.text);
  const canvas = page.getByTestId('sa-canvas');
  assert.equal(await canvas.getAttribute('data-kind'), 'encoder');
  assert.equal(await canvas.getAttribute('data-layer'), String(OPENING.layer - 1));
  assert.equal(await canvas.getAttribute('data-heads'), String(OPENING.head - 1));
  assert.equal(await page.locator('#sa-heads input:checked').count(), 1);
  // "its" is "▁" "it" "s" in the fixture's tokenizer: the word's first piece with letters is picked.
  const its = expected.sourceTokens.indexOf('it');
  assert.deepEqual(expected.sourceTokens.slice(its - 1, its + 2), ['▁', 'it', 's']);
  assert.equal(await page.getByTestId('sa-focus').inputValue(), String(its));
  assert.match(await page.locator('#sa-readout').textContent(), /^“·it” attends most to .*\(head 3\)/);
  assert.equal(await page.locator('#sa-neuron-head').inputValue(), String(OPENING.head - 1));
  const hash = hashOf(page);
  assert.deepEqual([hash.get('layer'), hash.get('heads'), hash.get('word')], ['2', '3', String(its + 1)]);
  for (const viewport of WIDTHS) {
    await page.setViewportSize(viewport);
    await page.screenshot({ path: screenshotPath(`selfattention-opening-${viewport.width}`), fullPage: true });
  }

  // A link's own sample, layer and heads win over the entry's.
  const link = new URLSearchParams({ tab: 'selfattention', model: 'tf', text: SENTENCE, beam: '1', layer: '1', heads: '1,2' });
  const other = await site.context.newPage();
  await other.goto(`${site.origin}/#${link}`);
  await other.waitForFunction(() => document.getElementById('sa-output').textContent.length > 0, null, { timeout: 30_000 });
  assert.equal(await other.locator('#sa-input').inputValue(), SENTENCE);
  assert.equal(await other.getByTestId('sa-canvas').getAttribute('data-layer'), '0');
  assert.equal(await other.getByTestId('sa-canvas').getAttribute('data-heads'), '0,1');
  assert.equal(await other.getByTestId('sa-focus').inputValue(), '');
  await other.close();
  assert.deepEqual(errors, []);
  await page.close();
});

// The words a stepper wrote, one per .step-word.
const stepWords = (page) => page.locator('#translate-stepper .step-word').allTextContents();

test('stepper and Attention explained join pieces into words; Attention explained has its own URL state', async () => {
  const rnn = await loadModel(RNN);
  translation = await rnn.translate(SENTENCE, { beam: 4 });
  await rnn.dispose();
  const { page, errors } = await newPage(site.context, WIDTHS[0]);
  await page.goto(`${site.origin}/`);
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30_000 });
  await page.fill('#translate-input', SENTENCE);
  await page.selectOption('#beam-select', '4');
  await page.click('#translate-run');
  await page.waitForFunction((text) => document.getElementById('translate-output').textContent === text, translation.text,
                             { timeout: 30_000 });

  // Whole output: the written words are the engine's detokenized text ("Band." one word, no "␣"), one step per piece.
  assert.ok(translation.targetTokens.some((p) => p === '▁') && translation.targetTokens.some((p) => p === '.'),
            'the fixture\'s output has a bare "▁" and a "." to join');
  assert.equal((await stepWords(page)).join(' '), translation.text);
  assert.equal(await page.locator('#translate-stepper .step-token').count(), translation.targetTokens.length);
  await page.getByTestId('step-next').click();  // step 1 writes the bare "▁": it shows while it is the step
  assert.deepEqual(await stepWords(page), ['␣']);

  // Attention explained: the Source line is the sentence as the tokenizer read it.
  await page.getByRole('tab', { name: 'Attention explained' }).click();
  assert.equal(await page.locator('#explain-source').textContent(), `${SENTENCE} ⟨end⟩`);
  const word = 4;  // 0-based output token
  await page.locator(`#explain-picker [data-index="${word}"]`).click();
  const hash = hashOf(page);
  assert.deepEqual(Object.fromEntries(hash), { tab: 'explain', model: 'rnn-a', beam: '4', text: SENTENCE, word: String(word + 1) });
  for (const viewport of WIDTHS) {
    await page.setViewportSize(viewport);
    await page.screenshot({ path: screenshotPath(`explain-state-${viewport.width}`), fullPage: true });
  }

  // A new page on the link translates again and explains the same word; the Translate tab pins nothing.
  const { page: reopened, errors: reopenErrors } = await newPage(site.context, WIDTHS[1]);
  await reopened.goto(`${site.origin}/#${hash}`);
  await reopened.waitForFunction((w) => document.querySelector(`#explain-picker [data-index="${w}"]`)?.getAttribute('aria-checked') === 'true',
                                 word, { timeout: 30_000 });
  assert.equal(await reopened.getByRole('tab', { name: 'Attention explained' }).getAttribute('aria-selected'), 'true');
  assert.equal(await reopened.locator('#translate-output').textContent(), translation.text);
  assert.equal(await reopened.locator('#explain-source').textContent(), `${SENTENCE} ⟨end⟩`);
  assert.equal(hashOf(reopened).get('word'), String(word + 1));
  assert.equal(await reopened.locator('#target-tokens .token.active').count(), 0);
  assert.deepEqual([...errors, ...reopenErrors], []);
  await reopened.close();
  await page.close();
});

// The page's module with one change: every transcript comes back as if the decoder had hit its length limit (no
// real clip makes the fixture or the shipped recognizer run that long). The real module loads under another URL.
const CUT_TRANSCRIPTS = `export * from '/lib/index.mjs?real';
import { loadModel as realLoad } from '/lib/index.mjs?real';
export async function loadModel(...args) {
  const model = await realLoad(...args);
  const transcribe = model.transcribe.bind(model);
  model.transcribe = async (...a) => Object.assign(await transcribe(...a), { finished: false });
  return model;
}`;

// (An ended transcript's empty notices are the Node test below: a second page load here would cost ~5 s.)
test('speech: a transcript that stopped at the length limit shows the notice', async () => {
  const { page, errors } = await newPage(site.context, WIDTHS[1]);
  // A service worker an earlier page registered would answer the module's request before the route sees it.
  await page.goto(`${site.origin}/`);
  await page.evaluate(async () => {
    for (const registration of await navigator.serviceWorker.getRegistrations()) await registration.unregister();
  });
  await page.route((url) => url.pathname === '/lib/index.mjs' && url.search === '',
                   (route) => route.fulfill({ contentType: 'text/javascript', body: CUT_TRANSCRIPTS }));
  await page.goto(`${site.origin}/`);
  assert.equal(await page.evaluate(() => navigator.serviceWorker.controller), null);
  await page.waitForFunction(() => !document.getElementById('tab-btn-speech').disabled);
  await page.locator('#tab-btn-speech').click();
  await page.waitForFunction(() => /ready/.test(document.getElementById('sp-status-text').textContent), null, { timeout: 30_000 });
  await page.locator('#sp-file').setInputFiles(CLIP);
  await page.locator('#sp-result:not([hidden])').waitFor({ timeout: 30_000 });
  const characters = (await page.locator('#sp-output').textContent()).length;
  assert.match(await page.getByTestId('sp-notices').textContent(),
               new RegExp(`^The transcript stopped at the maximum length \\(${characters} characters?\\)`));
  await page.screenshot({ path: screenshotPath('speech-max-length-390'), fullPage: true });
  await page.setViewportSize(WIDTHS[0]);
  await page.screenshot({ path: screenshotPath('speech-max-length-1280'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('a transcript the model did not end gets the maximum-length notice (Node, the Speech tab\'s notices)', () => {
  const characters = [...'one two two two'];
  const cut = noticesFor({ text: characters.join(''), characters, finished: false }, { what: 'The transcript', unit: 'character' });
  assert.equal(cut.length, 1);
  assert.match(cut[0], /^The transcript stopped at the maximum length \(15 characters\)/);
  assert.deepEqual(noticesFor({ text: 'one', characters: [...'one'], finished: true }, { what: 'The transcript', unit: 'character' }), []);
});
