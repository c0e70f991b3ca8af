// The packed tarball as a user installs it: what it holds (LICENSE, both READMEs, the engine files, the types),
// what its exports let a user import (attnlab, attnlab/worker, attnlab/dist/*), that no node: module is imported
// where a browser bundle would follow it, and models by name in Node: the model package attnlab-model-NAME
// installed next to attnlab is found by name, its SHA-256 is checked, env.modelsBase points at a local folder, and
// env.wasmPaths relocates the engine files.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { SENTENCES, cliTranslate, repoRoot, requireModel } from '../js/fixture_model.mjs';
import { MODEL_NAME, MODEL_PACKAGE, freshDir, makeApp, packAttnlab, packFixtureModel } from './support.mjs';

let dir;
let attnlab;
let model;
let appDir;

before(async () => {
  requireModel();
  dir = await freshDir('package');
  attnlab = packAttnlab(dir);
  model = await packFixtureModel(dir);
  appDir = await makeApp(join(dir, 'app'), [attnlab, model.tarball]);
});

// Runs an ES module in the app folder; resolves to its stdout (throws with its stderr on a non-zero exit).
async function runInApp(source, args = []) {
  const file = join(appDir, `script-${Math.random().toString(36).slice(2)}.mjs`);
  await writeFile(file, source);
  try {
    return execFileSync(process.execPath, [file, ...args], { cwd: appDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    throw new Error(`${source}\nexited ${error.status}: ${error.stderr}`);
  }
}

test('the tarball holds the licence, both READMEs, the types and the engine files, and nothing else', () => {
  const listing = execFileSync('tar', ['-tzf', attnlab], { encoding: 'utf8' }).trim().split('\n').sort();
  for (const file of ['LICENSE', 'README.md', 'package.json', 'web/README.md', 'web/lib/index.mjs', 'web/lib/index.d.ts',
                      'web/lib/worker.mjs', 'web/lib/engine.mjs', 'web/lib/models.mjs', 'web/dist/attnlab.mjs',
                      'web/dist/attnlab.wasm', 'web/dist/attnlab-mt.mjs', 'web/dist/attnlab-mt.wasm',
                      'web/dist/attnlab-mt.worker.js']) {
    assert.ok(listing.includes(`package/${file}`), `the tarball lacks ${file}: ${listing.join(', ')}`);
  }
  assert.deepEqual(listing.filter((path) => !/^package\/(LICENSE|README\.md|package\.json|web\/README\.md|web\/lib\/[^/]+\.(mjs|d\.ts)|web\/dist\/attnlab(-mt)?\.(mjs|wasm)|web\/dist\/attnlab-mt\.worker\.js)$/.test(path)), []);
});

test('LICENSE is the MIT licence package.json names', async () => {
  const license = await readFile(join(appDir, 'node_modules/attnlab/LICENSE'), 'utf8');
  const pkg = JSON.parse(await readFile(join(appDir, 'node_modules/attnlab/package.json'), 'utf8'));
  assert.equal(pkg.license, 'MIT');
  assert.match(license, /^MIT License\n\nCopyright \(c\) \d{4} attnlab contributors\n/);
  assert.match(license, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
});

test('exports: attnlab, attnlab/worker and the engine files under attnlab/dist/*', async () => {
  const out = JSON.parse(await runInApp(`
    console.log(JSON.stringify(['attnlab', 'attnlab/worker', 'attnlab/dist/attnlab.wasm', 'attnlab/dist/attnlab.mjs',
                                'attnlab/package.json'].map((name) => import.meta.resolve(name))));
  `));
  const root = `file://${join(appDir, 'node_modules/attnlab')}`;
  assert.deepEqual(out, ['web/lib/index.mjs', 'web/lib/worker.mjs', 'web/dist/attnlab.wasm', 'web/dist/attnlab.mjs',
                         'package.json'].map((path) => `${root}/${path}`));
});

test('a browser bundle of attnlab and attnlab/worker reaches no node: module', async () => {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    absWorkingDir: appDir, entryPoints: ['attnlab', 'attnlab/worker'], bundle: true, format: 'esm', platform: 'browser',
    outdir: join(dir, 'browser-bundle'), metafile: true, logLevel: 'silent',
  });
  assert.deepEqual(result.errors, []);
  const inputs = Object.entries(result.metafile.inputs);
  assert.ok(inputs.some(([path]) => path.endsWith('web/dist/attnlab.mjs')), 'the bundle holds the engine glue');
  for (const [path, { imports }] of inputs) {
    const nodeImports = imports.filter((entry) => /^node:/.test(entry.path) || entry.external);
    assert.deepEqual(nodeImports, [], `${path} imports a node: module`);
    const source = await readFile(join(appDir, path), 'utf8');
    assert.doesNotMatch(source, /(from\s*|import\s*\(\s*|import\s+)['"`]node:/, `${path} imports a node: module directly`);
  }
});

test('Node: loadModel(name) finds the installed model package, checks its SHA-256 and translates like the CLI', async () => {
  const text = SENTENCES[1];
  const cli = cliTranslate(text, { beam: 4 });
  const out = JSON.parse(await runInApp(`
    import { loadModel } from 'attnlab';
    let total = 0;
    const model = await loadModel('${MODEL_NAME}', { onProgress: (p) => { total = p.total; } });
    const t = await model.translate(${JSON.stringify(text)}, { beam: 4 });
    const twin = await loadModel('${MODEL_NAME}', { dtype: 'f32' });
    const again = await twin.translate(${JSON.stringify(text)}, { beam: 4 });
    const refused = await loadModel('${MODEL_NAME}', { dtype: 'q4' }).then(() => 'loaded', (error) => error.message);
    const unknown = await loadModel('no-such-model').then(() => 'loaded', (error) => error.message);
    console.log(JSON.stringify({ text: t.text, tokens: t.targetTokens, again: again.text, total, refused, unknown }));
  `));
  assert.equal(out.text, cli.text);
  assert.deepEqual(out.tokens, cli.target_tokens);
  assert.equal(out.again, cli.text);
  assert.equal(out.total, (await readFile(join(appDir, 'node_modules', MODEL_PACKAGE, 'models/weights', `${MODEL_NAME}.gguf`))).length);
  assert.match(out.refused, /^attnlab: the model "fixture-en-de" has no dtype q4 in file:\/\/.*\/models\/manifest\.json \(it has f32\)$/);
  assert.match(out.unknown, /^attnlab: the model "no-such-model" was not found: install attnlab-model-no-such-model or set env\.modelsBase/);
});

test('Node: env.modelsBase names a local folder; a weights file that does not match its manifest SHA-256 is refused', async () => {
  const folder = join(dir, 'served-models');
  await cp(join(appDir, 'node_modules', MODEL_PACKAGE), folder, { recursive: true });
  const weights = join(folder, 'models/weights', `${MODEL_NAME}.gguf`);
  const good = await readFile(weights);
  const script = `
    import { env, loadModel } from 'attnlab';
    env.modelsBase = process.argv[2];
    const result = await loadModel('${MODEL_NAME}').then(async (m) => (await m.translate('A dog runs.')).text,
                                                       (error) => 'error: ' + error.message);
    console.log(JSON.stringify(result));
  `;
  assert.equal(JSON.parse(await runInApp(script, [folder])), cliTranslate('A dog runs.').text);
  const bad = Buffer.from(good);
  bad[bad.length - 1] ^= 1;
  await writeFile(weights, bad);
  assert.match(JSON.parse(await runInApp(script, [folder])),
               new RegExp(`^error: attnlab: SHA-256 mismatch for file://.*${MODEL_NAME}\\.gguf: expected ${model.sha256}, got [0-9a-f]{64}$`));
});

test('Node: env.wasmPaths relocates the engine files; a folder without them is a clear error', async () => {
  const engineDir = join(dir, 'engine-copy');
  await cp(join(appDir, 'node_modules/attnlab/web/dist'), engineDir, { recursive: true });
  const script = `
    import { env, engineInfo } from 'attnlab';
    env.wasmPaths = process.argv[2];
    console.log(JSON.stringify(await engineInfo().then((info) => info.version, (error) => 'error: ' + error.message)));
  `;
  const version = JSON.parse(await runInApp(script, [engineDir]));
  assert.doesNotMatch(version, /^error/);
  assert.match(JSON.parse(await runInApp(script, [join(dir, 'no-engine-here')])),
               /^error: attnlab: could not load the wasm engine: .*no-engine-here\/attnlab\.mjs/);
});
