// Browser end to end (issue 20): a translator whose manifest entry names a shortlist is decoded with it in the page.
// The Translate tab fetches the shortlist from its own origin (SHA-256 checked), says so beside the time, and shows
// for a paragraph what the module gives in Node with the same files; a model without one decodes as before.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { repoRoot } from '../js/fixture_model.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';

const MODEL = join(repoRoot, 'models/weights/bahdanau-en-de.q8_0.gguf');
const SHORTLIST = join(repoRoot, 'models/weights/en-de.shortlist.gguf');
const PARAGRAPH = 'Two men are playing soccer in a park. Where is the train station? My brother is a doctor.';

let site;

before(async () => {
  site = await startSite({
    prefix: 'attnlab-e2e-shortlist-',
    models: [{ from: MODEL, id: 'bahdanau-en-de', label: 'EN→DE', task: 'translate', arch: 'bahdanau', src: 'en',
               tgt: 'de', dtype: 'q8_0', shortlist: SHORTLIST }],
    viewport: { width: 1100, height: 900 },
  });
});

after(async () => {
  await site?.close();
});

test('the Translate tab decodes with the manifest\'s shortlist, as the module does with it', async () => {
  const model = await loadModel(MODEL, { shortlist: SHORTLIST });
  let expected;
  try {
    expected = (await model.translate(PARAGRAPH.match(/[^.?]+[.?]/g).map((s) => s.trim()), { beam: 4 })).map((t) => t.text);
  } finally {
    await model.dispose();
  }
  const page = await site.context.newPage();
  await page.goto(`${site.origin}/`);
  await page.locator('[data-testid="translate-run"]:not([disabled])').waitFor({ timeout: 60_000 });
  await page.getByTestId('translate-input').fill(PARAGRAPH);
  await page.getByTestId('translate-run').click();
  await page.waitForFunction(() => /shortlist/.test(document.getElementById('translate-timing')?.textContent ?? '') ||
                                   !document.getElementById('translate-error').hidden, null, { timeout: 60_000 });
  assert.equal(await page.locator('#translate-error').isHidden(), true);
  assert.match(await page.locator('#translate-timing').textContent(), /3 sentences in one call · vocabulary shortlist/);
  const output = await page.getByTestId('translate-output').textContent();
  for (const text of expected) assert.ok(output.includes(text), `"${text}" is not in the page's output "${output}"`);
  assert.ok(site.requests.some((url) => url.endsWith('/models/weights/bahdanau-en-de.shortlist.gguf')));
  assert.deepEqual(offsiteRequests(site.requests, site.origin), []);
  await page.close();
});
