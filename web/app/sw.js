// The page's offline copy: a service worker (scope /, served with Service-Worker-Allowed by web/server.mjs) that
// answers the page's own files (HTML, CSS, modules, the model list, the sample photos) from the network when it
// can and from its cache when it cannot, so a reload works offline. The engine's .wasm and the model weights are
// not its business: the npm module keeps them in its own Cache API store (attnlab-v1) and reads them from there.
// Every cached response keeps the headers it came with, COOP / COEP included, so an offline page is still
// cross-origin isolated.
const SHELL_CACHE = 'attnlab-page-v1';

const isShell = (url) => url.origin === self.location.origin && !/\.(gguf|wasm)$/.test(url.pathname) &&
  (url.pathname === '/' || url.pathname === '/index.html' || /^\/(app|lib|dist)\//.test(url.pathname) ||
   url.pathname === '/models/manifest.json');

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(SHELL_CACHE).then((cache) => cache.addAll(['/'])).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(self.clients.claim());
});

async function networkFirst(request) {
  const cache = await caches.open(SHELL_CACHE);
  try {
    const response = await fetch(request);
    if (response.ok && response.type === 'basic') await cache.put(request, response.clone());
    return response;
  } catch (error) {
    const cached = await cache.match(request, { ignoreSearch: true }) ??
      (request.mode === 'navigate' ? await cache.match('/') : undefined);
    if (cached) return cached;
    throw error;
  }
}

self.addEventListener('fetch', (event) => {
  if (event.request.method !== 'GET') return;
  const url = new URL(event.request.url);
  if (!isShell(url)) return;
  event.respondWith(networkFirst(event.request));
});

// The page lists what it loaded before this worker controlled it (the first visit): fetch and keep those too.
self.addEventListener('message', (event) => {
  if (event.data?.type !== 'cache-urls') return;
  event.waitUntil((async () => {
    const cache = await caches.open(SHELL_CACHE);
    const urls = event.data.urls.filter((href) => isShell(new URL(href, self.location.origin)));
    const results = await Promise.allSettled(urls.map(async (href) => {
      const response = await fetch(href, { cache: 'no-cache' });
      if (response.ok) await cache.put(href, response);
    }));
    event.source?.postMessage({ type: 'cached', count: results.filter((r) => r.status === 'fulfilled').length,
                                failed: results.filter((r) => r.status === 'rejected').length });
  })());
});
