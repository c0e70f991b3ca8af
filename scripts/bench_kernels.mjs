#!/usr/bin/env node
// Runs the kernel benchmark natively and in wasm, and compares them.
//   node scripts/bench_kernels.mjs
//   NATIVE_BUILD=build/rel-kernels WASM_BUILD=build/wasm-rel-kernels node scripts/bench_kernels.mjs
// Each binary prints one JSON line last: {"simd": ..., "results": {case: {simd_gflops, scalar_gflops}}}.
// Prints a table and, as the last line, a JSON object with the ratios and whether the targets hold:
// wasm SIMD >= 0.7x native SIMD, and wasm SIMD >= 3x wasm scalar.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nativeBuild = path.resolve(root, process.env.NATIVE_BUILD ?? 'build/native');
const wasmBuild = path.resolve(root, process.env.WASM_BUILD ?? 'build/wasm');
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

function run(command, args, what) {
  try {
    return execFileSync(command, args, { encoding: 'utf8', maxBuffer: 16 << 20, stdio: ['ignore', 'pipe', 'inherit'] });
  } catch (error) {
    throw new Error(`${what} failed (${command} ${args.join(' ')}): ${error.message}`);
  }
}

function runNative() {
  const binary = path.join(nativeBuild, 'bench_kernels');
  if (!existsSync(binary)) throw new Error(`no native benchmark at ${binary} (set NATIVE_BUILD)`);
  return lastJsonLine(run(binary, [], 'native benchmark'), 'native benchmark');
}

function runWasm() {
  const js = path.join(wasmBuild, 'bench_kernels.js');
  if (!existsSync(js)) throw new Error(`no wasm benchmark at ${js} (set WASM_BUILD)`);
  // Emscripten emits CommonJS, but package.json says "type": "module", so Node would load a .js as ESM.
  // A .cjs copy next to it (the .wasm is found relative to the script) runs as CommonJS.
  const cjs = path.join(wasmBuild, 'bench_kernels.cjs');
  if (!existsSync(cjs) || statSync(cjs).mtimeMs < statSync(js).mtimeMs) copyFileSync(js, cjs);
  return lastJsonLine(run(process.execPath, [cjs], 'wasm benchmark'), 'wasm benchmark');
}

const ratio = (a, b) => (b > 0 ? a / b : null);
const fmt = (x, digits = 2) => (x === null || x === undefined ? '-' : x.toFixed(digits));

const native = runNative();
const wasm = runWasm();
const cases = Object.keys(wasm.results).filter((name) => name in native.results);

console.log(`native: ${native.simd}   wasm: ${wasm.simd}   (GFLOP/s)`);
const header = ['case', 'native', 'native scalar', 'wasm', 'wasm scalar', 'wasm/native', 'wasm simd/scalar', 'native simd/scalar'];
const widths = [30, 8, 14, 8, 12, 12, 17, 19];
const row = (cells) => cells.map((cell, i) => String(cell).padStart(i === 0 ? 0 : widths[i]).padEnd(i === 0 ? widths[0] : 0)).join(' ');
console.log(row(header));

const ratios = {};
let holds = true;
for (const name of cases) {
  const n = native.results[name];
  const w = wasm.results[name];
  const r = {
    native_gflops: n.simd_gflops,
    wasm_gflops: w.simd_gflops,
    wasm_vs_native: ratio(w.simd_gflops, n.simd_gflops),
    wasm_simd_vs_scalar: ratio(w.simd_gflops, w.scalar_gflops),
    native_simd_vs_scalar: ratio(n.simd_gflops, n.scalar_gflops),
  };
  r.targets_hold = r.wasm_vs_native >= WASM_VS_NATIVE_TARGET && r.wasm_simd_vs_scalar >= WASM_VS_SCALAR_TARGET;
  holds &&= r.targets_hold;
  ratios[name] = r;
  console.log(
    row([name, fmt(n.simd_gflops), fmt(n.scalar_gflops), fmt(w.simd_gflops), fmt(w.scalar_gflops),
      fmt(r.wasm_vs_native), fmt(r.wasm_simd_vs_scalar, 1), fmt(r.native_simd_vs_scalar, 1)]) + (r.targets_hold ? '' : '  (target missed)'),
  );
}

console.log(JSON.stringify({
  native_simd: native.simd,
  wasm_simd: wasm.simd,
  targets: { wasm_vs_native: WASM_VS_NATIVE_TARGET, wasm_simd_vs_scalar: WASM_VS_SCALAR_TARGET },
  all_targets_hold: holds,
  results: ratios,
}));
