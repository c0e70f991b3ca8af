#!/usr/bin/env node
// Recomputes `bytes` and `sha256` of every model listed in models/manifest.json (or the manifest given), so the
// page's SHA-256 check never fails because the manifest went stale. `file` is repo-relative
// (models/weights/NAME.gguf); a listed file that does not exist is an error: the manifest lists shipped models only.
//   node scripts/make_manifest.mjs [--check] [path/to/manifest.json]
//   --check: change nothing, exit 1 if any entry is stale.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const check = args.includes('--check');
const manifestPath = resolve(args.find((a) => !a.startsWith('--')) ??
                             fileURLToPath(new URL('../models/manifest.json', import.meta.url)));
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const required = ['id', 'task', 'arch', 'src', 'tgt', 'dtype', 'file'];

async function sha256Of(path) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

// The optional "selfAttention": { text, layer, head, from } of a Transformer: the sample, the 1-based encoder layer
// and head (as its card and `python -m attnlab.eval.probe` name them) and the word the Self-attention tab opens on.
function checkSelfAttention(entry) {
  const spec = entry.selfAttention;
  if (spec === undefined) return;
  const positive = (n) => Number.isInteger(n) && n >= 1;
  if (entry.arch !== 'transformer') throw new Error(`${entry.id}: selfAttention is for arch "transformer" entries`);
  if (typeof spec?.text !== 'string' || !spec.text || !positive(spec.layer) || !positive(spec.head) ||
      (spec.from !== undefined && (typeof spec.from !== 'string' || !spec.from))) {
    throw new Error(`${entry.id}: selfAttention must be { text, layer, head, from? } (layer and head 1-based integers)`);
  }
}

const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
if (!Array.isArray(manifest.models)) throw new Error(`${manifestPath}: expected { "models": [...] }`);
let stale = 0;
const ids = new Set();
for (const entry of manifest.models) {
  for (const key of required) {
    if (typeof entry[key] !== 'string' || entry[key] === '') throw new Error(`${manifestPath}: an entry lacks "${key}"`);
  }
  if (ids.has(entry.id)) throw new Error(`${manifestPath}: duplicate id ${entry.id}`);
  ids.add(entry.id);
  if (!entry.file.startsWith('models/')) throw new Error(`${entry.id}: file must be repo-relative under models/`);
  checkSelfAttention(entry);
  // The weights, and a translator's shortlist file ({ file, bytes, sha256 }) when the entry names one.
  for (const [what, item] of [[entry.id, entry], [`${entry.id} shortlist`, entry.shortlist]]) {
    if (item === undefined) continue;
    if (item !== entry && (entry.task !== 'translate' || typeof item?.file !== 'string' || !item.file.startsWith('models/'))) {
      throw new Error(`${entry.id}: shortlist must be { file } under models/, on a translate entry`);
    }
    const path = resolve(repoRoot, item.file);
    const bytes = (await stat(path)).size;  // throws for a file that does not exist
    const sha256 = await sha256Of(path);
    if (item.bytes !== bytes || item.sha256 !== sha256) {
      stale += 1;
      console.log(`make_manifest: ${what}: ${check ? 'stale' : 'updated'} (${bytes} bytes)`);
    }
    item.bytes = bytes;
    item.sha256 = sha256;
  }
}
if (check) {
  if (stale) process.exit(1);
  console.log(`make_manifest: ${manifest.models.length} entries up to date`);
} else {
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`make_manifest: wrote ${manifestPath} (${manifest.models.length} entries, ${stale} changed)`);
}
