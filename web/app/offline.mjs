// Registers the offline copy (web/app/sw.js) and, on the first visit (before it controls the page), hands it the
// page's own files to keep. document.documentElement.dataset.offline says how far it got: "unsupported",
// "installing", "ready" (a reload works offline once the engine and a model are in the module's cache too),
// "failed".
import { byId } from '/app/ui.mjs';

// Modules only the engine's worker imports: the page's own resource list does not name them.
const WORKER_FILES = ['/lib/worker.mjs', '/dist/attnlab.mjs'];

export async function registerOfflineCopy() {
  const root = document.documentElement;
  if (!('serviceWorker' in navigator)) {
    root.dataset.offline = 'unsupported';
    byId('offline-note').textContent = 'This browser keeps no offline copy of the page (no service workers here).';
    return;
  }
  root.dataset.offline = 'installing';
  try {
    const registration = await navigator.serviceWorker.register('/app/sw.js', { scope: '/', type: 'classic' });
    await navigator.serviceWorker.ready;
    const worker = registration.active;
    const urls = [location.origin + '/', ...WORKER_FILES.map((path) => location.origin + path),
                  ...performance.getEntriesByType('resource').map((entry) => entry.name.split('#')[0])]
      .filter((href) => href.startsWith(location.origin));
    await new Promise((resolve) => {
      const onMessage = (event) => {
        if (event.data?.type !== 'cached') return;
        navigator.serviceWorker.removeEventListener('message', onMessage);
        resolve();
      };
      navigator.serviceWorker.addEventListener('message', onMessage);
      worker.postMessage({ type: 'cache-urls', urls: [...new Set(urls)] });
    });
    root.dataset.offline = 'ready';
  } catch (error) {
    root.dataset.offline = 'failed';
    byId('offline-note').textContent = `No offline copy of the page: ${error.message ?? error}.`;
  }
}
