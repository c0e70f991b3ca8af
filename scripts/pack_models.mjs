#!/usr/bin/env node
// Packs model packages: for each NAME, an npm package attnlab-model-NAME holding models/manifest.json (the NAME
// entries of the manifest: NAME itself and its NAME-<dtype> twins) and the weights they list at the same paths, so
// that its root is a models base for loadModel('NAME', { dtype }) (web/lib/models.mjs): installed next to attnlab
// in node_modules, served as a folder, or by a CDN that serves npm packages.
//   node scripts/pack_models.mjs [--out DIR] [--manifest FILE] [--dtype q8_0[,f16]] [--version V] NAME...
//   --out       where the .tgz files go (default build/model-packages); prints one tarball path a line
//   --manifest  the manifest to take entries from (default models/manifest.json; `file` relative to its ../)
//   --dtype     only these dtypes (default: every dtype the manifest has for NAME)
//   --version   the packages' version (default: attnlab's)
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

function parseArgs(argv) {
  const options = { out: join(repoRoot, 'build/model-packages'), manifest: join(repoRoot, 'models/manifest.json'),
                    dtypes: null, version: null, names: [] };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '--out') options.out = resolve(value());
    else if (arg === '--manifest') options.manifest = resolve(value());
    else if (arg === '--dtype') options.dtypes = value().split(',');
    else if (arg === '--version') options.version = value();
    else if (arg.startsWith('--')) throw new Error(`unknown option ${arg}`);
    else options.names.push(arg);
  }
  if (options.names.length === 0) throw new Error('name at least one model (an id in the manifest)');
  return options;
}

const sha256Of = (bytes) => createHash('sha256').update(bytes).digest('hex');

async function packModel(name, { manifest, manifestPath, out, dtypes, version }) {
  const family = manifest.models.filter((entry) => entry.id === name || entry.id === `${name}-${entry.dtype}`)
    .filter((entry) => !dtypes || dtypes.includes(entry.dtype));
  if (family.length === 0) throw new Error(`${manifestPath} has no model ${name}${dtypes ? ` in ${dtypes.join(', ')}` : ''}`);
  const root = resolve(dirname(manifestPath), '..');
  const packageName = `attnlab-model-${name}`;
  const stage = join(out, 'stage', packageName);
  await rm(stage, { recursive: true, force: true });
  await mkdir(join(stage, 'models'), { recursive: true });
  const entries = [];
  for (const entry of family) {
    // The weights and any shortlist the entry names.
    for (const item of [entry, entry.shortlist].filter(Boolean)) {
      const bytes = await readFile(join(root, item.file));
      // The package carries what the manifest promises, or nothing: a stale entry would fail every SHA-256 check.
      if (item.bytes !== bytes.length || item.sha256 !== sha256Of(bytes)) {
        throw new Error(`${entry.id}: ${item.file} does not match its manifest entry (run node scripts/make_manifest.mjs)`);
      }
      await mkdir(dirname(join(stage, item.file)), { recursive: true });
      await copyFile(join(root, item.file), join(stage, item.file));
    }
    entries.push(entry);
  }
  await writeFile(join(stage, 'models/manifest.json'), `${JSON.stringify({ models: entries }, null, 2)}\n`);
  const labels = entries.map((entry) => `${entry.dtype}: ${entry.file}`).join('\n- ');
  await writeFile(join(stage, 'README.md'), `# ${packageName}\n\nThe attnlab model \`${name}\` (${entries[0].task}, ` +
    `${entries[0].arch}, ${entries[0].src} → ${entries[0].tgt}):\n\n- ${labels}\n\n` +
    "```js\nimport { loadModel } from 'attnlab';\n" +
    `const model = await loadModel('${name}', { dtype: '${entries[0].dtype}' });\n` + '```\n\n' +
    'Installed next to `attnlab`, Node finds it by name; in a browser point `env.modelsBase` at this package\'s ' +
    'folder as served (see attnlab\'s web/README.md, "Models by name").\n');
  const card = join(root, 'models', `${name}.md`);
  if (existsSync(card)) await copyFile(card, join(stage, 'MODEL_CARD.md'));
  await writeFile(join(stage, 'package.json'), `${JSON.stringify({
    name: packageName,
    version,
    description: `attnlab model ${name}: ${entries.map((entry) => entry.label ?? entry.id).join(', ')}`,
    license: 'MIT',
    files: ['models/', 'README.md', ...(existsSync(card) ? ['MODEL_CARD.md'] : [])],
    attnlab: { manifest: 'models/manifest.json' },
  }, null, 2)}\n`);
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', out, stage],
                               { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop();
  return join(out, tarball);
}

try {
  const options = parseArgs(process.argv.slice(2));
  const manifest = JSON.parse(await readFile(options.manifest, 'utf8'));
  if (!Array.isArray(manifest.models)) throw new Error(`${options.manifest}: expected { "models": [...] }`);
  const version = options.version ?? JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')).version;
  await mkdir(options.out, { recursive: true });
  for (const name of options.names) {
    console.log(await packModel(name, { ...options, manifest, manifestPath: options.manifest, version }));
  }
} catch (error) {
  console.error(`pack_models: ${error.message}`);
  process.exit(1);
}
