// The Score functions tab: one EN→DE sentence through the RNN models that differ only in their score function,
// and through the Transformer, each with its compact heatmap.
import { byId, el, formatBytes } from '/app/ui.mjs';
import { COMPARE_GROUP } from '/app/manifest.mjs';
import { drawHeatmap } from '/app/widgets/heatmap.mjs';

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

/** entries: the manifest's translators; beam(): the beam width picked on the Translate tab. */
export function setupCompare({ entries, getModel, available, beam }) {
  const grid = byId('compare-grid');
  const cards = COMPARE_ARCHS.map(([arch, score]) => ({ arch, score, entry: compareEntry(entries, arch) }));
  grid.replaceChildren();
  for (const item of cards) {
    item.card = el('article', { className: 'compare-card' }, [
      el('h3', { text: item.score }),
      el('p', { className: 'muted small', text: item.entry && available(item.entry)
        ? `${item.entry.arch} · ${formatBytes(item.entry.bytes)}` : 'not available yet' }),
      el('p', { className: 'output small-output', attrs: { lang: 'de' } }),
      el('div', { className: 'heatmap-scroll' }, [el('div', { className: 'heatmap compact' })]),
    ]);
    grid.append(item.card);
  }

  async function compare() {
    const text = byId('compare-input').value;
    await Promise.all(cards.map(async ({ entry, card }) => {
      const output = card.querySelector('.output');
      const heatmap = card.querySelector('.heatmap');
      if (!entry || !available(entry)) return;
      output.classList.remove('error');
      output.textContent = 'translating…';
      try {
        const model = await getModel(entry);
        const t = await model.translate(text, { beam: beam() });
        output.textContent = t.text;
        drawHeatmap(heatmap, t, entry, { compact: true });
      } catch (error) {
        output.textContent = error.message;
        output.classList.add('error');
      }
    }));
  }

  byId('compare-run').onclick = compare;
  byId('compare-input').onkeydown = (event) => { if (event.key === 'Enter') compare(); };
}
