// attnlab: attention encoder-decoders in SIMD WebAssembly, with every attention weight returned.
//
//   const model = await loadModel('/models/weights/bahdanau-en-de.q8_0.gguf', { onProgress, sha256 });
//   const t = await model.translate('A dog runs.', { beam: 4 });   // { text, sourceTokens, attention, ... }
//   const c = await captioner.caption(imageData, { beam: 3 });     // { text, tokens, attention, gridWidth, ... }
//
// In a browser the engine runs in a module Web Worker (one per model); in Node it runs in this thread. Either way
// every method returns a promise, calls on one model run one at a time in call order, and every error is a
// rejected promise with a message.
import { absoluteWasmPaths, callEngine, env, importNodeBuiltin, loadEngine, startEngineWorker, wasmUrl } from './engine.mjs';
import { asBytes, createEngineModel, validateCaptionOptions, validateTranslate, wrongTask } from './core.mjs';
import { checkBitmap, isImageBitmap, toPixels } from './image.mjs';
import { checkAborted, prepareAudio, transferablesOfAudio, validateTranscribeOptions } from './audio.mjs';
import { CACHE_NAME, download, sha256Hex, verifySha256 } from './download.mjs';
import { isModelName, resolveModelName } from './models.mjs';

export { loadEngine, download, sha256Hex, CACHE_NAME, env };
export { decodeAudio } from './audio.mjs';

const isNode = typeof process === 'object' && typeof process.versions === 'object' && !!process.versions.node;

/**
 * { version, simd, wasm, limits }: which engine build is running (in this realm), and the limits it enforces on
 * every call (the numbers translate() and caption() check their options against).
 */
export async function engineInfo() {
  return callEngine((engine) => engine.engineInfo());
}

// The wasm bytes for workers, through the cached downloader so a second visit works offline (shared by every
// load, so no one caller's abort signal applies to it).
let wasmBytesPromise = null;
function wasmBytes() {
  if (!wasmBytesPromise) {
    wasmBytesPromise = download(wasmUrl()).then(({ bytes }) => bytes, (error) => {
      wasmBytesPromise = null;
      throw error;
    });
  }
  return wasmBytesPromise;
}

function isLocalPath(source) {
  if (source instanceof URL) return source.protocol === 'file:';
  return typeof source === 'string' && !/^[a-z][a-z0-9+.-]*:/i.test(source);
}

// source -> { bytes, fromCache, transferable }: bytes we own may be handed to a worker without a copy.
async function fetchModelBytes(source, options) {
  const { onProgress, signal, timeout = 0, sha256, bytes: expectedBytes, cache = true } = options;
  if (typeof source === 'string' || source instanceof URL) {
    if (isNode && isLocalPath(source)) {
      if (signal?.aborted) throw new Error(`attnlab: loading ${source} was aborted`);
      const { readFile } = await importNodeBuiltin('fs/promises');
      let bytes;
      try {
        bytes = new Uint8Array(await readFile(source, { signal }));
      } catch (error) {
        if (signal?.aborted) throw new Error(`attnlab: loading ${source} was aborted`);
        throw new Error(`attnlab: could not read ${source}: ${error.message}`);
      }
      onProgress?.({ loaded: bytes.length, total: bytes.length });
      await verifySha256(bytes, sha256, String(source));
      return { bytes, fromCache: false, transferable: true };
    }
    const base = globalThis.location?.href;
    const url = base ? new URL(source, base) : new URL(source);
    const { bytes, fromCache } = await download(url, { onProgress, signal, timeout, sha256, bytes: expectedBytes, cache });
    return { bytes, fromCache, transferable: true };
  }
  if (source === null || source === undefined) throw new Error('attnlab: loadModel() needs a URL or the model bytes');
  const bytes = asBytes(source);
  if (signal?.aborted) throw new Error('attnlab: loading the model was aborted');
  await verifySha256(bytes, sha256, 'the model bytes');
  onProgress?.({ loaded: bytes.length, total: bytes.length });
  return { bytes, fromCache: false, transferable: false };
}

// Runs tasks one at a time in call order. close(reason): later calls reject, queued ones still run;
// kill(reason): queued and later calls reject.
class CallQueue {
  #tail = Promise.resolve();
  #closed = null;
  #killed = null;
  run(task) {
    if (this.#closed) return Promise.reject(new Error(this.#closed));
    const result = this.#tail.then(() => {
      if (this.#killed) throw new Error(this.#killed);
      return task();
    });
    this.#tail = result.catch(() => {});
    return result;
  }
  close(reason) {
    this.#closed ??= reason;
  }
  kill(reason) {
    this.close(reason);
    this.#killed ??= reason;
  }
  get closed() {
    return this.#closed !== null;
  }
}

const TERMINATED = 'attnlab: the model was terminated';
const DISPOSED = 'attnlab: the model was disposed';

/** A model running in this thread (Node, or useWorker: false). */
class DirectModel {
  #core;
  #queue = new CallQueue();
  constructor(core, fromCache) {
    this.#core = core;
    this.info = core.info;
    this.limits = core.limits;
    this.fromCache = fromCache;
    this.inWorker = false;
  }
  translate(text, options = {}) {
    return this.#queue.run(async () => this.#core.translate(text, options));
  }
  caption(image, options = {}) {
    // Pixels are read now, in call order with the caller's image as it is at the call.
    let pixels;
    try {
      if (this.info.task === 'caption') pixels = toPixels(image);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#queue.run(async () => this.#core.caption(pixels, options));
  }
  transcribe(input, options = {}) {
    let prepared;
    try {
      if (this.info.task !== 'transcribe') throw new Error(wrongTask(this.info, 'transcribe'));
      prepared = prepareAudio(input, validateTranscribeOptions(options, this.limits));
    } catch (error) {
      return Promise.reject(error);
    }
    prepared.catch(() => {});  // rejected before its turn: reported by the queued call, not as unhandled
    return this.#queue.run(async () => {
      const audio = await prepared;
      checkAborted(options.signal);
      return this.#core.transcribe(audio, options);
    });
  }
  /** Diagnostic, not API: { wasmBytes, mallocBytes } of the engine (scripts/soak.mjs watches them for leaks). */
  _memoryStats() {
    return this.#queue.run(async () => this.#core.memoryStats());
  }
  async dispose() {
    if (this.#queue.closed) return;
    const done = this.#queue.run(async () => this.#core.dispose());
    this.#queue.close(DISPOSED);
    await done;
  }
  terminate() {
    if (this.#queue.closed) return;
    this.#queue.kill(TERMINATED);
    // Queued calls reject when their turn comes; engine calls are synchronous, so none is midway now.
    Promise.resolve().then(() => this.#core.dispose()).catch(() => {});
  }
}

/** A model inside a module Web Worker; requests carry ids and are answered in order. */
class WorkerModel {
  #worker;
  #audioTail = Promise.resolve();
  #pending = new Map();
  #nextId = 1;
  #closed = null;
  constructor(worker) {
    this.#worker = worker;
    this.inWorker = true;
    worker.addEventListener('message', (event) => {
      const { id, result, error } = event.data ?? {};
      const pending = this.#pending.get(id);
      if (!pending) return;
      this.#pending.delete(id);
      if (error !== undefined) pending.reject(new Error(error));
      else pending.resolve(result);
    });
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      this.#fail(`attnlab: the engine worker failed: ${event.message ?? 'could not start it'}`);
    });
    worker.addEventListener('messageerror', () => this.#fail('attnlab: the engine worker sent an unreadable message'));
  }
  #fail(reason) {
    this.#closed ??= reason;
    for (const { reject } of this.#pending.values()) reject(new Error(reason));
    this.#pending.clear();
    this.#worker.terminate();
  }
  call(method, args, transfer = []) {
    if (this.#closed) return Promise.reject(new Error(this.#closed));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, method, args }, transfer);
    });
  }
  translate(text, options = {}) {
    try {
      if (this.info && this.info.task !== 'translate') throw new Error(wrongTask(this.info, 'translate'));
      validateTranslate(text, options, this.limits);  // fail fast, without a round trip
    } catch (error) {
      return Promise.reject(error);
    }
    return this.call('translate', { text, options: { beam: options.beam, maxLength: options.maxLength } });
  }
  // An ImageBitmap is transferred (it is closed for the caller) and read in the worker; any other image is read
  // here, and its pixels are copied to the worker.
  caption(image, options = {}) {
    let args;
    const transfer = [];
    try {
      if (this.info && this.info.task !== 'caption') throw new Error(wrongTask(this.info, 'caption'));
      const checked = validateCaptionOptions(options, this.limits);
      if (isImageBitmap(image)) {
        checkBitmap(image);
        transfer.push(image);
        args = { image, options: checked };
      } else {
        const { data, width, height } = toPixels(image);
        args = { image: { data, width, height }, options: checked };
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return this.call('caption', args, transfer);
  }
  // The audio is read (and, for formats other than WAV/FLAC, decoded by the browser) here, then sent in call order.
  transcribe(input, options = {}) {
    let prepared, checked;
    try {
      if (this.info && this.info.task !== 'transcribe') throw new Error(wrongTask(this.info, 'transcribe'));
      checked = validateTranscribeOptions(options, this.limits);
      prepared = prepareAudio(input, checked);
    } catch (error) {
      return Promise.reject(error);
    }
    prepared.catch(() => {});
    const sent = this.#audioTail.then(async () => {
      const audio = await prepared;
      checkAborted(checked.signal);
      return this.call('transcribe', { audio, options: { beam: checked.beam } }, transferablesOfAudio(audio));
    });
    this.#audioTail = sent.catch(() => {});
    return sent;
  }
  /** Diagnostic, not API: { wasmBytes, mallocBytes } of the worker's engine (scripts/soak.mjs watches them). */
  _memoryStats() {
    return this.call('memoryStats', {});
  }
  async dispose() {
    if (this.#closed) return;
    try {
      await this.call('dispose', {});
    } finally {
      this.#fail(DISPOSED);
    }
  }
  terminate() {
    this.#fail(TERMINATED);
  }
}

/**
 * Loads a translation or captioning model from a URL (fetched with progress, SHA-256 check and the Cache API), a file path in
 * Node, or its GGUF bytes. See index.d.ts for the options and the returned model.
 */
export async function loadModel(source, options = {}) {
  if (options === null || typeof options !== 'object') throw new Error('attnlab: loadModel() options must be an object');
  const canUseWorker = !isNode && typeof Worker === 'function';
  const useWorker = options.useWorker ?? canUseWorker;
  if (useWorker && !canUseWorker) throw new Error('attnlab: Web Workers are not available here; pass useWorker: false');

  if (isModelName(source)) {  // a name from a models/manifest.json (models.mjs), loaded with its size and SHA-256
    const { url, sha256, bytes } = await resolveModelName(source, options);
    source = url;
    options = { ...options, sha256, bytes };
  }
  const { bytes, fromCache, transferable } = await fetchModelBytes(source, options);
  if (options.signal?.aborted) throw new Error('attnlab: loading the model was aborted');
  if (useWorker) await wasmBytes();  // first, so a failed engine download leaves no worker behind
  const worker = useWorker ? await startEngineWorker() : null;
  if (!worker) {
    const wasmBinary = isNode ? undefined : await wasmBytes();
    return new DirectModel(await createEngineModel(bytes, { wasmBinary }), fromCache);
  }
  const wasmBinary = (await wasmBytes()).slice();  // each worker gets its own copy
  const payload = transferable ? bytes : bytes.slice();
  const model = new WorkerModel(worker);
  try {
    ({ info: model.info, limits: model.limits } =
      await model.call('load', { bytes: payload, wasmBinary, wasmPaths: absoluteWasmPaths() },
                       [payload.buffer, wasmBinary.buffer]));
  } catch (error) {
    model.terminate();
    throw error;
  }
  model.fromCache = fromCache;
  return model;
}

/** Row i of a {rows, cols, data} matrix as a Float32Array view. */
export function matrixRow(matrix, i) {
  if (!Number.isInteger(i) || i < 0 || i >= matrix.rows) throw new Error(`attnlab: row ${i} is out of range`);
  return matrix.data.subarray(i * matrix.cols, (i + 1) * matrix.cols);
}

/**
 * Head `head` of layer `layer` of a Transformer attention tensor ({layers, heads, rows, cols, data}) as a
 * {rows, cols, data} matrix view (no copy): element (i, j) is how much query position i attends to key j.
 */
export function attentionHead(tensor, layer, head) {
  if (!tensor || !(tensor.data instanceof Float32Array)) throw new Error('attnlab: attentionHead() needs an attention tensor');
  const { layers, heads, rows, cols } = tensor;
  if (!Number.isInteger(layer) || layer < 0 || layer >= layers) throw new Error(`attnlab: layer ${layer} is out of range (0 to ${layers - 1})`);
  if (!Number.isInteger(head) || head < 0 || head >= heads) throw new Error(`attnlab: head ${head} is out of range (0 to ${heads - 1})`);
  const size = rows * cols;
  const offset = (layer * heads + head) * size;
  if (tensor.data.length !== layers * heads * size) throw new Error('attnlab: the attention tensor data does not match its shape');
  return { rows, cols, data: tensor.data.subarray(offset, offset + size) };
}
