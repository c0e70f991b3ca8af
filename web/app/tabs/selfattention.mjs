// The Self-attention tab: a Transformer's attention in every layer and head, drawn on <canvas>.
//   head view   (bertviz style) the query tokens on the left, the key tokens on the right, a line from each
//               query to each key with opacity = weight, one colour per head; hovering a token (or picking it
//               with the keyboard) keeps only its lines;
//   model view  a grid of small heatmaps, one per (layer, head); clicking one opens it in the head view.
// Every weight comes from the engine (Translation.encoderSelfAttention / decoderSelfAttention / crossAttention),
// and every raw score in the tooltips (encoderSelfScores / decoderSelfScores / crossScores, asked for with
// { rawScores: true }); this module only draws. main.mjs calls setupSelfAttention() once it has read the manifest.
import { attentionHead } from '/lib/index.mjs';
import {
  byId, el, showError as showErrorIn, tokenLabel as pieceLabel, statusLine, createModelLoader, fillCountOptions,
  attachesToPrevious, continuesWord, startsWord,
} from '/app/ui.mjs';
import { fillModelPicker, pickedEntry } from '/app/widgets/model_picker.mjs';
import { mountModelControls } from '/app/widgets/model_controls.mjs';
import { renderSamples as renderSampleChips } from '/app/widgets/samples.mjs';
import { enableTab, watchPanel } from '/app/widgets/tablist.mjs';
import { canvasToPng, escapeXml, exportBar, hideTip, legend, matrixRows, showTip, weightLines } from '/app/widgets/figure.mjs';
import { clipInput, noticesFor, splitSentences } from '/app/widgets/text.mjs';
import { publish, restoreFor } from '/app/share.mjs';
import { drawNeuronView } from '/app/widgets/neuron.mjs';

// The first two samples are the long-range ones: a pronoun ("she", "her") refers back to a noun words earlier.
// Every sample is whole words in the broad (Tatoeba + Multi30k) tokenizers the Transformers use (no word split into
// pieces), and in the kind of sentence they learned from.
const SAMPLES = {
  en: ['The woman is holding her baby while she walks.',
       'A girl in a red dress is playing with her dog on the grass.',
       'A dog runs on the beach.', 'Two men are playing soccer in a park.'],
  de: ['Eine Frau hält ihr Baby, während sie geht.',
       'Ein Mädchen in einem roten Kleid spielt mit ihrem Hund auf dem Gras.',
       'Ein Hund läuft am Strand.', 'Zwei Männer spielen Fußball in einem Park.'],
};

const KINDS = {
  encoder: {
    tensor: 'encoderSelfAttention', scores: 'encoderSelfScores', left: 'source', right: 'source',
    scoreMeaning: 'raw score: q·k ÷ √d_k before the softmax, q of the left token, k of the right one (see the neuron view)',
    explain: 'Encoder self-attention: every source token scores every source token, in both directions, in every layer.',
  },
  decoder: {
    tensor: 'decoderSelfAttention', scores: 'decoderSelfScores', left: 'decoder', right: 'decoder',
    scoreMeaning: 'raw score: q·k ÷ √d_k before the softmax, q and k of two decoder positions; a later position\'s is ' +
                  '−∞ (the causal mask), so its weight is 0',
    explain: 'Decoder self-attention: each position scores only itself and the positions before it (a causal mask hides ' +
             'words not written yet). The positions are the decoder inputs: ⟨s⟩, then the words written so far.',
  },
  cross: {
    tensor: 'crossAttention', scores: 'crossScores', left: 'decoder', right: 'source',
    scoreMeaning: 'raw score: q·k ÷ √d_k before the softmax, q of the decoder position, k of the source token ' +
                  '(from the encoder\'s output)',
    explain: 'Cross-attention: each decoder position (left) scores every source token (right); position i writes ' +
             'output word i. Averaged over the heads of the last layer, this is the alignment of the Translate tab.',
  },
};
const SIDE_NAMES = { source: 'source', decoder: 'decoder input' };

// One colour per head (Tableau 10, then lighter twins), as RGB so lines and boxes can take a weight as alpha.
const HEAD_COLOURS = [
  [31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189], [140, 86, 75], [227, 119, 194],
  [127, 127, 127], [188, 189, 34], [23, 190, 207], [174, 199, 232], [255, 187, 120], [152, 223, 138],
  [255, 152, 150], [197, 176, 213], [196, 156, 148],
];
const headColour = (h) => HEAD_COLOURS[h % HEAD_COLOURS.length];
const rgb = (c, alpha = 1) => `rgba(${c[0]}, ${c[1]}, ${c[2]}, ${alpha})`;

// Head view geometry, in CSS pixels.
const ROW = 22;          // one token per row
const TOP = 26;          // room for the column titles
const PAD = 8;           // canvas edge to label
const BOX = 5;           // width of one head's weight box beside a label
const MIN_WEIGHT = 0.01; // lines fainter than this are not drawn
const FONT = '13px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif';
const THUMB = 76;        // model view heatmap size

const view = {
  entries: [],
  getModel: null,
  loader: null,         // createModelLoader() of this tab
  onNeuron: () => {},   // setupSelfAttention()'s onNeuron
  translation: null,
  kind: 'encoder',
  layer: 0,
  heads: new Set(),
  pinned: null,         // left token chosen with the keyboard / the "Lines from" picker
  pinnedKey: null,      // with a pinned token, the key whose line the arrow keys (left / right) point at
  hover: null,          // { side: 'left' | 'right', index } under the pointer
  geometry: null,       // where the last head view put things, for hit-testing
  drawnWidth: 0,
};

// ---------------------------------------------------------------- helpers

// A piece that continues a word gets a leading "·": the canvas cannot join it to the previous piece as the
// Translate tab does.
const tokenLabel = (piece) => pieceLabel(piece, { continuation: '·' });

const setStatus = statusLine('sa');
const showError = (error) => showErrorIn(byId('sa-error'), error);

const currentEntry = () => pickedEntry(byId('sa-model'), view.entries);

// The tokens on each side of the current kind: the decoder's positions are its inputs, <s> y1 .. y(T-1).
function sideTokens(t, side) {
  if (side === 'source') return t.sourceTokens;
  return t.targetTokens.length ? ['<s>', ...t.targetTokens.slice(0, -1)] : [];
}

function current() {
  const t = view.translation;
  const kind = KINDS[view.kind];
  const tensor = t[kind.tensor];
  return { t, kind, tensor, left: sideTokens(t, kind.left), right: sideTokens(t, kind.right) };
}

// ---------------------------------------------------------------- model loading

// A new model: the old result goes at once; the same sentence runs again once the model is ready.
async function loadSelected() {
  const entry = currentEntry();
  const rerun = !!view.translation;
  byId('sa-run').disabled = true;
  renderSamples(entry);
  if (rerun) clearResult();
  share();
  if (await view.loader.load(entry)) {
    byId('sa-run').disabled = false;
    const saved = view.restore;
    view.restore = null;
    const opening = view.opening;  // the model's own sample, only on the first load of the default model
    view.opening = null;
    if (rerun || saved?.get('text') || (opening && entry === opening.entry)) await run();
    if (saved && view.translation) applySaved(saved);
    else if (opening && entry === opening.entry && view.translation) applyOpening(opening.spec);
  }
}

// A shared link's kind, layer, heads and word, on the translation it reran.
function applySaved(saved) {
  if (KINDS[saved.get('kind')]) {
    document.querySelector(`input[name="sa-kind"][value="${saved.get('kind')}"]`).checked = true;
    selectKind(saved.get('kind'));
  }
  const { tensor, left } = current();
  const layer = Number(saved.get('layer')) - 1;
  if (layer >= 0 && layer < tensor.layers) view.layer = layer;
  if (saved.get('heads')) {
    const heads = saved.get('heads').split(',').map((h) => Number(h) - 1).filter((h) => h >= 0 && h < tensor.heads);
    view.heads = new Set(heads);
  }
  redraw();
  const word = Number(saved.get('word')) - 1;
  if (word >= 0 && word < left.length) setPinned(word);
}

// A manifest entry's "selfAttention": { text, layer, head, from } (1-based, as the model card names them): the
// encoder head that shows the model's best example, opened on that layer with only that head and the first piece
// of the word `from` picked.
function openingOf(entry) {
  const spec = entry?.selfAttention;
  if (!spec || typeof spec.text !== 'string' || !spec.text) return null;
  return spec;
}

function applyOpening(spec) {
  if (view.kind !== 'encoder') {
    document.querySelector('input[name="sa-kind"][value="encoder"]').checked = true;
    selectKind('encoder');
  }
  const { tensor, left } = current();
  const layer = Number(spec.layer) - 1;
  if (Number.isInteger(layer) && layer >= 0 && layer < tensor.layers) view.layer = layer;
  const head = Number(spec.head) - 1;
  if (Number.isInteger(head) && head >= 0 && head < tensor.heads) {
    view.heads = new Set([head]);
    byId('sa-neuron-head').value = String(head);  // the neuron view shows the same head
  }
  redraw();
  const from = typeof spec.from === 'string' ? wordStart(left, spec.from) : -1;
  if (from >= 0) setPinned(from);
}

// The index of the first piece of the first word spelled `word` (pieces joined as the detokenizer does; a bare "▁"
// before the word's letters is skipped), or -1.
function wordStart(pieces, word) {
  let text = null;  // the word being read; null inside a special token
  let first = -1;
  for (const [i, piece] of pieces.entries()) {
    if (i === 0 || !attachesToPrevious(piece, pieces[i - 1])) {
      if (text === word) return first;
      text = startsWord(piece) || continuesWord(piece) ? '' : null;
      first = -1;
    }
    if (text === null) continue;
    const letters = startsWord(piece) ? piece.slice(1) : piece;
    if (letters && first < 0) first = i;
    text += letters;
  }
  return text === word ? first : -1;
}

function clearResult() {
  view.translation = null;
  view.onNeuron(null);
  byId('sa-result').hidden = true;
  byId('sa-timing').textContent = '';
  hideTip();
}

function share() {
  publish('selfattention', {
    model: currentEntry()?.id, text: byId('sa-input').value, beam: byId('sa-beam').value,
    kind: view.translation ? view.kind : null, layer: view.translation ? view.layer + 1 : null,
    heads: view.translation ? [...view.heads].sort((a, b) => a - b).map((h) => h + 1).join(',') || 'none' : null,
    word: view.translation && view.pinned !== null ? view.pinned + 1 : null,
  });
}

function renderSamples(entry) {
  if (!entry) {
    byId('sa-samples').replaceChildren();
    return;
  }
  renderSampleChips(byId('sa-samples'), SAMPLES[entry.src] ?? [],
                    { lang: entry.src, input: byId('sa-input'), button: byId('sa-run'), run });
}

async function run() {
  const entry = currentEntry();
  const button = byId('sa-run');
  showError(null);
  if (!entry || button.disabled) return;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    const model = await view.getModel(entry);
    const started = performance.now();
    // allLayers: every decoder layer's and head's weights; queryKey: the neuron view draws the encoder's queries
    // and keys; rawScores: the tooltips show every attention's raw scores.
    const t = await model.translate(byId('sa-input').value, { beam: Number(byId('sa-beam').value), allLayers: true,
                                                             queryKey: true, rawScores: true });
    if (!t.encoderSelfAttention) throw new Error(`${entry.label ?? entry.id} is not a Transformer: it has no self-attention to show`);
    byId('sa-timing').textContent = `${Math.round(performance.now() - started)} ms`;
    view.translation = t;
    byId('sa-result').hidden = false;
    const output = byId('sa-output');
    output.textContent = t.text;
    output.lang = entry.tgt;
    const notes = noticesFor(t);
    const sentences = splitSentences(byId('sa-input').value, entry.src).length;
    if (sentences > 1) {
      notes.unshift(`These are ${sentences} sentences, run as one input, so the heads attend across them; the models ` +
                    'learned from single sentences (the Translate tab translates a paragraph one sentence at a time).');
    }
    byId('sa-notices').replaceChildren(...notes.map((text) => el('p', { className: 'notice', text })));
    byId('sa-notices').hidden = notes.length === 0;
    selectKind(view.kind);
  } catch (error) {
    clearResult();  // never an old figure next to a new error
    showError(error);
  } finally {
    share();
    button.disabled = !view.loader.isReady(currentEntry());  // another model may have been picked meanwhile
    button.removeAttribute('aria-busy');
  }
}

// ---------------------------------------------------------------- controls

// A new kind (or a new translation): rebuild the layer, head and token pickers, keeping what still fits.
function selectKind(kind) {
  view.kind = kind;
  const { tensor, left } = current();
  byId('sa-explain').textContent = KINDS[kind].explain;
  view.layer = Math.min(view.layer, tensor.layers - 1);
  const kept = [...view.heads].filter((h) => h < tensor.heads);
  view.heads = new Set(kept.length ? kept : Array.from({ length: tensor.heads }, (_, h) => h));
  view.pinned = null;
  view.hover = null;

  fillCountOptions(byId('sa-layer'), tensor.layers, 'Layer', view.layer);

  const headBox = byId('sa-heads');
  headBox.replaceChildren(el('legend', { text: 'Heads' }));
  for (let h = 0; h < tensor.heads; ++h) {
    const box = el('input', { attrs: { type: 'checkbox', value: h } });
    box.checked = view.heads.has(h);
    box.addEventListener('change', () => {
      if (box.checked) view.heads.add(h);
      else view.heads.delete(h);
      redraw();
    });
    const label = el('label', { className: 'sa-head' }, [box, el('span', { className: 'sa-swatch', attrs: { 'aria-hidden': 'true' } }),
                                                         `Head ${h + 1}`]);
    label.style.setProperty('--c', rgb(headColour(h)));
    headBox.append(label);
  }

  const focus = byId('sa-focus');
  focus.replaceChildren(el('option', { text: 'every token', attrs: { value: '' } }),
                        ...left.map((piece, i) => el('option', { text: `${i + 1}. ${tokenLabel(piece)}`, attrs: { value: i } })));
  focus.value = '';
  fillNeuronControls();
  buildModelView();
  drawTools();
  redraw();
}

function setPinned(index) {
  const { left } = current();
  view.pinned = index === null || left.length === 0 ? null : Math.max(0, Math.min(left.length - 1, index));
  view.pinnedKey = null;
  byId('sa-focus').value = view.pinned === null ? '' : String(view.pinned);
  drawHeadView();
  // The neuron view follows the token picked here (its queries are the encoder's source tokens).
  if (view.pinned !== null && view.kind === 'encoder') {
    byId('sa-neuron-query').value = String(view.pinned);
    drawNeuron();
  }
  share();
}

function redraw() {
  syncHeadControls();
  drawHeadView();
  drawNeuron();
  share();
}

// ---------------------------------------------------------------- neuron view (encoder self-attention)

function fillNeuronControls() {
  const t = view.translation;
  const tensor = t.encoderSelfAttention;
  const headSelect = byId('sa-neuron-head');
  const querySelect = byId('sa-neuron-query');
  const keepHead = Math.min(Number(headSelect.value) || 0, tensor.heads - 1);
  fillCountOptions(headSelect, tensor.heads, 'Head', keepHead);
  querySelect.replaceChildren(...t.sourceTokens.map((piece, i) => el('option', { text: `${i + 1}. ${tokenLabel(piece)}`, attrs: { value: i } })));
  querySelect.value = String(view.pinned !== null && view.kind === 'encoder' ? view.pinned : 0);
}

function drawNeuron() {
  const t = view.translation;
  const box = byId('sa-neuron');
  if (!t) return;
  const note = byId('sa-neuron-note');
  note.hidden = view.kind === 'encoder';
  note.textContent = view.kind === 'encoder' ? '' : 'Shown for the encoder self-attention, whose queries and keys the engine returns; its layer is the one picked above.';
  const selection = {
    layer: Math.min(view.layer, t.encoderSelfAttention.layers - 1), head: Number(byId('sa-neuron-head').value),
    query: Number(byId('sa-neuron-query').value),
  };
  drawNeuronView(box, t, { ...selection, lang: currentEntry()?.src ?? 'en', name: `attnlab-${currentEntry()?.id}-neuron-view` });
  view.onNeuron(t, currentEntry(), selection);
}

function syncHeadControls() {
  byId('sa-heads').querySelectorAll('input').forEach((box) => { box.checked = view.heads.has(Number(box.value)); });
  byId('sa-layer').value = String(view.layer);
  byId('sa-grid').querySelectorAll('.sa-thumb').forEach((thumb) => {
    const on = Number(thumb.dataset.layer) === view.layer && view.heads.has(Number(thumb.dataset.head));
    thumb.setAttribute('aria-pressed', String(on));
  });
}

// ---------------------------------------------------------------- head view

function drawHeadView() {
  const canvas = byId('sa-canvas');
  const box = canvas.parentElement;
  if (!view.translation || box.clientWidth === 0) return;  // hidden: the ResizeObserver draws when it shows
  const { kind, tensor, left, right } = current();
  const head = (h) => attentionHead(tensor, view.layer, h);
  const heads = [...view.heads].sort((a, b) => a - b);
  const focus = view.hover ?? (view.pinned === null ? null : { side: 'left', index: view.pinned });

  const width = box.clientWidth;
  const height = TOP + Math.max(left.length, right.length, 1) * ROW + PAD;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  view.drawnWidth = width;
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = FONT;
  ctx.textBaseline = 'middle';

  const leftLabels = left.map(tokenLabel);
  const rightLabels = right.map(tokenLabel);
  const widest = Math.max(40, ...[...leftLabels, ...rightLabels].map((s) => ctx.measureText(s).width));
  const labelWidth = Math.min(widest + 8, width * 0.28);
  const boxes = width >= 480 ? tensor.heads * BOX : 0;  // per-head weight boxes beside the labels, if there is room
  const leftText = PAD + labelWidth;                       // right edge of the left labels
  const rightText = width - PAD - labelWidth;              // left edge of the right labels
  const x1 = leftText + 4 + boxes + 4;
  const x2 = rightText - 4 - boxes - 4;
  const y = (i) => TOP + (i + 0.5) * ROW;
  view.geometry = { x1, x2, left: left.length, right: right.length };

  // Column titles, from the canvas edges so they fit however narrow the labels are.
  ctx.fillStyle = '#5b6576';
  ctx.font = `600 11px ${FONT.replace(/^13px /, '')}`;
  ctx.textAlign = 'left';
  ctx.fillText(`${SIDE_NAMES[kind.left]} (query)`.toUpperCase(), PAD, TOP / 2, width / 2 - 2 * PAD);
  ctx.textAlign = 'right';
  ctx.fillText(`${SIDE_NAMES[kind.right]} (key)`.toUpperCase(), width - PAD, TOP / 2, width / 2 - 2 * PAD);
  ctx.font = FONT;

  // Lines: query i → key j, one colour per head, opacity = weight.
  ctx.lineWidth = 2;
  ctx.lineCap = 'round';
  for (const h of heads) {
    const a = head(h);
    ctx.strokeStyle = rgb(headColour(h));
    for (let i = 0; i < a.rows; ++i) {
      if (focus?.side === 'left' && focus.index !== i) continue;
      for (let j = 0; j < a.cols; ++j) {
        if (focus?.side === 'right' && focus.index !== j) continue;
        const w = a.data[i * a.cols + j];
        if (w < MIN_WEIGHT) continue;
        ctx.globalAlpha = w;
        ctx.beginPath();
        ctx.moveTo(x1, y(i));
        ctx.lineTo(x2, y(j));
        ctx.stroke();
      }
    }
  }
  ctx.globalAlpha = 1;

  // With a focused token, the other side shows each head's weight as a box beside its label.
  if (focus && boxes) {
    const other = focus.side === 'left' ? right.length : left.length;
    for (const h of heads) {
      const a = head(h);
      for (let k = 0; k < other; ++k) {
        const w = focus.side === 'left' ? a.data[focus.index * a.cols + k] : a.data[k * a.cols + focus.index];
        ctx.fillStyle = rgb(headColour(h), w);
        const x = focus.side === 'left' ? rightText - 4 - boxes + h * BOX : leftText + 4 + h * BOX;
        ctx.fillRect(x, y(k) - ROW / 2 + 3, BOX - 1, ROW - 6);
      }
    }
  }

  // Labels, the focused one on a tinted background.
  const drawLabels = (labels, side, x, align) => {
    ctx.textAlign = align;
    labels.forEach((label, i) => {
      const focused = focus?.side === side && focus.index === i;
      if (focused) {
        ctx.fillStyle = '#fde7da';
        ctx.fillRect(align === 'right' ? x - labelWidth : x - 3, y(i) - ROW / 2 + 1, labelWidth + 3, ROW - 2);
      }
      ctx.fillStyle = focused ? '#c2410c' : '#1d2430';
      ctx.font = focused ? `600 ${FONT}` : FONT;
      ctx.fillText(label, x, y(i), labelWidth);
    });
    ctx.font = FONT;
  };
  drawLabels(leftLabels, 'left', leftText, 'right');
  drawLabels(rightLabels, 'right', rightText, 'left');

  Object.assign(canvas.dataset, {
    kind: view.kind, layer: String(view.layer), heads: heads.join(','),
    leftTokens: JSON.stringify(left), rightTokens: JSON.stringify(right),
  });
  canvas.setAttribute('aria-label', `Head view of the ${view.kind} attention, layer ${view.layer + 1}, ` +
    `${heads.length ? `head${heads.length > 1 ? 's' : ''} ${heads.map((h) => h + 1).join(', ')}` : 'no head selected'}: ` +
    `${left.length} query tokens, ${right.length} key tokens. Up and down arrows pick a query token, left and ` +
    'right walk its lines with their numbers, Escape shows all.');
  writeReadout(focus, leftLabels, rightLabels, heads, head);
}

// The head view as SVG: the same lines, labels and head colours as the canvas, at its size.
function headViewSvg() {
  const { kind, tensor, left, right } = current();
  const g = view.geometry;
  const width = view.drawnWidth;
  const height = TOP + Math.max(left.length, right.length, 1) * ROW + PAD + 24;
  const y = (i) => TOP + (i + 0.5) * ROW;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="13">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<text x="${PAD}" y="${TOP / 2 + 4}" font-size="11" font-weight="600" fill="#5b6576">${escapeXml(`${SIDE_NAMES[kind.left]} (query)`.toUpperCase())}</text>`,
    `<text x="${width - PAD}" y="${TOP / 2 + 4}" font-size="11" font-weight="600" fill="#5b6576" text-anchor="end">${escapeXml(`${SIDE_NAMES[kind.right]} (key)`.toUpperCase())}</text>`];
  for (const h of [...view.heads].sort((a, b) => a - b)) {
    const a = attentionHead(tensor, view.layer, h);
    for (let i = 0; i < a.rows; ++i) {
      if (view.pinned !== null && i !== view.pinned) continue;
      for (let j = 0; j < a.cols; ++j) {
        const w = a.data[i * a.cols + j];
        if (w < MIN_WEIGHT) continue;
        parts.push(`<line x1="${g.x1}" y1="${y(i)}" x2="${g.x2}" y2="${y(j)}" stroke="${rgb(headColour(h))}" stroke-opacity="${w.toFixed(3)}" stroke-width="2" stroke-linecap="round"/>`);
      }
    }
  }
  left.forEach((p, i) => parts.push(`<text x="${g.x1 - 8}" y="${y(i) + 4}" text-anchor="end" fill="#1d2430">${escapeXml(tokenLabel(p))}</text>`));
  right.forEach((p, j) => parts.push(`<text x="${g.x2 + 8}" y="${y(j) + 4}" fill="#1d2430">${escapeXml(tokenLabel(p))}</text>`));
  parts.push(`<text x="${PAD}" y="${height - 8}" font-size="11" fill="#5b6576">${escapeXml(`${view.kind} attention, layer ${view.layer + 1}; line opacity = weight; one colour per head`)}</text>`, '</svg>');
  return parts.join('');
}

// The raw scores go with the weights so that the copied numbers are the tooltips' numbers. JSON has no −∞: a key
// the causal mask hides is null there, and the file says so.
function headViewJson() {
  const { t, kind, tensor, left, right } = current();
  const heads = {};
  const scores = t[kind.scores] ? {} : null;
  for (const h of [...view.heads].sort((a, b) => a - b)) {
    heads[`head ${h + 1}`] = matrixRows(attentionHead(tensor, view.layer, h));
    if (scores) {
      scores[`head ${h + 1}`] = matrixRows(attentionHead(t[kind.scores], view.layer, h), 4)
        .map((r) => r.map((v) => (Number.isFinite(v) ? v : null)));
    }
  }
  return { model: currentEntry()?.id, text: t.text, kind: view.kind, layer: view.layer + 1,
           queryTokens: left, keyTokens: right, weights: heads,
           ...(scores ? { rawScores: scores, rawScoreMeaning: `${kind.scoreMeaning}; null = −∞ (masked)` } : {}) };
}

// Legends and export bars of the head view and the model view.
function drawTools() {
  const stem = () => `attnlab-${currentEntry()?.id}-${view.kind}-layer${view.layer + 1}`;
  byId('sa-head-tools').replaceChildren(
    legend({ from: 'rgba(31, 119, 180, 0.05)', to: 'rgb(31, 119, 180)',
             meaning: 'line opacity = attention weight (each query row sums to 1); the colour is the head' }),
    exportBar({ name: stem, label: 'head view', svg: headViewSvg, json: headViewJson, png: () => canvasToPng(byId('sa-canvas')) }),
  );
  byId('sa-grid-tools').replaceChildren(
    legend({ from: '#fff', to: 'rgb(31, 119, 180)', meaning: 'white = 0, the head\'s colour = 1 (rows are queries)' }),
    exportBar({ name: () => `attnlab-${currentEntry()?.id}-${view.kind}-all-heads`, label: 'model view', svg: modelViewSvg,
                json: () => {
                  const { tensor, left, right } = current();
                  const layers = [];
                  for (let l = 0; l < tensor.layers; ++l) {
                    layers.push(Array.from({ length: tensor.heads }, (_, h) => matrixRows(attentionHead(tensor, l, h), 4)));
                  }
                  return { model: currentEntry()?.id, kind: view.kind, queryTokens: left, keyTokens: right,
                           layers: tensor.layers, heads: tensor.heads, weights: layers };
                } }),
  );
}

function modelViewSvg() {
  const { tensor } = current();
  const size = THUMB;
  const gap = 10;
  const leftPad = 60;
  const width = leftPad + tensor.heads * (size + gap);
  const height = 24 + tensor.layers * (size + gap);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="11">`,
    '<rect width="100%" height="100%" fill="#fff"/>'];
  for (let h = 0; h < tensor.heads; ++h) parts.push(`<text x="${leftPad + h * (size + gap) + size / 2}" y="14" text-anchor="middle">Head ${h + 1}</text>`);
  for (let l = 0; l < tensor.layers; ++l) {
    const top = 24 + l * (size + gap);
    parts.push(`<text x="4" y="${top + size / 2}">Layer ${l + 1}</text>`);
    for (let h = 0; h < tensor.heads; ++h) {
      const a = attentionHead(tensor, l, h);
      const cw = size / Math.max(1, a.cols);
      const ch = size / Math.max(1, a.rows);
      const x0 = leftPad + h * (size + gap);
      parts.push(`<rect x="${x0}" y="${top}" width="${size}" height="${size}" fill="#fff" stroke="#e4e1da"/>`);
      for (let i = 0; i < a.rows; ++i) {
        for (let j = 0; j < a.cols; ++j) {
          const w = a.data[i * a.cols + j];
          if (w < 0.005) continue;
          parts.push(`<rect x="${(x0 + j * cw).toFixed(2)}" y="${(top + i * ch).toFixed(2)}" width="${cw.toFixed(2)}" height="${ch.toFixed(2)}" fill="${rgb(headColour(h))}" fill-opacity="${w.toFixed(3)}"/>`);
        }
      }
    }
  }
  parts.push('</svg>');
  return parts.join('');
}

// The strongest links of the focused token, in words: the numbers behind the brightest lines.
function writeReadout(focus, leftLabels, rightLabels, heads, head) {
  const out = byId('sa-readout');
  if (!focus || heads.length === 0) {
    out.textContent = heads.length ? 'Hover a token (or pick one with the arrow keys) to see only its lines.' : 'Select a head.';
    return;
  }
  const links = [];
  for (const h of heads) {
    const a = head(h);
    const count = focus.side === 'left' ? a.cols : a.rows;
    for (let k = 0; k < count; ++k) {
      const w = focus.side === 'left' ? a.data[focus.index * a.cols + k] : a.data[k * a.cols + focus.index];
      links.push({ k, h, w });
    }
  }
  links.sort((p, q) => q.w - p.w);
  const top = links.slice(0, 3).map(({ k, h, w }) =>
    `“${(focus.side === 'left' ? rightLabels : leftLabels)[k]}” ${w.toFixed(2)} (head ${h + 1})`);
  const name = (focus.side === 'left' ? leftLabels : rightLabels)[focus.index];
  out.textContent = focus.side === 'left' ? `“${name}” attends most to ${top.join(', ')}.`
                                          : `“${name}” is attended to most by ${top.join(', ')}.`;
}

// The numbers of the line query i → key j in every shown head (weight, rank in the query's row, its entropy).
function lineLines(i, j) {
  const { t, kind, tensor, left, right } = current();
  const lines = [`“${tokenLabel(left[i])}” → “${tokenLabel(right[j])}”, layer ${view.layer + 1}`];
  for (const h of [...view.heads].sort((a, b) => a - b)) {
    const a = attentionHead(tensor, view.layer, h);
    const row = a.data.subarray(i * a.cols, (i + 1) * a.cols);
    const parts = weightLines(row, j, { rowName: 'row' });  // weight and rank first, the row's entropy last
    const scores = t[kind.scores] ? attentionHead(t[kind.scores], view.layer, h) : null;
    const score = scores ? scores.data[i * scores.cols + j] : null;
    const raw = score === null ? '' : `, raw score ${score === -Infinity ? '−∞ (masked)' : score.toFixed(3)}`;
    lines.push(`head ${h + 1}: ${parts[0].replace(' in the row', '')}${raw}; ${parts.at(-1).replace('row entropy', 'entropy')}`);
  }
  lines.push(t[kind.scores] ? kind.scoreMeaning : 'raw scores: this translation came without them');
  return lines;
}

// The line nearest to the pointer (within a few pixels), over the shown heads: { i, j } or null.
function lineAt(event) {
  const g = view.geometry;
  if (!g || !view.translation) return null;
  const rect = event.currentTarget.getBoundingClientRect();
  const x = event.clientX - rect.left;
  const yPos = event.clientY - rect.top;
  if (x <= g.x1 || x >= g.x2) return null;
  const { tensor } = current();
  const y = (k) => TOP + (k + 0.5) * ROW;
  const t = (x - g.x1) / (g.x2 - g.x1);
  let best = null;
  for (const h of view.heads) {
    const a = attentionHead(tensor, view.layer, h);
    for (let i = 0; i < a.rows; ++i) {
      if (view.pinned !== null && i !== view.pinned) continue;
      for (let j = 0; j < a.cols; ++j) {
        const w = a.data[i * a.cols + j];
        if (w < 0.05) continue;  // too faint to aim at
        const lineY = y(i) + (y(j) - y(i)) * t;
        const distance = Math.abs(lineY - yPos) / Math.hypot(1, (y(j) - y(i)) / (g.x2 - g.x1));
        if (distance < 5 && (!best || distance < best.distance || (distance === best.distance && w > best.w))) {
          best = { i, j, w, distance };
        }
      }
    }
  }
  return best;
}

function tokenAt(event) {
  const g = view.geometry;
  if (!g) return null;
  const rect = event.currentTarget.getBoundingClientRect();
  const x = event.clientX - rect.left;
  const index = Math.floor((event.clientY - rect.top - TOP) / ROW);
  if (index < 0) return null;
  if (x < g.x1 && index < g.left) return { side: 'left', index };
  if (x > g.x2 && index < g.right) return { side: 'right', index };
  return null;
}

function setupHeadView() {
  const canvas = byId('sa-canvas');
  const showLine = (event, pin) => {
    const line = lineAt(event);
    if (line) showTip(canvas, lineLines(line.i, line.j), { point: { x: event.clientX, y: event.clientY }, pin });
    else hideTip(canvas);
    return line;
  };
  canvas.addEventListener('pointermove', (event) => {
    if (event.pointerType === 'mouse') showLine(event, false);
    const hit = tokenAt(event);
    if (hit?.side === view.hover?.side && hit?.index === view.hover?.index) return;
    if (!hit && !view.hover) return;
    view.hover = hit;
    drawHeadView();
  });
  canvas.addEventListener('pointerleave', () => {
    hideTip(canvas);
    if (!view.hover) return;
    view.hover = null;
    drawHeadView();
  });
  // A tap (or click) on a token pins its lines; on a line, shows the line's numbers until the next tap.
  canvas.addEventListener('click', (event) => {
    const hit = tokenAt(event);
    if (hit?.side === 'left') {
      setPinned(view.pinned === hit.index ? null : hit.index);
      return;
    }
    showLine(event, true);
  });
  canvas.addEventListener('keydown', (event) => {
    if (!view.translation) return;
    const step = { ArrowDown: 1, ArrowUp: -1 }[event.key];
    const across = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (step) {
      event.preventDefault();
      setPinned(view.pinned === null ? (step > 0 ? 0 : current().left.length - 1) : view.pinned + step);
      hideTip(canvas);
    } else if (across && view.pinned !== null) {
      // Left / right walk the pinned token's lines, one key at a time, with the numbers of each.
      event.preventDefault();
      const keys = current().right.length;
      view.pinnedKey = view.pinnedKey === null ? (across > 0 ? 0 : keys - 1) : (view.pinnedKey + across + keys) % keys;
      showTip(canvas, lineLines(view.pinned, view.pinnedKey));
    } else if (event.key === 'Escape') {
      setPinned(null);
    }
  });
  canvas.addEventListener('blur', () => hideTip(canvas));
  byId('sa-focus').addEventListener('change', (event) => setPinned(event.target.value === '' ? null : Number(event.target.value)));
  byId('sa-beam').addEventListener('change', () => {
    share();
    if (view.translation && !byId('sa-run').disabled) run();
  });
  byId('sa-input').addEventListener('input', () => {
    clipInput(byId('sa-input'), byId('sa-input-notice'));
    if (view.translation) clearResult();
    showError(null);
    share();
  });
  byId('sa-layer').addEventListener('change', (event) => {
    view.layer = Number(event.target.value);
    redraw();
  });
  byId('sa-neuron-head').addEventListener('change', drawNeuron);
  byId('sa-neuron-query').addEventListener('change', drawNeuron);
  byId('sa-neuron-explain').addEventListener('click', () => byId('tab-btn-explain').click());
  byId('sa-all-heads').addEventListener('click', () => {
    if (!view.translation) return;
    view.heads = new Set(Array.from({ length: current().tensor.heads }, (_, h) => h));
    redraw();
  });
  for (const radio of document.querySelectorAll('input[name="sa-kind"]')) {
    radio.addEventListener('change', () => { if (radio.checked && view.translation) selectKind(radio.value); });
  }
  // Redraw when the panel is shown or resized: the canvas takes its container's width.
  new ResizeObserver(() => {
    if (canvas.parentElement.clientWidth !== view.drawnWidth) drawHeadView();
  }).observe(canvas.parentElement);
}

// ---------------------------------------------------------------- model view

function buildModelView() {
  const { tensor } = current();
  const grid = byId('sa-grid');
  grid.style.setProperty('--heads', String(tensor.heads));
  grid.dataset.layers = String(tensor.layers);
  grid.dataset.heads = String(tensor.heads);
  const cells = [el('span', { attrs: { 'aria-hidden': 'true' } })];
  for (let h = 0; h < tensor.heads; ++h) {
    const title = el('span', { className: 'sa-grid-head', text: `Head ${h + 1}` });
    title.style.setProperty('--c', rgb(headColour(h)));
    cells.push(title);
  }
  for (let l = 0; l < tensor.layers; ++l) {
    cells.push(el('span', { className: 'sa-grid-layer', text: `Layer ${l + 1}` }));
    for (let h = 0; h < tensor.heads; ++h) {
      const canvas = el('canvas', { attrs: { 'aria-hidden': 'true' } });
      const thumb = el('button', { className: 'sa-thumb', attrs: {
        type: 'button', 'data-layer': l, 'data-head': h, 'aria-pressed': 'false',
        'aria-label': `Layer ${l + 1}, head ${h + 1}: open in the head view`,
      } }, [canvas]);
      thumb.addEventListener('click', () => {
        view.layer = l;
        view.heads = new Set([h]);
        redraw();
        byId('sa-canvas').scrollIntoView({ block: 'nearest' });
      });
      drawThumbnail(canvas, attentionHead(tensor, l, h), headColour(h));
      cells.push(thumb);
    }
  }
  grid.replaceChildren(...cells);
}

// One head as a heatmap: rows = queries, columns = keys, the head's colour at opacity = weight on white. Drawn
// one pixel per weight, then scaled up without smoothing so the cells stay crisp at any devicePixelRatio.
function drawThumbnail(canvas, a, colour) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(THUMB * dpr);
  canvas.height = Math.round(THUMB * dpr);
  canvas.style.width = `${THUMB}px`;
  canvas.style.height = `${THUMB}px`;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  if (a.rows === 0 || a.cols === 0) return;
  const pixels = new ImageData(a.cols, a.rows);
  for (let k = 0; k < a.rows * a.cols; ++k) {
    const w = a.data[k];
    for (let c = 0; c < 3; ++c) pixels.data[4 * k + c] = Math.round(255 + (colour[c] - 255) * w);
    pixels.data[4 * k + 3] = 255;
  }
  const source = document.createElement('canvas');
  source.width = a.cols;
  source.height = a.rows;
  source.getContext('2d').putImageData(pixels, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(source, 0, 0, canvas.width, canvas.height);
}

// ---------------------------------------------------------------- setup

/**
 * Enables the tab when the manifest lists a Transformer. entries: manifest entries with arch "transformer";
 * getModel(entry, { onProgress, signal }) and available(entry) are the page's shared model cache and check.
 * onNeuron(translation | null, entry, { layer, head, query }): the neuron view's translation and selection each
 * time it is drawn (null: the result is gone), for the Attention explained tab's scaled dot-product panel.
 */
export function setupSelfAttention({ entries, getModel, available, onNeuron = () => {} }) {
  mountModelControls('sa', { modelLabel: 'Transformer', beams: [1, 2, 4], beam: 1 });
  view.entries = entries;
  view.onNeuron = onNeuron;
  view.getModel = getModel;
  view.loader = createModelLoader({
    getModel, available, setStatus, noneText: 'No Transformer models yet.',
    isCurrent: (entry) => currentEntry() === entry,
  });
  if (entries.length === 0) return;
  enableTab(byId('tab-btn-selfattention'));

  const select = byId('sa-model');
  const first = fillModelPicker(select, entries, available) ?? entries[0];
  select.value = first.id;
  const saved = restoreFor('selfattention');
  const savedEntry = saved && entries.find((entry) => entry.id === saved.get('model') && available(entry));
  if (savedEntry) select.value = savedEntry.id;
  if (saved && [...byId('sa-beam').options].some((o) => o.value === saved.get('beam'))) byId('sa-beam').value = saved.get('beam');
  view.restore = saved;
  // Without a link's state, a default model that names its own example (its card's head) opens on it.
  const opening = saved ? null : openingOf(currentEntry());
  view.opening = opening && { entry: currentEntry(), spec: opening };
  byId('sa-input').value = saved?.get('text') ?? opening?.text ?? (SAMPLES[currentEntry().src] ?? [''])[0];
  clipInput(byId('sa-input'), byId('sa-input-notice'));
  renderSamples(currentEntry());
  setStatus('The model loads when you open this tab.');

  select.addEventListener('change', loadSelected);
  byId('sa-run').addEventListener('click', run);
  byId('sa-input').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      run();
    }
  });
  setupHeadView();

  // Download the weights the first time the tab is shown, not on page load.
  const stop = watchPanel(byId('tab-selfattention'), {
    onShow: () => {
      stop();
      loadSelected();
    },
  });
}
