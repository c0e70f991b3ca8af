// The page: every number drawn here comes from the engine (web/lib); this file only lays it out.
import { engineInfo, loadModel, matrixRow } from '/lib/index.mjs';
import { setupSelfAttention } from '/app/selfattention.mjs';
import { setupCaption } from '/app/caption.mjs';
import {
  byId, el, formatBytes, showError, tokenLabel, continuesWord, statusLine, createModelCache, createModelLoader,
} from '/app/ui.mjs';

const MANIFEST_URL = '/models/manifest.json';

// Sample sentences per language pair (the key is "src-tgt", then "src").
const SAMPLES = {
  'en-zh': ['Tom chases Mary.', 'I love you.', 'Where is the station?', 'It is raining today.'],
  en: ['A dog runs on the beach.', 'Two men are playing soccer in a park.',
       'A little girl in a pink dress is smiling.', 'A man rides a bike down the street.'],
  de: ['Ein Hund rennt am Strand.', 'Zwei Männer spielen Fußball in einem Park.',
       'Ein kleines Mädchen in einem rosa Kleid lächelt.'],
};

const FORMULAS = {
  additive: 'e<sub>j</sub> = v<sup>⊤</sup> tanh(W s<sub>i−1</sub> + U h<sub>j</sub>)',
  dot: 'e<sub>j</sub> = s<sub>i−1</sub><sup>⊤</sup> h<sub>j</sub>',
  general: 'e<sub>j</sub> = s<sub>i−1</sub><sup>⊤</sup> W h<sub>j</sub>',
  cosine: 'e<sub>j</sub> = g · cos(s<sub>i−1</sub>, h<sub>j</sub>)',
  scaled_dot: 'e<sub>j</sub> = q<sup>⊤</sup> k<sub>j</sub> / √d',
};
const COMPARE_ARCHS = [
  ['luong-dot', 'dot'], ['luong-general', 'general'], ['bahdanau', 'additive'], ['cosine', 'cosine'],
  ['transformer', 'scaled dot (Transformer)'],
];
// Manifest entries of the score-function comparison: same data, size and epochs, only the score differs. The
// shipped EN→DE translator is larger, so it stands in for the additive one only where the group lacks it.
const COMPARE_GROUP = 'score-functions';

const state = {
  manifest: [],
  last: null,              // { translation, entry }: what the explain tab shows
  selectedRow: 0,
};

// ---------------------------------------------------------------- small helpers

// A piece that continues a word is drawn joined to the previous one.
const pieceClass = (piece) => (continuesWord(piece) ? ' cont' : '');

// ---------------------------------------------------------------- tabs (WAI-ARIA tabs pattern)

function setupTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"][data-tab]')];
  const select = (tab, focus) => {
    for (const other of tabs) {
      const selected = other === tab;
      other.setAttribute('aria-selected', String(selected));
      other.tabIndex = selected ? 0 : -1;
      byId(other.getAttribute('aria-controls')).hidden = !selected;
    }
    if (focus) tab.focus();
    if (tab.dataset.tab === 'explain') renderExplain();
    if (tab.dataset.tab === 'engine') showEngine();
  };
  for (const tab of tabs) {
    tab.addEventListener('click', () => select(tab, false));
    tab.addEventListener('keydown', (event) => {
      const enabled = tabs.filter((other) => !other.disabled);  // a tab is enabled once its models exist
      const i = enabled.indexOf(tab);
      const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: enabled.length - 1 }[event.key];
      if (next === undefined) return;
      event.preventDefault();
      select(enabled[(next + enabled.length) % enabled.length], true);
    });
  }
}

// ---------------------------------------------------------------- models

async function readManifest() {
  const response = await fetch(MANIFEST_URL, { cache: 'no-cache' });
  if (!response.ok) throw new Error(`could not read the model list (HTTP ${response.status})`);
  const { models } = await response.json();
  return Array.isArray(models) ? models : [];
}

const available = (entry) => entry.bytes > 0 && !!entry.sha256;
// Manifest paths are repo-relative (models/weights/...), and the server maps /models/ to the models folder.
const modelUrl = (entry) => `/${entry.file}`;

// One download and one Model per id for the whole page: every tab shares them (see createModelCache).
const { getModel } = createModelCache((entry, options) =>
  loadModel(modelUrl(entry), { sha256: entry.sha256, bytes: entry.bytes, ...options }));

const setStatus = statusLine('model');

function currentEntry() {
  return state.manifest.find((entry) => entry.id === byId('model-select').value);
}

const loader = createModelLoader({
  getModel, available, setStatus, noneText: 'No models yet.', isCurrent: (entry) => currentEntry() === entry,
});

async function selectModel() {
  const entry = currentEntry();
  byId('translate-run').disabled = true;
  renderSamples(entry);
  if (await loader.load(entry)) byId('translate-run').disabled = false;
}

function renderSamples(entry) {
  const box = byId('samples');
  box.replaceChildren();
  if (!entry) return;
  const samples = SAMPLES[`${entry.src}-${entry.tgt}`] ?? SAMPLES[entry.src] ?? [];
  for (const text of samples) {
    const chip = el('button', { className: 'chip', text, attrs: { type: 'button', lang: entry.src } });
    chip.addEventListener('click', () => {
      byId('translate-input').value = text;
      if (!byId('translate-run').disabled) translate();
    });
    box.append(chip);
  }
  byId('translate-input').setAttribute('lang', entry.src);
}

// ---------------------------------------------------------------- translate + heatmap

async function translate() {
  const entry = currentEntry();
  const text = byId('translate-input').value;
  const button = byId('translate-run');
  showError(byId('translate-error'), null);
  if (!entry) return;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    const model = await getModel(entry);
    const started = performance.now();
    const translation = await model.translate(text, { beam: Number(byId('beam-select').value) });
    byId('translate-timing').textContent = `${Math.round(performance.now() - started)} ms`;
    state.last = { translation, entry };
    state.selectedRow = 0;
    renderTranslation(translation, entry);
  } catch (error) {
    showError(byId('translate-error'), error);
  } finally {
    button.disabled = !loader.isReady(currentEntry());  // another model may have been picked meanwhile
    button.removeAttribute('aria-busy');
  }
}

function renderTranslation(t, entry) {
  byId('translate-result').hidden = false;
  const output = byId('translate-output');
  output.textContent = t.text;
  output.lang = entry.tgt;
  const heatmap = byId('translate-heatmap');
  drawHeatmap(heatmap, t, entry);
  drawTokenLines(t, entry);
}

// Rows = output tokens, columns = source tokens. Cells carry their weight in --w; CSS colours them.
function drawHeatmap(container, t, entry, { compact = false } = {}) {
  const { rows, cols } = t.attention;
  container.replaceChildren();
  container.dataset.rows = String(rows);
  container.dataset.cols = String(cols);
  container.style.setProperty('--cols', String(cols));
  container.classList.toggle('compact', compact);
  container.append(el('div', { className: 'corner', attrs: { 'aria-hidden': 'true' } }));
  t.sourceTokens.forEach((piece, j) => {
    container.append(el('div', { className: 'col-head', text: tokenLabel(piece), attrs: { lang: entry.src, 'data-col': j } }));
  });
  for (let i = 0; i < rows; ++i) {
    container.append(el('div', { className: 'row-head', text: tokenLabel(t.targetTokens[i]),
                                 attrs: { lang: entry.tgt, 'data-row': i } }));
    const weights = matrixRow(t.attention, i);
    for (let j = 0; j < cols; ++j) {
      const cell = el('div', { className: 'cell', attrs: {
        'data-row': i, 'data-col': j,
        title: `${tokenLabel(t.targetTokens[i])} → ${tokenLabel(t.sourceTokens[j])}: ${weights[j].toFixed(3)}`,
      } });
      cell.style.setProperty('--w', weights[j].toFixed(4));
      container.append(cell);
    }
  }
  if (!compact) {
    // One hover handler for the grid: a cell links its row and column; headers link their whole row/column.
    container.onpointerover = (event) => linkFromNode(event.target, t);
    container.onpointerleave = () => clearLinks();
  }
}

function drawTokenLines(t, entry) {
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
        if (side === 'row') openExplain(k);
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
  const heatmap = byId('translate-heatmap');
  heatmap.querySelectorAll('.cell, .row-head, .col-head').forEach((cell) => {
    const r = cell.dataset.row === undefined ? null : Number(cell.dataset.row);
    const c = cell.dataset.col === undefined ? null : Number(cell.dataset.col);
    const on = (row !== null && r === row) || (col !== null && c === col);
    cell.classList.toggle('lit', on);
  });
  heatmap.classList.add('linking');
}

function clearLinks() {
  document.querySelectorAll('.token').forEach((token) => {
    token.style.removeProperty('--link');
    token.classList.remove('active');
  });
  const heatmap = byId('translate-heatmap');
  heatmap.classList.remove('linking');
  heatmap.querySelectorAll('.lit').forEach((cell) => cell.classList.remove('lit'));
}

// ---------------------------------------------------------------- attention explained

function openExplain(row) {
  state.selectedRow = row;
  byId('tab-btn-explain').click();
}

function renderExplain() {
  const last = state.last;
  byId('explain-empty').hidden = !!last;
  byId('explain-body').hidden = !last;
  if (!last) return;
  const { translation: t, entry } = last;
  if (t.attention.rows === 0) {
    byId('explain-empty').hidden = false;
    byId('explain-empty').textContent = 'The last translation is empty: there is no output word to explain.';
    byId('explain-body').hidden = true;
    return;
  }
  const row = Math.min(state.selectedRow, t.attention.rows - 1);
  byId('explain-source').textContent = t.sourceTokens.map(tokenLabel).join(' ');
  byId('explain-source').lang = entry.src;

  const picker = byId('explain-picker');
  picker.replaceChildren();
  t.targetTokens.forEach((piece, i) => {
    const button = el('button', { className: 'chip', text: tokenLabel(piece),
                                  attrs: { type: 'button', role: 'radio', lang: entry.tgt,
                                           'aria-checked': String(i === row), tabindex: i === row ? '0' : '-1' } });
    button.addEventListener('click', () => { state.selectedRow = i; renderExplain(); picker.children[i]?.focus(); });
    button.addEventListener('keydown', (event) => {
      const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      state.selectedRow = (i + step + t.targetTokens.length) % t.targetTokens.length;
      renderExplain();
      picker.children[state.selectedRow]?.focus();
    });
    picker.append(button);
  });

  byId('explain-score-name').textContent = `· ${t.scoreFunction}`;
  byId('explain-formula').innerHTML = FORMULAS[t.scoreFunction] ?? '';  // constant strings from this file
  const scores = matrixRow(t.scores, row);
  const weights = matrixRow(t.attention, row);
  drawBars(byId('explain-scores'), t.sourceTokens, scores, entry.src, { signed: true });
  drawBars(byId('explain-weights'), t.sourceTokens, weights, entry.src, { signed: false });
  drawStrips(byId('explain-strips'), t, row, entry);
}

function drawBars(box, pieces, values, lang, { signed }) {
  box.replaceChildren();
  const scale = Math.max(1e-9, ...Array.from(values, Math.abs));
  pieces.forEach((piece, j) => {
    const value = values[j];
    const bar = el('span', { className: `bar ${value < 0 ? 'negative' : 'positive'}` });
    bar.style.setProperty('--size', (Math.abs(value) / (signed ? scale : 1)).toFixed(4));
    box.append(el('div', { className: 'bar-row' }, [
      el('span', { className: 'bar-label', text: tokenLabel(piece), attrs: { lang } }),
      el('span', { className: 'bar-track' }, [bar]),
      el('span', { className: 'bar-value', text: value.toFixed(3) }),
    ]));
  });
}

// A vector as a strip of cells coloured by sign and size (scaled by the largest |value| in the view).
function strip(values, scale) {
  const node = el('span', { className: 'strip', attrs: { 'aria-hidden': 'true' } });
  node.style.setProperty('--n', String(values.length));
  for (const value of values) {
    const cell = el('span', { className: value < 0 ? 'negative' : 'positive' });
    cell.style.setProperty('--a', Math.min(1, Math.abs(value) / scale).toFixed(3));
    node.append(cell);
  }
  return node;
}

function drawStrips(box, t, row, entry) {
  box.replaceChildren();
  const { values, context } = t;
  const weights = matrixRow(t.attention, row);
  const contextRow = matrixRow(context, row);
  const scale = Math.max(1e-9, ...Array.from(values.data, Math.abs));
  t.sourceTokens.forEach((piece, j) => {
    const line = el('div', { className: 'strip-row' }, [
      el('span', { className: 'bar-label', text: tokenLabel(piece), attrs: { lang: entry.src } }),
      el('span', { className: 'strip-weight', text: `${weights[j].toFixed(2)} ×` }),
      strip(matrixRow(values, j), scale),
    ]);
    line.style.setProperty('--alpha', Math.max(0.08, weights[j]).toFixed(3));
    box.append(line);
  });
  box.append(el('div', { className: 'strip-row sum' }, [
    el('span', { className: 'bar-label', text: `c (${tokenLabel(t.targetTokens[row])})`, attrs: { lang: entry.tgt } }),
    el('span', { className: 'strip-weight', text: '=' }),
    strip(contextRow, scale),
  ]));
  box.setAttribute('aria-label', `Context vector of ${contextRow.length} values for ${tokenLabel(t.targetTokens[row])}`);
}

// ---------------------------------------------------------------- score functions

function compareEntry(arch) {
  const enDe = state.manifest.filter((e) => e.arch === arch && e.src === 'en' && e.tgt === 'de');
  return enDe.find((e) => e.group === COMPARE_GROUP) ?? enDe[0];
}

function setupCompare() {
  const grid = byId('compare-grid');
  const entries = COMPARE_ARCHS.map(([arch, score]) => ({
    arch, score, entry: compareEntry(arch),
  }));
  grid.replaceChildren();
  for (const item of entries) {
    item.card = el('article', { className: 'compare-card' }, [
      el('h3', { text: item.score }),
      el('p', { className: 'muted small', text: item.entry && available(item.entry)
        ? `${item.entry.arch} · ${formatBytes(item.entry.bytes)}` : 'not available yet' }),
      el('p', { className: 'output small-output', attrs: { lang: 'de' } }),
      el('div', { className: 'heatmap-scroll' }, [el('div', { className: 'heatmap compact' })]),
    ]);
    grid.append(item.card);
  }
  byId('compare-run').onclick = () => compare(entries);
  byId('compare-input').onkeydown = (event) => { if (event.key === 'Enter') compare(entries); };
}

async function compare(entries) {
  const text = byId('compare-input').value;
  await Promise.all(entries.map(async ({ entry, card }) => {
    const output = card.querySelector('.output');
    const heatmap = card.querySelector('.heatmap');
    if (!entry || !available(entry)) return;
    output.classList.remove('error');
    output.textContent = 'translating…';
    try {
      const model = await getModel(entry);
      const t = await model.translate(text, { beam: Number(byId('beam-select').value) });
      output.textContent = t.text;
      drawHeatmap(heatmap, t, entry, { compact: true });
    } catch (error) {
      output.textContent = error.message;
      output.classList.add('error');
    }
  }));
}

// ---------------------------------------------------------------- engine tab

let engineShown = false;
async function showEngine() {
  if (engineShown) return;
  engineShown = true;
  const started = performance.now();
  byId('engine-status').textContent = 'loading the WebAssembly engine…';
  try {
    const info = await engineInfo();
    byId('engine-status').textContent = 'ready';
    byId('engine-version').textContent = info.version;
    byId('engine-simd').textContent = info.simd;
    byId('engine-load-ms').textContent = `${Math.round(performance.now() - started)} ms`;
  } catch (error) {
    engineShown = false;
    const status = byId('engine-status');
    status.textContent = error.message;
    status.classList.add('error');
  }
}

// ---------------------------------------------------------------- start

async function start() {
  setupTabs();
  byId('translate-run').addEventListener('click', translate);
  byId('translate-input').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      if (!byId('translate-run').disabled) translate();
    }
  });
  const select = byId('model-select');
  select.addEventListener('change', selectModel);
  try {
    const manifest = await readManifest();
    state.manifest = manifest.filter((entry) => entry.task === 'translate');
    setupCaption({ entries: manifest.filter((entry) => entry.task === 'caption'), getModel, available });
  } catch (error) {
    setStatus(error.message, { error: true });
    return;
  }
  // The picker lists the main translators (one per language pair); the score-function variants live in their tab.
  const pickable = state.manifest.filter((entry) => entry.arch === 'bahdanau' && entry.group !== COMPARE_GROUP);
  for (const entry of pickable) {
    const option = el('option', { text: `${entry.label ?? entry.id}${available(entry) ? '' : ' (not available yet)'}`,
                                  attrs: { value: entry.id } });
    option.disabled = !available(entry);
    select.append(option);
  }
  const first = pickable.find(available);
  if (first) select.value = first.id;
  setupCompare();
  setupSelfAttention({ entries: state.manifest.filter((entry) => entry.arch === 'transformer'), getModel, available });
  if (!first) {
    if (select.options.length) select.options[0].selected = true;  // show which model is missing
    select.disabled = pickable.length === 0;
    setStatus('No models yet: the trained models have not been published to models/manifest.json.');
    renderSamples(pickable[0]);
    return;
  }
  byId('translate-input').value = (SAMPLES[`${first.src}-${first.tgt}`] ?? SAMPLES[first.src] ?? [''])[0];
  await selectModel();
}

start();
