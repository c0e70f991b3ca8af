// The Engine tab: which engine build runs in this page (loaded in the page itself, the first time the tab is
// shown), how long it took to start, the limits it enforces on every call, the models the page has loaded, and
// what the page keeps in Cache Storage (the engine, the weights, its offline copy), with a way to clear it.
import { engineInfo } from '/lib/index.mjs';
import { byId, el, formatBytes } from '/app/ui.mjs';

const describeLimits = (l) =>
  `beam 1–${l.maxBeam} · ${l.maxSourceTokens} source tokens (${l.maxTextBytes.toLocaleString('en')} bytes) · ` +
  `translations up to ${l.maxTranslationLength} tokens, captions up to ${l.maxCaptionLength} · ` +
  `no-repeat n-grams ${l.minNoRepeatNgram}–${l.maxNoRepeatNgram} · images up to ${l.maxImageSide} px a side`;

// The build's threading, from the engine where it says (info.threads), else what this page could do.
function describeThreads(info) {
  const isolated = globalThis.crossOriginIsolated ? 'cross-origin isolated' : 'not cross-origin isolated';
  if (info.threads !== undefined && info.threads !== null) {
    const t = info.threads;
    const text = typeof t === 'object' ? Object.entries(t).map(([k, v]) => `${k} ${v}`).join(', ') : String(t);
    const build = info.build ? `, ${info.build} build` : '';
    return `${text} ${text === '1' ? 'thread' : 'threads'}${build} (page ${isolated})`;
  }
  return `single-threaded build (page ${isolated}, ${navigator.hardwareConcurrency ?? '?'} cores)`;
}

const PAGE_CACHE = 'attnlab-page-v1';  // web/app/sw.js

async function cacheRows() {
  if (!globalThis.caches) return null;
  const rows = [];
  for (const name of await caches.keys()) {
    const cache = await caches.open(name);
    for (const request of await cache.keys()) {
      const response = await cache.match(request);
      const header = Number(response?.headers.get('content-length'));
      const bytes = Number.isFinite(header) && header > 0 ? header : (await response.clone().blob()).size;
      rows.push({ cache: name, url: new URL(request.url).pathname, bytes });
    }
  }
  return rows;
}

/**
 * loaded(): the ids of the models the page holds. Returns { show(), setManifest(entries) }: show() loads the
 * engine and fills in the facts (once it has succeeded) and lists models and cache each time.
 */
export function setupEngine({ loaded = () => [] } = {}) {
  let shown = false;
  let manifest = [];

  function listModels() {
    const ids = loaded();
    const entries = ids.map((id) => manifest.find((e) => e.id === id) ?? { id });
    byId('engine-models').textContent = entries.length
      ? entries.map((e) => `${e.label ?? e.id} (${e.dtype ?? '?'}, ${formatBytes(e.bytes)})`).join(' · ')
      : 'none yet (a tab loads its model when it is opened)';
  }

  // Only the latest listing writes: an earlier one still reading the cache (show() does not wait for its own)
  // would otherwise put back the files a Clear has just removed.
  let listing = 0;
  async function listCache() {
    const box = byId('engine-cache');
    const mine = ++listing;
    let rows;
    try {
      rows = await cacheRows();
    } catch (error) {
      if (mine !== listing) return;
      box.replaceChildren(el('p', { className: 'error', text: `Cache Storage could not be read: ${error.message}` }));
      return;
    }
    if (mine !== listing) return;
    if (rows === null) {
      box.replaceChildren(el('p', { className: 'muted small', text: 'This browser has no Cache Storage here.' }));
      return;
    }
    if (rows.length === 0) {
      box.replaceChildren(el('p', { className: 'muted small', text: 'Nothing stored.' }));
      return;
    }
    const total = rows.reduce((sum, r) => sum + r.bytes, 0);
    // The page's own files (its offline copy) are many and small: one line for them, one per engine or model file.
    const page = rows.filter((r) => r.cache === PAGE_CACHE);
    if (page.length > 1) {
      rows = [...rows.filter((r) => r.cache !== PAGE_CACHE),
              { cache: PAGE_CACHE, url: `the page itself (${page.length} files: HTML, CSS, modules, samples)`,
                bytes: page.reduce((sum, r) => sum + r.bytes, 0) }];
    }
    const table = el('table', { className: 'cache-table' }, [
      el('caption', { className: 'muted small', text: `${formatBytes(total)} in all` }),
      el('thead', {}, [el('tr', {}, [el('th', { text: 'File' }), el('th', { text: 'Store' }), el('th', { text: 'Size' })])]),
      el('tbody', {}, rows.map((r) => el('tr', {}, [el('td', { text: r.url }), el('td', { text: r.cache }),
                                                     el('td', { text: formatBytes(r.bytes) })]))),
    ]);
    box.replaceChildren(el('div', { className: 'table-scroll' }, [table]));
  }

  byId('engine-refresh').addEventListener('click', () => { listModels(); listCache(); });
  byId('engine-clear').addEventListener('click', async () => {
    const names = globalThis.caches ? await caches.keys() : [];
    await Promise.all(names.map((name) => caches.delete(name)));
    byId('engine-cache-status').textContent = `Cleared ${names.length} store${names.length === 1 ? '' : 's'}: ` +
      'models, the engine and the page\'s offline copy are downloaded again the next time they are needed.';
    await listCache();
  });

  async function show() {
    listModels();
    listCache();
    if (shown) return;
    shown = true;
    const started = performance.now();
    byId('engine-status').textContent = 'loading the WebAssembly engine…';
    try {
      const info = await engineInfo();
      byId('engine-status').textContent = 'ready';
      byId('engine-version').textContent = info.version;
      byId('engine-simd').textContent = info.simd;
      byId('engine-threads').textContent = describeThreads(info);
      byId('engine-load-ms').textContent = `${Math.round(performance.now() - started)} ms`;
      byId('engine-limits').textContent = describeLimits(info.limits);
      listCache();
    } catch (error) {
      shown = false;
      const status = byId('engine-status');
      status.textContent = error.message;
      status.classList.add('error');
    }
  }
  return { show, setManifest: (entries) => { manifest = entries; } };
}
