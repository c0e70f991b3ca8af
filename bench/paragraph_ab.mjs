// The paragraph workload of two engine builds side by side in one headless Chromium page: this tree's web/lib and
// web/dist (or --root's) against another tree's (--baseline DIR, e.g. a worktree of an earlier commit after
// `bash scripts/build.sh --only wasm --skip-setup` and `--only wasm-mt`). Each build runs the model in workers of
// its own, as the demo page does, at each thread count asked (1: the single-thread build; 2 or more: the threaded
// build), and every worker translates the same 8-sentence paragraphs of test2016 (beam 4, translate(texts[])),
// interleaved paragraph by paragraph in a rotating order, each call after the same idle pause; the first paragraph
// is the warm-up. So a change's effect on the paragraph speed at 1 and 2 threads is measured without the machine's
// drift between pages or runs, which on a shared virtual machine exceeds the effects looked for.
//
//   node bench/paragraph_ab.mjs --baseline DIR [--paragraphs 40] [--threads 1,2] [--pause-ms 100]
//       [--model models/weights/bahdanau-en-de.q8_0.gguf] [--shortlist models/weights/en-de.shortlist.gguf|none]
//       [--root DIR] [--thread-cpu] [--concurrent] [--chromium-flag FLAG ...]
//   node bench/paragraph_ab.mjs --threads 2 --thread-cpu [...]     (no --baseline: this tree's build alone)
//
// Prints the CPU, each worker's mean and median milliseconds per paragraph, this tree ÷ the baseline in speed at
// each thread count, each build's N threads ÷ 1, and whether every worker gave the same translations.
// --thread-cpu (Linux) adds the CPU seconds each Chromium thread used over the timed paragraphs (from
// /proc/PID/task/TID/stat), next to the seconds the calls took: with one worker, its thread and its pool's threads
// against the work of one thread, and what the browser's other threads took meanwhile; and how often each thread
// waited (voluntary context switches: sleeping, or blocked) and was preempted (involuntary ones: another thread
// took its core). --concurrent starts every worker's paragraph at once instead of one after another (with
// --threads 1 and a baseline: two single-thread workers side by side, what two busy cores cost each of them).
// --pause-ms is the idle time before each paragraph (0: back to back). --chromium-flag adds one flag to Chromium's
// command line (e.g. --js-flags=--no-wasm-dynamic-tiering), once per flag.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CHROMIUM_ARGS, launchChromium } from '../tests/support/chromium.mjs';
import { cpuDescription } from './cpu.mjs';
import { serveTrees } from './serve_trees.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = { baseline: null, paragraphs: 40, threads: [1, 2], pauseMs: 100, root: '.',
               model: 'models/weights/bahdanau-en-de.q8_0.gguf', shortlist: 'models/weights/en-de.shortlist.gguf',
               chromiumFlags: [] };
for (let i = 2; i < process.argv.length; i += 2) {
  const [flag, value] = [process.argv[i], process.argv[i + 1]];
  if (flag === '--baseline') args.baseline = value;
  else if (flag === '--paragraphs') args.paragraphs = Number(value);
  else if (flag === '--threads') args.threads = value.split(',').map(Number);
  else if (flag === '--pause-ms') args.pauseMs = Number(value);
  else if (flag === '--root') args.root = value;
  else if (flag === '--model') args.model = value;
  else if (flag === '--shortlist') args.shortlist = value === 'none' ? null : value;
  else if (flag === '--chromium-flag') args.chromiumFlags.push(value);
  else if (flag === '--concurrent') {
    args.concurrent = true;
    --i;
  } else if (flag === '--thread-cpu') {
    args.threadCpu = true;
    --i;  // takes no value
  } else throw new Error(`paragraph_ab: unknown option ${flag}`);
}
if (!args.baseline && !args.threadCpu)
  throw new Error('paragraph_ab: --baseline DIR (another tree with web/lib and built web/dist) is required');
if (!(args.paragraphs >= 1) || !args.threads.every((n) => Number.isInteger(n) && n >= 1 && n <= 16))
  throw new Error('paragraph_ab: --paragraphs must be at least 1 and --threads thread counts from 1 to 16');

const SENTENCES = 8;
const testFile = path.join(root, 'build/data/multi30k/test2016.en');
if (!existsSync(testFile)) throw new Error(`paragraph_ab: ${testFile} is missing (python3 -m attnlab.data.prepare, from python/)`);
const lines = readFileSync(testFile, 'utf8').split('\n').filter(Boolean);
const available = Math.floor(lines.length / SENTENCES);
const paragraphs = Array.from({ length: args.paragraphs + 1 },
                              (_, p) => lines.slice((p % available) * SENTENCES, (p % available + 1) * SENTENCES));

// In the page: one worker per build and thread count, loaded and given paragraph 0 (the warm-up) by startInPage,
// then the timed paragraphs interleaved by runInPage, which returns { ms, texts } per worker; disposeInPage ends
// the workers.
async function startInPage({ paragraphs, threads, shortlist, builds }) {
  const bytesOf = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
  const model = await bytesOf('/model.gguf');
  const shortlistBytes = shortlist ? await bytesOf('/shortlist.gguf') : undefined;
  const workers = {};
  for (const [build, prefix] of builds) {
    const attnlab = await import(`${prefix}/web/lib/index.mjs`);
    for (const n of threads) {
      attnlab.env.threads = n;
      const loaded = await attnlab.loadModel(model.slice(), { useWorker: true, cache: false, shortlist: shortlistBytes?.slice() });
      const { build: engine } = await loaded._engineInfo();
      if (engine !== (n > 1 ? 'threaded' : 'single-thread'))
        throw new Error(`${build} at ${n} threads runs the ${engine} build (not cross-origin isolated, or no threaded build)`);
      workers[`${build}_t${n}`] = loaded;
    }
  }
  for (const loaded of Object.values(workers)) await loaded.translate(paragraphs[0], { beam: 4 });
  window.paragraphWorkers = workers;
}

async function runInPage({ paragraphs, pauseMs, concurrent }) {
  const workers = window.paragraphWorkers;
  const names = Object.keys(workers);
  const ms = Object.fromEntries(names.map((name) => [name, []]));
  const texts = Object.fromEntries(names.map((name) => [name, []]));
  const pause = () => new Promise((resolve) => setTimeout(resolve, pauseMs));
  const translate = async (name, paragraph) => {
    const t0 = performance.now();
    const out = await workers[name].translate(paragraph, { beam: 4 });
    ms[name].push(performance.now() - t0);
    texts[name].push(...out.map((t) => t.text));
  };
  for (let p = 1; p < paragraphs.length; ++p) {
    if (concurrent) {
      await pause();
      await Promise.all(names.map((name) => translate(name, paragraphs[p])));
      continue;
    }
    for (let i = 0; i < names.length; ++i) {
      await pause();
      await translate(names[(i + p) % names.length], paragraphs[p]);
    }
  }
  return { ms, texts };
}

async function disposeInPage() {
  for (const loaded of Object.values(window.paragraphWorkers)) await loaded.dispose();
}

// CPU seconds used so far by every thread of every Chromium process: Map "pid/tid" -> { name, seconds }.
function chromiumThreadCpu() {
  const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString());
  const threads = new Map();
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      continue;  // gone
    }
    if (!command.startsWith('chrom')) continue;
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');  // from field 3, "state"
        const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
        const switches = (kind) => Number(status.match(new RegExp(`^${kind}_ctxt_switches:\\s*(\\d+)`, 'm'))?.[1] ?? 0);
        threads.set(`${pid}/${tid}`, { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
                                       seconds: (Number(fields[11]) + Number(fields[12])) / ticksPerSecond,
                                       waits: switches('voluntary'), preempted: switches('nonvoluntary') });
      } catch {
        // the thread ended
      }
    }
  }
  return threads;
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const files = { '/model.gguf': path.resolve(root, args.model) };
if (args.shortlist) files['/shortlist.gguf'] = path.resolve(root, args.shortlist);
const server = await serveTrees({ root, current: args.root, baseline: args.baseline, title: 'paragraph_ab', files });
const browser = await launchChromium({ args: [...CHROMIUM_ARGS, ...args.chromiumFlags] });
try {
  const page = await browser.newPage();
  await page.goto(`http://localhost:${server.address().port}/`);
  const builds = [['current', ''], ...(args.baseline ? [['baseline', '/baseline']] : [])];
  await page.evaluate(startInPage, { paragraphs, threads: args.threads, shortlist: Boolean(args.shortlist), builds });
  const cpuBefore = args.threadCpu ? chromiumThreadCpu() : null;
  const { ms, texts } = await page.evaluate(runInPage, { paragraphs, pauseMs: args.pauseMs, concurrent: args.concurrent });
  const cpuAfter = args.threadCpu ? chromiumThreadCpu() : null;  // before the workers' threads end
  await page.evaluate(disposeInPage);
  console.log(`cpu: ${cpuDescription()}`);
  console.log(`${args.model}${args.shortlist ? ` with ${args.shortlist}` : ''}: ${args.paragraphs} paragraphs of ${SENTENCES} ` +
              `test2016 sentences, beam 4, ${args.pauseMs} ms apart; current: ${args.root}, baseline: ${args.baseline}`);
  for (const [name, xs] of Object.entries(ms))
    console.log(`${name.padEnd(14)} mean ${mean(xs).toFixed(1)} ms, median ${median(xs).toFixed(1)} ms per paragraph`);
  for (const n of args.baseline ? args.threads : [])
    console.log(`${n} thread(s): current ÷ baseline speed ${(mean(ms[`baseline_t${n}`]) / mean(ms[`current_t${n}`])).toFixed(3)}`);
  for (const n of args.threads.filter((t) => t > 1 && args.threads.includes(1)))
    for (const [build] of builds)
      console.log(`${build}: ${n} threads ÷ 1 ${(mean(ms[`${build}_t1`]) / mean(ms[`${build}_t${n}`])).toFixed(3)}`);
  if (cpuAfter) {
    const since = (id, field, now) => now - (cpuBefore.get(id)?.[field] ?? 0);
    const used = [...cpuAfter]
      .map(([id, { name, seconds, waits, preempted }]) => ({
        id, name, seconds: since(id, 'seconds', seconds), waits: since(id, 'waits', waits),
        preempted: since(id, 'preempted', preempted) }))
      .filter((thread) => thread.seconds >= 0.01).sort((a, b) => b.seconds - a.seconds);
    const calls = Object.values(ms).flat().reduce((a, b) => a + b, 0) / 1000;
    console.log(`thread CPU over the timed paragraphs: the calls took ${calls.toFixed(2)} s; Chromium's threads used ` +
                `${used.reduce((a, t) => a + t.seconds, 0).toFixed(2)} CPU s:`);
    for (const thread of used)
      console.log(`  ${thread.seconds.toFixed(2).padStart(6)} s  ${thread.name} (${thread.id}): ` +
                  `${thread.waits} waits, ${thread.preempted} preemptions`);
  }
  const reference = JSON.stringify(Object.values(texts)[0]);
  console.log(`same translations from every worker: ${Object.values(texts).every((t) => JSON.stringify(t) === reference)}`);
} finally {
  await browser.close();
  server.close();
}
