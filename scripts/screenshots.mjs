// Screenshots of every tab of the page at 1280×800 and 390×844, with the shipped models (models/manifest.json),
// each tab showing a result: build/screenshots/<tab>-<width>.png (full page). For looking at, not for asserting:
// the e2e tests assert. Usage: node scripts/screenshots.mjs [--tabs translate,caption] [--out build/screenshots]
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { createAppServer } from '../web/server.mjs';
import { launchChromiumProfile, offsiteRequests } from '../tests/support/chromium.mjs';

const root = new URL('..', import.meta.url).pathname;
const { values } = parseArgs({ options: { tabs: { type: 'string' }, out: { type: 'string', default: join(root, 'build/screenshots') } } });
const WIDTHS = [{ width: 1280, height: 800 }, { width: 390, height: 844 }];
const TIMEOUT = 120_000;

// Shows a tab once its button is enabled (the manifest lists a model for it).
async function openTab(page, tab, name) {
  await page.waitForFunction((id) => !document.getElementById(id).disabled, `tab-btn-${tab}`, { timeout: TIMEOUT });
  await page.getByRole('tab', { name }).click();
}

// A tab with a sample gallery (#PREFIX-…): once its model is ready, the sample `sample` (a selector) until its result.
async function runSample(page, { tab, name, prefix, sample }) {
  await openTab(page, tab, name);
  await page.waitForFunction((id) => /ready/.test(document.getElementById(id).textContent), `${prefix}-status-text`, { timeout: TIMEOUT });
  await page.locator(sample).click();
  await page.locator(`#${prefix}-result:not([hidden])`).waitFor({ timeout: TIMEOUT });
}

// What each tab does before its picture: the steps a new visitor would take.
const TABS = {
  translate: async (page) => {
    await page.locator('#translate-run:not([disabled])').waitFor({ timeout: TIMEOUT });
    await page.fill('#translate-input', 'A dog runs on the beach. Two men are playing soccer in a park.');
    await page.click('#translate-run');
    await page.locator('#translate-result:not([hidden])').waitFor({ timeout: TIMEOUT });
    await page.locator('#translate-heatmap .cell[data-row="1"][data-col="1"]').hover();
  },
  explain: async (page) => {
    await TABS.translate(page);
    await page.locator('#target-tokens .token').nth(1).click();
    await page.click('#translate-explain');
  },
  scores: async (page) => {
    await page.locator('#translate-run:not([disabled])').waitFor({ timeout: TIMEOUT });
    await page.getByRole('tab', { name: 'Score functions' }).click();
    await page.click('#compare-run');
    await page.locator('#compare-conclusion:not([hidden])').waitFor({ timeout: TIMEOUT });
  },
  // The Translate tab's step-by-step view, three tokens in, and the beam tree under it.
  steps: async (page) => {
    await TABS.translate(page);
    for (let k = 0; k < 3; ++k) await page.getByTestId('translate-stepper').getByTestId('step-next').click();
    await page.getByTestId('translate-steps').scrollIntoViewIfNeeded();
  },
  compare: async (page) => {
    await page.getByRole('tab', { name: 'Compare' }).click();
    await page.locator('#pair-run:not([disabled])').waitFor({ timeout: TIMEOUT });
    await page.click('#pair-run');
    await page.locator('#pair-result:not([hidden])').waitFor({ timeout: TIMEOUT });
  },
  // The tab as a visitor first sees it: the default model's own example (the manifest's selfAttention field), run on
  // opening with the head its card names.
  selfattention: async (page) => {
    await openTab(page, 'selfattention', 'Self-attention');
    await page.locator('#sa-result:not([hidden])').waitFor({ timeout: TIMEOUT });
    await page.waitForFunction(() => document.getElementById('sa-focus').value !== '', null, { timeout: TIMEOUT });
  },
  // Attention explained's scaled dot-product panel, opened from the Self-attention tab's neuron view.
  scaleddot: async (page) => {
    await TABS.selfattention(page);
    await page.getByTestId('sa-neuron-explain').click();
    await page.locator('#explain-head-body:not([hidden])').waitFor({ timeout: TIMEOUT });
    await page.getByTestId('explain-head').scrollIntoViewIfNeeded();
  },
  caption: async (page) => {
    await runSample(page, { tab: 'caption', name: 'Caption', prefix: 'cap', sample: '.cap-sample[data-sample="cameraman"]' });
    await page.locator('#cap-cells .cell[data-row="2"][data-col="3"]').hover();
  },
  // The Speech tab on a sample clip, five characters into its step-by-step view (its search tree below).
  speech: async (page) => {
    await runSample(page, { tab: 'speech', name: 'Speech', prefix: 'sp', sample: '#sp-samples [data-sample="woodchuck.wav"]' });
    for (let k = 0; k < 5; ++k) await page.getByTestId('sp-stepper').getByTestId('step-next').click();
  },
  engine: async (page) => {
    await page.getByRole('tab', { name: 'Engine' }).click();
    await page.waitForFunction(() => document.getElementById('engine-status').textContent === 'ready', null, { timeout: TIMEOUT });
    await page.waitForTimeout(500);  // the cache listing
  },
};

const wanted = values.tabs ? values.tabs.split(',') : Object.keys(TABS);
await mkdir(values.out, { recursive: true });
const server = createAppServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://localhost:${server.address().port}`;
const profile = await mkdtemp(join(tmpdir(), 'attnlab-screens-'));
const context = await launchChromiumProfile(profile);
const requests = [];
context.on('request', (request) => requests.push(request.url()));
let failures = 0;
try {
  for (const name of wanted) {
    for (const viewport of WIDTHS) {
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.setViewportSize(viewport);
      await page.goto(`${origin}/`);
      const file = join(values.out, `${name}-${viewport.width}.png`);
      try {
        await TABS[name](page);
        await page.waitForTimeout(300);
        await page.screenshot({ path: file, fullPage: true });
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        console.log(`${file}${overflow > 0 ? ` (the page is ${overflow}px wider than the window)` : ''}` +
                    `${errors.length ? ` page errors: ${errors.join('; ')}` : ''}`);
      } catch (error) {
        failures += 1;
        await page.screenshot({ path: file, fullPage: true }).catch(() => {});
        console.error(`${file}: ${error.message.split('\n')[0]}`);
      }
      await page.close();
    }
  }
  const offsite = offsiteRequests(requests, origin);
  if (offsite.length) {
    failures += 1;
    console.error(`requests left the origin: ${offsite.join(', ')}`);
  }
} finally {
  await context.close();
  server.closeAllConnections();
  server.close();
  await rm(profile, { recursive: true, force: true });
}
process.exitCode = failures ? 1 : 0;
