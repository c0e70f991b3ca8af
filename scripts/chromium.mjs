// Headless Chromium for the browser tests, the soak and the benchmark: Debian's /usr/bin/chromium driven by
// playwright-core (never a downloaded browser), with everything that would reach the network switched off.
export const CHROMIUM = process.env.ATTNLAB_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'];

/** The requested URLs that left `origin` (data: and blob: URLs stay in the page). */
export function offsiteRequests(urls, origin) {
  return urls.filter((url) => !/^(data|blob):/.test(url) && new URL(url).origin !== origin);
}
