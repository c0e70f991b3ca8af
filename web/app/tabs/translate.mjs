// The Translate tab: a translator from the manifest, a sentence in, the translation and its alignment out: the
// heatmap and the two token lines, linked so that hovering a word (or a cell) lights what it attends to.
import { matrixRow } from '/lib/index.mjs';
import { byId, el, showError, tokenLabel, continuesWord, statusLine, createModelLoader } from '/app/ui.mjs';
import { COMPARE_GROUP } from '/app/manifest.mjs';
import { clearHeatmap, drawHeatmap, lightHeatmap } from '/app/widgets/heatmap.mjs';
import { fillModelPicker, pickedEntry } from '/app/widgets/model_picker.mjs';
import { renderSamples } from '/app/widgets/samples.mjs';

// Sample sentences per language pair (the key is "src-tgt", then "src").
const SAMPLES = {
  'en-zh': ['Tom chases Mary.', 'I love you.', 'Where is the station?', 'It is raining today.'],
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
 * variants live in their tab). beam(): the beam width picked. onTranslation(translation, entry): each new result;
 * onExplain(row): a click on output token `row`. Resolves once the first model is loaded (or found missing).
 */
export async function setupTranslate({ entries, getModel, available, beam, onTranslation, onExplain }) {
  const select = byId('model-select');
  const input = byId('translate-input');
  const button = byId('translate-run');
  const pickable = entries.filter((entry) => entry.arch === 'bahdanau' && entry.group !== COMPARE_GROUP);
  const currentEntry = () => pickedEntry(select, pickable);
  const loader = createModelLoader({
    getModel, available, setStatus, noneText: 'No models yet.', isCurrent: (entry) => currentEntry() === entry,
  });

  async function translate() {
    const entry = currentEntry();
    showError(byId('translate-error'), null);
    if (!entry) return;
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    try {
      const model = await getModel(entry);
      const started = performance.now();
      const translation = await model.translate(input.value, { beam: beam() });
      byId('translate-timing').textContent = `${Math.round(performance.now() - started)} ms`;
      onTranslation(translation, entry);
      render(translation, entry, onExplain);
    } catch (error) {
      showError(byId('translate-error'), error);
    } finally {
      button.disabled = !loader.isReady(currentEntry());  // another model may have been picked meanwhile
      button.removeAttribute('aria-busy');
    }
  }

  const showSamples = (entry) => {
    if (entry) renderSamples(byId('samples'), samplesFor(entry), { lang: entry.src, input, button, run: translate });
    else byId('samples').replaceChildren();
  };

  async function selectModel() {
    const entry = currentEntry();
    button.disabled = true;
    showSamples(entry);
    if (await loader.load(entry)) button.disabled = false;
  }

  button.addEventListener('click', translate);
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      if (!button.disabled) translate();
    }
  });
  select.addEventListener('change', selectModel);

  const first = fillModelPicker(select, pickable, available);
  if (!first) {
    if (select.options.length) select.options[0].selected = true;  // show which model is missing
    select.disabled = pickable.length === 0;
    setStatus('No models yet: the trained models have not been published to models/manifest.json.');
    showSamples(pickable[0]);
    return;
  }
  input.value = samplesFor(first)[0] ?? '';
  await selectModel();
}

function render(t, entry, onExplain) {
  byId('translate-result').hidden = false;
  const output = byId('translate-output');
  output.textContent = t.text;
  output.lang = entry.tgt;
  drawHeatmap(byId('translate-heatmap'), t, entry, { onHover: (node) => linkFromNode(node, t), onLeave: clearLinks });
  drawTokenLines(t, entry, onExplain);
}

function drawTokenLines(t, entry, onExplain) {
  const make = (boxId, pieces, side, lang) => {
    const box = byId(boxId);
    box.replaceChildren();
    pieces.forEach((piece, k) => {
      const token = el('button', { className: `token${pieceClass(piece)}`, text: tokenLabel(piece),
                                   attrs: { type: 'button', lang, [`data-${side}`]: k,
                                            'aria-label': `${side === 'row' ? 'output' : 'source'} token ${tokenLabel(piece)}` } });
      token.addEventListener('pointerenter', () => linkFromNode(token, t));
      token.addEventListener('focus', () => linkFromNode(token, t));
      token.addEventListener('pointerleave', clearLinks);
      token.addEventListener('blur', clearLinks);
      token.addEventListener('click', () => {
        if (side === 'row') onExplain(k);
      });
      box.append(token);
    });
  };
  make('source-tokens', t.sourceTokens, 'col', entry.src);
  make('target-tokens', t.targetTokens, 'row', entry.tgt);
}

// Highlights what a row (output token) attends to, or which output tokens attend to a column (source token),
// with the weight as intensity, in the token lines and the heatmap at once.
function linkFromNode(node, t) {
  const row = node?.dataset?.row !== undefined ? Number(node.dataset.row) : null;
  const col = node?.dataset?.col !== undefined ? Number(node.dataset.col) : null;
  if (row === null && col === null) return;
  clearLinks();
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
  document.querySelectorAll('.token').forEach((token) => {
    token.style.removeProperty('--link');
    token.classList.remove('active');
  });
  clearHeatmap(byId('translate-heatmap'));
}
