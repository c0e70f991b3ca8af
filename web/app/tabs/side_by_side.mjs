// The Compare tab: two translations side by side, each with its heatmap, and one line saying what differs, in
// one of three modes a learner asks about: two sentences through one model (does "it" follow "tired" to the
// animal and "wide" to the street?), one sentence through the model's two weight formats (what does 8-bit
// quantization change?), one sentence at beam 1 and at a wider beam (what does the search buy?, with both
// search trees). Every number is the engine's; the summary only compares them.
import { matrixRow } from '/lib/index.mjs';
import { byId, el, showError, statusLine, tokenLabel, createModelLoader } from '/app/ui.mjs';
import { COMPARE_GROUP } from '/app/manifest.mjs';
import { drawHeatmap, drawHeatmapTools } from '/app/widgets/heatmap.mjs';
import { drawBeamTree } from '/app/widgets/decoding.mjs';
import { clipInput, splitSentences } from '/app/widgets/text.mjs';
import { fillModelPicker, pickedEntry } from '/app/widgets/model_picker.mjs';
import { mountModelControls } from '/app/widgets/model_controls.mjs';
import { publish, restoreFor } from '/app/share.mjs';

// Winograd's pair in words the Multi30k tokenizers keep whole ("didn't" would be five pieces, d·id·n·'·t).
export const PAIR_SAMPLES = [
  'The animal is not crossing the street because it is too tired.',
  'The animal is not crossing the street because it is too wide.',
];
const MODES = ['sentences', 'formats', 'beams'];

const setStatus = statusLine('pair');
const signed = (x) => (x < 0 ? `−${(-x).toFixed(2)}` : x.toFixed(2));

/** The other weight format of entry's model (the same family, src, tgt and group), or null. */
export function otherFormat(entries, entry) {
  return entries.find((e) => e !== entry && e.arch === entry.arch && e.src === entry.src && e.tgt === entry.tgt &&
                             (e.group ?? null) === (entry.group ?? null) && e.dtype !== entry.dtype &&
                             e.id.replace(/-f16$/, '') === entry.id.replace(/-f16$/, '')) ?? null;
}

/**
 * The largest |difference| between two translations' attention over the rows they share (rows of equal output
 * tokens at the same positions; the source is the same): { max, mean, row, col, rows } or null when no row is shared.
 */
export function attentionDifference(a, b) {
  if (a.attention.cols !== b.attention.cols) return null;
  let max = -1;
  let sum = 0;
  let count = 0;
  let at = null;
  let rows = 0;
  const shared = Math.min(a.attention.rows, b.attention.rows);
  for (let i = 0; i < shared && a.targetIds[i] === b.targetIds[i]; ++i) {
    rows += 1;
    const [ra, rb] = [matrixRow(a.attention, i), matrixRow(b.attention, i)];
    for (let j = 0; j < ra.length; ++j) {
      const d = Math.abs(ra[j] - rb[j]);
      sum += d;
      count += 1;
      if (d > max) {
        max = d;
        at = [i, j];
      }
    }
  }
  return rows ? { max, mean: sum / count, row: at[0], col: at[1], rows } : null;
}

// For each source column in `columns`, the output token that attends to it most, and the weight.
function strongestReaders(t, columns) {
  return columns.map((j) => {
    let best = -1;
    let weight = -1;
    for (let i = 0; i < t.attention.rows; ++i) {
      const w = t.attention.data[i * t.attention.cols + j];
      if (w > weight) [best, weight] = [i, w];
    }
    return { j, i: best, weight };
  });
}

/** The summary of two results in a mode (each side: { t, entry, beam }). */
export function summarize(mode, a, b) {
  const same = a.t.text === b.t.text;
  if (mode === 'sentences') {
    // The source pieces one sentence has and the other lacks, and who reads them.
    const only = (x, y) => x.t.sourceTokens.map((p, j) => (y.t.sourceTokens.includes(p) ? -1 : j)).filter((j) => j >= 0);
    const describe = (side) => strongestReaders(side.t, only(side, side === a ? b : a)).map(({ j, i, weight }) =>
      (i < 0 ? '' : `“${tokenLabel(side.t.sourceTokens[j])}” is read most by “${tokenLabel(side.t.targetTokens[i])}” (${weight.toFixed(2)})`))
      .filter(Boolean).join(', ');
    const left = describe(a);
    const right = describe(b);
    return `The sentences differ in ${only(a, b).length + only(b, a).length} source pieces. ` +
           (left ? `Left: ${left}. ` : '') + (right ? `Right: ${right}. ` : '') +
           (same ? 'The outputs are the same.' : 'The outputs differ: watch the row of the word that changed, and of the pronoun.');
  }
  if (mode === 'formats') {
    const d = attentionDifference(a.t, b.t);
    const where = d ? ` (row “${tokenLabel(a.t.targetTokens[d.row])}”, column “${tokenLabel(a.t.sourceTokens[d.col])}”)` : '';
    return `${same ? 'Same output' : 'Different outputs'} from ${a.entry.dtype} and ${b.entry.dtype} weights. ` +
           (d ? `Over the ${d.rows} rows they share, the largest attention difference is ${d.max.toFixed(4)}${where}, ` +
                `the mean ${d.mean.toFixed(5)}. ` : 'They share no output row to compare. ') +
           `Σ log p ${signed(a.t.logProbability)} vs ${signed(b.t.logProbability)}.`;
  }
  const score = (side) => {
    const tree = side.t.beamTree;
    return tree && tree.winner >= 0 ? tree.nodes[tree.winner].score : side.t.logProbability;
  };
  const kept = (side) => side.t.beamTree?.nodes.length ?? 0;
  return `Beam ${a.beam}: Σ log p ${signed(a.t.logProbability)} over ${a.t.targetTokens.length} tokens, ${kept(a)} hypotheses kept. ` +
         `Beam ${b.beam}: Σ log p ${signed(b.t.logProbability)} over ${b.t.targetTokens.length} tokens (ranked by ${signed(score(b))} = Σ log p ÷ length), ` +
         `${kept(b)} hypotheses kept. ` +
         (same ? 'The wider search found the same translation.' : 'The wider search found a translation greedy decoding missed.');
}

// One side's card: its label, model and sentence, the output, the heatmap, its export bar and (beam mode) the tree.
const sideCard = (id) => el('article', { className: 'compare-card', attrs: { id, 'data-testid': id } }, [
  el('h3'), el('p', { className: 'muted small pair-meta' }), el('p', { className: 'output small-output' }),
  el('div', { className: 'heatmap-scroll' }, [el('div', { className: 'heatmap compact' })]),
  el('div', { className: 'figure-tools' }), el('div', { className: 'beam-tree', attrs: { hidden: '' } }),
]);

/** entries: the manifest's translators. Builds the tab's pickers and cards (index.html holds their places). */
export function setupSideBySide({ entries, getModel, available }) {
  mountModelControls('pair', { modelLabel: 'Model', beams: [1, 2, 4, 8], beam: 4 });
  byId('pair-grid').replaceChildren(sideCard('pair-a'), sideCard('pair-b'));
  const pickable = entries.filter((entry) => entry.group !== COMPARE_GROUP && entry.dtype !== 'f16');
  const select = byId('pair-model');
  const beamSelect = byId('pair-beam');
  const inputs = [byId('pair-input-a'), byId('pair-input-b')];
  const button = byId('pair-run');
  const modeInputs = [...document.querySelectorAll('input[name="pair-mode"]')];
  let runs = 0;
  let shown = false;
  const mode = () => modeInputs.find((r) => r.checked)?.value ?? 'sentences';
  const currentEntry = () => pickedEntry(select, pickable);
  const loader = createModelLoader({
    getModel, available, setStatus, noneText: 'No translators yet.', isCurrent: (entry) => currentEntry() === entry,
    retry: () => selectModel(),
  });

  const share = () => publish('compare', {
    mode: mode(), model: currentEntry()?.id, beam: beamSelect.value, a: inputs[0].value,
    b: mode() === 'sentences' ? inputs[1].value : null,
  });

  function clear() {
    shown = false;
    byId('pair-result').hidden = true;
  }

  function layoutMode() {
    const m = mode();
    byId('pair-input-b-field').hidden = m !== 'sentences';
    byId('pair-input-a-label').textContent = m === 'sentences' ? 'Left sentence' : 'Sentence';
    byId('pair-beam-label').textContent = m === 'beams' ? 'Wider beam (right)' : 'Beam width';
  }

  // What each side runs in this mode: { entry, text, beam, label }.
  function sides() {
    const entry = currentEntry();
    const beam = Number(beamSelect.value);
    const [a, b] = inputs.map((input) => input.value);
    if (mode() === 'sentences') {
      return [{ entry, text: a, beam, label: 'Left sentence' }, { entry, text: b, beam, label: 'Right sentence' }];
    }
    if (mode() === 'formats') {
      const other = otherFormat(entries, entry);
      return [{ entry, text: a, beam, label: `${entry.dtype} weights` },
              { entry: other, text: a, beam, label: other ? `${other.dtype} weights` : 'the other format' }];
    }
    return [{ entry, text: a, beam: 1, label: 'beam 1 (greedy)' }, { entry, text: a, beam, label: `beam ${beam}` }];
  }

  async function run() {
    const myRun = ++runs;
    showError(byId('pair-error'), null);
    share();
    const plan = sides();
    if (!plan[0].entry) return;
    if (!plan[1].entry || !available(plan[1].entry)) {
      clear();
      showError(byId('pair-error'), new Error(`${plan[0].entry.label ?? plan[0].entry.id} has no other weight format published.`));
      return;
    }
    for (const side of plan) {
      const sentences = splitSentences(side.text, side.entry.src);
      if (sentences.length === 0) {
        clear();
        showError(byId('pair-error'), new Error('Type a sentence in each box to compare (one is empty).'));
        return;
      }
      side.sentence = sentences[0];
    }
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    try {
      const results = [];
      for (const side of plan) {
        const model = await getModel(side.entry);
        results.push({ ...side, t: await model.translate(side.sentence, { beam: side.beam, beamTree: true }) });
      }
      if (myRun !== runs) return;
      render(results);
    } catch (error) {
      if (myRun !== runs) return;
      clear();
      showError(byId('pair-error'), error);
    } finally {
      button.disabled = !loader.isReady(currentEntry());
      button.removeAttribute('aria-busy');
    }
  }

  function render(results) {
    shown = true;
    byId('pair-result').hidden = false;
    const m = mode();
    results.forEach((side, k) => {
      const card = byId(k === 0 ? 'pair-a' : 'pair-b');
      card.querySelector('h3').textContent = side.label;
      card.querySelector('.pair-meta').textContent = `${side.entry.label ?? side.entry.id} · “${side.sentence}”`;
      const output = card.querySelector('.output');
      output.textContent = side.t.text;
      output.lang = side.entry.tgt;
      drawHeatmap(card.querySelector('.heatmap'), side.t, side.entry, { compact: true, label: `${side.label}: alignment` });
      drawHeatmapTools(card.querySelector('.figure-tools'), side.t, side.entry, {
        name: `attnlab-compare-${k === 0 ? 'left' : 'right'}-${side.entry.id}`, title: side.t.text,
      });
      const treeBox = card.querySelector('.beam-tree');
      treeBox.hidden = m !== 'beams';
      if (m === 'beams') {
        drawBeamTree(treeBox, side.t.beamTree, { beam: side.beam, lang: side.entry.tgt, label: `${side.label} search tree`,
                                                 name: `attnlab-compare-${side.beam}-beam-tree`, title: `${side.t.text} (beam ${side.beam})` });
      }
    });
    const summary = byId('pair-summary');
    summary.replaceChildren(el('strong', { text: 'What differs: ' }), summarize(m, results[0], results[1]));
  }

  async function selectModel({ rerun = shown } = {}) {
    const entry = currentEntry();
    button.disabled = true;
    clear();
    share();
    if (await loader.load(entry)) {
      button.disabled = false;
      if (rerun) await run();
    }
  }

  const first = fillModelPicker(select, pickable, available);
  if (!first) {
    setStatus('No translators yet.');
    return;
  }
  // The Transformer is the model whose attention the "it" pair is usually shown with; else the first translator.
  const transformer = pickable.find((entry) => entry.arch === 'transformer' && entry.src === 'en' && available(entry));
  if (transformer) select.value = transformer.id;
  inputs[0].value = PAIR_SAMPLES[0];
  inputs[1].value = PAIR_SAMPLES[1];
  const saved = restoreFor('compare');
  if (saved) {
    const savedMode = saved.get('mode');
    if (MODES.includes(savedMode)) modeInputs.forEach((r) => { r.checked = r.value === savedMode; });
    const savedEntry = pickable.find((entry) => entry.id === saved.get('model') && available(entry));
    if (savedEntry) select.value = savedEntry.id;
    if ([...beamSelect.options].some((o) => o.value === saved.get('beam'))) beamSelect.value = saved.get('beam');
    if (saved.get('a') !== null) inputs[0].value = saved.get('a');
    if (saved.get('b') !== null) inputs[1].value = saved.get('b');
  }
  inputs.forEach((input, k) => {
    clipInput(input, byId(k === 0 ? 'pair-input-a-notice' : 'pair-input-b-notice'));
    input.addEventListener('input', () => {
      clipInput(input, byId(k === 0 ? 'pair-input-a-notice' : 'pair-input-b-notice'));
      showError(byId('pair-error'), null);
      if (shown) clear();
      share();
    });
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey) {
        event.preventDefault();
        if (!button.disabled) run();
      }
    });
  });
  layoutMode();
  modeInputs.forEach((radio) => radio.addEventListener('change', () => {
    layoutMode();
    share();
    if (shown && !button.disabled) run();
  }));
  beamSelect.addEventListener('change', () => { share(); if (shown && !button.disabled) run(); });
  select.addEventListener('change', () => selectModel());
  button.addEventListener('click', run);
  selectModel({ rerun: !!saved });
}
