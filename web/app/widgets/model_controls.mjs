// A tab's model and beam-width pickers and its status line, built for the tabs whose panel is made in JS, with the
// ids the rest of the page expects of a prefix: #PREFIX-model, #PREFIX-beam (its label #PREFIX-beam-label) for
// fillModelPicker() and the tab, and #PREFIX-status, #PREFIX-progress, #PREFIX-status-text for statusLine(prefix).
import { byId, el } from '/app/ui.mjs';

/** Fills a beam-width <select> with the widths offered (1 reads "1 (greedy)") and selects beam. */
export function fillBeamOptions(select, beams, beam) {
  select.replaceChildren(...beams.map((b) => el('option', { text: b === 1 ? '1 (greedy)' : String(b), attrs: { value: String(b) } })));
  select.value = String(beam);
}

/**
 * Returns the two nodes [controls, status line]. modelLabel: the model picker's label; beams: the widths offered,
 * beam: the one selected; status: the status line's first text.
 */
export function modelControls(prefix, { modelLabel, beams, beam, status = '' }) {
  const beamSelect = el('select', { attrs: { id: `${prefix}-beam`, 'data-testid': `${prefix}-beam` } });
  fillBeamOptions(beamSelect, beams, beam);
  return [
    el('div', { className: 'controls' }, [
      el('label', { className: 'field' }, [el('span', { text: modelLabel }),
        el('select', { attrs: { id: `${prefix}-model`, 'data-testid': `${prefix}-model` } })]),
      el('label', { className: 'field narrow' }, [el('span', { text: 'Beam width', attrs: { id: `${prefix}-beam-label` } }), beamSelect]),
    ]),
    el('div', { className: 'model-status', attrs: { id: `${prefix}-status`, 'data-testid': `${prefix}-status`, role: 'status', 'aria-live': 'polite' } }, [
      el('progress', { attrs: { id: `${prefix}-progress`, max: '1', value: '0', 'aria-label': 'Model download', hidden: '' } }),
      el('span', { text: status, attrs: { id: `${prefix}-status-text` } }),
    ]),
  ];
}

/** Puts modelControls(prefix, options) where index.html holds their place, #PREFIX-controls. */
export function mountModelControls(prefix, options) {
  byId(`${prefix}-controls`).replaceWith(...modelControls(prefix, options));
}
