// Where a model load's time goes in headless Chromium: a fresh page, the engine's cold start and loadModel(bytes)
// as the page does them (useWorker: false, the single-thread build), under the DevTools sampling profiler.
//
//   node bench/profile_load.mjs [--model models/weights/bahdanau-en-de.q8_0.gguf] [--runs 3]
//
// Prints, per run, the load's wall time and then (for the last run) the functions with the most self time and the
// callers of the memory fills and copies among them. Wasm functions are named only in a build linked with
// --profiling-funcs (relink build/wasm with -DCMAKE_EXE_LINKER_FLAGS=--profiling-funcs, and back without it:
// docs/performance.md); otherwise they print as wasm-function[N]. Also prints bench/cpu.mjs's fresh-memory probe,
// since a load writes tens of MB of memory the process never touched.
import { createServer } from 'node:http';
import { createReadStream, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium } from '../tests/support/chromium.mjs';
import { cpuDescription, memoryFirstTouch } from './cpu.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = { model: 'models/weights/bahdanau-en-de.q8_0.gguf', runs: 3 };
for (let i = 2; i < process.argv.length; i += 2) {
  const [flag, value] = [process.argv[i], process.argv[i + 1]];
  if (flag === '--model') args.model = value;
  else if (flag === '--runs') args.runs = Number(value);
  else throw new Error(`profile_load: unknown option ${flag}`);
}

const ISOLATED = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };
const TYPES = { '.wasm': 'application/wasm', '.mjs': 'text/javascript', '.js': 'text/javascript' };
const SERVED = ['web/lib/', 'web/dist/', path.dirname(args.model) + '/'];

function serve() {
  const server = createServer((request, response) => {
    const relative = path.normalize(decodeURIComponent(new URL(request.url, 'http://localhost').pathname).slice(1));
    if (relative === '.') {
      response.writeHead(200, { 'content-type': 'text/html', ...ISOLATED });
      response.end('<!doctype html><title>profile_load</title>');
      return;
    }
    const file = path.join(root, relative);
    if (!SERVED.some((prefix) => relative.startsWith(prefix)) || !existsSync(file) || !statSync(file).isFile()) {
      response.writeHead(404);
      response.end();
      return;
    }
    response.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', ...ISOLATED });
    createReadStream(file).pipe(response);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
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

const server = await serve();
const browser = await launchChromium();
try {
  console.log(`cpu: ${cpuDescription()}; fresh memory ${JSON.stringify(memoryFirstTouch())}`);
  let last = null;
  for (let run = 0; run < args.runs; ++run) {
    const page = await browser.newPage();
    await page.goto(`http://localhost:${server.address().port}/`);
    await page.evaluate(async (model) => {
      window.modelBytes = new Uint8Array(await (await fetch(`/${model}`)).arrayBuffer());
      window.attnlab = await import('/web/lib/index.mjs');
      window.attnlab.env.threads = 1;
    }, args.model);
    const client = await page.context().newCDPSession(page);
    await client.send('Profiler.enable');
    await client.send('Profiler.setSamplingInterval', { interval: 100 });
    await client.send('Profiler.start');
    const ms = await page.evaluate(async () => {
      const t0 = performance.now();
      await window.attnlab.loadModel(window.modelBytes, { useWorker: false, cache: false });
      return performance.now() - t0;
    });
    last = (await client.send('Profiler.stop')).profile;
    console.log(`run ${run}: engine cold start + loadModel(${args.model}) ${ms.toFixed(0)} ms`);
    await page.close();
  }
  console.log(summarize(last));
} finally {
  await browser.close();
  server.close();
}
