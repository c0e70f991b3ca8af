// The neuron view of one Transformer head (after BertViz's): for one query token, its query vector q, every key
// vector k_j, their elementwise products q∘k_j, the dot product q·k_j (the sum of those products), the scaled score
// q·k_j ÷ √d_k and the softmax weight. q, k, the score and the weight are the engine's (a translation made with
// { queryKey: true }: encoderQueries, encoderKeys, encoderSelfScores, encoderSelfAttention); the products and their
// sum are drawn from the engine's q and k, so the table shows each step of scaled dot-product attention.
import { attentionHead } from '/lib/index.mjs';
import { el, tokenLabel } from '/app/ui.mjs';
import { exportBar, legend, rounded } from '/app/widgets/figure.mjs';

const POSITIVE = '194, 65, 12';   // --accent-rgb
const NEGATIVE = '37, 99, 235';   // --cool-rgb

// One vector as a strip of cells, orange for positive, blue for negative, opacity by |value| / scale.
function strip(values, scale, what) {
  const box = el('span', { className: 'neuron-strip', attrs: { role: 'img', 'aria-label': `${what}: ${values.length} numbers` } });
  for (const v of values) {
    const cell = el('span', { className: 'neuron-cell' });
    cell.style.background = `rgba(${v >= 0 ? POSITIVE : NEGATIVE}, ${Math.min(1, Math.abs(v) / scale).toFixed(3)})`;
    cell.title = v.toFixed(4);
    box.append(cell);
  }
  return box;
}

const maxAbs = (values) => values.reduce((m, v) => Math.max(m, Math.abs(v)), 1e-12);

/**
 * Scaled dot-product attention of query token `query` in (layer, head) of translation t's encoder self-attention,
 * from the engine's queries and keys: { i, hd, qi, rows: [{ j, kj, products, dot, score, weight }] }, where the
 * products q∘k_j and their sum dot = q·k_j are computed here and score (q·k_j ÷ √d_k) and weight (its softmax) are
 * the engine's. null when t has no queries and keys (an RNN model, or a call without queryKey).
 */
export function queryKeyRow(t, { layer, head, query }) {
  if (!t.encoderQueries || !t.encoderKeys || !t.encoderSelfScores) return null;
  const q = attentionHead(t.encoderQueries, layer, head);     // [S × hd]
  const k = attentionHead(t.encoderKeys, layer, head);
  const scores = attentionHead(t.encoderSelfScores, layer, head);  // [S × S]
  const weights = attentionHead(t.encoderSelfAttention, layer, head);
  const S = q.rows;
  const hd = q.cols;
  const i = Math.max(0, Math.min(S - 1, query));
  const qi = q.data.subarray(i * hd, (i + 1) * hd);
  const rows = [];
  for (let j = 0; j < S; ++j) {
    const kj = k.data.subarray(j * hd, (j + 1) * hd);
    const products = Array.from(qi, (v, c) => v * kj[c]);
    rows.push({ j, kj, products, dot: products.reduce((a, b) => a + b, 0), score: scores.data[i * S + j], weight: weights.data[i * S + j] });
  }
  return { i, hd, qi, rows };
}

/**
 * Draws the neuron view of query token i in (layer, head) of translation t's encoder self-attention into box.
 * Returns false (and explains) when t has no queries and keys.
 */
export function drawNeuronView(box, t, { layer, head, query, lang, name }) {
  const computed = queryKeyRow(t, { layer, head, query });
  if (!computed) {
    box.replaceChildren(el('p', { className: 'muted small', text: 'This translation has no queries and keys (an RNN model, or a call without queryKey).' }));
    return false;
  }
  const { i, hd, qi, rows } = computed;
  const vectorScale = Math.max(maxAbs(qi), ...rows.map((r) => maxAbs(r.kj)));
  const productScale = Math.max(...rows.map((r) => maxAbs(r.products)));
  const sqrt = Math.sqrt(hd);
  const token = (j) => tokenLabel(t.sourceTokens[j]) || t.sourceTokens[j];

  const table = el('table', { className: 'neuron-table', attrs: { 'data-testid': 'neuron-table' } }, [
    el('caption', { text: `Layer ${layer + 1}, head ${head + 1}: how “${token(i)}” scores every source token (d_k = ${hd}, √d_k = ${sqrt.toFixed(2)})` }),
    el('thead', {}, [el('tr', {}, [
      el('th', { text: 'key', attrs: { scope: 'col' } }), el('th', { text: 'k', attrs: { scope: 'col' } }),
      el('th', { text: 'q ∘ k', attrs: { scope: 'col' } }), el('th', { text: 'q · k', attrs: { scope: 'col' } }),
      el('th', { text: '÷ √d_k', attrs: { scope: 'col' } }), el('th', { text: 'softmax', attrs: { scope: 'col' } }),
    ])]),
    el('tbody', {}, rows.map((r) => {
      const bar = el('span', { className: 'neuron-bar', attrs: { 'aria-hidden': 'true' } });
      bar.style.setProperty('--w', r.weight.toFixed(4));
      return el('tr', { className: r.j === i ? 'self' : '', attrs: {
        'data-key': r.j, 'data-dot': r.dot.toFixed(6), 'data-score': r.score.toFixed(6), 'data-weight': r.weight.toFixed(6) } }, [
        el('th', { text: token(r.j), attrs: { scope: 'row', lang } }),
        el('td', {}, [strip(r.kj, vectorScale, `key of ${token(r.j)}`)]),
        el('td', {}, [strip(r.products, productScale, `products with ${token(r.j)}`)]),
        el('td', { className: 'num', text: r.dot.toFixed(3) }),
        el('td', { className: 'num', text: r.score.toFixed(3) }),
        el('td', { className: 'num' }, [bar, ` ${r.weight.toFixed(3)}`]),
      ]);
    })),
  ]);
  box.replaceChildren(
    el('p', { className: 'neuron-query' }, [el('span', { className: 'muted', text: `q of “${token(i)}” ` }), strip(qi, vectorScale, `query of ${token(i)}`)]),
    el('div', { className: 'neuron-scroll' }, [table]),
    legend({ stops: `rgb(${NEGATIVE}), rgba(${NEGATIVE}, 0.05), rgba(${POSITIVE}, 0.05), rgb(${POSITIVE})`, low: '−', high: '+',
             meaning: 'vector entries: blue negative, orange positive, stronger = larger |value| (hover one for its number)' }),
    exportBar({ name, label: 'neuron view', svg: () => neuronSvg(token, i, rows, { layer, head, hd }),
                json: () => ({ layer, head, query: i, token: t.sourceTokens[i], headDim: hd, q: rounded(qi),
                               keys: rows.map((r) => ({ token: t.sourceTokens[r.j], k: rounded(r.kj), dot: r.dot, score: r.score, weight: r.weight })) }) }),
  );
  return true;
}

// The table's numbers as an SVG (the vectors left out: one line per key).
function neuronSvg(token, i, rows, { layer, head, hd }) {
  const height = 40 + rows.length * 20;
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="520" height="${height}" viewBox="0 0 520 ${height}" font-family="system-ui, sans-serif" font-size="12">`,
                 '<rect width="100%" height="100%" fill="#fff"/>',
                 `<text x="8" y="16" font-weight="600">${esc(`Layer ${layer + 1}, head ${head + 1}: “${token(i)}” (d_k = ${hd})`)}</text>`,
                 '<text x="8" y="34">key</text><text x="150" y="34">q·k</text><text x="230" y="34">÷√d_k</text><text x="310" y="34">softmax</text>'];
  rows.forEach((r, n) => {
    const y = 54 + n * 20;
    parts.push(`<text x="8" y="${y}">${esc(token(r.j))}</text><text x="150" y="${y}">${r.dot.toFixed(3)}</text>` +
               `<text x="230" y="${y}">${r.score.toFixed(3)}</text><rect x="310" y="${y - 10}" width="${(150 * r.weight).toFixed(1)}" height="12" fill="rgb(${POSITIVE})"/>` +
               `<text x="466" y="${y}">${r.weight.toFixed(3)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}
