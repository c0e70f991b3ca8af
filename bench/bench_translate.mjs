#!/usr/bin/env node
// Translation benchmark, head to head (issue 7; results and analysis in docs/performance.md):
//   attnlab wasm (web/dist, through the npm module)  vs  onnxruntime-web (wasm backend, SIMD, 1 thread)
//       in Node and in headless Chromium, greedy, batch 1, the same sentences and the same source ids;
//   attnlab native (build/native/bench_translate)    vs  PyTorch CPU eager (bench/bench_pytorch.py, 1 thread)
//       on the same source ids and the same GGUF weights;
//   the paragraph benchmark (issue 20, headless Chromium): Multi30k test2016 in 8-sentence paragraphs, beam 4,
//       each engine at its best: attnlab f32 and q8_0 (batched sentences when the module takes an array), ORT
//       f32 and dynamic int8 (bench/quantize_onnx.py) with its decoder batched over beams x sentences
//       (bench/paragraph_harness.mjs); both engines at 1 and at 2 threads, one page per count (each engine fixes
//       its thread count once per page: ORT's pool, attnlab's env.threads build); words/s, time to a whole
//       paragraph, and each engine's BLEU (bench/paragraph_bleu.py).
//
//   PYTHONPATH=python node bench/bench_translate.mjs [--quick] [--sentences N] [--paragraphs N] [--rnn F16.gguf]
//       [--rnn-q8 Q8.gguf] [--transformer F16.gguf] [--transformer-q8 Q8.gguf] [--no-browser] [--paragraphs-only]
//       [--shortlist SHORTLIST.gguf | --no-shortlist] [--rnn-form F] [--rnn-beam-form F]
// (--paragraphs-only runs the paragraph benchmark alone; the paragraphs also run attnlab q8_0 with the EN→DE
// shortlist, models/weights/en-de.shortlist.gguf, unless --no-shortlist; the 2-thread page also runs that
// configuration in a worker on the single-thread build and in one on the threaded build at 2 threads,
// "worker1_q8_shortlist_t2" and "worker2_q8_shortlist_t2", interleaved with the rest: threads_speedup's pair; and on
// the page's threaded build set to one thread, "threaded1_q8_shortlist_t2": what that build's own code costs;
// --rnn-form and --rnn-beam-form pick the form of ORT's RNN graphs for batch 1 and for the paragraphs: `projected`
// (the equations attnlab runs, the decoder's products with the context moved into the encoder; batch 1's default)
// or `concatenated` (the model's equations as trained, every step multiplying the context; the paragraphs'
// default): each ORT's faster form there, bench/export_onnx.py.)
// (its Python imports the attnlab package from python/; bench/run.sh sets PYTHONPATH for every benchmark)
//
// Builds nothing (bench/run.sh builds first). Exports the ONNX graphs (bench/export_onnx.py -> build/bench/)
// from the same GGUF files every run. Every Node measurement runs in its own child process (so peak memory is
// that engine's), one after another in one session. The engines must produce identical target ids for every
// sentence; where they do not, that comparison's ratio is void (null in the JSON).
// The LAST line is one JSON object: wasm_vs_ort_rnn, wasm_vs_ort_transformer (ORT ÷ attnlab time per generated
// token; > 1 = attnlab faster), native_vs_pytorch_rnn, native_vs_pytorch_transformer (PyTorch ÷ native),
// q8_vs_f16_per_token (f16 ÷ q8 per token, wasm), wasm_bytes, first_result_ms, paragraph_vs_ort_rnn,
// paragraph_vs_ort_transformer (attnlab ÷ ORT words/s, Chromium, each at its best), encoder_vs_ort_rnn,
// encoder_vs_ort_transformer (ORT ÷ attnlab encoder time, batch 1, same f32 weights, Chromium), threads_speedup,
// engine_threads_speedup (the same paragraphs in the engine alone, natively and in wasm under Node: what the
// browser's workers add to threads_speedup) and engine_threads_speedup_after_idle (the same with 100 ms of idle
// before each paragraph), beam4_batched_speedup, cpu, and the details.
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launchChromium } from '../tests/support/chromium.mjs';
import { cpuDescription, memoryFirstTouch } from './cpu.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const benchDir = path.join(root, 'build', 'bench');
const PYTHON = '/usr/bin/python3';

function parseArgs(argv) {
  const args = { quick: false, browser: true, sentences: 0, paragraphs: 0,
                 rnn: 'models/weights/bahdanau-en-de.f16.gguf', rnnQ8: 'models/weights/bahdanau-en-de.q8_0.gguf',
                 transformer: 'models/weights/transformer-en-de.f16.gguf',
                 transformerQ8: 'models/weights/transformer-en-de.q8_0.gguf',
                 shortlist: 'models/weights/en-de.shortlist.gguf', rnnForm: 'projected', rnnBeamForm: 'concatenated' };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--quick') args.quick = true;
    else if (a === '--no-browser') args.browser = false;
    else if (a === '--sentences') args.sentences = Number(value());
    else if (a === '--rnn') args.rnn = value();
    else if (a === '--rnn-q8') args.rnnQ8 = value();
    else if (a === '--transformer') args.transformer = value();
    else if (a === '--transformer-q8') args.transformerQ8 = value();
    else if (a === '--paragraphs') args.paragraphs = Number(value());
    else if (a === '--shortlist') args.shortlist = value();
    else if (a === '--no-shortlist') args.shortlist = null;
    else if (a === '--paragraphs-only') args.paragraphsOnly = true;
    else if (a === '--rnn-form') args.rnnForm = value();
    else if (a === '--rnn-beam-form') args.rnnBeamForm = value();
    else if (a === '--child') args.child = value();
    else if (a === '--job') args.job = value();
    else throw new Error(`bench_translate: unknown option ${a}`);
  }
  if (!args.sentences) args.sentences = args.quick ? 50 : 200;
  // Timed paragraphs of 8 sentences (one more runs first as the warm-up).
  if (!args.paragraphs) args.paragraphs = args.quick ? PARAGRAPHS_QUICK : PARAGRAPHS_FULL;
  return args;
}

const PARAGRAPH_SENTENCES = 8;
const PARAGRAPHS_QUICK = 6;
const PARAGRAPHS_FULL = 40;

const abs = (p) => path.resolve(root, p);
const rel = (p) => path.relative(root, abs(p));
const maxRssMB = () => process.resourceUsage().maxRSS / 1024;

// ---- child processes ------------------------------------------------------------------------------------------
// pair:   one model, attnlab (f16, + q8_0 for the RNN) and ORT interleaved sentence by sentence -> raw rows
// memory: one engine alone in a fresh process, load + the first sentences -> peak RSS and cold first result
// baseline: both modules imported, nothing loaded -> the RSS every child starts from
const MEMORY_SENTENCES = 5;

async function child(kind, jobFile) {
  const job = JSON.parse(readFileSync(jobFile, 'utf8'));
  const harness = await import(pathToFileURL(path.join(root, 'bench/translate_harness.mjs')));
  const { loadModel } = await import(pathToFileURL(path.join(root, 'web/lib/index.mjs')));
  const ort = await import('onnxruntime-web');
  const ortFor = (model, idsFor) => harness.ortRunner({
    ort, idsFor, info: JSON.parse(readFileSync(path.join(benchDir, `${model}.json`), 'utf8')),
    encoderBytes: readFileSync(path.join(benchDir, `${model}.encoder.onnx`)),
    decoderBytes: readFileSync(path.join(benchDir, `${model}.decoder.onnx`)),
  });
  let out = {};
  if (kind === 'pair') {
    const ids = [];
    const runners = [harness.attnlabRunner({ loadModel, bytes: readFileSync(abs(job.gguf)), idsSink: ids })];
    if (job.q8) runners.push(harness.attnlabRunner({ name: 'attnlab_q8', loadModel, bytes: readFileSync(abs(job.q8)) }));
    runners.push(ortFor(job.model, (i) => ids[i]));
    out = await harness.benchInterleaved(runners, job.sentences);
  } else if (kind === 'memory') {
    const runner = job.engine === 'ort' ? ortFor(job.model, (i) => job.sourceIds[i])
      : harness.attnlabRunner({ loadModel, bytes: readFileSync(abs(job.gguf)) });
    out = (await harness.benchInterleaved([runner], job.sentences))[runner.name];
    delete out.sentences;
  } else if (kind !== 'baseline') {
    throw new Error(`unknown child ${kind}`);
  }
  console.log(JSON.stringify({ ...out, peak_rss_mb: maxRssMB() }));
}

function lastJson(output, what) {
  const lines = output.trim().split('\n');
  try {
    return JSON.parse(lines[lines.length - 1]);
  } catch {
    throw new Error(`${what}: the last line is not JSON: ${lines[lines.length - 1]?.slice(0, 300)}`);
  }
}

function run(command, args, what) {
  let output;
  try {
    output = execFileSync(command, args, { cwd: root, encoding: 'utf8', maxBuffer: 256 << 20,
                                           stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    throw new Error(`${what} failed: ${error.stderr || error.message}`);
  }
  return lastJson(output, what);
}

function runChild(kind, job) {
  const jobFile = path.join(benchDir, `job-${kind}-${job.name ?? 'x'}.json`);
  writeFileSync(jobFile, JSON.stringify(job));
  // --no-liftoff: compile wasm with TurboFan up front (see bench/bench_kernels.mjs); both engines alike.
  return run(process.execPath, ['--no-liftoff', fileURLToPath(import.meta.url), '--child', kind, '--job', jobFile],
             `${kind} ${job.name ?? ''}`);
}

// ---- headless Chromium ------------------------------------------------------------------------------------------
const MIME = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.json': 'application/json',
               '.wasm': 'application/wasm' };
const SERVED = ['bench/', 'web/lib/', 'web/dist/', 'node_modules/onnxruntime-web/dist/'];

function startServer(files, config, page = 'bench/translate_page.html') {
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let file = null;
    if (url.pathname === '/') file = path.join(root, page);
    else if (url.pathname === '/config.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(config));
      return;
    } else if (url.pathname.startsWith('/files/') && files[url.pathname.slice(7)]) file = files[url.pathname.slice(7)];
    else {
      const relative = path.normalize(decodeURIComponent(url.pathname).slice(1));
      if (SERVED.some((prefix) => relative.startsWith(prefix))) file = path.join(root, relative);
    }
    if (!file || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404);
      res.end();
      return;
    }
    // Cross-origin isolated, as the app's server is (web/server.mjs), so both engines get the same environment.
    res.writeHead(200, { 'content-type': MIME[path.extname(file)] ?? 'application/octet-stream',
                         'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function browserBench(models, sentences) {
  const files = {};
  const config = { sentences, models: [] };
  for (const m of models) {
    files[`${m.kind}.gguf`] = abs(m.gguf);
    files[`${m.kind}.encoder.onnx`] = path.join(benchDir, `${m.kind}.encoder.onnx`);
    files[`${m.kind}.decoder.onnx`] = path.join(benchDir, `${m.kind}.decoder.onnx`);
    const entry = { kind: m.kind, gguf: `/files/${m.kind}.gguf`, encoder: `/files/${m.kind}.encoder.onnx`,
                    decoder: `/files/${m.kind}.decoder.onnx`, info: m.info };
    if (m.q8) {
      files[`${m.kind}.q8.gguf`] = abs(m.q8);
      entry.q8 = `/files/${m.kind}.q8.gguf`;
    }
    config.models.push(entry);
  }
  return runPage(files, config, 'bench/translate_page.html');
}

async function runPage(files, config, pagePath) {
  const server = await startServer(files, config, pagePath);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`http://localhost:${server.address().port}/`);
    await page.waitForFunction(() => window.benchResult !== undefined, null, { timeout: 900_000, polling: 500 });
    const result = await page.evaluate(() => window.benchResult);
    if (result.error) throw new Error(`browser benchmark: ${result.error}`);
    result.browser = browser.version();
    return result;
  } finally {
    await browser.close();
    server.closeAllConnections();
    server.close();
  }
}

// The paragraph benchmark in one page, both engines at `threads`.
async function paragraphPage(models, paragraphs, threads) {
  const files = {};
  const config = { paragraphs, threads, models: [] };
  for (const m of models) {
    files[`${m.kind}.gguf`] = abs(m.gguf);
    files[`${m.kind}.q8.gguf`] = abs(m.q8);
    const entry = { kind: m.kind, gguf: `/files/${m.kind}.gguf`, q8: `/files/${m.kind}.q8.gguf`, info: m.info, ort: {} };
    if (m.shortlist) {
      files[`${m.kind}.shortlist.gguf`] = abs(m.shortlist);
      entry.shortlist = `/files/${m.kind}.shortlist.gguf`;
    }
    for (const [precision, suffix] of [['f32', ''], ['int8', '.int8']]) {
      const graphs = {};
      for (const [role, graph] of Object.entries(BEAM_GRAPHS[m.kind])) {
        const name = `${graph}${suffix}.onnx`;
        files[name] = path.join(benchDir, name);
        graphs[role] = `/files/${name}`;
      }
      entry.ort[precision] = graphs;
    }
    config.models.push(entry);
  }
  return runPage(files, config, 'bench/paragraph_page.html');
}

const BEAM_GRAPHS = { rnn: { encoder: 'rnn.beam_encoder', decoder: 'rnn.beam_decoder' },
                      transformer: { encoder: 'transformer.beam_encoder', decoder: 'transformer.beam_decoder' } };

// ---- reporting -------------------------------------------------------------------------------------------------
const fmt = (x, digits = 2) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits));
const ratio = (a, b) => (a > 0 && b > 0 ? a / b : null);

function table(title, rows) {
  console.log(`\n${title}`);
  const header = ['engine', 'encoder ms', 'ms/token', 'sent/s', 'words/s', 'first result ms', 'peak MB'];
  const widths = [34, 11, 10, 9, 9, 16, 9];
  const line = (cells) => cells.map((c, i) => (i ? String(c).padStart(widths[i]) : String(c).padEnd(widths[0]))).join(' ');
  console.log(line(header));
  for (const [name, s] of rows)
    console.log(line([name, fmt(s.encoder_ms, 3), fmt(s.per_token_ms, 3), fmt(s.sentences_per_s, 1), fmt(s.words_per_s, 0),
                      fmt(s.cold_first_result_ms ?? s.first_result_ms, 0), fmt(s.peak_mb, 0)]));
}

// attnlab's advantage per metric (> 1 = attnlab better): times and memory ORT ÷ attnlab, throughputs attnlab ÷ ORT.
function advantage(a, o) {
  return { encoder: ratio(o.encoder_ms, a.encoder_ms), per_token: ratio(o.per_token_ms, a.per_token_ms),
           sentences_per_s: ratio(a.sentences_per_s, o.sentences_per_s), words_per_s: ratio(a.words_per_s, o.words_per_s),
           first_result: ratio(o.cold_first_result_ms ?? o.first_result_ms, a.cold_first_result_ms ?? a.first_result_ms), peak_memory: ratio(o.peak_mb, a.peak_mb) };
}

function printAdvantage(label, adv, mismatches) {
  const parts = Object.entries(adv).map(([k, v]) => `${k} ${fmt(v)}x`).join(', ');
  const verdict = mismatches.count ? `VOID: ${mismatches.count} sentences decode differently` : 'same tokens on every sentence';
  console.log(`${label}: attnlab advantage (>1 = attnlab better): ${parts}  [${verdict}]`);
  for (const e of mismatches.examples ?? []) console.log(`  sentence ${e.sentence}: ${JSON.stringify(e.a)} vs ${JSON.stringify(e.b)}`);
}

function compareTargets(a, b) {
  const examples = [];
  let count = 0;
  a.forEach((x, i) => {
    const y = b[i] ?? [];
    if (x.length !== y.length || x.some((v, j) => v !== y[j])) {
      ++count;
      if (examples.length < 3) examples.push({ sentence: i, a: x, b: y });
    }
  });
  return { count, examples };
}

// The paragraph benchmark's tables, BLEU and headline keys.
function reportParagraphs(result, pages, models, references, paragraphCount) {
  const timedReferences = references.slice(PARAGRAPH_SENTENCES, paragraphCount * PARAGRAPH_SENTENCES);
  for (const m of models) {
    result[`paragraph_vs_ort_${m.kind}`] = null;
  }
  result.threads_speedup = null;
  if (!Object.keys(pages).length) {
    result.paragraph_reason = 'not run: --no-browser';
    result.threads_speedup_reason = 'not run: --no-browser';
    return;
  }
  // BLEU of every engine of every page, one Python call.
  const job = { references: timedReferences, models: {} };
  for (const m of models) {
    const engines = {};
    for (const [page, r] of Object.entries(pages))
      for (const [name, out] of Object.entries(r.models[m.kind].outputs)) engines[`${page}/${name}`] = out;
    job.models[m.kind] = { gguf: abs(m.gguf), engines };
  }
  const jobFile = path.join(benchDir, 'paragraph_bleu_job.json');
  writeFileSync(jobFile, JSON.stringify(job));
  const bleu = JSON.parse(execFileSync(PYTHON, ['bench/paragraph_bleu.py'], { cwd: root, encoding: 'utf8',
                                                                           input: readFileSync(jobFile) }).trim());
  const paragraphsTimed = paragraphCount - 1;
  result.paragraphs = { timed: paragraphsTimed, sentences_each: PARAGRAPH_SENTENCES, beam: 4, bleu_sentences: timedReferences.length,
                        pages: {} };
  for (const m of models) {
    console.log(`\n${m.kind.toUpperCase()} paragraphs in Chromium: test2016, ${paragraphsTimed} paragraphs of ${PARAGRAPH_SENTENCES} ` +
                `sentences after a warm-up one, beam 4, engines interleaved paragraph by paragraph; BLEU 13a (detokenized, ` +
                `cased) on the ${timedReferences.length} sentences; one page per thread count, both engines at it`);
    const header = ['page / engine', 'words/s', 'paragraph ms', 'BLEU', 'how'];
    const widths = [28, 9, 13, 7, 0];
    const line = (cells) => cells.map((c, i) => (i === 0 || i === 4 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' ');
    console.log(line(header));
    const best = { attnlab: null, ort: null };
    for (const [page, r] of Object.entries(pages)) {
      const engines = r.models[m.kind].engines;
      const pageBest = {};
      for (const [name, e] of Object.entries(engines)) {
        const b = bleu[m.kind][`${page}/${name}`];
        e.bleu_13a = b.bleu_13a;
        console.log(line([`${page} ${name}`, fmt(e.words_per_s, 0), fmt(e.paragraph_ms_median, 0), fmt(b.bleu_13a, 2), e.api]));
        const engine = name.split('_')[0];
        if (!pageBest[engine] || e.words_per_s > pageBest[engine].engine.words_per_s) pageBest[engine] = { page, name, engine: e };
        if (!best[engine] || e.words_per_s > best[engine].engine.words_per_s) best[engine] = { page, name, engine: e };
      }
      const f32Gap = Math.abs(engines[`attnlab_f32_t${r.threads}`].bleu_13a - engines[`ort_f32_t${r.threads}`].bleu_13a);
      console.log(`  ${page} (${r.threads} thread${r.threads > 1 ? 's' : ''}; attnlab build ${r.attnlabEngine?.build ?? 'single-thread (the module names none)'}): ` +
                  `attnlab's best ÷ ORT's best in this page ${fmt(ratio(pageBest.attnlab.engine.words_per_s, pageBest.ort.engine.words_per_s))}x; ` +
                  `f32 engines' BLEU differ by ${fmt(f32Gap, 2)} (${f32Gap <= 0.5 ? 'within' : 'MORE than'} 0.5: ` +
                  `${f32Gap <= 0.5 ? 'a same-weights comparison' : 'NOT a same-weights comparison'})`);
      result.paragraphs.pages[page] = { cross_origin_isolated: r.crossOriginIsolated, threads: r.threads, seconds: r.seconds,
                                        attnlab_engine: r.attnlabEngine };
    }
    const differs = Object.values(bleu[m.kind]).reduce((n, b) => n + (b.detokenization_differs ?? 0), 0);
    if (differs) console.log(`  (the detokenizer ORT's ids go through differs from attnlab's own text on ${differs} sentences)`);
    const ratioValue = ratio(best.attnlab.engine.words_per_s, best.ort.engine.words_per_s);
    console.log(`${m.kind} paragraphs: attnlab at its best (${best.attnlab.page} ${best.attnlab.name}, ${fmt(best.attnlab.engine.words_per_s, 0)} ` +
                `words/s, BLEU ${fmt(best.attnlab.engine.bleu_13a, 2)}) ÷ ORT at its best (${best.ort.page} ${best.ort.name}, ` +
                `${fmt(best.ort.engine.words_per_s, 0)} words/s, BLEU ${fmt(best.ort.engine.bleu_13a, 2)}) = ${fmt(ratioValue)}x` +
                (best.attnlab.page === best.ort.page ? ' (interleaved in one page)' : ' (from two pages run one after the other)'));
    result[`paragraph_vs_ort_${m.kind}`] = ratioValue;
    result[`paragraph_${m.kind}`] = { best_attnlab: `${best.attnlab.page}/${best.attnlab.name}`, best_ort: `${best.ort.page}/${best.ort.name}`,
                                      attnlab_api: best.attnlab.engine.api,
                                      pages: Object.fromEntries(Object.entries(pages).map(([page, r]) => [page, r.models[m.kind].engines])) };
  }
  // attnlab 2 threads ÷ 1: its fastest configuration in a worker on the threaded build at 2 threads over the same in a
  // worker on the single-thread build, both in the 2-thread page, interleaved paragraph by paragraph. Reported beside
  // it: the ratio across the two pages (its best at 2 threads ÷ its best on the single-thread build, pages run one
  // after the other, as before 2026-12-06), and the threaded build at one thread ÷ the single-thread worker.
  const threaded = pages.t2?.attnlabEngine;
  const named = (kind, prefix) => Object.keys(pages.t2?.models[kind].engines ?? {}).find((n) => n.startsWith(prefix));
  if (threaded?.build === 'threaded' && threaded.threads === 2 &&
      models.every((m) => named(m.kind, 'worker1_') && named(m.kind, 'worker2_'))) {
    const engines = (page, kind) => pages[page].models[kind].engines;
    const wordsPerS = (kind, prefix) => engines('t2', kind)[named(kind, prefix)]?.words_per_s;
    const bestIn = (page, kind) => Math.max(...Object.entries(engines(page, kind))
      .filter(([n]) => n.startsWith('attnlab')).map(([, x]) => x.words_per_s));
    const byModel = Object.fromEntries(models.map((m) => [m.kind, {
      config: named(m.kind, 'worker1_').replace(/^worker1_/, '').replace(/_t2$/, ''),
      workers: ratio(wordsPerS(m.kind, 'worker2_'), wordsPerS(m.kind, 'worker1_')),
      across_pages: ratio(bestIn('t2', m.kind), bestIn('t1', m.kind)),
      threaded_at_one_vs_single_thread: ratio(wordsPerS(m.kind, 'threaded1_'), wordsPerS(m.kind, 'worker1_')) }]));
    result.threads_speedup = Math.min(...models.map((m) => byModel[m.kind].workers));
    result.threads_speedup_by_model = Object.fromEntries(models.map((m) => [m.kind, byModel[m.kind].workers]));
    result.threads_speedup_details = byModel;
    const each = (key) => models.map((m) => `${m.kind} ${fmt(byModel[m.kind][key])}x`).join(', ');
    console.log(`attnlab 2 threads ÷ 1 (paragraphs, words/s, its fastest configuration in a worker on the threaded build ` +
                `at 2 threads and in one on the single-thread build, interleaved in the 2-thread page): ${each('workers')}; ` +
                `across the two pages (its best in each): ${each('across_pages')}; the page's threaded build at one ` +
                `thread ÷ the single-thread worker: ${each('threaded_at_one_vs_single_thread')}`);
  } else {
    result.threads_speedup_reason = `the 2-thread page ran attnlab's ${threaded?.build ?? 'single-thread'} build ` +
      `(${threaded?.build ? `${threaded.threads} threads` : 'engineInfo() names no build: this tree has no threaded one'})`;
    console.log(`threads_speedup: null (${result.threads_speedup_reason})`);
  }
}

// Where attnlab's per-token time goes (wasm, Node, batch-1 greedy): the engine core's step phases
// (build/wasm/bench_translate.js --profile) and what the npm API adds on top of the core's step.
function reportProfile(result, models, node, floors, coreSteps) {
  for (const m of models) {
    const profile = floors[m.kind];
    const core = coreSteps[m.kind];
    if (!profile || !core) continue;
    const api = node[m.kind].attnlab.per_token_ms;
    const phases = Object.entries(profile).filter(([k]) => !['load_ms', 'weight_read_ms', 'weight_bytes'].includes(k));
    const outside = api - core.per_token_ms;
    console.log(`\n${m.kind.toUpperCase()} per token, wasm (Node, batch-1 greedy): through the npm API ${fmt(api, 3)} ms = ` +
                `the engine core's step ${fmt(core.per_token_ms, 3)} ms + ${fmt(outside, 3)} ms outside it (embind copies of ` +
                `attention, scores and context per token, ${m.kind === 'transformer' ? 'the second decoder pass for every layer\'s attention, ' : ''}` +
                `the JS result objects; the two are measured in different processes one after the other, so under load ` +
                `the difference is noisy and can even come out negative)`);
    console.log(`  core step phases (ms per step, profiled pass): ${phases.map(([k, v]) => `${k} ${fmt(v, 3)}`).join(', ')}; ` +
                `reading the step's weights once: ${fmt(profile.weight_read_ms, 3)} ms`);
    result[`profile_${m.kind}`] = { api_per_token_ms: api, core_per_token_ms: core.per_token_ms, outside_core_ms: outside,
                                    phases: Object.fromEntries(phases), weight_read_ms: profile.weight_read_ms };
  }
}

// threads_speedup's workload in the engine alone, without a browser around it: bench/bench_paragraph.cpp on the same
// q8_0 models and shortlist, natively and in the threaded wasm build under Node, 1 and 2 threads interleaved in
// blocks; back to back, and again with the pages' 100 ms of idle before each paragraph (ENGINE_PAUSE_MS; on a
// virtual machine an idle virtual CPU loses its caches: docs/performance.md). { native: { rnn, transformer },
// wasm_node: {...} } (2 threads ÷ 1 in speed) for each; a build not there is null.
const ENGINE_PARAGRAPHS = 40;
const ENGINE_PAUSE_MS = 100;
function engineThreadsSpeedup(args, sourceFile, pauseMs, paragraphs) {
  const builds = {
    native: [path.join(root, 'build/native/bench_paragraph')],
    wasm_node: [process.execPath, path.join(root, 'build/wasm-mt/bench_paragraph.js')],
  };
  const out = {};
  for (const [where, command] of Object.entries(builds)) {
    out[where] = null;
    if (!existsSync(command[command.length - 1])) continue;
    out[where] = {};
    for (const [kind, gguf] of [['rnn', args.rnnQ8], ['transformer', args.transformerQ8]]) {
      const r = run(command[0], [...command.slice(1), '--model', abs(gguf), '--text', sourceFile,
                                 '--paragraphs', String(paragraphs), '--pause-ms', String(pauseMs),
                                 ...(args.shortlist ? ['--shortlist', abs(args.shortlist)] : [])],
                    `engine paragraphs (${where}, ${kind})`);
      out[where][kind] = r.speedup['2'];
    }
  }
  const line = (where) => (out[where] ? `RNN ${fmt(out[where].rnn, 2)}, Transformer ${fmt(out[where].transformer, 2)}`
                                      : 'not built');
  console.log(`engine alone (bench_paragraph, ${paragraphs} paragraphs, q8_0${args.shortlist ? ' + shortlist' : ''}, ` +
              `${pauseMs ? `${pauseMs} ms idle before each` : 'back to back'}), 2 threads ÷ 1: native ` +
              `${line('native')}; wasm in Node ${line('wasm_node')}`);
  return out;
}

// Both engine-alone measurements into the result.
function reportEngineThreads(result, args, sourceFile) {
  result.engine_threads_speedup = engineThreadsSpeedup(args, sourceFile, 0, ENGINE_PARAGRAPHS);
  result.engine_threads_speedup_after_idle = engineThreadsSpeedup(args, sourceFile, ENGINE_PAUSE_MS, ENGINE_PARAGRAPHS / 2);
}

// The paragraph pages (both engines at 1, then at 2 threads); paragraphs: test2016 from its first line, 8 sentences each,
// paragraph 0 every engine's warm-up.
async function runParagraphs(args, models, sourceFile, paragraphHarness) {
  const allSources = readFileSync(sourceFile, 'utf8').split('\n').filter((x) => x.trim());
  const references = readFileSync(sourceFile.replace(/\.en$/, '.de'), 'utf8').split('\n').filter((x) => x.trim());
  const paragraphCount = Math.min(args.paragraphs + 1, Math.floor(allSources.length / PARAGRAPH_SENTENCES));
  const paragraphs = Array.from({ length: paragraphCount }, (_, p) => {
    const texts = allSources.slice(p * PARAGRAPH_SENTENCES, (p + 1) * PARAGRAPH_SENTENCES);
    return { texts, words: texts.reduce((n, t) => n + paragraphHarness.wordCount(t), 0) };
  });
  const paragraphModels = [{ ...models[0], q8: args.rnnQ8, shortlist: args.shortlist },
                           { ...models[1], q8: args.transformerQ8, shortlist: args.shortlist }];
  const pages = {};
  if (args.browser) {
    for (const threads of [1, 2]) {
      const t0 = Date.now();
      pages[`t${threads}`] = await paragraphPage(paragraphModels, paragraphs, threads);
      pages[`t${threads}`].seconds = (Date.now() - t0) / 1000;
    }
  }
  return { pages, models: paragraphModels, references, count: paragraphCount };
}

// ---- main ------------------------------------------------------------------------------------------------------
async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.child) return child(args.child, args.job);
  const started = Date.now();
  mkdirSync(benchDir, { recursive: true });
  const sourceFile = path.join(root, 'build/data/multi30k/test2016.en');
  if (!existsSync(sourceFile)) execFileSync(PYTHON, ['-m', 'attnlab.data.prepare'], { cwd: root, stdio: 'inherit' });
  const sentences = readFileSync(sourceFile, 'utf8').split('\n').filter((s) => s.trim()).slice(0, args.sentences);
  for (const p of [args.rnn, args.rnnQ8, args.transformer, args.transformerQ8])
    if (!existsSync(abs(p))) throw new Error(`missing model ${p}`);

  console.log(`== translation benchmark: ${sentences.length} test2016 sentences, greedy, batch 1` +
              `${args.quick ? ' (--quick)' : ''}`);
  console.log(`machine: ${os.cpus().length} cores, ${cpuDescription() ?? os.cpus()[0]?.model}; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const memory = memoryFirstTouch();
  console.log(`fresh memory: first write ${memory.first_touch_gb_s} GB/s, rewrite ${memory.rewrite_gb_s} GB/s (bench/cpu.mjs)`);
  execFileSync(PYTHON, ['-W', 'ignore', 'bench/export_onnx.py', '--rnn', abs(args.rnn), '--transformer', abs(args.transformer),
                        '--rnn-form', args.rnnForm, '--rnn-beam-form', args.rnnBeamForm, '--out', benchDir], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  const int8Graphs = [...new Set(Object.values(BEAM_GRAPHS).flatMap((g) => Object.values(g)))];
  execFileSync(PYTHON, ['bench/quantize_onnx.py', ...int8Graphs.flatMap((g) => [path.join(benchDir, `${g}.onnx`),
                                                                                 path.join(benchDir, `${g}.int8.onnx`)])],
               { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  const info = {
    rnn: JSON.parse(readFileSync(path.join(benchDir, 'rnn.json'), 'utf8')),
    transformer: JSON.parse(readFileSync(path.join(benchDir, 'transformer.json'), 'utf8')),
  };
  const isFixture = rel(args.transformer).startsWith('tests/fixtures/');
  console.log(`weights: RNN ${rel(args.rnn)} (f16; q8: ${rel(args.rnnQ8)}); Transformer ${rel(args.transformer)}` +
              (isFixture ? ' (the tiny TEST FIXTURE, d_model 32: a toy; pass --transformer FILE for a trained one)' : ''));
  console.log(`ORT's RNN graphs: ${info.rnn.form} form at batch 1, ${info.rnn.beam_form} in the paragraphs (bench/export_onnx.py)`);
  const ortVersion = JSON.parse(readFileSync(path.join(root, 'node_modules/onnxruntime-web/package.json'), 'utf8')).version;

  // Node: per model one process with the engines interleaved (timing), then each engine alone in a fresh process
  // (peak memory, cold first result).
  const harness = await import(pathToFileURL(path.join(root, 'bench/translate_harness.mjs')));
  const paragraphHarness = await import(pathToFileURL(path.join(root, 'bench/paragraph_harness.mjs')));
  const baseline = runChild('baseline', { name: 'baseline' }).peak_rss_mb;
  const node = {};
  const ids = {};
  const models = [
    { kind: 'rnn', gguf: args.rnn, q8: args.rnnQ8, info: info.rnn },
    { kind: 'transformer', gguf: args.transformer, info: info.transformer },
  ];
  if (args.paragraphsOnly) {  // the paragraph benchmark alone (a quicker loop while working on it)
    const run = await runParagraphs(args, models, sourceFile, paragraphHarness);
    const result = { paragraphs_only: true, ort_rnn_beam_form: info.rnn.beam_form };
    reportParagraphs(result, run.pages, run.models, run.references, run.count);
    reportEngineThreads(result, args, sourceFile);
    result.cpu = cpuDescription();
    result.memory_first_touch = memory;
    console.log(JSON.stringify(result));
    return;
  }
  for (const m of models) {
    const r = runChild('pair', { name: m.kind, model: m.kind, gguf: m.gguf, q8: m.q8, sentences });
    ids[m.kind] = r.attnlab.sentences.map((s) => s.sourceIds);
    const first = sentences.slice(0, MEMORY_SENTENCES);
    const memory = (job) => runChild('memory', { name: `${m.kind}-${job.engine}`, model: m.kind, sentences: first, ...job });
    const withMemory = (summary, mem) => ({ ...summary, peak_mb: mem.peak_rss_mb - baseline, cold_first_result_ms: mem.first_result_ms });
    node[m.kind] = {
      attnlab: withMemory(harness.summarizeAttnlab(r.attnlab), memory({ engine: 'attnlab', gguf: m.gguf })),
      ort: withMemory(harness.summarizeOrt(r.ort), memory({ engine: 'ort', sourceIds: ids[m.kind] })),
      mismatches: harness.tokenMismatches(r.attnlab, r.ort),
    };
    if (m.q8) {
      node[`${m.kind}_q8`] = withMemory(harness.summarizeAttnlab(r.attnlab_q8), memory({ engine: 'attnlab', gguf: m.q8 }));
      node[`${m.kind}_q8`].mismatched_sentences_vs_f16 = harness.tokenMismatches(r.attnlab, r.attnlab_q8).count;
    }
    writeFileSync(path.join(benchDir, `${m.kind}.ids`), ids[m.kind].map((x) => x.join(' ')).join('\n') + '\n');
  }

  // Native engine core vs PyTorch eager on the same ids.
  const nativeBinary = path.join(root, 'build/native/bench_translate');
  if (!existsSync(nativeBinary)) throw new Error(`no ${rel(nativeBinary)}: run bench/run.sh (it builds it)`);
  const native = {};
  // (bench_translate also times beam 4 batched against one by one on the same sentences, interleaved.)
  for (const m of models) {
    const idsFile = path.join(benchDir, `${m.kind}.ids`);
    const n = run(nativeBinary, ['--model', abs(m.gguf), '--ids', idsFile, '--profile'], `native ${m.kind}`);
    const p = run(PYTHON, ['-W', 'ignore', 'bench/bench_pytorch.py', '--model', abs(m.gguf), '--ids', idsFile], `pytorch ${m.kind}`);
    native[m.kind] = { native: n, pytorch: p, mismatches: compareTargets(n.targets, p.targets) };
  }

  // The memory-traffic floor of one decoder step in wasm: build/wasm/bench_translate.js reads the step's weights
  // (as the engine holds them) once per pass at full SIMD width; same bytes as ORT's f32 graph for the f16 models.
  const wasmCore = path.join(root, 'build/wasm/bench_translate.js');
  const floors = {};
  const wasmCoreSteps = {};
  const wasmBeam4 = {};
  if (existsSync(wasmCore)) {
    for (const m of models) {
      const idsFile = path.join(benchDir, `${m.kind}.ids`);
      const core = run(process.execPath, ['--no-liftoff', wasmCore, '--model', abs(m.gguf), '--ids', idsFile,
                                          '--limit', '20', '--profile'], `wasm core ${m.kind}`);
      floors[m.kind] = core.profile;
      wasmCoreSteps[m.kind] = { per_token_ms: core.per_token_ms, encoder_ms: core.encoder_ms };
      wasmBeam4[m.kind] = { beam4: core.beam4, speedup: core.beam4_batched_speedup ?? null, cpu: core.cpu };
    }
  }

  let browser = null;
  if (args.browser) {
    const browserSentences = args.quick ? sentences.slice(0, 25) : sentences;
    browser = await browserBench(models, browserSentences);
    browser.sentences = browserSentences.length;
  }
  const paragraphRun = await runParagraphs(args, models, sourceFile, paragraphHarness);

  // ---- report ----
  const wasmBytes = statSync(path.join(root, 'web/dist/attnlab.wasm')).size;
  const result = { sentences: sentences.length, quick: args.quick, cores: os.cpus().length, onnxruntime_web: ortVersion,
                   ort_rnn_form: info.rnn.form, ort_rnn_beam_form: info.rnn.beam_form,
                   weights: { rnn: rel(args.rnn), rnn_q8: rel(args.rnnQ8), transformer: rel(args.transformer),
                              transformer_is_test_fixture: isFixture } };
  for (const m of models) {
    const r = node[m.kind];
    table(`${m.kind.toUpperCase()} in Node ${process.version} (interleaved per sentence; first result and peak memory: each engine ` +
          `alone in a fresh process, peak = max RSS above an idle child's ${fmt(baseline, 0)} MB)`,
          [['attnlab (web/dist, npm API)', r.attnlab], [`onnxruntime-web ${ortVersion} (wasm, 1 thread)`, r.ort]]);
    const adv = advantage(r.attnlab, r.ort);
    printAdvantage(`${m.kind} Node`, adv, r.mismatches);
    result[`wasm_vs_ort_${m.kind}`] = r.mismatches.count ? null : adv.per_token;
    result[`node_${m.kind}`] = { attnlab: r.attnlab, ort: r.ort, advantage: adv, mismatched_sentences: r.mismatches.count };
    if (browser) {
      const b = browser.models[m.kind];
      table(`${m.kind.toUpperCase()} in ${browser.browser ? `Chromium ${browser.browser}` : 'Chromium'} (${browser.sentences} sentences; page thread, no worker)`,
            [['attnlab (web/lib, useWorker false)', b.attnlab], [`onnxruntime-web ${ortVersion} (wasm, 1 thread)`, b.ort],
           ...(b.attnlab_q8 ? [['attnlab q8_0 (not compared)', b.attnlab_q8]] : [])]);
      const badv = advantage(b.attnlab, b.ort);
      printAdvantage(`${m.kind} Chromium`, badv, b.mismatches);
      result[`browser_wasm_vs_ort_${m.kind}`] = b.mismatches.count ? null : badv.per_token;
      result[`browser_${m.kind}`] = { attnlab: b.attnlab, ort: b.ort, advantage: badv, mismatched_sentences: b.mismatches.count };
    } else {
      result[`browser_wasm_vs_ort_${m.kind}`] = null;
    }
  }
  for (const m of models) {
    const floor = floors[m.kind];
    if (!floor) continue;
    const r = node[m.kind];
    const x = (ms) => fmt(ms / floor.weight_read_ms, 2);
    console.log(`\n${m.kind.toUpperCase()} wasm step floor: reading the step's ${fmt(floor.weight_bytes / 1e6, 1)} MB of f32 weights ` +
                `once takes ${fmt(floor.weight_read_ms, 3)} ms (build/wasm/bench_translate.js --profile). Per token: ` +
                `attnlab ${x(r.attnlab.per_token_ms)}x the floor, ORT ${x(r.ort.per_token_ms)}x. A 2x lead over ORT ` +
                `needs ORT at >= 2x the floor.`);
    result[`wasm_floor_${m.kind}`] = { weight_read_ms: floor.weight_read_ms, weight_bytes: floor.weight_bytes,
                                      attnlab_per_token_vs_floor: r.attnlab.per_token_ms / floor.weight_read_ms,
                                      ort_per_token_vs_floor: r.ort.per_token_ms / floor.weight_read_ms };
  }
  console.log(`\nq8_0 vs f16 (attnlab wasm, Node, RNN): per token ${fmt(node.rnn_q8.per_token_ms, 3)} ms vs ` +
              `${fmt(node.rnn.attnlab.per_token_ms, 3)} ms, encoder ${fmt(node.rnn_q8.encoder_ms, 3)} vs ` +
              `${fmt(node.rnn.attnlab.encoder_ms, 3)} ms, peak ${fmt(node.rnn_q8.peak_mb, 0)} vs ${fmt(node.rnn.attnlab.peak_mb, 0)} MB`);
  result.q8_vs_f16_per_token = ratio(node.rnn.attnlab.per_token_ms, node.rnn_q8.per_token_ms);
  if (browser) {
    const b = browser.models;
    console.log(`q8_0 vs f16 (attnlab wasm, Chromium, RNN): per token ${fmt(b.rnn.attnlab_q8.per_token_ms, 3)} ms vs ` +
                `${fmt(b.rnn.attnlab.per_token_ms, 3)} ms`);
    result.browser_q8_vs_f16_per_token = ratio(b.rnn.attnlab.per_token_ms, b.rnn.attnlab_q8.per_token_ms);
  }
  result.node_rnn_q8 = node.rnn_q8;

  for (const m of models) {
    const { native: n, pytorch: p, mismatches } = native[m.kind];
    console.log(`\n${m.kind.toUpperCase()} native (${n.simd}) vs PyTorch ${p.torch} eager (${p.threads} thread), ${n.sentences} sentences`);
    console.log(`  attnlab native: encoder ${fmt(n.encoder_ms, 3)} ms, ${fmt(n.per_token_ms, 4)} ms/token (${n.steps} steps)`);
    console.log(`  PyTorch eager:  encoder ${fmt(p.encoder_ms, 3)} ms, ${fmt(p.per_token_ms, 4)} ms/token (${p.steps} steps)`);
    const perToken = ratio(p.per_token_ms, n.per_token_ms);
    console.log(`  native advantage: per token ${fmt(perToken)}x, encoder ${fmt(ratio(p.encoder_ms, n.encoder_ms))}x  [` +
                (mismatches.count ? `VOID: ${mismatches.count} sentences decode differently` : 'same tokens on every sentence') + ']');
    for (const e of mismatches.examples) console.log(`  sentence ${e.sentence}: ${JSON.stringify(e.a)} vs ${JSON.stringify(e.b)}`);
    const profile = Object.entries(n.profile).filter(([k]) => k !== 'load_ms')
      .map(([k, v]) => `${k} ${fmt(v, 4)}`).join(', ');
    console.log(`  native step profile (ms per step): ${profile}`);
    console.log(`  reading the step's weights once (the floor): ${fmt(n.profile.weight_read_ms, 4)} ms; per token ` +
                `attnlab ${fmt(n.per_token_ms / n.profile.weight_read_ms, 2)}x it, PyTorch ` +
                `${fmt(p.per_token_ms / n.profile.weight_read_ms, 2)}x: a 3x lead needs PyTorch at >= 3x the floor`);
    result[`native_vs_pytorch_${m.kind}`] = mismatches.count ? null : perToken;
    result[`native_${m.kind}`] = { native: { encoder_ms: n.encoder_ms, per_token_ms: n.per_token_ms, profile: n.profile },
                                   pytorch: { encoder_ms: p.encoder_ms, per_token_ms: p.per_token_ms },
                                   mismatched_sentences: mismatches.count };
  }
  // Batched beams: beam 4 with every live hypothesis in one decoder step against each stepped alone (the engine
  // core, same sentences, interleaved in one process; > 1 = batched faster). The headline is the smaller of the
  // two models' wasm figures (native where no wasm core was built).
  console.log('');
  for (const m of models) {
    const nb = native[m.kind].native;
    const wb = wasmBeam4[m.kind];
    const line = (where, b, x) => `${where} ${x == null ? 'VOID (outputs differ) or not run' : `${fmt(x, 2)}x`}` +
      (b ? ` (${b.sentences} sentences: one by one ${fmt(b.one_by_one_ms, 0)} ms, batched ${fmt(b.batched_ms, 0)} ms)` : '');
    console.log(`${m.kind.toUpperCase()} beam 4 batched vs one by one: ${line('native', nb.beam4, nb.beam4_batched_speedup)}; ` +
                `${wb ? line('wasm (Node)', wb.beam4, wb.speedup) : 'wasm core not built'}`);
    result[`native_beam4_batched_speedup_${m.kind}`] = nb.beam4_batched_speedup ?? null;
    result[`beam4_batched_speedup_${m.kind}`] = wb ? wb.speedup : null;
  }
  const headline = models.map((m) => result[`beam4_batched_speedup_${m.kind}`] ?? result[`native_beam4_batched_speedup_${m.kind}`]);
  result.beam4_batched_speedup = headline.every((x) => x != null) ? Math.min(...headline) : null;
  reportParagraphs(result, paragraphRun.pages, paragraphRun.models, paragraphRun.references, paragraphRun.count);
  reportEngineThreads(result, args, sourceFile);
  reportProfile(result, models, node, floors, wasmCoreSteps);
  result.encoder_vs_ort_where = browser ? 'chromium' : 'node';
  for (const m of models)
    result[`encoder_vs_ort_${m.kind}`] = (browser ? result[`browser_${m.kind}`] : result[`node_${m.kind}`]).advantage.encoder;
  result.cpu = cpuDescription() ?? native.rnn.native.cpu ?? os.cpus()[0]?.model;
  result.memory_first_touch = memory;
  console.log(`\ncpu: ${result.cpu}; load average at the end ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  result.wasm_bytes = wasmBytes;
  // The shipped page's model (q8_0 RNN) with its weights already in memory (as from the Cache API), in a fresh page:
  // engine instantiation + model load + the first greedy translation. Chromium when it ran (default V8 tiering, as
  // a user gets it); Node's figure (a fresh process) is inflated by --no-liftoff's eager optimizing compile.
  result.first_result_ms = browser ? browser.models.rnn.attnlab_q8.first_result_ms : node.rnn_q8.cold_first_result_ms;
  result.first_result_where = browser ? 'chromium' : 'node';
  if (browser) result.browser_rnn_q8 = browser.models.rnn.attnlab_q8;
  result.seconds = (Date.now() - started) / 1000;
  console.log(`\n.wasm ${wasmBytes} bytes; first result (${result.first_result_where}, q8_0 RNN, weights in memory): ` +
              `${fmt(result.first_result_ms, 0)} ms; ` +
              `${fmt(result.seconds, 0)} s in all`);
  console.log(JSON.stringify(result));
}

main().catch((error) => {
  console.error(error.stack ?? String(error));
  process.exit(1);
});
