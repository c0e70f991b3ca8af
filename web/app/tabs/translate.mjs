// The Translate tab: a translator from the manifest, a sentence (or a paragraph, its sentences translated in one call)
// in, the translation and its alignment out: the heatmap and the two token lines, linked so that hovering or
// tapping a word (or a cell) lights what it attends to. Errors and notices sit next to the control they are
// about; a result never outlives the input, model or beam it was made with.
import { matrixRow } from '/lib/index.mjs';
import { byId, el, showError, tokenLabel, continuesWord, statusLine, createModelLoader } from '/app/ui.mjs';
import { COMPARE_GROUP } from '/app/manifest.mjs';
import { clearHeatmap, drawHeatmap, drawHeatmapTools, lightHeatmap } from '/app/widgets/heatmap.mjs';
import { fillModelPicker, pickedEntry } from '/app/widgets/model_picker.mjs';
import { renderSamples } from '/app/widgets/samples.mjs';
import { noticesFor, splitSentences, clipInput } from '/app/widgets/text.mjs';
import { publish, restoreFor } from '/app/share.mjs';

// Sample sentences per language pair (the key is "src-tgt", then "src"), each one whole words in its model's
// tokenizer (no word split into pieces).
const SAMPLES = {
  'en-zh': ['Tom loves Mary.', 'I love you.', 'Where is the station?', 'It is raining today.'],
  en: ['A dog runs on the beach.', 'Two men are playing soccer in a park.',
       'A little girl in a pink dress is smiling.', 'A man rides a bike down the street.'],
  de: ['Ein Hund rennt am Strand.', 'Zwei Männer spielen Fußball in einem Park.',
       'Ein kleines Mädchen in einem rosa Kleid lächelt.'],
};
const samplesFor = (entry) => SAMPLES[`${entry.src}-${entry.tgt}`] ?? SAMPLES[entry.src] ?? [];

// A piece that continues a word is drawn joined to the previous one.
const pieceClass = (piece) => (continuesWord(piece) ? ' cont' : '');

const setStatus = statusLine('model');

/**
 * entries: the manifest's translators; the picker lists the main ones (one per language pair; the score-function
 * variants live in their tab). beam(): the beam width picked. onTranslation(translation | null, entry): each new
 * result (null: the last one is gone); onExplain(row): "Explain this word" for output token `row`; onShare(params):
 * the URL state the Attention explained tab shares with this one (model, beam, text, sentence). Resolves once
 * the first model is loaded (or found missing).
 */
export async function setupTranslate({ entries, getModel, available, beam, onTranslation, onExplain, onShare = () => {} }) {
  const select = byId('model-select');
  const input = byId('translate-input');
  const button = byId('translate-run');
  const pickable = entries.filter((entry) => entry.arch === 'bahdanau' && entry.group !== COMPARE_GROUP);
  const currentEntry = () => pickedEntry(select, pickable);
  const state = {
    results: null,      // [{ sentence, translation }] of the input shown, or null
    sentence: 0,        // the sentence whose heatmap is shown
    pinned: null,       // the output token tapped / clicked (stays lit)
    runs: 0,            // counts runs: a run that a newer one replaced draws nothing
    again: false,       // the beam changed during a run: run once more when it ends
  };
  const loader = createModelLoader({
    getModel, available, setStatus, noneText: 'No models yet.', isCurrent: (entry) => currentEntry() === entry,
    retry: () => selectModel(),
  });

  // The Attention explained tab draws this tab's result: onShare hands it the model, beam, input and sentence, to
  // which it adds the word it explains (its own URL state).
  const share = () => {
    const params = {
      model: currentEntry()?.id, beam: beam(), text: input.value,
      sentence: state.results && state.results.length > 1 ? state.sentence + 1 : null,
    };
    publish('translate', { ...params, word: state.pinned === null ? null : state.pinned + 1 });
    onShare(params);
  };

  function clearResult() {
    state.results = null;
    state.pinned = null;
    byId('translate-result').hidden = true;
    byId('translate-timing').textContent = '';
    onTranslation(null, null);
  }

  async function translate() {
    const entry = currentEntry();
    const run = ++state.runs;
    showError(byId('translate-error'), null);
    if (!entry) return;
    const sentences = splitSentences(input.value, entry.src);
    if (sentences.length === 0) {
      clearResult();
      showError(byId('translate-error'), new Error('Type a sentence to translate (the box is empty).'));
      return;
    }
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    try {
      const model = await getModel(entry);
      const started = performance.now();
      // One call for the whole paragraph: the engine decodes its sentences together, each as if alone.
      // beamTree: the step-by-step view draws the search (web/app/tabs/translate_steps.mjs).
      const translations = await model.translate(sentences, { beam: beam(), beamTree: true });
      const results = sentences.map((sentence, k) => ({ sentence, translation: translations[k] }));
      if (run !== state.runs) return;
      byId('translate-timing').textContent = `${Math.round(performance.now() - started)} ms` +
        (results.length > 1 ? ` · ${results.length} sentences in one call` : '') +
        (model.info?.shortlist ? ' · vocabulary shortlist' : '');
      state.results = results;
      state.sentence = 0;
      state.pinned = null;
      render(entry);
    } catch (error) {
      if (run !== state.runs) return;
      clearResult();
      showError(byId('translate-error'), error);
      if (error?.code) byId('translate-error').dataset.code = error.code;
    } finally {
      button.disabled = !loader.isReady(currentEntry());  // another model may have been picked meanwhile
      button.removeAttribute('aria-busy');
      share();
    }
    if (state.again && run === state.runs) {
      state.again = false;
      if (!button.disabled) await translate();
    }
  }

  function render(entry) {
    const { results } = state;
    const t = results[state.sentence].translation;
    byId('translate-result').hidden = false;
    const output = byId('translate-output');
    output.replaceChildren(...results.map(({ translation }, k) => {
      const part = el('span', { className: `sentence-out${k === state.sentence && results.length > 1 ? ' current' : ''}`,
                                text: translation.text });
      return k ? [' ', part] : [part];
    }).flat());
    output.lang = entry.tgt;
    drawSentencePicker(entry);
    const notes = results.flatMap(({ translation }, k) => noticesFor(translation, {
      what: results.length > 1 ? `Sentence ${k + 1}` : 'The translation',
    }));
    const box = byId('translate-notices');
    box.replaceChildren(...notes.map((text) => el('p', { className: 'notice', text })));
    box.hidden = notes.length === 0;
    drawHeatmap(byId('translate-heatmap'), t, entry, {
      onHover: (node) => linkFromNode(node, t), onLeave: () => relink(t),
      label: results.length > 1 ? `Alignment of sentence ${state.sentence + 1}` : 'Alignment heatmap',
    });
    drawHeatmapTools(byId('translate-tools'), t, entry, {
      name: `attnlab-${entry.id}-heatmap${results.length > 1 ? `-${state.sentence + 1}` : ''}`, title: t.text,
    });
    drawTokenLines(t, entry);
    onTranslation(t, entry);
    relink(t);
  }

  function drawSentencePicker(entry) {
    const box = byId('translate-sentences');
    const { results } = state;
    box.hidden = results.length < 2;
    box.replaceChildren();
    if (results.length < 2) return;
    box.append(el('span', { className: 'muted small', text: `${results.length} sentences, each translated on its own:` }));
    results.forEach(({ sentence }, k) => {
      const chip = el('button', { className: 'chip', text: `${k + 1}. ${sentence.length > 40 ? `${sentence.slice(0, 38)}…` : sentence}`,
                                  attrs: { type: 'button', role: 'radio', lang: entry.src, 'aria-checked': String(k === state.sentence),
                                           title: sentence } });
      chip.addEventListener('click', () => {
        state.sentence = k;
        state.pinned = null;
        render(entry);
        share();
      });
      box.append(chip);
    });
  }

  function drawTokenLines(t, entry) {
    const make = (boxId, pieces, side, lang) => {
      const box = byId(boxId);
      box.replaceChildren();
      pieces.forEach((piece, k) => {
        const token = el('button', { className: `token${pieceClass(piece)}`, text: tokenLabel(piece),
                                     attrs: { type: 'button', lang, [`data-${side}`]: k,
                                              'aria-label': `${side === 'row' ? 'output' : 'source'} token ${tokenLabel(piece)}` } });
        token.addEventListener('pointerenter', (event) => { if (event.pointerType === 'mouse') linkFromNode(token, t); });
        token.addEventListener('focus', () => linkFromNode(token, t));
        token.addEventListener('pointerleave', (event) => { if (event.pointerType === 'mouse') relink(t); });
        token.addEventListener('blur', () => relink(t));
        if (side === 'row') {
          // A tap or click selects the word (it stays lit, and the URL names it); Explain opens its numbers.
          token.setAttribute('aria-pressed', 'false');
          token.addEventListener('click', () => {
            state.pinned = state.pinned === k ? null : k;
            relink(t);
            share();
          });
        }
        box.append(token);
      });
    };
    make('source-tokens', t.sourceTokens, 'col', entry.src);
    make('target-tokens', t.targetTokens, 'row', entry.tgt);
  }

  // Back to the pinned word's links (or none) once the pointer or focus leaves.
  function relink(t) {
    clearLinks();
    const explain = byId('translate-explain');
    document.querySelectorAll('#target-tokens .token').forEach((token, k) => token.setAttribute('aria-pressed', String(k === state.pinned)));
    if (state.pinned === null) {
      explain.hidden = true;
      return;
    }
    linkFromNode({ dataset: { row: String(state.pinned) } }, t, { clear: false });
    explain.hidden = false;
    explain.textContent = `Explain “${tokenLabel(t.targetTokens[state.pinned])}” step by step →`;
  }

  byId('translate-explain').addEventListener('click', () => { if (state.pinned !== null) onExplain(state.pinned); });

  const showSamples = (entry) => {
    if (entry) renderSamples(byId('samples'), samplesFor(entry), { lang: entry.src, input, button, run: translate });
    else byId('samples').replaceChildren();
  };

  // A new model: the old result is gone at once, and the same input is translated again once the model is ready.
  async function selectModel({ rerun = state.results !== null } = {}) {
    const entry = currentEntry();
    button.disabled = true;
    showSamples(entry);
    if (state.results) clearResult();
    showError(byId('translate-error'), null);
    share();
    if (await loader.load(entry)) {
      button.disabled = false;
      if (rerun && input.value.trim()) await translate();
    }
  }

  button.addEventListener('click', translate);
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      if (!button.disabled) translate();
    }
  });
  input.addEventListener('input', () => {
    clipInput(input, byId('translate-input-notice'));
    // What is shown no longer matches the box: clear it rather than show a stale figure.
    if (state.results) clearResult();
    showError(byId('translate-error'), null);
    share();
  });
  select.addEventListener('change', () => selectModel());
  byId('beam-select').addEventListener('change', () => {
    share();
    if (button.getAttribute('aria-busy')) state.again = true;
    else if (state.results && !button.disabled) translate();
  });

  const first = fillModelPicker(select, pickable, available);
  if (!first) {
    if (select.options.length) select.options[0].selected = true;  // show which model is missing
    select.disabled = pickable.length === 0;
    setStatus('No models yet: the trained models have not been published to models/manifest.json.');
    showSamples(pickable[0]);
    return;
  }
  const saved = restoreFor('translate') ?? restoreFor('explain');
  const savedEntry = saved && pickable.find((entry) => entry.id === saved.get('model') && available(entry));
  if (savedEntry) select.value = savedEntry.id;
  if (saved?.get('beam') && [...byId('beam-select').options].some((o) => o.value === saved.get('beam'))) {
    byId('beam-select').value = saved.get('beam');
  }
  input.value = saved?.get('text') ?? samplesFor(currentEntry())[0] ?? '';
  clipInput(input, byId('translate-input-notice'));
  await selectModel({ rerun: false });
  if (saved?.get('text') && !button.disabled) {
    await translate();
    const entry = currentEntry();
    const sentence = Number(saved.get('sentence')) - 1;
    if (state.results && sentence > 0 && sentence < state.results.length) {
      state.sentence = sentence;
      render(entry);
    }
    const word = Number(saved.get('word')) - 1;
    const t = state.results?.[state.sentence].translation;
    if (t && word >= 0 && word < t.targetTokens.length) {
      // An Attention explained link's word is the one that tab explains, not a pick in this tab.
      if (saved.get('tab') === 'explain') onExplain(word);
      else {
        state.pinned = word;
        relink(t);
      }
    }
    share();
  }
}

// Highlights what a row (output token) attends to, or which output tokens attend to a column (source token),
// with the weight as intensity, in the token lines and the heatmap at once.
function linkFromNode(node, t, { clear = true } = {}) {
  const row = node?.dataset?.row !== undefined ? Number(node.dataset.row) : null;
  const col = node?.dataset?.col !== undefined ? Number(node.dataset.col) : null;
  if (row === null && col === null) return;
  if (clear) clearLinks();
  const { rows, cols } = t.attention;
  const sources = document.querySelectorAll('#source-tokens .token');
  const targets = document.querySelectorAll('#target-tokens .token');
  if (row !== null) {
    const weights = matrixRow(t.attention, row);
    sources.forEach((token, j) => token.style.setProperty('--link', weights[j].toFixed(3)));
    targets[row]?.classList.add('active');
  }
  if (col !== null) {
    for (let i = 0; i < rows; ++i) targets[i]?.style.setProperty('--link', t.attention.data[i * cols + col].toFixed(3));
    sources[col]?.classList.add('active');
  }
  lightHeatmap(byId('translate-heatmap'), row, col);
}

function clearLinks() {
  document.querySelectorAll('#tab-translate .token').forEach((token) => {
    token.style.removeProperty('--link');
    token.classList.remove('active');
  });
  clearHeatmap(byId('translate-heatmap'));
}
