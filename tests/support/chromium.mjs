// Headless Chromium for the browser tests, the soak and the benchmarks: Debian's /usr/bin/chromium driven by
// playwright-core (never a downloaded browser), with everything that would reach the network switched off.
export const CHROMIUM = process.env.ATTNLAB_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'];

// playwright-core is loaded on first launch, so a run that never opens a browser (bench --no-browser) never needs it.
const playwright = () => import('playwright-core').then((module) => module.chromium);

/** A headless browser with a throwaway profile. `args`: Chromium's flags (CHROMIUM_ARGS unless given). */
export async function launchChromium({ args = CHROMIUM_ARGS, ...options } = {}) {
  return (await playwright()).launch({ executablePath: CHROMIUM, args, headless: true, ...options });
}

/** A headless browser context whose profile lives in `profileDir` (a fresh folder: no Cache API state carried over). */
export async function launchChromiumProfile(profileDir, { args = CHROMIUM_ARGS, ...options } = {}) {
  return (await playwright()).launchPersistentContext(profileDir,
                                                      { executablePath: CHROMIUM, args, headless: true, ...options });
}

/** The requested URLs that left `origin` (data: and blob: URLs stay in the page). */
export function offsiteRequests(urls, origin) {
  return urls.filter((url) => !/^(data|blob):/.test(url) && new URL(url).origin !== origin);
}
