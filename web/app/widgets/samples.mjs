// Sample sentences as chips under a text box: a click puts the sentence in the box and runs it.
import { el } from '/app/ui.mjs';

/**
 * Replaces box's chips with one per text, in language lang (also set on input). A click fills input, then calls
 * run() unless the run button is disabled (its model is still loading).
 */
export function renderSamples(box, texts, { lang, input, button, run }) {
  box.replaceChildren();
  for (const text of texts) {
    const chip = el('button', { className: 'chip', text, attrs: { type: 'button', lang } });
    chip.addEventListener('click', () => {
      input.value = text;
      if (!button.disabled) run();
    });
    box.append(chip);
  }
  input.setAttribute('lang', lang);
}
