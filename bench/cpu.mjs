// The CPU a benchmark ran on, as every benchmark prints it: "model name (L1d …, L2 …, L3 …)" from lscpu, or null.
import { execFileSync } from 'node:child_process';
import os from 'node:os';

export function cpuDescription() {
  try {
    const fields = Object.fromEntries(execFileSync('lscpu', { encoding: 'utf8' }).split('\n')
      .map((line) => line.split(/:\s+/)).filter((kv) => kv.length === 2).map(([k, v]) => [k.trim(), v.trim()]));
    const caches = ['L1d', 'L2', 'L3'].map((c) => fields[`${c} cache`] && `${c} ${fields[`${c} cache`]}`).filter(Boolean);
    return `${fields['Model name'] ?? os.cpus()[0]?.model}${caches.length ? ` (${caches.join(', ')})` : ''}`;
  } catch {
    return null;
  }
}

// How fast this machine gives a process memory it has not touched before, against rewriting the same memory:
// GB/s of the first and the second fill of a fresh 128 MiB buffer. A model load writes tens of MB of fresh wasm
// memory, so where the first figure is low (a virtual machine whose host backs guest pages lazily: 0.3 GB/s was
// measured on one) the first result is bound by it, whatever the engine does.
export function memoryFirstTouch(bytes = 128 << 20) {
  const gbPerS = (ms) => bytes / ms / 1e6;
  let t = performance.now();
  const buffer = new Uint8Array(bytes);
  buffer.fill(1);
  const first = performance.now() - t;
  t = performance.now();
  buffer.fill(2);
  const again = performance.now() - t;
  return { first_touch_gb_s: Number(gbPerS(first).toFixed(2)), rewrite_gb_s: Number(gbPerS(again).toFixed(2)) };
}
