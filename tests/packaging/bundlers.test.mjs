// The packed module in the bundlers developers use, each without any attnlab-specific configuration: Vite (build +
// preview, and the dev server), webpack 5 and esbuild build one small app from the installed tarball (and a model
// package), and the app translates in headless Chromium exactly as the CLI does, by URL and by model name, in a
// worker. esbuild follows no new URL(..., import.meta.url), so its app copies the engine files and points
// env.wasmPaths and env.workerUrl at them, as web/README.md tells esbuild users to.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { SENTENCES, cliTranslate, modelPath, requireModel } from '../js/fixture_model.mjs';
import { APP_HTML, APP_MAIN, MODEL_NAME, browser, copyModelsFolder, describeRun, freshDir, makeApp, packAttnlab,
         packFixtureModel, runApp, serveStatic } from './support.mjs';

const TEXT = SENTENCES[1];
let chromium;
let appDir;
let cli;

before(async () => {
  requireModel();
  cli = cliTranslate(TEXT, { beam: 4 });
  const dir = await freshDir('bundlers');
  const attnlab = packAttnlab(dir);
  const { tarball } = await packFixtureModel(dir);
  appDir = await makeApp(join(dir, 'app'), [attnlab, tarball], {
    'main.mjs': APP_MAIN,
    'index.html': APP_HTML('./main.mjs'),
  });
  // What the app serves as its own files: the weights by URL, and the model package's models/ folder, which
  // loadModel(name) finds at the page's origin by default.
  await mkdir(join(appDir, 'public'), { recursive: true });
  await copyFile(modelPath, join(appDir, 'public/translator.gguf'));
  await copyModelsFolder(appDir, join(appDir, 'public'));
  chromium = await browser();
});

after(async () => {
  await chromium?.close();
});

const query = (params) => `?${new URLSearchParams({ text: TEXT, beam: '4', ...params })}`;

function assertTranslated(result, label) {
  assert.equal(result.error, undefined, `${label}: ${describeRun(result)}`);
  assert.equal(result.text, cli.text, `${label}: text`);
  assert.deepEqual(result.targetTokens, cli.target_tokens, `${label}: tokens`);
  assert.equal(result.rows, cli.target_tokens.length, `${label}: attention rows`);
  assert.equal(result.cols, cli.source_tokens.length, `${label}: attention cols`);
  assert.equal(result.inWorker, true, `${label}: ran in a worker`);
  assert.ok(result.progress > 0, `${label}: progress reported`);
  assert.deepEqual(result.pageErrors, [], `${label}: page errors`);
}

// Both ways of naming a model, on the app at origin.
async function assertAppWorks(origin, label, extra = {}) {
  assertTranslated(await runApp(chromium, origin + query({ model: '/translator.gguf', ...extra })), `${label}, by URL`);
  assertTranslated(await runApp(chromium, origin + query({ model: MODEL_NAME, ...extra })), `${label}, by name`);
}

test('Vite: vite build + vite preview', async () => {
  const { build, preview } = await import('vite');
  await build({ root: appDir, logLevel: 'error', build: { outDir: 'vite-dist', emptyOutDir: true } });
  const server = await preview({ root: appDir, logLevel: 'error', build: { outDir: 'vite-dist' },
                                 preview: { port: 0, host: '127.0.0.1' } });
  try {
    await assertAppWorks(server.resolvedUrls.local[0].replace(/\/$/, ''), 'vite preview');
  } finally {
    await server.close();
  }
});

test('Vite: the dev server', async () => {
  const { createServer } = await import('vite');
  const server = await createServer({ root: appDir, logLevel: 'error', server: { port: 0, host: '127.0.0.1' } });
  await server.listen();
  try {
    await assertAppWorks(server.resolvedUrls.local[0].replace(/\/$/, ''), 'vite dev');
  } finally {
    await server.close();
  }
});

test('webpack 5', async () => {
  const { default: webpack } = await import('webpack');
  const outDir = join(appDir, 'webpack-dist');
  const stats = await new Promise((resolve, reject) => webpack({
    mode: 'production', context: appDir, entry: './main.mjs', output: { path: outDir, clean: true },
    performance: { hints: false },
  }, (error, result) => (error ? reject(error) : resolve(result))));
  assert.ok(!stats.hasErrors(), stats.toString({ all: false, errors: true }));
  assert.ok(!stats.hasWarnings(), stats.toString({ all: false, warnings: true }));
  await writeFile(join(outDir, 'index.html'), APP_HTML('./main.js', false));
  await cp(join(appDir, 'public'), outDir, { recursive: true });
  const server = await serveStatic(outDir);
  try {
    await assertAppWorks(server.origin, 'webpack');
  } finally {
    await server.close();
  }
});

test('esbuild', async () => {
  const esbuild = await import('esbuild');
  const outDir = join(appDir, 'esbuild-dist');
  const result = await esbuild.build({
    absWorkingDir: appDir, entryPoints: { main: './main.mjs', worker: 'attnlab/worker' }, bundle: true,
    format: 'esm', outdir: outDir, logLevel: 'silent',
  });
  assert.deepEqual(result.errors, []);
  assert.deepEqual(result.warnings.map((warning) => warning.text), []);
  await writeFile(join(outDir, 'index.html'), APP_HTML('./main.js'));
  await cp(join(appDir, 'public'), outDir, { recursive: true });
  // The engine files, reached through the package's ./dist/* export.
  await cp(join(appDir, 'node_modules/attnlab/web/dist'), join(outDir, 'engine'), { recursive: true });
  const server = await serveStatic(outDir);
  try {
    await assertAppWorks(server.origin, 'esbuild', { wasmPaths: '/engine/', workerUrl: '/worker.js' });
  } finally {
    await server.close();
  }
});
