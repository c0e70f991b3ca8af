// An alignment heatmap drawn with the DOM: rows are output tokens, columns source tokens, one .cell per weight with
// the weight in --w (CSS colours it), headers carrying data-row / data-col so the grid can be linked to tokens.
// It is an ARIA grid: one cell is in the tab order (arrow keys move it), every cell has an accessible name, and
// hovering, focusing or tapping one shows its numbers (weight, raw score, rank in the row, the row's entropy).
import { matrixRow } from '/lib/index.mjs';
import { el, tokenLabel } from '/app/ui.mjs';
import { exportBar, heatmapSvg, legend, makeCellsInspectable, matrixRows, weightLines } from '/app/widgets/figure.mjs';

export const HEATMAP_RGB = '194, 65, 12';  // --accent-rgb in style.css

/** The legend under every alignment heatmap. */
export const heatmapLegend = () => legend({
  from: `rgba(${HEATMAP_RGB}, 0.04)`, to: `rgb(${HEATMAP_RGB})`,
  meaning: 'attention weight: darker = more (each row sums to 1)',
});

// A Transformer's alignment is its last decoder layer's cross-attention averaged over the heads, and its raw scores
// the heads' mean q·k ÷ √d_k (Translation.scores), whose softmax is not the mean weight: the tooltip says so.
const TRANSFORMER_SCORE = 'the last layer\'s mean over heads of q·k ÷ √d_k, before the softmax; the Self-attention tab has each head\'s';

/** The tooltip of cell (i, j) of translation t. */
export function cellLines(t, i, j) {
  const weights = matrixRow(t.attention, i);
  const score = t.scores && t.scores.rows === t.attention.rows ? matrixRow(t.scores, i)[j] : null;
  const scoreMeaning = t.encoderSelfAttention ? TRANSFORMER_SCORE : undefined;
  return [`“${tokenLabel(t.targetTokens[i])}” → “${tokenLabel(t.sourceTokens[j])}”`,
          ...weightLines(weights, j, { score, rowName: 'row', scoreMeaning })];
}

/**
 * Draws translation t's attention into container. compact: the small version (no hover linking). onHover(node):
 * called with the element under the pointer or focus (a cell or a header); onLeave(): when it leaves the grid.
 */
export function drawHeatmap(container, t, entry, { compact = false, onHover = null, onLeave = null, label = 'Alignment heatmap' } = {}) {
  const { rows, cols } = t.attention;
  container.replaceChildren();
  container.dataset.rows = String(rows);
  container.dataset.cols = String(cols);
  container.style.setProperty('--cols', String(cols));
  container.classList.toggle('compact', compact);
  container.classList.toggle('long', cols > 16);
  container.setAttribute('role', 'grid');
  container.setAttribute('aria-label', `${label}: ${rows} output tokens (rows) × ${cols} source tokens (columns). ` +
                         'Arrow keys move between cells.');
  const head = el('div', { attrs: { role: 'row' }, className: 'heatmap-row' },
                  [el('div', { className: 'corner', attrs: { role: 'columnheader', 'aria-label': 'output \\ source' } })]);
  t.sourceTokens.forEach((piece, j) => {
    head.append(el('div', { className: 'col-head', text: tokenLabel(piece),
                            attrs: { lang: entry.src, 'data-col': j, role: 'columnheader' } }));
  });
  container.append(head);
  for (let i = 0; i < rows; ++i) {
    const row = el('div', { attrs: { role: 'row' }, className: 'heatmap-row' },
                   [el('div', { className: 'row-head', text: tokenLabel(t.targetTokens[i]),
                                attrs: { lang: entry.tgt, 'data-row': i, role: 'rowheader' } })]);
    const weights = matrixRow(t.attention, i);
    for (let j = 0; j < cols; ++j) {
      const cell = el('div', { className: 'cell', attrs: {
        'data-row': i, 'data-col': j, role: 'gridcell', tabindex: '-1',
        'aria-label': `${tokenLabel(t.targetTokens[i])} → ${tokenLabel(t.sourceTokens[j])}: weight ${weights[j].toFixed(2)}`,
      } });
      cell.style.setProperty('--w', weights[j].toFixed(4));
      row.append(cell);
    }
    container.append(row);
  }
  makeCellsInspectable(container, {
    rows, cols, info: (i, j) => cellLines(t, i, j),
    onActive: (i, j) => {
      if (compact) return;
      if (i === null) onLeave?.();
      else onHover?.(container.querySelector(`.cell[data-row="${i}"][data-col="${j}"]`));
    },
  });
  if (!compact) {
    // Headers link their whole row / column; cells are linked through onActive above.
    container.onpointerover = onHover && ((event) => { if (!event.target.closest('.cell')) onHover(event.target); });
    container.onpointerleave = onLeave;
  }
  return container;
}

/** The figure's tools: its legend and its export bar (PNG, SVG, JSON), drawn into box. */
export function drawHeatmapTools(box, t, entry, { name, title = '' }) {
  const rowLabels = t.targetTokens.map((p) => tokenLabel(p));
  const colLabels = t.sourceTokens.map((p) => tokenLabel(p));
  const svg = () => heatmapSvg({ rowLabels, colLabels, weights: t.attention.data, rows: t.attention.rows,
                                 cols: t.attention.cols, colour: HEATMAP_RGB, title });
  box.replaceChildren(heatmapLegend(), exportBar({
    name, label: 'heatmap', svg,
    json: () => ({ model: entry.id, text: t.text, sourceTokens: t.sourceTokens, targetTokens: t.targetTokens,
                   scoreFunction: t.scoreFunction, attention: matrixRows(t.attention),
                   ...(t.scores ? { scores: matrixRows(t.scores) } : {}) }),
  }));
}

/** Lights row `row` and/or column `col` (null: none) of a drawn heatmap, dimming the rest. */
export function lightHeatmap(container, row, col) {
  container.querySelectorAll('.cell, .row-head, .col-head').forEach((cell) => {
    const r = cell.dataset.row === undefined ? null : Number(cell.dataset.row);
    const c = cell.dataset.col === undefined ? null : Number(cell.dataset.col);
    const on = (row !== null && r === row) || (col !== null && c === col);
    cell.classList.toggle('lit', on);
  });
  container.classList.add('linking');
}

export function clearHeatmap(container) {
  container.classList.remove('linking');
  container.querySelectorAll('.lit').forEach((cell) => cell.classList.remove('lit'));
}
