// What the page tests (page_*.test.mjs) share: the two viewports issue 23 asks for, a page that records its console
// errors, a real touch tap, a download's name and bytes, the JSON a figure's export bar copies, whether the page
// (and a stepper's controls) fit the viewport's width, the Self-attention tab run on a sentence and its first line's
// tooltip, and two readers of the module's numbers.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

export const R = new URL('../../', import.meta.url).pathname;  // the repository root, with a trailing slash
export const WIDTHS = [{ width: 1280, height: 800 }, { width: 390, height: 844 }];
export const isPhone = (viewport) => viewport.width < 600;

/** Where a test's screenshot NAME.png goes: build/screenshots/e2e/ (the fixture models' pages, looked at, never
 * compared), apart from the shipped models' pictures that scripts/screenshots.mjs writes into build/screenshots/. */
export function screenshotPath(name) {
  mkdirSync(`${R}build/screenshots/e2e`, { recursive: true });
  return `${R}build/screenshots/e2e/${name}.png`;
}

/** Row i of a module Matrix, as an array. */
export const row = (m, i) => Array.from(m.data.subarray(i * m.cols, (i + 1) * m.cols));

export const close = (a, b, what, tolerance = 1e-4) => assert.ok(Math.abs(a - b) <= tolerance, `${what}: ${a} vs ${b}`);

/** A new page of context at viewport; errors collects its uncaught exceptions and console errors. */
export async function newPage(context, viewport) {
  const page = await context.newPage();
  await page.setViewportSize(viewport);
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  return { page, errors };
}

/** A real touch tap (touch events, pointerType "touch", then the click) at the middle of locator. */
export async function tap(page, locator) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Emulation.setTouchEmulationEnabled', { enabled: true, maxTouchPoints: 1 });
  await locator.scrollIntoViewIfNeeded();
  const box = await locator.boundingBox();
  const point = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [point] });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await cdp.detach();
}

/** Clicks button and resolves to the download it starts: { name, bytes }. */
export async function downloadOf(page, button) {
  const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
  return { name: download.suggestedFilename(), bytes: await readFile(await download.path()) };
}

/** The JSON the export bar inside `scope` copies to the clipboard (the context needs clipboard permissions). */
export async function copiedJson(page, scope) {
  await page.locator(`${scope} [data-testid="export-json"]`).click();
  await page.waitForFunction((s) => /copied/.test(document.querySelector(`${s} .export-status`).textContent), scope);
  return JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
}

/** The page is no wider than the viewport (a wide figure scrolls inside its own box). */
export const pageFits = (page) => page.evaluate(() => document.scrollingElement.scrollWidth <= window.innerWidth);

/** Opens the Self-attention tab of the page at origin, translates text there and waits until it shows output. */
export async function runSelfAttention(page, origin, text, output) {
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => !document.getElementById('tab-btn-selfattention').disabled);
  await page.getByRole('tab', { name: 'Self-attention' }).click();
  await page.locator('#sa-run:not([disabled])').waitFor({ timeout: 30_000 });
  await page.fill('#sa-input', text);
  await page.click('#sa-run');
  await page.waitForFunction((out) => document.getElementById('sa-output').textContent === out, output, { timeout: 30_000 });
}

/** The tooltip text of the head view's first line from query 1 (the keyboard: down twice from none, then right). */
export async function firstLineTip(page) {
  await page.getByTestId('sa-canvas').focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  const tip = page.getByTestId('figure-tip');
  await tip.waitFor({ state: 'visible' });
  return tip.textContent();
}

/** On a phone: the page and the stepper's controls fit the viewport's width. */
export async function assertStepperFits(page, stepper, viewport) {
  if (!isPhone(viewport)) return;
  assert.ok(await pageFits(page), 'the page is wider than the phone');
  const controls = await stepper.locator('.step-controls').boundingBox();
  assert.ok(controls.x >= 0 && controls.x + controls.width <= viewport.width, 'the controls overflow the phone');
}
