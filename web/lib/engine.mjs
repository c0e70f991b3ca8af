// Loads the wasm engine (web/dist/attnlab.mjs + attnlab.wasm) once per JS realm: a page, a worker or Node.
// The glue, the .wasm and the worker are referenced by literals (import('../dist/attnlab.mjs'),
// new URL('../dist/attnlab.wasm', import.meta.url), new Worker(new URL('./worker.mjs', import.meta.url))) so that
// Vite, webpack and Rollup emit them with the bundle; env.wasmPaths and env.workerUrl relocate them where a bundler
// does not follow such references (esbuild) or the files are served elsewhere (a CDN).
// In Node the .wasm is read from disk and handed over as bytes, since Emscripten 3.1.6's web loader cannot fetch
// file paths; in a browser it is fetched through the Cache API, so a second visit needs no network.

/**
 * Where the engine files are. Set before the first loadModel()/loadEngine() (later changes apply to engines and
 * workers started after them).
 *   wasmPaths:  a folder URL (string or URL, relative to the page) holding attnlab.mjs and attnlab.wasm, or
 *               { mjs, wasm } with each file's URL; unset: the copies next to this module (or the bundler's).
 *   workerUrl:  the module worker script (web/lib/worker.mjs, or attnlab/worker built by a bundler);
 *               unset: ./worker.mjs next to this module.
 *   modelsBase: where loadModel('name') finds models/manifest.json and the weights it lists (models.mjs).
 */
export const env = { wasmPaths: undefined, workerUrl: undefined, modelsBase: undefined };

export const isNode = typeof process === 'object' && typeof process.versions === 'object' && !!process.versions.node;

/**
 * A Node built-in module (`name` without the node: prefix). The specifier is built at run time and marked for
 * webpack and Vite to leave alone, so no browser bundle ever tries to resolve a node: module.
 */
export function importNodeBuiltin(name) {
  const specifier = `node:${name}`;
  return import(/* webpackIgnore: true */ /* @vite-ignore */ specifier);
}

// A relative folder is resolved against the page (or the working directory in Node), as onnxruntime-web does.
function baseHref() {
  if (globalThis.location?.href) return globalThis.location.href;
  if (isNode) return `file://${process.cwd().replace(/\/?$/, '/')}`;
  return undefined;
}

function asFolder(href) {
  return href.endsWith('/') ? href : `${href}/`;
}

/** The URL env.wasmPaths gives `file` ('attnlab.mjs' or 'attnlab.wasm'), or null when it is unset. */
export function relocatedEngineFile(file, paths = env.wasmPaths) {
  if (paths === undefined || paths === null || paths === '') return null;
  if (typeof paths === 'string' || paths instanceof URL) return new URL(file, asFolder(new URL(String(paths), baseHref()).href));
  if (typeof paths === 'object') {
    const own = paths[file.endsWith('.wasm') ? 'wasm' : 'mjs'];
    return own ? new URL(String(own), baseHref()) : null;
  }
  throw new Error('attnlab: env.wasmPaths must be a folder URL or { mjs, wasm }');
}

/** env.wasmPaths with every URL made absolute, for a worker (whose relative URLs would resolve elsewhere). */
export function absoluteWasmPaths() {
  const mjs = relocatedEngineFile('attnlab.mjs');
  const wasm = relocatedEngineFile('attnlab.wasm');
  if (!mjs && !wasm) return undefined;
  return { mjs: mjs?.href, wasm: wasm?.href };  // a file left out stays the one next to the worker's engine.mjs
}

/** The .wasm's URL: env.wasmPaths, or the copy next to this module (which a bundler emits as an asset). */
export function wasmUrl() {
  return relocatedEngineFile('attnlab.wasm') ?? new URL('../dist/attnlab.wasm', import.meta.url);
}

async function importGlue() {
  const relocated = relocatedEngineFile('attnlab.mjs');
  if (relocated) return import(/* webpackIgnore: true */ /* @vite-ignore */ relocated.href);
  return import('../dist/attnlab.mjs');
}

/** The .wasm bytes from a file: URL (Node) or through the cached downloader. */
export async function readWasm(url = wasmUrl()) {
  if (isNode && url.protocol === 'file:') {
    const { readFile } = await importNodeBuiltin('fs/promises');
    return readFile(url);
  }
  const { download } = await import('./download.mjs');
  return (await download(url)).bytes;
}

let enginePromise = null;

async function instantiate(options = {}) {
  const { default: createAttnlabModule } = await importGlue();
  const wasmBinary = options.wasmBinary ?? await readWasm();
  return createAttnlabModule({ wasmBinary });
}

/** The engine module (a singleton per realm). Rejects with a message if the wasm cannot be loaded. */
export function loadEngine(options) {
  if (!enginePromise) {
    enginePromise = instantiate(options).catch((error) => {
      enginePromise = null;
      throw new Error(`attnlab: could not load the wasm engine: ${error?.message ?? error}`);
    });
  }
  return enginePromise;
}

/** Runs fn(engine) and turns any engine exception into an Error with the engine's message. */
export async function callEngine(fn) {
  const engine = await loadEngine();
  try {
    return fn(engine);
  } catch (error) {
    throw new Error(describeEngineError(engine, error));
  }
}

function describeEngineError(engine, error) {
  if (error instanceof Error) return error.message;
  // With -fwasm-exceptions a C++ exception reaches JS as a WebAssembly.Exception; the bindings catch
  // attnlab::Error and rethrow it as a JS Error, so anything else here is unexpected.
  return `attnlab: engine error (${String(error)})`;
}

let noWorkerNoted = false;

function noWorker(why) {
  if (!noWorkerNoted) console.info(`attnlab: the engine runs on this thread, without a worker: ${why}`);
  noWorkerNoted = true;
  return null;
}

/**
 * A module Web Worker running worker.mjs (env.workerUrl when set), or null where no worker can run it (a console
 * note says why, once). A module imported from another origin (a CDN) cannot be a worker script itself: a
 * same-origin blob: worker imports it instead (the CDN serves it with CORS, as it must for the import itself), and
 * where that is refused too (a CSP without blob: in worker-src, which Chromium reports only asynchronously) the
 * engine runs on this thread.
 */
export async function startEngineWorker() {
  let url;
  try {
    if (env.workerUrl) {
      url = new URL(String(env.workerUrl), baseHref());
      return new Worker(url, { type: 'module', name: 'attnlab-engine' });
    }
    return new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module', name: 'attnlab-engine' });
  } catch (error) {
    if (error?.name !== 'SecurityError') throw error;
  }
  // Only unbundled code gets here (a bundler serves its worker chunk from the page's origin), so import.meta.url
  // is this file's real URL; spelled apart from new URL('./worker.mjs', import.meta.url) so no bundler emits
  // worker.mjs a second time as an asset.
  const moduleUrl = import.meta.url;
  url ??= new URL('./worker.mjs', moduleUrl);
  let worker;
  let blobUrl;
  try {
    // The ready message follows the import, so it comes only once the real worker is listening.
    const source = `import ${JSON.stringify(url.href)};\nself.postMessage({ attnlabWorkerReady: true });\n`;
    blobUrl = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
    worker = new Worker(blobUrl, { type: 'module', name: 'attnlab-engine' });
  } catch (error) {
    if (blobUrl) URL.revokeObjectURL(blobUrl);
    return noWorker(`${url.href} is on another origin and a blob: worker was refused (${error?.message ?? error})`);
  }
  const started = await new Promise((resolve) => {
    const settle = (ok) => {
      worker.removeEventListener('message', onMessage);
      worker.removeEventListener('error', onError);
      URL.revokeObjectURL(blobUrl);
      resolve(ok);
    };
    const onMessage = (event) => { if (event.data?.attnlabWorkerReady) settle(true); };
    const onError = (event) => {
      event.preventDefault?.();
      settle(false);
    };
    worker.addEventListener('message', onMessage);
    worker.addEventListener('error', onError);
  });
  if (started) return worker;
  worker.terminate();
  return noWorker(`${url.href} is on another origin and a blob: worker importing it did not start (see the console)`);
}
