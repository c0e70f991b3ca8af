// What every figure on the page shares: the numbers behind a pixel (weight, raw score, rank in its row, the row's
// entropy) in one tooltip that follows the pointer, the keyboard focus and a tap; a colour legend; roving-tabindex
// arrow-key navigation over a grid of cells; and the export bar (PNG, SVG, JSON) under each figure.
import { el } from '/app/ui.mjs';

// ---------------------------------------------------------------- numbers

/** Shannon entropy of a weight row in bits, and its maximum (a uniform row of the same length). */
export function entropyBits(weights) {
  let h = 0;
  for (const w of weights) if (w > 0) h -= w * Math.log2(w);
  return { bits: Math.max(0, h), max: weights.length > 1 ? Math.log2(weights.length) : 0 };
}

/** 1 + how many weights of the row are larger than row[j]: rank 1 is where the row looks most. */
export function rankInRow(weights, j) {
  let rank = 1;
  for (let k = 0; k < weights.length; ++k) if (weights[k] > weights[j]) rank += 1;
  return rank;
}

export const percent = (w) => `${(w * 100).toFixed(w >= 0.1 ? 0 : 1)}%`;

/**
 * The tooltip lines of weight row[j]: the weight, the raw score (when the engine returned one), rank, entropy.
 * scoreMeaning: what the raw score is, in the parentheses after it.
 */
export function weightLines(weights, j, { score = null, rowName = 'row', scoreMeaning = 'before the softmax' } = {}) {
  const { bits, max } = entropyBits(weights);
  const lines = [`weight ${weights[j].toFixed(3)} (${percent(weights[j])}), rank ${rankInRow(weights, j)} of ${weights.length} in the ${rowName}`];
  if (score !== null && Number.isFinite(score)) lines.push(`raw score ${score.toFixed(3)} (${scoreMeaning})`);
  lines.push(`${rowName} entropy ${bits.toFixed(2)} bits (uniform would be ${max.toFixed(2)})`);
  return lines;
}

// ---------------------------------------------------------------- the tooltip

let tip = null;
let tipOwner = null;  // the element the tooltip describes
let pinned = false;   // shown by a tap or a click: stays until the next tap elsewhere

function tipNode() {
  if (tip) return tip;
  tip = el('div', { className: 'figure-tip', attrs: { id: 'figure-tip', role: 'tooltip', 'data-testid': 'figure-tip' } });
  tip.hidden = true;
  document.body.append(tip);
  document.addEventListener('pointerdown', (event) => {
    if (pinned && tipOwner && !tipOwner.contains(event.target) && !tip.contains(event.target)) hideTip();
  }, true);
  document.addEventListener('keydown', (event) => { if (event.key === 'Escape') hideTip(); });
  window.addEventListener('scroll', () => { if (tipOwner) placeTip(); }, { passive: true, capture: true });
  return tip;
}

function placeTip(point = null) {
  if (!tip || !tipOwner) return;
  const rect = point ? { left: point.x, right: point.x, top: point.y, bottom: point.y } : tipOwner.getBoundingClientRect();
  const { innerWidth: vw, innerHeight: vh } = window;
  const width = tip.offsetWidth;
  const height = tip.offsetHeight;
  let left = Math.min(Math.max(4, (rect.left + rect.right) / 2 - width / 2), vw - width - 4);
  let top = rect.bottom + 8;
  if (top + height > vh - 4) top = Math.max(4, rect.top - height - 8);
  tip.style.left = `${Math.max(4, left)}px`;
  tip.style.top = `${top}px`;
}

/** Shows lines (the first one bold) for owner; point: { x, y } in client pixels to place it at instead. */
export function showTip(owner, lines, { point = null, pin = false } = {}) {
  const node = tipNode();
  if (tipOwner && tipOwner !== owner) tipOwner.removeAttribute('aria-describedby');
  tipOwner = owner;
  pinned = pin || (pinned && tipOwner === owner);
  node.replaceChildren(...lines.map((line, k) => el(k === 0 ? 'strong' : 'span', { text: line })));
  node.hidden = false;
  owner.setAttribute('aria-describedby', 'figure-tip');
  placeTip(point);
}

export function hideTip(owner = null) {
  if (!tip || (owner && owner !== tipOwner)) return;
  if (owner && pinned) return;  // a tapped tooltip stays until the next tap elsewhere
  tip.hidden = true;
  tipOwner?.removeAttribute('aria-describedby');
  tipOwner = null;
  pinned = false;
}

// ---------------------------------------------------------------- a grid of focusable cells

const inspected = new WeakMap();  // container -> AbortController of its listeners

/**
 * Roving tabindex over the cells of container (elements with data-row / data-col): one cell is in the tab order,
 * arrow keys, Home / End (row) and Ctrl+Home / Ctrl+End move it. Each cell shows its tooltip on hover, focus and
 * tap. info(row, col) -> lines of the tooltip; onActive(row, col | null): the cell under the pointer or focus.
 */
export function makeCellsInspectable(container, { rows, cols, info, onActive = () => {} }) {
  // One set of listeners per container: a redraw replaces the previous drawing's.
  inspected.get(container)?.abort();
  const controller = new AbortController();
  inspected.set(container, controller);
  const { signal } = controller;
  const cellAt = (r, c) => container.querySelector(`.cell[data-row="${r}"][data-col="${c}"]`);
  const position = (node) => {
    const cell = node?.closest?.('.cell');
    return cell && container.contains(cell) ? [Number(cell.dataset.row), Number(cell.dataset.col), cell] : null;
  };
  const first = cellAt(0, 0);
  if (first) first.tabIndex = 0;
  const show = (cell, r, c, options) => {
    showTip(cell, info(r, c), options);
    onActive(r, c);
  };
  container.addEventListener('focusin', (event) => {
    const hit = position(event.target);
    if (!hit) return;
    const [r, c, cell] = hit;
    container.querySelectorAll('.cell[tabindex="0"]').forEach((other) => { if (other !== cell) other.tabIndex = -1; });
    cell.tabIndex = 0;
    show(cell, r, c);
  }, { signal });
  container.addEventListener('focusout', (event) => {
    const hit = position(event.target);
    if (hit && !container.contains(event.relatedTarget)) {
      hideTip(hit[2]);
      onActive(null, null);
    }
  }, { signal });
  container.addEventListener('pointerover', (event) => {
    const hit = position(event.target);
    if (hit && event.pointerType === 'mouse') show(hit[2], hit[0], hit[1]);
  }, { signal });
  container.addEventListener('pointerout', (event) => {
    const hit = position(event.target);
    if (hit && event.pointerType === 'mouse' && !hit[2].contains(event.relatedTarget)) hideTip(hit[2]);
  }, { signal });
  container.addEventListener('click', (event) => {
    const hit = position(event.target);
    if (!hit) return;
    hit[2].focus({ preventScroll: true });
    show(hit[2], hit[0], hit[1], { pin: true });
  }, { signal });
  container.addEventListener('keydown', (event) => {
    const hit = position(event.target);
    if (!hit) return;
    let [r, c] = hit;
    const moves = {
      ArrowRight: [r, c + 1], ArrowLeft: [r, c - 1], ArrowDown: [r + 1, c], ArrowUp: [r - 1, c],
      Home: event.ctrlKey ? [0, 0] : [r, 0], End: event.ctrlKey ? [rows - 1, cols - 1] : [r, cols - 1],
    };
    const next = moves[event.key];
    if (!next) return;
    event.preventDefault();
    [r, c] = [Math.max(0, Math.min(rows - 1, next[0])), Math.max(0, Math.min(cols - 1, next[1]))];
    cellAt(r, c)?.focus();
  }, { signal });
}

// ---------------------------------------------------------------- legend

/**
 * A colour legend: a bar from `from` to `to` (CSS colours), its two ends labelled, and what the colour means.
 */
export function legend({ from, to, low = '0', high = '1', meaning, stops = null }) {
  const bar = el('span', { className: 'legend-bar', attrs: { 'aria-hidden': 'true' } });
  bar.style.background = `linear-gradient(to right, ${stops ?? `${from}, ${to}`})`;
  return el('div', { className: 'legend', attrs: { 'data-testid': 'legend', role: 'note' } }, [
    el('span', { className: 'legend-end', text: low }), bar, el('span', { className: 'legend-end', text: high }),
    el('span', { className: 'legend-meaning', text: meaning }),
  ]);
}

// ---------------------------------------------------------------- export: PNG, SVG, JSON

const escapeXml = (s) => String(s).replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[ch]);
export { escapeXml };

function save(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = el('a', { attrs: { href: url, download: filename } });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** An SVG document (a string) drawn onto a canvas at `scale`, as a PNG blob. */
export async function svgToPng(svgText, scale = 2) {
  const url = URL.createObjectURL(new Blob([svgText], { type: 'image/svg+xml' }));
  try {
    const image = new Image();
    image.src = url;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(image.naturalWidth * scale));
    canvas.height = Math.max(1, Math.round(image.naturalHeight * scale));
    const context = canvas.getContext('2d');
    context.fillStyle = '#fff';
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.drawImage(image, 0, 0, canvas.width, canvas.height);
    return await canvasToPng(canvas);
  } finally {
    URL.revokeObjectURL(url);
  }
}

export const canvasToPng = (canvas) => new Promise((resolve, reject) =>
  canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error('the figure could not be turned into a PNG'))), 'image/png'));

/**
 * The export bar of a figure: "PNG", "SVG" and "Copy JSON" buttons. name: the file name stem; svg(): the figure
 * as an SVG string; png(): a PNG blob (default: the SVG rasterised); json(): the numbers drawn, as a plain object.
 * A failed clipboard write (no permission) saves the JSON as a file instead, and says so.
 */
export function exportBar({ name, svg, json, png = null, label = 'figure' }) {
  const status = el('span', { className: 'export-status muted', attrs: { role: 'status', 'aria-live': 'polite' } });
  const button = (text, action, testid) => {
    const node = el('button', { className: 'chip export', text, attrs: { type: 'button', 'data-testid': testid,
                                                                         'aria-label': `${text} of the ${label}` } });
    node.addEventListener('click', async () => {
      status.textContent = '';
      try {
        status.textContent = await action();
      } catch (error) {
        status.textContent = `Could not export: ${error.message ?? error}`;
      }
    });
    return node;
  };
  const stem = () => (typeof name === 'function' ? name() : name);
  return el('div', { className: 'export-bar', attrs: { role: 'group', 'aria-label': `Export the ${label}` } }, [
    el('span', { className: 'muted small', text: 'Export' }),
    button('PNG', async () => {
      save(png ? await png() : await svgToPng(svg()), `${stem()}.png`);
      return 'PNG saved.';
    }, 'export-png'),
    button('SVG', async () => {
      save(new Blob([svg()], { type: 'image/svg+xml' }), `${stem()}.svg`);
      return 'SVG saved.';
    }, 'export-svg'),
    button('Copy JSON', async () => {
      const text = JSON.stringify(json(), null, 1);
      try {
        await navigator.clipboard.writeText(text);
        return 'JSON copied to the clipboard.';
      } catch {
        save(new Blob([text], { type: 'application/json' }), `${stem()}.json`);
        return 'The clipboard is not available here: JSON saved as a file.';
      }
    }, 'export-json'),
    status,
  ]);
}

/** Rounds a Float32Array (or array) to plain numbers with `digits` decimals, for JSON. */
export const rounded = (values, digits = 5) => Array.from(values, (v) => Number(v.toFixed(digits)));

/** A matrix's rows as nested arrays. */
export function matrixRows(m, digits = 5) {
  const out = [];
  for (let i = 0; i < m.rows; ++i) out.push(rounded(m.data.subarray(i * m.cols, (i + 1) * m.cols), digits));
  return out;
}

/**
 * A heatmap as SVG: rows × cols cells shaded by weight (colour: 'r, g, b'), row labels on the left, column labels
 * above (turned), a legend under it. title: a line above.
 */
export function heatmapSvg({ rowLabels, colLabels, weights, rows, cols, colour, title = '', cell = 22 }) {
  const charW = 7.2;
  const left = 12 + Math.max(10, ...rowLabels.map((s) => s.length)) * charW;
  const top = (title ? 28 : 8) + Math.max(10, ...colLabels.map((s) => s.length)) * charW;
  const width = Math.max(left + cols * cell + 12, 260);
  const height = top + rows * cell + 56;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`];
  if (title) parts.push(`<text x="8" y="18" font-weight="600" font-size="13">${escapeXml(title)}</text>`);
  colLabels.forEach((label, j) => {
    const x = left + j * cell + cell / 2 + 4;
    parts.push(`<text transform="translate(${x} ${top - 6}) rotate(-90)" fill="#1d2430">${escapeXml(label)}</text>`);
  });
  for (let i = 0; i < rows; ++i) {
    parts.push(`<text x="${left - 6}" y="${top + i * cell + cell / 2 + 4}" text-anchor="end" fill="#1d2430">${escapeXml(rowLabels[i])}</text>`);
    for (let j = 0; j < cols; ++j) {
      const w = weights[i * cols + j];
      parts.push(`<rect x="${left + j * cell}" y="${top + i * cell}" width="${cell - 2}" height="${cell - 2}" rx="2" ` +
                 `fill="rgb(${colour})" fill-opacity="${(0.04 + 0.96 * w).toFixed(3)}"><title>${escapeXml(`${rowLabels[i]} → ${colLabels[j]}: ${w.toFixed(3)}`)}</title></rect>`);
    }
  }
  const ly = top + rows * cell + 20;
  parts.push(`<defs><linearGradient id="legend"><stop offset="0" stop-color="rgb(${colour})" stop-opacity="0.04"/>` +
             `<stop offset="1" stop-color="rgb(${colour})" stop-opacity="1"/></linearGradient></defs>`,
             `<text x="8" y="${ly + 10}">0</text><rect x="20" y="${ly}" width="120" height="12" fill="url(#legend)" stroke="#868e96" stroke-width="0.5"/>`,
             `<text x="146" y="${ly + 10}">1  attention weight (rows sum to 1)</text>`);
  parts.push('</svg>');
  return parts.join('');
}
