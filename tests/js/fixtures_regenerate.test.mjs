// The committed fixtures are what their generators make: the cheap generators of python/attnlab/golden (no
// training data needed, seconds each) rerun into a temporary folder, and every file they write is compared with
// tests/fixtures. Byte-identical is expected on the machine that made them; elsewhere PyTorch's float sums may
// be ordered differently, so a file that is not byte-identical must still have the same metadata, the same
// tensors (names, shapes, types) and values within the generator's own tolerance, and the report says which.
// The training-data generators (rnn, transformer) and the shipped-model goldens are left out: they take minutes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { readGguf } from './gguf_reader.mjs';
import { repoRoot } from './fixture_model.mjs';

// tolerance: |regenerated - committed| <= atol + rtol·|committed| for every tensor value.
const GENERATORS = [
  // numpy only: the same bytes on every machine.
  { module: 'attnlab.golden.gguf_files', out: 'gguf', args: (dir) => ['--out', dir], tolerance: null },
  // PyTorch layers on fixed inputs: a float32 ulp or two of reordering (measured: 1e-6 at most).
  { module: 'attnlab.golden.layers', out: 'layers', args: (dir) => ['--out', dir], tolerance: { atol: 1e-5, rtol: 1e-4 } },
  // A few hundred seeded SGD steps amplify that reordering in the trained weights (measured across two CPUs:
  // 2e-4), while the tokens each fixture stores (metadata) stay exact.
  { module: 'attnlab.golden.caption', out: 'caption', args: (dir) => ['--out', join(dir, 'decoder.gguf')],
    tolerance: { atol: 2e-3, rtol: 2e-2 } },
];

const scratch = mkdtempSync(join(tmpdir(), 'attnlab-fixtures-'));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

// '' when the two GGUF files agree within tolerance; otherwise what differs.
function compareGguf(committedBytes, regeneratedBytes, { atol, rtol }) {
  const committed = readGguf(committedBytes), regenerated = readGguf(regeneratedBytes);
  const problems = [];
  const keys = (file) => Object.keys(file.metadata).join('\n');
  if (keys(committed) !== keys(regenerated)) problems.push('the metadata keys differ');
  for (const [key, entry] of Object.entries(committed.metadata)) {
    if (JSON.stringify(entry) !== JSON.stringify(regenerated.metadata[key])) problems.push(`metadata ${key} differs`);
  }
  const table = (file) => file.tensors.map((t) => `${t.name} ${t.type} [${t.dims}]`).join('\n');
  if (table(committed) !== table(regenerated)) return [...problems, 'the tensor table differs'].join('; ');
  let worst = { ratio: 0 };
  committed.tensors.forEach((tensor, i) => {
    const other = regenerated.tensors[i];
    if (!tensor.values) {
      if (Buffer.compare(Buffer.from(tensor.raw ?? []), Buffer.from(other.raw ?? [])) !== 0) problems.push(`${tensor.name}: bytes differ`);
      return;
    }
    for (let k = 0; k < tensor.values.length; ++k) {
      const diff = Math.abs(tensor.values[k] - other.values[k]);
      const ratio = diff / (atol + rtol * Math.abs(tensor.values[k]));
      if (!(ratio <= worst.ratio)) worst = { ratio: Number.isNaN(ratio) ? Infinity : ratio, name: tensor.name, k, diff };
    }
  });
  if (worst.ratio > 1) {
    problems.push(`${worst.name}[${worst.k}] differs by ${worst.diff} (${worst.ratio.toFixed(1)}× the tolerance)`);
  }
  return problems.join('; ');
}

for (const { module, out, args, tolerance } of GENERATORS) {
  test(`${module} regenerates tests/fixtures/${out}`, { timeout: 300_000 }, (t) => {
    const dir = join(scratch, out);
    const run = spawnSync('/usr/bin/python3', ['-m', module, ...args(dir)], {
      cwd: repoRoot, encoding: 'utf8', timeout: 240_000,
      env: { ...process.env, PYTHONPATH: join(repoRoot, 'python'), OMP_NUM_THREADS: '1' },
    });
    assert.equal(run.status, 0, `${module} failed:\n${run.stderr}`);
    const written = readdirSync(dir).sort();
    assert.ok(written.length > 0, `${module} wrote nothing`);
    const committedDir = join(repoRoot, 'tests/fixtures', out);
    const report = [];
    for (const name of written) {
      const regenerated = readFileSync(join(dir, name));
      let committed;
      try {
        committed = readFileSync(join(committedDir, name));
      } catch {
        assert.fail(`${module} writes ${name}, which tests/fixtures/${out} does not have`);
      }
      if (Buffer.compare(committed, regenerated) === 0) {
        report.push(`${name}: bytes equal`);
        continue;
      }
      assert.ok(tolerance && name.endsWith('.gguf'), `${name}: not byte-identical to the committed file, and it has no float tolerance`);
      const problems = compareGguf(new Uint8Array(committed), new Uint8Array(regenerated), tolerance);
      assert.equal(problems, '', `${out}/${name} is not what ${module} makes: ${problems}`);
      report.push(`${name}: within tolerance (atol ${tolerance.atol}, rtol ${tolerance.rtol}), not byte-identical`);
    }
    for (const line of report) t.diagnostic(line);
  });
}
