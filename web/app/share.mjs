// The page's state in the URL hash (#tab=translate&model=…&text=…&word=2): the shown tab and that tab's model,
// input, selected word, layer and heads, so a link reopens the same figure. Each tab publishes its part as it
// changes and reads its part back once at start (restoreFor), rerunning what it describes.
const initial = new URLSearchParams(location.hash.slice(1));
const perTab = new Map();
let shownTab = initial.get('tab') || 'translate';
const restored = new Set();

function write() {
  const params = new URLSearchParams({ tab: shownTab });
  for (const [key, value] of Object.entries(perTab.get(shownTab) ?? {})) {
    if (value !== null && value !== undefined && value !== '') params.set(key, String(value));
  }
  const hash = `#${params}`;
  if (location.hash !== hash) history.replaceState(history.state, '', hash);
}

/** The tab the URL asked for (null when it names none). */
export const requestedTab = () => initial.get('tab');

/** A tab's state changed: params is its whole state (null / '' values are left out). */
export function publish(tab, params) {
  perTab.set(tab, params);
  if (tab === shownTab) write();
}

/** The tab strip shows another tab: the URL now describes it. */
export function showTab(tab) {
  shownTab = tab;
  write();
}

/**
 * The URL's state for tab, once (later calls return null): a Map-like URLSearchParams when the URL names this
 * tab, else null.
 */
export function restoreFor(tab) {
  if (restored.has(tab) || initial.get('tab') !== tab) return null;
  restored.add(tab);
  return initial;
}

// A link pasted into the address bar of an open page changes only the hash: start again from it.
// (The skip link's #main is not page state.)
window.addEventListener('hashchange', () => {
  if (new URLSearchParams(location.hash.slice(1)).has('tab')) location.reload();
});
