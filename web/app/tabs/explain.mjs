// The Attention explained tab: for one output word of the last translation, the three stages the engine
// computed: the raw scores, the softmax weights, and the context vector as the weighted sum of the source
// annotations.
import { matrixRow } from '/lib/index.mjs';
import { byId, el, tokenLabel } from '/app/ui.mjs';

const FORMULAS = {
  additive: 'e<sub>j</sub> = v<sup>⊤</sup> tanh(W s<sub>i−1</sub> + U h<sub>j</sub>)',
  dot: 'e<sub>j</sub> = s<sub>i−1</sub><sup>⊤</sup> h<sub>j</sub>',
  general: 'e<sub>j</sub> = s<sub>i−1</sub><sup>⊤</sup> W h<sub>j</sub>',
  cosine: 'e<sub>j</sub> = g · cos(s<sub>i−1</sub>, h<sub>j</sub>)',
  scaled_dot: 'e<sub>j</sub> = q<sup>⊤</sup> k<sub>j</sub> / √d',
};

/**
 * Returns { show(translation, entry): the translation to explain (its first word), select(row): the word to
 * explain, render(): draws it (the tab strip calls it whenever the tab is shown) }.
 */
export function setupExplain() {
  let last = null;       // { translation, entry }
  let selectedRow = 0;

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
    byId('explain-source').textContent = t.sourceTokens.map(tokenLabel).join(' ');
    byId('explain-source').lang = entry.src;

    const picker = byId('explain-picker');
    picker.replaceChildren();
    t.targetTokens.forEach((piece, i) => {
      const button = el('button', { className: 'chip', text: tokenLabel(piece),
                                    attrs: { type: 'button', role: 'radio', lang: entry.tgt,
                                             'aria-checked': String(i === row), tabindex: i === row ? '0' : '-1' } });
      button.addEventListener('click', () => { selectedRow = i; render(); picker.children[i]?.focus(); });
      button.addEventListener('keydown', (event) => {
        const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
        if (!step) return;
        event.preventDefault();
        selectedRow = (i + step + t.targetTokens.length) % t.targetTokens.length;
        render();
        picker.children[selectedRow]?.focus();
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

  return {
    show(translation, entry) {
      last = translation ? { translation, entry } : null;  // null: the Translate tab's result is gone
      selectedRow = 0;
      byId('explain-empty').textContent = 'Translate a sentence first (the Translate tab).';
    },
    select(row) {
      selectedRow = row;
    },
    render,
  };
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
