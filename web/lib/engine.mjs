// Loads the wasm engine (web/dist/attnlab.mjs + attnlab.wasm) once per JS realm: a page, a worker or Node.
// In Node the .wasm is read from disk and handed over as bytes, since Emscripten 3.1.6's web loader cannot
// fetch file paths; in a browser it is fetched next to attnlab.mjs (same origin) through the Cache API.

const distUrl = new URL('../dist/', import.meta.url);
let enginePromise = null;

const isNode = typeof process === 'object' && typeof process.versions === 'object' && !!process.versions.node;

async function instantiate(options = {}) {
  const { default: createAttnlabModule } = await import(new URL('attnlab.mjs', distUrl).href);
  const moduleArgs = {};
  if (options.wasmBinary) {
    moduleArgs.wasmBinary = options.wasmBinary;
  } else if (isNode) {
    const { readFile } = await import('node:fs/promises');
    moduleArgs.wasmBinary = await readFile(new URL('attnlab.wasm', distUrl));
  } else {
    // Through the cached downloader (Cache API), so a second visit loads the engine offline.
    const { download } = await import('./download.mjs');
    moduleArgs.wasmBinary = (await download(new URL('attnlab.wasm', distUrl))).bytes;
  }
  return createAttnlabModule(moduleArgs);
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
