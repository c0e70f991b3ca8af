// The Attention explained tab's Transformer panel: scaled dot-product attention in one encoder head, for one query
// word of the Self-attention tab's last translation (made with { queryKey: true }). From the engine's query q and
// keys k_j the page computes q·k_j, divides by √d_k and takes the softmax, and sets each result beside the number
// the engine returned (its raw scores, encoderSelfScores, and its weights, encoderSelfAttention): the formula,
// worked on the engine's own vectors, gives the engine's attention.
import { byId, el, fillCountOptions, joinPieces, tokenLabel } from '/app/ui.mjs';
import { exportBar, rounded } from '/app/widgets/figure.mjs';
import { queryKeyRow } from '/app/widgets/neuron.mjs';
import { barsSvg, drawBars, drawWordPicker, strip } from '/app/tabs/explain.mjs';

/** softmax(values), shifted by the largest value first so that exp() cannot overflow. */
export function softmax(values) {
  const top = Math.max(...values);
  const exps = values.map((v) => Math.exp(v - top));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / sum);
}

const largestGap = (a, b) => a.reduce((m, v, j) => Math.max(m, Math.abs(v - b[j])), 0);

/**
 * Returns { show(translation | null, entry, { layer, head, query }): the Self-attention tab's result and the head and
 * query word picked there (null: its result is gone), render(): draws it (the tab strip calls it whenever the tab
 * is shown) }.
 */
export function setupExplainHead() {
  let last = null;  // { t, entry }
  const pick = { layer: 0, head: 0, query: 0 };
  const layerSelect = byId('explain-head-layer');
  const headSelect = byId('explain-head-head');
  layerSelect.addEventListener('change', () => { pick.layer = Number(layerSelect.value); render(); });
  headSelect.addEventListener('change', () => { pick.head = Number(headSelect.value); render(); });
  byId('explain-head-open').addEventListener('click', () => byId('tab-btn-selfattention').click());

  function render() {
    byId('explain-head-empty').hidden = !!last;
    byId('explain-head-body').hidden = !last;
    if (!last) return;
    const { t, entry } = last;
    const { layers, heads } = t.encoderSelfAttention;
    pick.layer = Math.min(pick.layer, layers - 1);
    pick.head = Math.min(pick.head, heads - 1);
    const computed = queryKeyRow(t, pick);
    fillCountOptions(layerSelect, layers, 'Layer', pick.layer);
    fillCountOptions(headSelect, heads, 'Head', pick.head);
    byId('explain-head-source').textContent = joinPieces(t.sourceTokens);
    byId('explain-head-source').lang = entry.src;
    drawWordPicker(byId('explain-head-picker'), t.sourceTokens, {
      selected: computed.i, lang: entry.src, onPick: (i) => { pick.query = i; render(); },
    });

    const { i, hd, qi, rows } = computed;
    const word = tokenLabel(t.sourceTokens[i]) || t.sourceTokens[i];
    const root = Math.sqrt(hd);
    const dots = rows.map((r) => r.dot);
    const scores = dots.map((d) => d / root);
    const weights = softmax(scores);
    const engineScores = rows.map((r) => r.score);
    const engineWeights = rows.map((r) => r.weight);

    const scale = Math.max(1e-9, ...Array.from(qi, Math.abs));
    byId('explain-head-q').replaceChildren(el('span', { className: 'muted', text: `q of “${word}” (${hd} numbers) ` }), strip(qi, scale));
    byId('explain-head-dk').textContent = `(d_k = ${hd}, √d_k = ${root.toFixed(3)})`;
    drawBars(byId('explain-head-dots'), t.sourceTokens, dots, entry.src, { signed: true });
    drawBars(byId('explain-head-scores'), t.sourceTokens, scores, entry.src, { signed: true, engine: engineScores });
    drawBars(byId('explain-head-weights'), t.sourceTokens, weights, entry.src, { signed: false, engine: engineWeights });
    byId('explain-head-match').textContent =
      `Layer ${pick.layer + 1}, head ${pick.head + 1}, query “${word}”: the largest difference from the engine's numbers is ` +
      `${largestGap(scores, engineScores).toExponential(1)} in the scores and ${largestGap(weights, engineWeights).toExponential(1)} ` +
      'in the weights (float rounding: the page computes in double precision, the engine in single).';
    const labels = t.sourceTokens.map((p) => tokenLabel(p));
    byId('explain-head-tools').replaceChildren(exportBar({
      name: `attnlab-${entry.id}-scaled-dot-layer${pick.layer + 1}-head${pick.head + 1}-${i + 1}`, label: 'scaled dot-product steps',
      svg: () => barsSvg(labels, scores, weights, `“${word}”, layer ${pick.layer + 1}, head ${pick.head + 1}: q·k ÷ √${hd} and softmax`),
      json: () => ({ model: entry.id, text: t.text, layer: pick.layer, head: pick.head, query: i, token: t.sourceTokens[i], headDim: hd,
                     sourceTokens: t.sourceTokens, q: rounded(qi), dots: rounded(dots), scores: rounded(scores), softmax: rounded(weights),
                     engineScores: rounded(engineScores), engineWeights: rounded(engineWeights) }),
    }));
  }

  return {
    show(t, entry, selection = {}) {
      last = t?.encoderQueries ? { t, entry } : null;
      Object.assign(pick, selection);
      if (!byId('tab-explain').hidden) render();
    },
    render,
  };
}
