// Browser checks of the page's races: a download shared by two tabs, a model switch during a run, leaving the
// Caption tab while the camera request is pending, and a camera snap that throws; plus which entries the picker and
// the Score functions tab take.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSite } from '../support/site.mjs';

const R = new URL('../../', import.meta.url).pathname;
let site, origin, context;

before(async () => {
  const model = (id, src, extra) => ({ from: R + src, id, label: id, dtype: 'f32', ...extra });
  site = await startSite({
    prefix: 'page-check-',
    models: [
      model('rnn-a', 'tests/fixtures/rnn/additive.gguf', { task: 'translate', arch: 'bahdanau', src: 'en', tgt: 'de' }),
      model('rnn-b', 'tests/fixtures/rnn/dot.gguf', { task: 'translate', arch: 'bahdanau', src: 'en', tgt: 'fr' }),
      model('tf-1', 'tests/fixtures/transformer/tiny.gguf', { task: 'translate', arch: 'transformer', src: 'en', tgt: 'de' }),
      model('tf-2', 'tests/fixtures/transformer/tiny.gguf', { task: 'translate', arch: 'transformer', src: 'en', tgt: 'de' }),
      model('cap', 'tests/fixtures/caption/tiny_model.gguf', { task: 'caption', arch: 'show-attend-tell', src: 'image', tgt: 'en' }),
      // Score-function comparison entries: kept out of the picker; the dot one fills the Score functions tab's dot card.
      model('cmp-dot', 'tests/fixtures/rnn/dot.gguf', { task: 'translate', arch: 'luong-dot', src: 'en', tgt: 'de', group: 'score-functions' }),
      model('cmp-add-fr', 'tests/fixtures/rnn/additive.gguf', { task: 'translate', arch: 'bahdanau', src: 'en', tgt: 'fr', group: 'score-functions' }),
    ],
  });
  ({ origin, context } = site);
});
after(async () => {
  await site?.close();
});

// Holds a weights request until release(name) is called; settled(name) resolves once a released request has been
// passed on (or found aborted by the page).
async function gate(page) {
  const held = new Map();
  const seen = [];
  await page.route('**/models/weights/*.gguf', async (route) => {
    const name = route.request().url().split('/').pop().replace('.gguf', '');
    seen.push(name);
    const entry = held.get(name);
    if (!entry) return route.continue();
    await entry.promise;
    await route.continue().catch(() => {});
    entry.markSettled();
  });
  const hold = (name) => {
    let release, markSettled;
    const promise = new Promise((r) => { release = r; });
    const settled = new Promise((r) => { markSettled = r; });
    held.set(name, { promise, release, settled, markSettled });
  };
  const release = (name) => {
    const entry = held.get(name);
    held.delete(name);
    entry?.release();
    return entry?.settled;
  };
  return { hold, release, seen };
}

const translateOutputShown = () => document.getElementById('translate-output').textContent.length > 0;

test('translate: cancel + retry; run button stays disabled while a newly picked model loads', async () => {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const g = await gate(page);
  g.hold('rnn-a');
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => /Loading rnn-a/.test(document.getElementById('model-status-text').textContent));
  assert.equal(await page.locator('#translate-run').isDisabled(), true, 'Run enabled while rnn-a is still loading');
  // Switch to B while A is held: A's only listener leaves, so A's download is aborted.
  await page.selectOption('#model-select', 'rnn-b');
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30000 });
  assert.match(await page.locator('#model-status-text').textContent(), /rnn-b ready/);
  await g.release('rnn-a');
  // Back to A, newly picked and held again: Run stays disabled until it is ready, and the retry works (the
  // aborted load left nothing behind that would stop a new download).
  g.hold('rnn-a');
  await page.selectOption('#model-select', 'rnn-a');
  await page.waitForFunction(() => /Loading rnn-a/.test(document.getElementById('model-status-text').textContent));
  assert.equal(await page.locator('#translate-run').isDisabled(), true, 'Run enabled while the newly picked rnn-a loads');
  await g.release('rnn-a');
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30000 });
  assert.match(await page.locator('#model-status-text').textContent(), /rnn-a ready/);
  assert.equal(g.seen.filter((n) => n === 'rnn-a').length, 2, g.seen.join());
  // The retried model translates: its output appears and the error panel stays hidden.
  await page.fill('#translate-input', 'hello world');
  await page.click('#translate-run');
  await page.waitForFunction(translateOutputShown);
  assert.equal(await page.locator('#translate-error').isHidden(), true, await page.locator('#translate-error').textContent());
  assert.equal(await page.locator('#translate-run').isDisabled(), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('self-attention: picker change during a run keeps Run disabled until the new model is ready', async () => {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const g = await gate(page);
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => !document.getElementById('tab-btn-selfattention').disabled);
  await page.getByRole('tab', { name: 'Self-attention' }).click();
  await page.locator('#sa-run:not([disabled])').waitFor({ timeout: 30000 });  // tf-1 ready
  await page.evaluate(() => caches.delete('attnlab-v1'));
  g.hold('tf-2');
  // Click Run and switch to tf-2 (held) in the same task.
  await page.evaluate(() => {
    document.getElementById('sa-run').click();
    const select = document.getElementById('sa-model');
    select.value = 'tf-2';
    select.dispatchEvent(new Event('change'));
  });
  // The run started on tf-1 finishes with its translation (not an error) while tf-2 is still held.
  await page.waitForFunction(() => document.getElementById('sa-output').textContent.length > 0);
  assert.equal(await page.locator('#sa-error').isHidden(), true, await page.locator('#sa-error').textContent());
  await page.waitForFunction(() => document.getElementById('sa-run').getAttribute('aria-busy') === null);
  assert.equal(await page.locator('#sa-run').isDisabled(), true, 'Run re-enabled while tf-2 is still loading');
  assert.match(await page.locator('#sa-status-text').textContent(), /Loading tf-2/);
  await g.release('tf-2');
  await page.locator('#sa-run:not([disabled])').waitFor({ timeout: 30000 });
  assert.match(await page.locator('#sa-status-text').textContent(), /tf-2 ready/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('shared download: Translate cancelling does not abort what the Score functions tab waits for; progress reaches a later listener', async () => {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const failed = [];
  page.on('requestfailed', (r) => failed.push(r.url()));
  await page.goto(`${origin}/`);
  // Let the first page's own download finish, so that only the reloaded page's requests reach the gate.
  await page.waitForFunction(() => /ready/.test(document.getElementById('model-status-text').textContent), null,
                             { timeout: 30000 });
  await page.evaluate(() => caches.delete('attnlab-v1'));
  const g = await gate(page);
  g.hold('rnn-a');
  await page.reload();
  failed.length = 0;
  await page.waitForFunction(() => /Loading rnn-a/.test(document.getElementById('model-status-text').textContent));
  await page.getByRole('tab', { name: 'Score functions' }).click();
  await page.fill('#compare-input', 'hello world');
  await page.click('#compare-run');          // waits on rnn-a without a signal
  await page.getByRole('tab', { name: 'Translate' }).click();
  await page.selectOption('#model-select', 'rnn-b');   // Translate stops listening to rnn-a
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30000 });
  await page.selectOption('#model-select', 'rnn-a');   // joins the same, still running download
  await page.waitForFunction(() => /Loading rnn-a/.test(document.getElementById('model-status-text').textContent));
  assert.equal(await page.locator('#translate-run').isDisabled(), true, 'Run enabled while rnn-a is still held');
  await g.release('rnn-a');
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30000 });
  assert.match(await page.locator('#model-status-text').textContent(), /rnn-a ready/);
  // The bahdanau card shows a translation, not an error.
  await page.waitForFunction(() => {
    const out = document.querySelectorAll('#compare-grid .compare-card .output')[2];
    return out && out.textContent && out.textContent !== 'translating…' && !out.classList.contains('error');
  });
  assert.equal(await page.locator('#compare-grid .output.error').count(), 0);
  assert.equal(g.seen.filter((n) => n === 'rnn-a').length, 1, g.seen.join());
  assert.deepEqual(failed, []);
  assert.deepEqual(errors, []);
  await page.close();
});

test('camera: leaving the tab while getUserMedia is pending leaves no live track', async () => {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.addInitScript(() => {
    window.__tracks = [];
    navigator.mediaDevices.getUserMedia = () => new Promise((resolve) => {
      window.__grant = () => {
        const canvas = document.createElement('canvas');
        canvas.width = 64; canvas.height = 48;
        canvas.getContext('2d').fillRect(0, 0, 10, 10);
        const stream = canvas.captureStream(10);
        window.__tracks.push(...stream.getTracks());
        resolve(stream);
      };
    });
  });
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => !document.getElementById('tab-btn-caption').disabled);
  await page.getByRole('tab', { name: 'Caption' }).click();
  await page.click('#cap-camera');
  await page.waitForFunction(() => typeof window.__grant === 'function');
  await page.getByRole('tab', { name: 'Translate' }).click();
  await page.evaluate(() => window.__grant());
  // The late stream's track is stopped by the tab it no longer belongs to.
  await page.waitForFunction(() => window.__tracks.length > 0 && window.__tracks.every((t) => t.readyState === 'ended'),
                             null, { timeout: 10000 }).catch(() => {});
  const states = await page.evaluate(() => window.__tracks.map((t) => t.readyState));
  assert.deepEqual(states, ['ended']);
  assert.equal(await page.evaluate(() => document.getElementById('cap-video').srcObject), null);
  // Back on the tab the camera opens normally, and a snap works.
  await page.getByRole('tab', { name: 'Caption' }).click();
  assert.equal(await page.locator('#cap-camera').isDisabled(), false);
  await page.click('#cap-camera');
  await page.waitForFunction(() => typeof window.__grant === 'function');
  await page.evaluate(() => window.__grant());
  await page.waitForFunction(() => !document.getElementById('cap-camera-box').hidden);
  assert.equal(await page.evaluate(() => window.__tracks.at(-1).readyState), 'live');
  // Make the snap throw (drawImage on a canvas that cannot be created): the error shows in the tab.
  await page.evaluate(() => { HTMLCanvasElement.prototype.getContext = () => { throw new Error('no 2d context here'); }; });
  await page.waitForFunction(() => document.getElementById('cap-video').videoWidth > 0);
  await page.click('#cap-snap');
  await page.waitForFunction(() => !document.getElementById('cap-error').hidden);
  assert.match(await page.locator('#cap-error').textContent(), /no 2d context here/);
  await page.click('#cap-camera-stop');
  assert.equal(await page.evaluate(() => window.__tracks.at(-1).readyState), 'ended');
  assert.deepEqual(errors, []);
  await page.close();
});

test('score-function comparison entries fill the Score functions tab, not the picker', async () => {
  const page = await context.newPage();
  await page.goto(`${origin}/`);  // last in the file: the downloads it caches would change the counts above
  await page.locator('#translate-run:not([disabled])').waitFor({ timeout: 30000 });
  const picker = await page.locator('#model-select option').evaluateAll((options) => options.map((o) => o.value));
  assert.deepEqual(picker, ['rnn-a', 'rnn-b']);
  await page.getByRole('tab', { name: 'Score functions' }).click();
  const cards = page.locator('#compare-grid .compare-card');
  assert.equal(await cards.count(), 5);
  assert.match(await cards.nth(0).locator('p.muted').textContent(), /^luong-dot · /);       // cmp-dot
  assert.match(await cards.nth(1).locator('p.muted').textContent(), /not available yet/);  // no general model
  assert.match(await cards.nth(4).locator('h3').textContent(), /^scaled dot/);
  await page.fill('#compare-input', 'hello world');
  await page.click('#compare-run');
  // The dot card shows a translation, not an error.
  await page.waitForFunction(() => {
    const out = document.querySelectorAll('#compare-grid .compare-card .output')[0];
    return out && out.textContent && out.textContent !== 'translating…' && !out.classList.contains('error');
  });
  assert.equal(await page.locator('#compare-grid .output.error').count(), 0);
  await page.close();
});
