// An alignment heatmap drawn with the DOM: rows are output tokens, columns source tokens, one .cell per weight with
// the weight in --w (CSS colours it), headers carrying data-row / data-col so the grid can be linked to tokens.
import { matrixRow } from '/lib/index.mjs';
import { el, tokenLabel } from '/app/ui.mjs';

/**
 * Draws translation t's attention into container. compact: the small version (no hover linking). onHover(node):
 * called with the element under the pointer (a cell or a header); onLeave(): when the pointer leaves the grid.
 */
export function drawHeatmap(container, t, entry, { compact = false, onHover = null, onLeave = null } = {}) {
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
    container.onpointerover = onHover && ((event) => onHover(event.target));
    container.onpointerleave = onLeave;
  }
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
