// The tab strip (WAI-ARIA tabs pattern): buttons [role="tab"][data-tab] that each show their aria-controls panel,
// with arrow keys, Home and End moving between the enabled ones.
import { byId } from '/app/ui.mjs';

/** Wires every tab button; onShow[name]() runs each time the tab with data-tab="name" is selected. */
export function setupTabs({ onShow = {} } = {}) {
  const tabs = [...document.querySelectorAll('[role="tab"][data-tab]')];
  const select = (tab, focus) => {
    for (const other of tabs) {
      const selected = other === tab;
      other.setAttribute('aria-selected', String(selected));
      other.tabIndex = selected ? 0 : -1;
      byId(other.getAttribute('aria-controls')).hidden = !selected;
    }
    if (focus) tab.focus();
    onShow[tab.dataset.tab]?.();
  };
  for (const tab of tabs) {
    tab.addEventListener('click', () => select(tab, false));
    tab.addEventListener('keydown', (event) => {
      const enabled = tabs.filter((other) => !other.disabled);  // a tab is enabled once its models exist
      const i = enabled.indexOf(tab);
      const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: enabled.length - 1 }[event.key];
      if (next === undefined) return;
      event.preventDefault();
      select(enabled[(next + enabled.length) % enabled.length], true);
    });
  }
}

/** Turns a "soon" tab (disabled until the manifest lists its models) into a working one. */
export function enableTab(tab) {
  tab.disabled = false;
  tab.removeAttribute('aria-disabled');
  tab.removeAttribute('title');
  tab.querySelector('small')?.remove();
}

/**
 * Calls onShow() whenever the panel is shown and onHide() whenever it is hidden (tabs toggle `hidden`), so a tab
 * can download its weights the first time it is opened, not on page load. Returns a function that stops watching.
 */
export function watchPanel(panel, { onShow, onHide }) {
  const observer = new MutationObserver(() => (panel.hidden ? onHide : onShow)?.());
  observer.observe(panel, { attributes: true, attributeFilter: ['hidden'] });
  return () => observer.disconnect();
}
