#!/usr/bin/env node
// How long the Caption tab takes to caption a photo once the weights are cached: headless Chromium opens the page
// (web/server.mjs, the real manifest's caption models), and for each model and beam size captions every gallery
// sample twice; the page's own "captioned in N ms" (decode-free: RGBA pixels -> model.caption() in the worker ->
// result) of the second round is what counts, the first warms up. Prints a table and, last, a JSON line.
//   node bench/bench_caption.mjs [--models id,id] [--beams 1,3]
// Needs web/dist (npm run build). The numbers depend on the machine: quote them with it (docs/performance.md).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startSite } from '../tests/support/site.mjs';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 && process.argv[at + 1] ? process.argv[at + 1].split(',') : fallback;
}

const manifest = JSON.parse(await readFile(join(repoRoot, 'models/manifest.json'), 'utf8'));
const captioners = manifest.models.filter((m) => m.task === 'caption');
const ids = option('--models', captioners.map((m) => m.id));
const beams = option('--beams', ['1', '3']);
const entries = ids.map((id) => {
  const entry = captioners.find((m) => m.id === id);
  if (!entry) throw new Error(`no caption model '${id}' in models/manifest.json`);
  return entry;
});

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const site = await startSite({
  prefix: 'attnlab-bench-caption-',
  models: entries.map((m) => ({ ...m, from: join(repoRoot, m.file), name: m.file.split('/').pop() })),
});
const results = [];
try {
  const page = await site.context.newPage();
  await page.goto(`${site.origin}/`);
  await page.waitForFunction(() => !document.getElementById('tab-btn-caption').disabled);
  await page.getByRole('tab', { name: 'Caption' }).click();
  const samples = await page.locator('#cap-gallery .cap-sample').evaluateAll((nodes) => nodes.map((n) => n.dataset.sample));

  const captionMs = async (sample) => {
    await page.evaluate(() => { delete document.getElementById('cap-output').dataset.text; });
    await page.locator(`.cap-sample[data-sample="${sample}"]`).click();
    await page.waitForFunction(() => document.getElementById('cap-output').dataset.text !== undefined ||
                                     !document.getElementById('cap-error').hidden, null, { timeout: 120_000 });
    if (!(await page.locator('#cap-error').isHidden())) throw new Error(await page.locator('#cap-error').textContent());
    return Number((await page.getByTestId('cap-timing').textContent()).match(/(\d+) ms/)[1]);
  };

  for (const entry of entries) {
    await page.selectOption('#cap-model', entry.id);
    await page.waitForFunction(() => /ready/.test(document.getElementById('cap-status-text').textContent), null,
                               { timeout: 120_000 });
    for (const beam of beams) {
      await page.selectOption('#cap-beam', beam);
      for (const sample of samples) await captionMs(sample);  // warm-up round
      const ms = [];
      for (const sample of samples) ms.push(await captionMs(sample));
      const row = { model: entry.id, dtype: entry.dtype, mb: +(entry.bytes / 1e6).toFixed(1), beam: Number(beam),
                    median_ms: median(ms), max_ms: Math.max(...ms), samples: samples.length };
      results.push(row);
      console.log(`${entry.id.padEnd(32)} beam ${beam}: median ${String(row.median_ms).padStart(4)} ms, ` +
                  `slowest ${String(row.max_ms).padStart(4)} ms over ${samples.length} photos`);
    }
  }
} finally {
  await site.close();
}
console.log(JSON.stringify({ bench: 'caption-page', results }));
