// The Score functions tab: one EN→DE sentence through the RNN models that differ only in their score function,
// and through the Transformer, each with its compact heatmap (fit to the card), its tooltips and legend, and a
// conclusion under them: how sharp each model's attention is (mean row entropy, mean top weight).
import { matrixRow } from '/lib/index.mjs';
import { byId, el, formatBytes, showError } from '/app/ui.mjs';
import { COMPARE_GROUP } from '/app/manifest.mjs';
import { drawHeatmap, drawHeatmapTools } from '/app/widgets/heatmap.mjs';
import { entropyBits } from '/app/widgets/figure.mjs';
import { clipInput, splitSentences } from '/app/widgets/text.mjs';
import { publish, restoreFor } from '/app/share.mjs';
import { fillBeamOptions } from '/app/widgets/model_controls.mjs';

const COMPARE_ARCHS = [
  ['luong-dot', 'dot'], ['luong-general', 'general'], ['bahdanau', 'additive'], ['cosine', 'cosine'],
  ['transformer', 'scaled dot (Transformer)'],
];

// The group's model of this architecture; the shipped EN→DE translator is larger, so it stands in for the
// additive one only where the group lacks it.
function compareEntry(entries, arch) {
  const enDe = entries.filter((e) => e.arch === arch && e.src === 'en' && e.tgt === 'de');
  return enDe.find((e) => e.group === COMPARE_GROUP) ?? enDe[0];
}

/** How sharp a translation's attention is: mean row entropy (bits), its uniform maximum, mean top weight. */
export function sharpness(t) {
  const { rows } = t.attention;
  let bits = 0;
  let max = 0;
  let top = 0;
  for (let i = 0; i < rows; ++i) {
    const row = matrixRow(t.attention, i);
    const h = entropyBits(row);
    bits += h.bits;
    max += h.max;
    top += Math.max(...row);
  }
  return rows ? { bits: bits / rows, max: max / rows, top: top / rows } : null;
}

/** entries: the manifest's translators. The tab has its own beam width. */
export function setupCompare({ entries, getModel, available }) {
  const grid = byId('compare-grid');
  const input = byId('compare-input');
  const beamSelect = byId('compare-beam');
  fillBeamOptions(beamSelect, [1, 2, 4, 8], 4);
  const cards = COMPARE_ARCHS.map(([arch, score]) => ({ arch, score, entry: compareEntry(entries, arch) }));
  let runs = 0;
  let shown = false;  // a comparison is on screen (a model or beam change reruns it)
  grid.replaceChildren();
  for (const item of cards) {
    item.card = el('article', { className: 'compare-card', attrs: { 'data-arch': item.arch } }, [
      el('h3', { text: item.score }),
      el('p', { className: 'muted small', text: item.entry && available(item.entry)
        ? `${item.entry.arch} · ${formatBytes(item.entry.bytes)}` : 'not available yet' }),
      el('p', { className: 'output small-output', attrs: { lang: 'de' } }),
      el('p', { className: 'small sharpness' }),
      el('div', { className: 'heatmap-scroll' }, [el('div', { className: 'heatmap compact' })]),
      el('div', { className: 'figure-tools' }),
    ]);
    grid.append(item.card);
  }

  const share = () => publish('scores', { text: input.value, beam: beamSelect.value });

  function clear() {
    shown = false;
    byId('compare-conclusion').hidden = true;
    for (const { card } of cards) {
      card.querySelector('.output').textContent = '';
      card.querySelector('.output').classList.remove('error');
      card.querySelector('.sharpness').textContent = '';
      card.querySelector('.heatmap').replaceChildren();
      card.querySelector('.figure-tools').replaceChildren();
    }
  }

  async function compare() {
    const run = ++runs;
    const text = input.value;
    showError(byId('compare-error'), null);
    share();
    // Checked once here, so an empty box gives one error next to it, not one per card.
    const sentences = splitSentences(text, 'en');
    if (sentences.length === 0) {
      clear();
      showError(byId('compare-error'), new Error('Type an English sentence to compare (the box is empty).'));
      return;
    }
    if (sentences.length > 1) {
      byId('compare-note').textContent = `Only the first of the ${sentences.length} sentences is compared: each card draws one heatmap.`;
      byId('compare-note').hidden = false;
    } else {
      byId('compare-note').hidden = true;
    }
    const beam = Number(beamSelect.value);
    const results = await Promise.all(cards.map(async ({ entry, card }) => {
      const output = card.querySelector('.output');
      let heatmap = card.querySelector('.heatmap');
      if (!entry || !available(entry)) return null;
      output.classList.remove('error');
      output.textContent = 'translating…';
      card.querySelector('.sharpness').textContent = '';
      try {
        const model = await getModel(entry);
        const t = await model.translate(sentences[0], { beam });
        if (run !== runs) return null;
        output.textContent = t.text;
        heatmap = drawHeatmap(heatmap, t, entry, { compact: true, label: `${entry.arch} alignment` });
        drawHeatmapTools(card.querySelector('.figure-tools'), t, entry, { name: `attnlab-${entry.id}-heatmap`, title: t.text });
        const s = sharpness(t);
        if (s) card.querySelector('.sharpness').textContent = `entropy ${s.bits.toFixed(2)} of ${s.max.toFixed(2)} bits · top weight ${s.top.toFixed(2)}`;
        return { entry, s, error: null };
      } catch (error) {
        if (run !== runs) return null;
        heatmap.replaceChildren();
        card.querySelector('.figure-tools').replaceChildren();
        output.textContent = error.message;
        output.classList.add('error');
        return { entry, error };
      }
    }));
    if (run !== runs) return;
    shown = true;
    conclude(results.filter(Boolean), cards);
  }

  function conclude(results, cardList) {
    const box = byId('compare-conclusion');
    const ok = results.filter((r) => !r.error && r.s);
    const errors = results.filter((r) => r.error);
    // The same refusal from every model (e.g. too long for all): said once, beside the box, not in every card.
    if (errors.length > 1 && errors.length === results.length &&
        errors.every((r) => r.error.message === errors[0].error.message)) {
      for (const { card } of cardList) {
        card.querySelector('.output').textContent = '';
        card.querySelector('.output').classList.remove('error');
      }
      showError(byId('compare-error'), errors[0].error);
    }
    if (ok.length < 2) {
      box.hidden = true;
      return;
    }
    const name = (r) => cardList.find((c) => c.entry === r.entry)?.score ?? r.entry.id;
    // Relative to the uniform row: the models' tokenizers differ, so their rows differ in length.
    const relative = (r) => (r.s.max > 0 ? r.s.bits / r.s.max : 0);
    const sorted = [...ok].sort((a, b) => relative(a) - relative(b));
    const sharpest = sorted[0];
    const flattest = sorted.at(-1);
    box.replaceChildren(
      el('strong', { text: 'Conclusion: ' }),
      `on this sentence, ${name(sharpest)} attends most sharply (mean row entropy ${sharpest.s.bits.toFixed(2)} bits, ` +
      `${Math.round(relative(sharpest) * 100)}% of a uniform row's; its top source token takes ` +
      `${Math.round(sharpest.s.top * 100)}% of a row on average) and ${name(flattest)} spreads its attention most ` +
      `(${flattest.s.bits.toFixed(2)} bits, ${Math.round(relative(flattest) * 100)}% of uniform; top ` +
      `${Math.round(flattest.s.top * 100)}%). Lower entropy means each output word looks at fewer source words. ` +
      `Ranked, sharpest first: ${sorted.map((r) => `${name(r)} ${Math.round(relative(r) * 100)}%`).join(' < ')}.`,
    );
    box.hidden = false;
  }

  byId('compare-run').onclick = compare;
  input.onkeydown = (event) => { if (event.key === 'Enter') compare(); };
  input.addEventListener('input', () => {
    clipInput(input, byId('compare-input-notice'));
    showError(byId('compare-error'), null);
    if (shown) clear();
    share();
  });
  beamSelect.addEventListener('change', () => {
    share();
    if (shown) compare();
  });
  const saved = restoreFor('scores');
  if (saved) {
    if (saved.get('text') !== null) input.value = saved.get('text');
    if ([...beamSelect.options].some((o) => o.value === saved.get('beam'))) beamSelect.value = saved.get('beam');
    clipInput(input, byId('compare-input-notice'));
    compare();
  }
}
