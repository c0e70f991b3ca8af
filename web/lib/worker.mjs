// The engine inside a module Web Worker: one model per worker. Messages in: { id, method, args }, methods
// "load" { bytes, shortlist, wasmBinary, wasmThreaded, wasmPaths, threads } (-> { info, limits }), "translate" { text (or an
// array of texts), options }, "caption" { image: ImageBitmap | { data, width, height }, options }, "transcribe"
// { audio, options }, "dispose", and the diagnostics "memoryStats" {} (-> { wasmBytes, mallocBytes }, for
// scripts/soak.mjs) and "engineInfo" {} (-> the worker engine's engineInfo(): which build it started). Messages out: { id,
// result } or { id, error: { name, code, message } } (an AttnlabError, rebuilt by errors.mjs's deserializeError; a
// call with no model loaded is ATTNLAB_CLOSED, a failed load keeps its code or is ATTNLAB_LOAD_FAILED).
// Requests run one after another in arrival order; the module sends the next one only when the last is answered,
// so an aborted call can stop the worker without losing queued ones. The same protocol runs in a Node
// worker_threads Worker (node_worker.mjs).
import { createEngineModel } from './core.mjs';
import { env, loadEngine } from './engine.mjs';
import { isImageBitmap, pixelsFromBitmap } from './image.mjs';
import { AttnlabError, ERROR_CODES, serializeError, toAttnlabError } from './errors.mjs';

let model = null;
let queue = Promise.resolve();

// A call that finds no model here: the module sends none before its load is answered, so the model was disposed
// (or its load failed) and the call is one on a closed model.
function requireModel() {
  if (!model) throw new AttnlabError(ERROR_CODES.CLOSED, 'attnlab: no model is loaded');
  return model;
}

const methods = {
  async load({ bytes, shortlist = null, wasmBinary, wasmThreaded, wasmPaths, threads }) {
    if (model) throw new AttnlabError(ERROR_CODES.INTERNAL, 'attnlab: this worker already holds a model');
    try {
      if (wasmPaths) env.wasmPaths = wasmPaths;  // the page's setting: where the glue is
      env.threads = threads;  // and which build; wasmBinary is the .wasm of the build the page chose (wasmThreaded)
      await loadEngine(wasmBinary ? { wasmBinary, threaded: wasmThreaded } : undefined);
      model = await createEngineModel(bytes, shortlist);
    } catch (error) {
      // What loadModel() on this thread says of the same failure (index.mjs loadError).
      throw toAttnlabError(error, ERROR_CODES.LOAD_FAILED);
    }
    return { info: model.info, limits: model.limits };
  },
  translate({ text, options }) {
    return requireModel().translate(text, options);
  },
  caption({ image, options }) {
    const bitmap = isImageBitmap(image);
    try {
      const loaded = requireModel();
      let pixels = image;
      try {
        if (bitmap) pixels = pixelsFromBitmap(image);
      } catch (error) {
        throw toAttnlabError(error, ERROR_CODES.BAD_INPUT);  // as the module's own image readers are
      }
      return loaded.caption(pixels, options);
    } finally {
      if (bitmap) image.close();  // it was transferred here: nobody else can close it
    }
  },
  transcribe({ audio, options }) {
    return requireModel().transcribe(audio, options);
  },
  dispose() {
    model?.dispose();
    model = null;
    return null;
  },
  memoryStats() {  // diagnostic, for scripts/soak.mjs
    return requireModel().memoryStats();
  },
  engineInfo() {  // diagnostic, for tests/js/threaded_engine.test.mjs
    return requireModel().engineInfo();
  },
};

function transferablesOf(result) {
  if (Array.isArray(result)) return result.flatMap(transferablesOf);  // translate() of several texts
  if (!result || typeof result !== 'object') return [];
  return Object.values(result)
    .filter((value) => value && value.data instanceof Float32Array)
    .map((value) => value.data.buffer);
}

/**
 * Answers the protocol above on `port` (a Web Worker's global scope, or node_worker.mjs's parentPort): anything
 * with addEventListener('message', (event) => event.data) and postMessage(message, transfer).
 */
export function serve(port) {
  port.addEventListener('message', (event) => {
    const { id, method, args } = event.data ?? {};
    queue = queue.then(async () => {
      try {
        const handler = methods[method];
        if (!handler) throw new AttnlabError(ERROR_CODES.INTERNAL, `attnlab: unknown worker method ${method}`);
        const result = await handler(args ?? {});
        port.postMessage({ id, result }, transferablesOf(result));
      } catch (error) {
        port.postMessage({ id, error: serializeError(error) });
      }
    });
  });
}

// Started as a Web Worker; imported elsewhere (node_worker.mjs) it only provides serve().
if (typeof WorkerGlobalScope === 'function' && globalThis instanceof WorkerGlobalScope) serve(globalThis);
