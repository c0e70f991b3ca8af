// Where a model load's time goes in headless Chromium: a fresh page, the engine's cold start and loadModel(bytes)
// as the page does them (useWorker: false, the single-thread build), under the DevTools sampling profiler.
//
//   node bench/profile_load.mjs [--model models/weights/bahdanau-en-de.q8_0.gguf] [--runs 3] [--root DIR]
//       [--baseline DIR]
//
// Prints, per run, the load's wall time and then (for the last run) the functions with the most self time and the
// callers of the memory fills and copies among them. Wasm functions are named only in a build linked with
// --profiling-funcs; otherwise they print as wasm-function[N]. `bash bench/profile_api.sh --link-only` makes one
// (build/profile/web) without touching web/dist; --root build/profile serves its web/lib and web/dist instead.
// Also prints bench/cpu.mjs's fresh-memory probe, since a load writes tens of MB of memory the process never touched.
//
// --baseline DIR compares instead, without the profiler: the first result (engine cold start, loadModel and one
// greedy translation) of the engine under --root against the one under DIR/web (another tree's web/lib and
// web/dist, e.g. a worktree of an earlier commit after `bash scripts/build.sh --only wasm --skip-setup`), each run
// a fresh page of each, their order alternating; prints every run, the medians of each part and their ratios.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium } from '../tests/support/chromium.mjs';
import { cpuDescription, memoryFirstTouch } from './cpu.mjs';
import { serveTrees } from './serve_trees.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = { model: 'models/weights/bahdanau-en-de.q8_0.gguf', runs: 3, root: '.', baseline: null };
for (let i = 2; i < process.argv.length; i += 2) {
  const [flag, value] = [process.argv[i], process.argv[i + 1]];
  if (flag === '--model') args.model = value;
  else if (flag === '--runs') args.runs = Number(value);
  else if (flag === '--root') args.root = value;
  else if (flag === '--baseline') args.baseline = value;
  else throw new Error(`profile_load: unknown option ${flag}`);
}

// Self time per function, and the three callers above each memset/memcpy sample.
function summarize(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
  const self = new Map();
  const fills = new Map();
  const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
  const name = (node) => (node.callFrame.functionName || '(anonymous)').slice(0, 120);
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    add(self, name(node), us);
    if (/^(memset|__memcpy|_emscripten_memcpy_big)$/.test(node.callFrame.functionName)) {
      const chain = [];
      for (let p = parent.get(node.id); p && chain.length < 3; p = parent.get(p.id)) chain.push(name(p));
      add(fills, `${name(node)} <- ${chain.join(' <- ')}`, us);
    }
  });
  const top = (map, n) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n)
    .map(([key, us]) => `  ${(us / 1000).toFixed(1).padStart(7)} ms  ${key}`).join('\n');
  return `self time:\n${top(self, 15)}\nmemory fills and copies, by caller:\n${top(fills, 8)}`;
}

// A fresh page's first result from the engine at `prefix` ('' or '/baseline'), in its parts: [engine cold start,
// loadModel, the first greedy translation] in ms.
async function firstResult(browser, prefix) {
  const page = await browser.newPage();
  try {
    await page.goto(`http://localhost:${server.address().port}/`);
    return await page.evaluate(async ({ model, prefix }) => {
      const bytes = new Uint8Array(await (await fetch(`/${model}`)).arrayBuffer());
      const attnlab = await import(`${prefix}/web/lib/index.mjs`);
      const { loadEngine } = await import(`${prefix}/web/lib/engine.mjs`);
      attnlab.env.threads = 1;
      const t0 = performance.now();
      await loadEngine();
      const t1 = performance.now();
      const loaded = await attnlab.loadModel(bytes, { useWorker: false, cache: false });
      const t2 = performance.now();
      await loaded.translate('A man in a blue shirt is riding a bike down the street.', { beam: 1 });
      return [t1 - t0, t2 - t1, performance.now() - t2];
    }, { model: args.model, prefix });
  } finally {
    await page.close();
  }
}

async function compare(browser) {
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const runs = { root: [], baseline: [] };
  const show = (parts) => `${parts.reduce((a, b) => a + b).toFixed(0)} ms (${parts.map((x) => x.toFixed(0)).join(' + ')})`;
  for (let run = 0; run < args.runs; ++run) {
    const order = run % 2 ? ['baseline', 'root'] : ['root', 'baseline'];
    for (const which of order) runs[which].push(await firstResult(browser, which === 'root' ? '' : '/baseline'));
    console.log(`run ${run}: first result (engine + load + translation) ${args.root} ${show(runs.root.at(-1))}, ` +
                `${args.baseline} ${show(runs.baseline.at(-1))}`);
  }
  const medians = (rows) => [...rows[0].keys(), 3].map((i) => median(rows.map((r) => (i < 3 ? r[i] : r[0] + r[1] + r[2]))));
  const [a, b] = [medians(runs.root), medians(runs.baseline)];
  const line = (m) => `${m[3].toFixed(0)} ms (engine ${m[0].toFixed(0)}, load ${m[1].toFixed(0)}, translation ${m[2].toFixed(0)})`;
  console.log(`medians: ${args.root} ${line(a)}; ${args.baseline} ${line(b)}; first result baseline / root ` +
              `${(b[3] / a[3]).toFixed(2)}, load ${(b[1] / a[1]).toFixed(2)}`);
}

const server = await serveTrees({ root, current: args.root, baseline: args.baseline, title: 'profile_load',
                                  fromRoot: [path.dirname(args.model) + '/'] });
const browser = await launchChromium();
try {
  console.log(`cpu: ${cpuDescription()}; fresh memory ${JSON.stringify(memoryFirstTouch())}`);
  await (args.baseline ? compare(browser) : profile(browser));
} finally {
  await browser.close();
  server.close();
}
