// The tab strip (WAI-ARIA tabs pattern): buttons [role="tab"][data-tab] that each show their aria-controls panel,
// with arrow keys, Home and End moving between the enabled ones.
import { byId } from '/app/ui.mjs';
import { requestedTab, showTab } from '/app/share.mjs';

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
    tab.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    showTab(tab.dataset.tab);
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
  watchOverflow(document.querySelector('.tabs'));
}

/** Shows the tab a shared link names, if it exists and is enabled. */
export function openRequestedTab() {
  const tab = document.querySelector(`[role="tab"][data-tab="${CSS.escape(requestedTab() ?? '')}"]`);
  if (tab && !tab.disabled && tab.getAttribute('aria-selected') !== 'true') tab.click();
}

// A tab strip wider than the screen (a phone) scrolls; a fade at the edge that hides tabs says so.
function watchOverflow(strip) {
  if (!strip) return;
  const update = () => {
    strip.classList.toggle('more-right', strip.scrollLeft + strip.clientWidth < strip.scrollWidth - 2);
    strip.classList.toggle('more-left', strip.scrollLeft > 2);
  };
  strip.addEventListener('scroll', update, { passive: true });
  new ResizeObserver(update).observe(strip);
  update();
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
