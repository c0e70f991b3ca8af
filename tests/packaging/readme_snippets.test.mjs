// Every JavaScript snippet in README.md and web/README.md runs as written, against the packed tarball: each ```js
// block is marked by the comment line before it, <!-- snippet: node -->, <!-- snippet: browser --> or
// <!-- snippet: skip (why) -->, and an unmarked one fails this test. The packages the READMEs' `npm install` lines
// name are installed into a throwaway app (attnlab from `npm pack`, attnlab-model-NAME from
// scripts/pack_models.mjs). Node snippets run there with node; browser snippets run as a module of a page served
// from that app under a CSP like the demo page's, with an import map for `attnlab` and the model package's
// models/ folder at the page's origin. A snippet that prints a translation must print the CLI's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { CLI, repoRoot } from '../js/fixture_model.mjs';
import { browser, copyModelsFolder, freshDir, makeApp, packAttnlab, serveStatic } from './support.mjs';

const READMES = ['README.md', 'web/README.md'];

/** The ```js blocks of a Markdown file: { file, line, kind, reason, code }; kind null when unmarked. */
export function extractSnippets(markdown, file) {
  const lines = markdown.split('\n');
  const snippets = [];
  for (let i = 0; i < lines.length; ++i) {
    const fence = /^(\s*)```js\s*$/.exec(lines[i]);
    if (!fence) continue;
    const indent = fence[1].length;
    const body = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]); ++j) body.push(lines[j].slice(indent));
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === '') --k;
    const marker = /^\s*<!-- snippet: (node|browser|skip)(?: \((.+)\))? -->\s*$/.exec(lines[k] ?? '');
    snippets.push({ file, line: i + 1, kind: marker?.[1] ?? null, reason: marker?.[2], code: body.join('\n') });
    i = j;
  }
  return snippets;
}

/** The package names of the `npm install` lines of a Markdown file's shell blocks. */
function installedPackages(markdown) {
  const names = new Set();
  for (const [, args] of markdown.matchAll(/^\s*npm install ([^#\n]+)/gm)) {
    for (const name of args.trim().split(/\s+/)) if (!name.startsWith('-')) names.add(name);
  }
  return names;
}

const manifest = JSON.parse(await readFile(join(repoRoot, 'models/manifest.json'), 'utf8'));
const cliText = (text, { beam = 1, id }) => {
  const entry = manifest.models.find((candidate) => candidate.id === id);
  const out = execFileSync(CLI, ['translate', '--model', join(repoRoot, entry.file), '--beam', String(beam), '--json', text],
                           { encoding: 'utf8' });
  return JSON.parse(out).text;
};

// What a snippet must print: the CLI's translation of each translate('literal', { beam }) whose result it logs,
// with the model it loads (a name, or a weights file named after a manifest entry).
function expectedLines(code) {
  const loaded = /loadModel\('([a-z0-9-]+)'(?:, \{[^}]*dtype: '([a-z0-9_]+)')?/.exec(code) ??
                 /\/weights\/([a-z0-9-]+)\.([a-z0-9_]+)\.gguf/.exec(code);
  if (!loaded) return [];
  const id = manifest.models.find((entry) => (entry.id === loaded[1] || entry.id === `${loaded[1]}-${loaded[2]}`) &&
                                             (!loaded[2] || entry.dtype === loaded[2]))?.id;
  if (!/console\.log\((t|\(await [a-z]+\.translate\([^)]*\)\))\.text\)/.test(code)) return [];
  const single = [...code.matchAll(/\.translate\('([^']+)'(?:, \{ beam: (\d+) \})?\)/g)]
    .map(([, text, beam]) => cliText(text, { beam: Number(beam ?? 1), id }));
  // translate(sentences) of an array literal `const sentences = ['...', ...]`: each sentence's CLI translation.
  const array = /const sentences = \[([^\]]+)\];[^]*?\.translate\(sentences(?:, \{ beam: (\d+) \})?\)/.exec(code);
  const several = array ? [...array[1].matchAll(/'([^']+)'/g)].map(([, text]) => cliText(text, { beam: Number(array[2] ?? 1), id })) : [];
  return [...single, ...several];
}

const all = [];
for (const file of READMES) all.push(...extractSnippets(await readFile(join(repoRoot, file), 'utf8'), file));

let appDir;
let chromium;

before(async () => {
  const dir = await freshDir('readme-snippets');
  const packages = new Set();
  for (const file of READMES) for (const name of installedPackages(await readFile(join(repoRoot, file), 'utf8'))) packages.add(name);
  const tarballs = [];
  for (const name of packages) {
    if (name === 'attnlab') tarballs.push(packAttnlab(dir));
    else if (name.startsWith('attnlab-model-')) {
      // q8_0 only: what the snippets load, and half the bytes to pack
      tarballs.push(execFileSync(process.execPath, [join(repoRoot, 'scripts/pack_models.mjs'), '--out', dir, '--dtype',
                                                    'q8_0', name.slice('attnlab-model-'.length)],
                                 { encoding: 'utf8' }).trim().split('\n').pop());
    } else throw new Error(`a README installs ${name}, which this test cannot provide`);
  }
  appDir = await makeApp(join(dir, 'app'), tarballs);
  const modelPackage = [...packages].find((name) => name.startsWith('attnlab-model-'));
  if (modelPackage) await copyModelsFolder(appDir, appDir, modelPackage);
});

after(async () => {
  await chromium?.close();
});

test('every js snippet in the READMEs is marked node, browser or skip (with a reason)', () => {
  assert.ok(all.length >= 4, `found only ${all.length} snippets`);
  for (const snippet of all) {
    assert.ok(snippet.kind, `${snippet.file}:${snippet.line}: a js snippet without <!-- snippet: node|browser|skip (why) -->`);
    if (snippet.kind === 'skip') assert.ok(snippet.reason, `${snippet.file}:${snippet.line}: skipped without a reason`);
  }
  assert.ok(all.some((snippet) => snippet.file === 'README.md' && snippet.kind === 'node'), 'README.md runs no snippet');
});

for (const snippet of all.filter((candidate) => candidate.kind === 'skip')) {
  test(`skipped snippet ${snippet.file}:${snippet.line}`, { skip: snippet.reason ?? 'no reason given' }, () => {});
}

for (const snippet of all.filter((candidate) => candidate.kind === 'node')) {
  test(`node snippet ${snippet.file}:${snippet.line}`, async () => {
    const file = join(appDir, `snippet-${snippet.file.replace(/\W/g, '_')}-${snippet.line}.mjs`);
    await writeFile(file, snippet.code);
    let out;
    try {
      out = execFileSync(process.execPath, [file], { cwd: appDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      assert.fail(`${snippet.file}:${snippet.line} exited ${error.status}:\n${error.stderr}`);
    }
    const printed = out.split('\n');
    for (const line of expectedLines(snippet.code)) assert.ok(printed.includes(line), `expected "${line}" in:\n${out}`);
  });
}

for (const snippet of all.filter((candidate) => candidate.kind === 'browser')) {
  test(`browser snippet ${snippet.file}:${snippet.line}`, async () => {
    const name = `snippet-${snippet.file.replace(/\W/g, '_')}-${snippet.line}.mjs`;
    await writeFile(join(appDir, name), `${snippet.code}\nwindow.snippetDone = true;\n`);
    const importMap = JSON.stringify({ imports: { attnlab: '/node_modules/attnlab/web/lib/index.mjs' } });
    const mapHash = createHash('sha256').update(importMap).digest('base64');
    const csp = `default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'sha256-${mapHash}'; connect-src 'self'; ` +
                "worker-src 'self' blob:";
    const server = await serveStatic(appDir, { headers: { 'content-security-policy': csp }, pages: {
      '/snippet.html': `<!doctype html><meta charset="utf-8"><title>snippet</title><script type="importmap">${importMap}</script>` +
                       `<script type="module" src="/${name}"></script>`,
    } });
    chromium ??= await browser();
    const context = await chromium.newContext();
    try {
      const page = await context.newPage();
      const logged = [];
      const errors = [];
      page.on('console', (message) => logged.push(message.text()));
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`${server.origin}/snippet.html`);
      await page.waitForFunction(() => window.snippetDone === true, null, { timeout: 60_000 }).catch(() => {});
      assert.deepEqual(errors, [], `${snippet.file}:${snippet.line}: ${logged.join('\n')}`);
      assert.equal(await page.evaluate(() => window.snippetDone), true, `did not finish: ${logged.join('\n')}`);
      for (const line of expectedLines(snippet.code)) assert.ok(logged.includes(line), `expected "${line}" in:\n${logged.join('\n')}`);
    } finally {
      await context.close();
      await server.close();
    }
  });
}
