// What the packaging tests share: the packed tarballs (attnlab itself and a model package of the fixture
// translator), throwaway apps under build/packaging/ that install them as a user would, a static file server, and
// a headless Chromium page that runs an app's translation and reports it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, cp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, sep } from 'node:path';

import { modelPath, repoRoot } from '../js/fixture_model.mjs';
import { launchChromium } from '../support/chromium.mjs';

export const BUILD_DIR = join(repoRoot, 'build/packaging');
/** The fixture translator's name in the model package the tests pack (models/manifest.json style entry). */
export const MODEL_NAME = 'fixture-en-de';
export const MODEL_PACKAGE = `attnlab-model-${MODEL_NAME}`;

const run = (command, args, cwd) => execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** A fresh, empty folder under build/packaging/ (removed first if a previous run left it). */
export async function freshDir(name) {
  const dir = join(BUILD_DIR, name);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  return dir;
}

/** `npm pack` of this checkout (ATTNLAB_PACK_ROOT: another copy of the package) into dir: the tarball's path. */
export function packAttnlab(dir) {
  const root = process.env.ATTNLAB_PACK_ROOT || repoRoot;
  const name = run('npm', ['pack', '--silent', '--pack-destination', dir], root).trim().split('\n').pop();
  return join(dir, name);
}

/**
 * The model package attnlab-model-fixture-en-de, packed by scripts/pack_models.mjs from a manifest that lists the
 * fixture translator (as a repository's models/ folder would): { tarball, sha256 }.
 */
export async function packFixtureModel(dir) {
  const root = join(dir, 'fixture-models');
  await mkdir(join(root, 'models/weights'), { recursive: true });
  const file = `models/weights/${MODEL_NAME}.gguf`;
  await copyFile(modelPath, join(root, file));
  const bytes = await readFile(modelPath);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  await writeFile(join(root, 'models/manifest.json'), JSON.stringify({ models: [
    { id: MODEL_NAME, label: 'EN→DE fixture', task: 'translate', arch: 'bahdanau', src: 'en', tgt: 'de',
      dtype: 'f32', file, bytes: bytes.length, sha256 },
  ] }));
  const out = run(process.execPath, [join(repoRoot, 'scripts/pack_models.mjs'), '--out', dir,
                                     '--manifest', join(root, 'models/manifest.json'), MODEL_NAME], repoRoot);
  return { tarball: out.trim().split('\n').pop(), sha256 };
}

/** An app folder with a package.json that installs the tarballs (offline: they have no dependencies). */
export async function makeApp(dir, tarballs, files = {}) {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--offline', '--loglevel=error', ...tarballs], dir);
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

/** Copies an installed model package's models/ folder to dir/models, as an app serving it from its origin would. */
export async function copyModelsFolder(appDir, dir, packageName = MODEL_PACKAGE) {
  await cp(join(appDir, 'node_modules', packageName, 'models'), join(dir, 'models'), { recursive: true });
}

const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
               '.json': 'application/json', '.wasm': 'application/wasm', '.gguf': 'application/octet-stream' };

/**
 * A static file server for root on 127.0.0.1 (any free port): { origin, requests, close }. headers: added to every
 * response (e.g. CORS, as a CDN sends); pages: { urlPath: html } served in place of files.
 */
export async function serveStatic(root, { headers = {}, pages = {}, host = '127.0.0.1' } = {}) {
  const requests = [];
  const server = createServer(async (request, response) => {
    const path = decodeURIComponent(new URL(request.url, 'http://x').pathname);
    requests.push(path);
    if (pages[path] !== undefined) {
      response.writeHead(200, { 'content-type': MIME['.html'], ...headers });
      return response.end(pages[path]);
    }
    const relative = normalize(path === '/' ? 'index.html' : path.slice(1));
    const file = join(root, relative);
    if (relative.startsWith('..') || relative.split(sep).includes('..') ||
        !(await stat(file).then((s) => s.isFile(), () => false))) {
      response.writeHead(404, { 'content-type': 'text/plain', ...headers });
      return response.end('not found\n');
    }
    response.writeHead(200, { 'content-type': MIME[extname(file)] ?? 'application/octet-stream', ...headers });
    createReadStream(file).pipe(response);
  });
  await new Promise((resolve) => server.listen(0, host, resolve));
  const origin = `http://${host}:${server.address().port}`;
  return {
    origin, requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

// The app every bundler builds: settings and the model come from the page's query string, so one source serves
// every case; the result (or the error) is left on window for the test to read.
export const APP_MAIN = `
import { env, loadModel } from 'attnlab';

const params = new URLSearchParams(location.search);
for (const key of ['wasmPaths', 'workerUrl', 'modelsBase']) {
  if (params.has(key)) env[key] = params.get(key);
}
window.attnlabResult = (async () => {
  const options = params.has('dtype') ? { dtype: params.get('dtype') } : {};
  let progress = 0;
  options.onProgress = ({ loaded }) => { progress = loaded; };
  const model = await loadModel(params.get('model'), options);
  const t = await model.translate(params.get('text'), { beam: Number(params.get('beam') ?? 1) });
  const result = { text: t.text, targetTokens: t.targetTokens, rows: t.attention.rows, cols: t.attention.cols,
                   inWorker: model.inWorker, progress };
  await model.dispose();
  return result;
})().catch((error) => ({ error: String(error?.message ?? error) }));
`;

export const APP_HTML = (script, module = true) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>attnlab app</title></head><body>` +
  `<script ${module ? 'type="module" ' : ''}src="${script}"></script></body></html>\n`;

/** Headless Chromium, for one test file. */
export async function browser() {
  return launchChromium();
}

/**
 * Opens url in a fresh context of chromium and waits for window.attnlabResult: the result plus what the page said
 * ({ ..., console: [text], pageErrors: [message], failed: [url] }).
 */
export async function runApp(chromium, url) {
  const context = await chromium.newContext();
  try {
    const page = await context.newPage();
    const console = [];
    const pageErrors = [];
    const failed = [];
    page.on('console', (message) => console.push(message.text()));
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('requestfailed', (request) => failed.push(request.url()));
    page.on('response', (response) => { if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`); });
    await page.goto(url);
    const result = await page.waitForFunction(() => window.attnlabResult, null, { timeout: 60_000 })
      .then(() => page.evaluate(() => window.attnlabResult));
    return { ...result, console, pageErrors, failed };
  } finally {
    await context.close();
  }
}

/** A readable account of an app run for assertion messages. */
export const describeRun = (result) => JSON.stringify(result, null, 1);
