// The Attention explained tab: for one output word of the last translation, the three stages the engine
// computed: the raw scores, the softmax weights, and the context vector as the weighted sum of the source
// annotations.
import { matrixRow } from '/lib/index.mjs';
import { byId, el, joinPieces, tokenLabel } from '/app/ui.mjs';
import { escapeXml, exportBar, legend, rounded } from '/app/widgets/figure.mjs';
import { publish } from '/app/share.mjs';

const FORMULAS = {
  additive: 'e<sub>j</sub> = v<sup>⊤</sup> tanh(W s<sub>i−1</sub> + U h<sub>j</sub>)',
  dot: 'e<sub>j</sub> = s<sub>i−1</sub><sup>⊤</sup> h<sub>j</sub>',
  general: 'e<sub>j</sub> = s<sub>i−1</sub><sup>⊤</sup> W h<sub>j</sub>',
  cosine: 'e<sub>j</sub> = g · cos(s<sub>i−1</sub>, h<sub>j</sub>)',
  scaled_dot: 'e<sub>j</sub> = q<sup>⊤</sup> k<sub>j</sub> / √d',
};

/**
 * Returns { show(translation, entry): the translation to explain (its first word), select(row): the word to
 * explain, render(): draws it (the tab strip calls it whenever the tab is shown), setShared(params): the Translate
 * tab's state this tab's URL carries with its word }.
 */
export function setupExplain() {
  let last = null;       // { translation, entry }
  let selectedRow = 0;
  let base = {};         // the Translate tab's model, beam, input and sentence, which this tab's result comes from

  // This tab's URL state: the translation it explains (base) and the word it explains.
  const share = () => publish('explain', { ...base, word: last && last.translation.attention.rows > 0 ? selectedRow + 1 : null });

  function render() {
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
    const row = Math.min(selectedRow, t.attention.rows - 1);
    byId('explain-source').textContent = joinPieces(t.sourceTokens);
    byId('explain-source').lang = entry.src;

    drawWordPicker(byId('explain-picker'), t.targetTokens, {
      selected: row, lang: entry.tgt, onPick: (i) => { selectedRow = i; render(); share(); },
    });

    byId('explain-score-name').textContent = `· ${t.scoreFunction}`;
    byId('explain-formula').innerHTML = FORMULAS[t.scoreFunction] ?? '';  // constant strings from this file
    const scores = matrixRow(t.scores, row);
    const weights = matrixRow(t.attention, row);
    drawBars(byId('explain-scores'), t.sourceTokens, scores, entry.src, { signed: true });
    drawBars(byId('explain-weights'), t.sourceTokens, weights, entry.src, { signed: false });
    drawStrips(byId('explain-strips'), t, row, entry);
    const word = tokenLabel(t.targetTokens[row]);
    byId('explain-tools').replaceChildren(exportBar({
      name: `attnlab-${entry.id}-explain-${row + 1}`, label: 'three stages',
      svg: () => barsSvg(t.sourceTokens.map((p) => tokenLabel(p)), scores, weights, `“${word}” in “${t.text}” (${t.scoreFunction})`),
      json: () => ({ model: entry.id, text: t.text, word, row, scoreFunction: t.scoreFunction, sourceTokens: t.sourceTokens,
                     scores: rounded(scores), weights: rounded(weights), context: rounded(matrixRow(t.context, row)) }),
    }));
  }

  return {
    show(translation, entry) {
      last = translation ? { translation, entry } : null;  // null: the Translate tab's result is gone
      selectedRow = 0;
      byId('explain-empty').textContent = 'Translate a sentence first (the Translate tab).';
      if (!byId('tab-explain').hidden) render();  // a shared link opened this tab before the result came
      share();
    },
    select(row) {
      selectedRow = row;
      share();
    },
    /** The Translate tab's part of this tab's URL state changed (see setupTranslate's onShare). */
    setShared(params) {
      base = params;
      share();
    },
    render,
  };
}

// The scores (signed, scaled to the largest |score|) and the weights as two bar charts, side by side.
export function barsSvg(labels, scores, weights, title) {
  const rowH = 20;
  const labelW = 12 + Math.max(6, ...labels.map((l) => l.length)) * 7.2;
  const barW = 220;
  const width = labelW + 2 * (barW + 70) + 10;
  const height = 40 + labels.length * rowH + 10;
  const scale = Math.max(1e-9, ...Array.from(scores, Math.abs));
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<text x="8" y="16" font-weight="600">${escapeXml(title)}</text>`,
    `<text x="${labelW}" y="34" fill="#5b6576">1 · scores (orange +, blue −)</text>`,
    `<text x="${labelW + barW + 70}" y="34" fill="#5b6576">2 · softmax weights</text>`];
  labels.forEach((label, j) => {
    const y = 40 + j * rowH;
    parts.push(`<text x="${labelW - 6}" y="${y + 14}" text-anchor="end">${escapeXml(label)}</text>`);
    const mid = labelW + barW / 2;
    const size = (Math.abs(scores[j]) / scale) * (barW / 2);
    parts.push(`<rect x="${scores[j] < 0 ? mid - size : mid}" y="${y + 4}" width="${size}" height="12" fill="${scores[j] < 0 ? '#2563eb' : '#c2410c'}"/>`,
               `<text x="${labelW + barW + 4}" y="${y + 14}" fill="#5b6576">${scores[j].toFixed(3)}</text>`,
               `<rect x="${labelW + barW + 70}" y="${y + 4}" width="${weights[j] * barW}" height="12" fill="#c2410c"/>`,
               `<text x="${labelW + 2 * barW + 74}" y="${y + 14}" fill="#5b6576">${weights[j].toFixed(3)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}

/**
 * The words of a sentence as a radio group of chips (arrow keys move the choice); onPick(i) is called with the
 * word picked, after which the caller redraws (the picker included) and the picked chip keeps the focus.
 */
export function drawWordPicker(picker, pieces, { selected, lang, onPick }) {
  picker.replaceChildren();
  const pick = (i) => {
    onPick(i);
    picker.children[i]?.focus();
  };
  pieces.forEach((piece, i) => {
    const button = el('button', { className: 'chip', text: tokenLabel(piece),
                                  attrs: { type: 'button', role: 'radio', lang, 'data-index': i,
                                           'aria-checked': String(i === selected), tabindex: i === selected ? '0' : '-1' } });
    button.addEventListener('click', () => pick(i));
    button.addEventListener('keydown', (event) => {
      const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      pick((i + step + pieces.length) % pieces.length);
    });
    picker.append(button);
  });
}

/**
 * One bar per source piece, with its value (signed: scaled to the largest |value|, from a middle line; else a
 * weight from 0 to 1). engine: the engine's own numbers for the same pieces, drawn as a thin bar under each and a
 * second column, so a value computed on the page can be read against the one the engine returned. Each row
 * carries its numbers unrounded in data-value (and data-engine).
 */
export function drawBars(box, pieces, values, lang, { signed, engine = null }) {
  box.replaceChildren();
  const scale = signed ? Math.max(1e-9, ...Array.from(values, Math.abs), ...Array.from(engine ?? [], Math.abs)) : 1;
  const bar = (value, extra = '') => {
    const node = el('span', { className: `bar ${value < 0 ? 'negative' : 'positive'}${extra}` });
    node.style.setProperty('--size', (Math.abs(value) / scale).toFixed(4));
    return node;
  };
  if (engine) {
    box.append(el('div', { className: 'bar-row paired bar-head', attrs: { 'aria-hidden': 'true' } }, [
      el('span'), el('span'), el('span', { className: 'bar-value', text: 'here' }), el('span', { className: 'bar-value', text: 'engine' }),
    ]));
  }
  pieces.forEach((piece, j) => {
    const value = values[j];
    const cells = [
      el('span', { className: 'bar-label', text: tokenLabel(piece), attrs: { lang } }),
      el('span', { className: 'bar-track' }, engine ? [bar(value), bar(engine[j], ' engine')] : [bar(value)]),
      el('span', { className: 'bar-value', text: value.toFixed(3) }),
    ];
    if (engine) cells.push(el('span', { className: 'bar-value engine', text: engine[j].toFixed(3) }));
    const row = el('div', { className: `bar-row${engine ? ' paired' : ''}`, attrs: { 'data-value': String(value) } }, cells);
    if (engine) row.dataset.engine = String(engine[j]);
    box.append(row);
  });
}

// A vector as a strip of cells coloured by sign and size (scaled by the largest |value| in the view).
export function strip(values, scale) {
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
