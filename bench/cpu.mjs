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
