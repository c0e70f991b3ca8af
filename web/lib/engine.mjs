// Loads the wasm engine once per JS realm (a page, a worker or Node): the threaded build (web/dist/attnlab-mt.mjs +
// .wasm + .worker.js, Emscripten pthreads) where the realm is cross-origin isolated and has SharedArrayBuffer (a
// browser page served with COOP/COEP, as `npm start` does, and its workers), else the single-thread build
// (attnlab.mjs + attnlab.wasm). Node always runs the single-thread build: Emscripten 3.1.6's thread worker script
// calls require(), which a file under this package's "type": "module" does not have (the native CLI and library are
// the threaded engines there).
// The glue, the .wasm and the worker are referenced by literals (import('../dist/attnlab.mjs'),
// new URL('../dist/attnlab.wasm', import.meta.url), new Worker(new URL('./worker.mjs', import.meta.url)), and the
// same for attnlab-mt.*) so that Vite, webpack and Rollup emit them with the bundle; env.wasmPaths and
// env.workerUrl relocate them where a bundler does not follow such references (esbuild) or the files are served
// elsewhere (a CDN).
// In Node the .wasm is read from disk and handed over as bytes, since Emscripten 3.1.6's web loader cannot fetch
// file paths; in a browser it is fetched through the Cache API, so a second visit needs no network.

import { AttnlabError, ERROR_CODES, toAttnlabError } from './errors.mjs';

/**
 * Where the engine files are. Set before the first loadModel()/loadEngine() (later changes apply to engines and
 * workers started after them: a model loaded in a worker, the default in browsers, starts its own engine).
 *   wasmPaths:  a folder URL (string or URL, relative to the page) holding attnlab.mjs and attnlab.wasm, or
 *               { mjs, wasm } with each file's URL; unset: the copies next to this module (or the bundler's).
 *   workerUrl:  the module worker script (web/lib/worker.mjs, or attnlab/worker built by a bundler);
 *               unset: ./worker.mjs next to this module.
 *   modelsBase: where loadModel('name') finds models/manifest.json and the weights it lists (models.mjs).
 *   threads:    'auto' (unset) and 1: the single-thread build; 2..16: the threaded build with that many threads
 *               where it can run (a cross-origin isolated realm), else the single-thread build. engineInfo() says which runs
 *               ({ build: 'threaded' | 'single-thread', threads, maxThreads }). Read when an engine starts: a realm
 *               whose engine is running refuses (BAD_OPTIONS) a value that would pick another build or thread count.
 */
export const env = { wasmPaths: undefined, workerUrl: undefined, modelsBase: undefined, threads: undefined };

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

// The { mjs, wasm } form's keys for each file; the threaded build's are optional (left out: that build is not used).
const pathKeys = {
  'attnlab.mjs': 'mjs', 'attnlab.wasm': 'wasm', 'attnlab-mt.mjs': 'threadedMjs', 'attnlab-mt.wasm': 'threadedWasm',
};

/**
 * The URL env.wasmPaths gives `file` ('attnlab.mjs', 'attnlab.wasm', 'attnlab-mt.mjs' or 'attnlab-mt.wasm'), or
 * null when it is unset (or, in the { mjs, wasm } form, names no URL for that file).
 */
export function relocatedEngineFile(file, paths = env.wasmPaths) {
  if (paths === undefined || paths === null || paths === '') return null;
  if (typeof paths === 'string' || paths instanceof URL) return new URL(file, asFolder(new URL(String(paths), baseHref()).href));
  if (typeof paths === 'object') {
    const own = paths[pathKeys[file]];
    return own ? new URL(String(own), baseHref()) : null;
  }
  throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, 'attnlab: env.wasmPaths must be a folder URL or { mjs, wasm, threadedMjs, threadedWasm }');
}

/** env.wasmPaths with every URL made absolute, for a worker (whose relative URLs would resolve elsewhere). */
export function absoluteWasmPaths() {
  const urls = Object.fromEntries(Object.entries(pathKeys).map(([file, key]) => [key, relocatedEngineFile(file)?.href]));
  if (!Object.values(urls).some(Boolean)) return undefined;
  if (typeof env.wasmPaths === 'object' && !(env.wasmPaths instanceof URL) && !urls.threadedMjs) {
    urls.threadedMjs = null;  // the { mjs, wasm } form without the threaded files: the worker keeps to one thread too
  }
  return urls;  // a file left out (undefined) stays the one next to the worker's engine.mjs
}

const kMaxThreads = 16;

/**
 * Which build this realm loads: { threaded, threads } (threads: how many the threaded build starts with, 1 for the
 * single-thread build). See env.threads.
 */
export function engineBuild(threads = env.threads) {
  const single = { threaded: false, threads: 1 };
  if (threads !== undefined && threads !== 'auto' && !(Number.isInteger(threads) && threads >= 1 && threads <= kMaxThreads)) {
    throw new AttnlabError(ERROR_CODES.BAD_OPTIONS,
                           `attnlab: env.threads must be 'auto' or a whole number from 1 to ${kMaxThreads}, got ${threads}`);
  }
  const isolated = !isNode && globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function';
  const relocatedWithout = typeof env.wasmPaths === 'object' && env.wasmPaths !== null && !(env.wasmPaths instanceof URL) &&
    !env.wasmPaths.threadedMjs;
  // 'auto' stays on the single-thread build until the threaded one measures faster than one thread on a busy
  // 2-core machine.
  if (!isolated || relocatedWithout || !Number.isInteger(threads) || threads < 2 || !sameOriginThreadWorker()) return single;
  return { threaded: true, threads };
}

// A worker script must come from the realm's own origin: the threaded glue starts its thread workers from the
// folder it was loaded from, so a glue on another origin (a CDN) runs single-threaded.
function sameOriginThreadWorker() {
  const glue = relocatedEngineFile('attnlab-mt.mjs') ?? new URL(import.meta.url);
  const origin = globalThis.location?.origin;
  return !origin || origin === 'null' || glue.origin === origin;
}

function fileOf(build, extension) {
  return `${build.threaded ? 'attnlab-mt' : 'attnlab'}.${extension}`;
}

/** The .wasm's URL: env.wasmPaths, or the copy next to this module (which a bundler emits as an asset). */
export function wasmUrl(build = engineBuild()) {
  const relocated = relocatedEngineFile(fileOf(build, 'wasm'));
  if (relocated) return relocated;
  return build.threaded ? new URL('../dist/attnlab-mt.wasm', import.meta.url) : new URL('../dist/attnlab.wasm', import.meta.url);
}

async function importGlue(build) {
  const relocated = relocatedEngineFile(fileOf(build, 'mjs'));
  if (relocated) return import(/* webpackIgnore: true */ /* @vite-ignore */ relocated.href);
  if (!build.threaded) return import('../dist/attnlab.mjs');
  // Bundlers see the threaded glue only as an asset URL: bundled as a module, its thread script's require() and
  // importScripts() of expressions make webpack warn; it runs where that script is served beside it.
  return import(/* webpackIgnore: true */ /* @vite-ignore */ new URL('../dist/attnlab-mt.mjs', import.meta.url).href);
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
let engineStartedAs = null;  // the engineBuild() enginePromise was started for

// The threaded module waits for its thread workers to load; one that cannot (its script missing, refused by a CSP,
// another origin) is reported only through printErr, and the module would never resolve: that, or a synchronous
// throw, falls back to the single-thread build.
async function instantiateThreaded(build, wasmBinary) {
  const { default: createAttnlabModule } = await importGlue(build);
  return new Promise((resolve, reject) => {
    const printErr = (text) => {
      if (/worker sent an error|Pthread .* sent an error/.test(String(text))) reject(new Error(String(text)));
      else console.error(text);
    };
    Promise.resolve()
      .then(() => createAttnlabModule({ wasmBinary, attnlabPoolSize: build.threads - 1, printErr }))
      .then((engine) => {
        engine.setThreads(build.threads);
        resolve(engine);
      }, reject);
  });
}

// options.wasmBinary: the .wasm bytes of the build options.threaded names (left out: the build engineBuild()
// picks), used only for that build; a .wasm of the other build would fail to link.
async function instantiate(build, options = {}) {
  const bytesFor = (candidate) => (options.wasmBinary && (options.threaded ?? build.threaded) === candidate.threaded
    ? options.wasmBinary : undefined);
  if (build.threaded) {
    try {
      return await instantiateThreaded(build, bytesFor(build) ?? await readWasm(wasmUrl(build)));
    } catch (error) {
      console.info(`attnlab: the threaded engine did not start (${error?.message ?? error}); running the single-thread build`);
    }
  }
  const single = { threaded: false, threads: 1 };
  if (engineStartedAs === build) engineStartedAs = single;  // a fallback: later checks compare against what runs
  const { default: createAttnlabModule } = await importGlue(single);
  return createAttnlabModule({ wasmBinary: bytesFor(single) ?? await readWasm(wasmUrl(single)) });
}

const describeBuild = ({ threaded, threads }) =>
  (threaded ? `the threaded build on ${threads} threads` : 'the single-thread build');

/**
 * The engine module (a singleton per realm). Rejects with LOAD_FAILED if the wasm cannot be loaded, and with
 * BAD_OPTIONS when env.threads now picks another build or thread count than the engine this realm started.
 */
export function loadEngine(options) {
  let build;
  try {
    build = engineBuild();
  } catch (error) {
    return Promise.reject(error);
  }
  if (!enginePromise) {
    engineStartedAs = build;
    enginePromise = instantiate(build, options).catch((error) => {
      enginePromise = null;
      // Coded here, since decodeAudio() and a worker's load reach this without index.mjs's loadError: a bad
      // env.wasmPaths keeps BAD_OPTIONS, anything else (a missing or unreadable file) is LOAD_FAILED.
      const code = error instanceof AttnlabError ? error.code : ERROR_CODES.LOAD_FAILED;
      throw new AttnlabError(code, `attnlab: could not load the wasm engine: ${String(error?.message ?? error).replace(/^attnlab: /, '')}`,
                             { cause: error });
    });
  } else if (build.threaded !== engineStartedAs.threaded || build.threads !== engineStartedAs.threads) {
    return Promise.reject(new AttnlabError(ERROR_CODES.BAD_OPTIONS,
      `attnlab: env.threads is now ${env.threads}, which picks ${describeBuild(build)}, but this realm's engine ` +
      `was started for ${describeBuild(engineStartedAs)}: one engine runs per realm, so set env.threads before ` +
      'the first loadModel() or engineInfo() here (a model loaded in a worker starts an engine of its own)'));
  }
  return enginePromise;
}

/** Runs fn(engine) and turns any engine exception into an AttnlabError with the engine's message and code. */
export async function callEngine(fn) {
  const engine = await loadEngine();
  try {
    return fn(engine);
  } catch (error) {
    throw error instanceof Error ? toAttnlabError(error) : new AttnlabError(ERROR_CODES.INTERNAL, describeEngineError(engine, error));
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
