#!/usr/bin/env node
// Runs the kernel benchmark (bench/bench_kernels.cpp) natively and in wasm, and compares them. Builds
// nothing: bench/run.sh builds build/native (-march=native), build/native-sse2 (x86-64 baseline SSE2,
// the same 4-lane vectors as wasm SIMD128) and build/wasm first.
//   node bench/bench_kernels.mjs [case-filter]
//   RUNS=5 NATIVE_BUILD=... NATIVE_SSE2_BUILD=... WASM_BUILD=... node bench/bench_kernels.mjs
// Each binary runs RUNS times (default 3; the machine is shared, numbers fluctuate); the table shows the
// best run and, in parentheses, the median. Targets (judged against the default native build): wasm SIMD
// >= 0.7x native SIMD, and wasm SIMD >= 3x wasm scalar. wasm / native-sse2 is printed for fairness (equal
// vector width); it is not a target.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const builds = {
  native: path.resolve(root, process.env.NATIVE_BUILD ?? 'build/native'),
  native_sse2: path.resolve(root, process.env.NATIVE_SSE2_BUILD ?? 'build/native-sse2'),
  wasm: path.resolve(root, process.env.WASM_BUILD ?? 'build/wasm'),
};
const RUNS = Math.max(1, Number(process.env.RUNS ?? 3));
const filter = process.argv[2] ?? '';
const WASM_VS_NATIVE_TARGET = 0.7;
const WASM_VS_SCALAR_TARGET = 3.0;

function lastJsonLine(output, what) {
  const lines = output.trim().split('\n');
  const last = lines[lines.length - 1];
  try {
    return JSON.parse(last);
  } catch (error) {
    throw new Error(`${what}: the last line is not the benchmark's JSON: ${last}`);
  }
}

function runOnce([command, args], what) {
  let output;
  try {
    output = execFileSync(command, args, { encoding: 'utf8', maxBuffer: 16 << 20, stdio: ['ignore', 'pipe', 'inherit'] });
  } catch (error) {
    throw new Error(`${what} failed (${command} ${args.join(' ')}): ${error.message}`);
  }
  return lastJsonLine(output, what);
}

// The wasm build dir holds {"type": "commonjs"} (written by CMake at configure time), so Node runs
// bench_kernels.js as CommonJS despite the repository's "type": "module".
function commandFor(kind) {
  if (kind === 'wasm') {
    const js = path.join(builds.wasm, 'bench_kernels.js');
    if (!existsSync(js)) throw new Error(`no wasm benchmark at ${js} (run bench/run.sh or set WASM_BUILD)`);
    if (!existsSync(path.join(builds.wasm, 'package.json')))
      throw new Error(`${builds.wasm}/package.json is missing: re-run cmake there (it declares the .js CommonJS)`);
    // --no-liftoff: compile with TurboFan up front. Otherwise V8 starts in its baseline compiler and swaps in
    // optimized code from a background thread; on a loaded machine the first cases ran entirely in baseline
    // code (gemm_nn 2-10 GFLOP/s instead of 33). Browsers reach the same optimized code after tier-up.
    return [process.execPath, ['--no-liftoff', js, filter]];
  }
  const binary = path.join(builds[kind], 'bench_kernels');
  if (!existsSync(binary)) throw new Error(`no ${kind} benchmark at ${binary} (run bench/run.sh)`);
  return [binary, [filter]];
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Runs interleaved across the builds, so a burst of load from elsewhere hits all of them alike.
const collected = { native: [], native_sse2: [], wasm: [] };
for (let run = 0; run < RUNS; ++run)
  for (const kind of Object.keys(collected)) collected[kind].push(runOnce(commandFor(kind), `${kind} benchmark`));

// {simd, results: {case: {simd: {best, median, runs}, scalar: {...}}}}
function summarize(runs) {
  const results = {};
  for (const name of Object.keys(runs[0].results)) {
    const pick = (field) => {
      const values = runs.map((r) => r.results[name][field]);
      return { best: Math.max(...values), median: median(values), runs: values };
    };
    results[name] = { simd: pick('simd_gflops'), scalar: pick('scalar_gflops') };
  }
  return { simd: runs[0].simd, results };
}
const native = summarize(collected.native);
const sse2 = summarize(collected.native_sse2);
const wasm = summarize(collected.wasm);
const cases = Object.keys(wasm.results).filter((name) => name in native.results);

const ratio = (a, b) => (b > 0 ? a / b : null);
const fmt = (x, digits = 2) => (x === null || x === undefined ? '-' : x.toFixed(digits));
console.log(`native: ${native.simd}   native-sse2: ${sse2.simd}   wasm: ${wasm.simd}`);
console.log(
  `GFLOP/s, best of ${RUNS} runs (median); targets, against native: wasm/native >= ${WASM_VS_NATIVE_TARGET}, ` +
    `wasm simd/scalar >= ${WASM_VS_SCALAR_TARGET}`,
);
const header = ['case', 'native', 'native-sse2', 'wasm', 'wasm scalar', 'wasm/native', 'wasm/sse2', 'wasm simd/scalar'];
const widths = [28, 16, 16, 16, 12, 12, 10, 17];
const row = (cells) =>
  cells.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[0]) : String(cell).padStart(widths[i]))).join(' ');
console.log(row(header));

const results = {};
let holds = true;
const both = (s) => `${fmt(s.best)} (${fmt(s.median)})`;
for (const name of cases) {
  const n = native.results[name];
  const s = sse2.results[name];
  const w = wasm.results[name];
  const r = {
    native_gflops: n.simd.best,
    native_gflops_median: n.simd.median,
    native_sse2_gflops: s ? s.simd.best : null,
    native_sse2_gflops_median: s ? s.simd.median : null,
    wasm_gflops: w.simd.best,
    wasm_gflops_median: w.simd.median,
    wasm_scalar_gflops: w.scalar.best,
    wasm_vs_native: ratio(w.simd.best, n.simd.best),
    wasm_vs_native_sse2: s ? ratio(w.simd.best, s.simd.best) : null,
    wasm_simd_vs_scalar: ratio(w.simd.best, w.scalar.best),
    native_simd_vs_scalar: ratio(n.simd.best, n.scalar.best),
  };
  r.wasm_vs_native_holds = r.wasm_vs_native >= WASM_VS_NATIVE_TARGET;
  r.wasm_vs_scalar_holds = r.wasm_simd_vs_scalar >= WASM_VS_SCALAR_TARGET;
  r.targets_hold = r.wasm_vs_native_holds && r.wasm_vs_scalar_holds;
  holds &&= r.targets_hold;
  results[name] = r;
  const missed = [!r.wasm_vs_native_holds && 'wasm/native', !r.wasm_vs_scalar_holds && 'simd/scalar'].filter(Boolean);
  console.log(
    row([name, both(n.simd), s ? both(s.simd) : '-', both(w.simd), fmt(w.scalar.best), fmt(r.wasm_vs_native),
      fmt(r.wasm_vs_native_sse2), fmt(r.wasm_simd_vs_scalar, 1)]) + (missed.length ? `  (missed: ${missed.join(', ')})` : ''),
  );
}

console.log(JSON.stringify({
  native_simd: native.simd,
  native_sse2_simd: sse2.simd,
  wasm_simd: wasm.simd,
  runs: RUNS,
  targets: { wasm_vs_native: WASM_VS_NATIVE_TARGET, wasm_simd_vs_scalar: WASM_VS_SCALAR_TARGET, judged_against: 'native' },
  all_targets_hold: holds,
  results,
}));
