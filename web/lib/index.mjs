// attnlab: attention encoder-decoders in SIMD WebAssembly, with every attention weight returned.
//
//   const model = await loadModel('/models/weights/bahdanau-en-de.q8_0.gguf', { onProgress, sha256 });
//   const t = await model.translate('A dog runs.', { beam: 4 });   // { text, sourceTokens, attention, ... }
//   const ts = await model.translate(['A dog runs.', 'It is raining.']);  // one result per text, decoded together
//   const c = await captioner.caption(imageData, { beam: 3 });     // { text, tokens, attention, gridWidth, ... }
//
// In a browser the engine runs in a module Web Worker (one per model); in Node it runs in this thread, or in a
// worker_threads Worker with useWorker: true. Either way every method returns a promise, calls on one model run one
// at a time in call order, an AbortSignal cancels a call, and every error is a rejected promise with an AttnlabError
// (errors.mjs: a stable `code` and a message starting with "attnlab: ").
import { absoluteWasmPaths, callEngine, engineBuild, env, importNodeBuiltin, isNode, loadEngine as loadEngineModule, startEngineWorker, wasmUrl } from './engine.mjs';
import { asBytes, createEngineModel, validateCaptionOptions, validateTranslate, wrongTaskError } from './core.mjs';
import { AttnlabError, ERROR_CODES, abortError, checkSignal, deserializeError, throwIfAborted, toAttnlabError } from './errors.mjs';
import { checkBitmap, isImageBitmap, toPixels } from './image.mjs';
import { checkAborted, prepareAudio, transferablesOfAudio, validateTranscribeOptions } from './audio.mjs';
import { CACHE_NAME, download as downloadBytes, sha256Hex, verifySha256 } from './download.mjs';
import { isModelName, resolveModelName } from './models.mjs';

export { sha256Hex, CACHE_NAME, env };
export { AttnlabError, ERROR_CODES } from './errors.mjs';
export { decodeAudio } from './audio.mjs';


/**
 * { version, simd, wasm, limits }: which engine build is running (in this realm), and the limits it enforces on
 * every call (the numbers translate() and caption() check their options against).
 */
export async function engineInfo() {
  return callEngine((engine) => engine.engineInfo()).catch((error) => {
    throw toAttnlabError(error, ERROR_CODES.LOAD_FAILED);
  });
}

/** Loads the wasm engine in this realm once (engine.mjs); rejects with LOAD_FAILED. */
export function loadEngine(options) {
  return loadEngineModule(options).catch((error) => {
    throw toAttnlabError(error, ERROR_CODES.LOAD_FAILED);
  });
}

/** The downloader loadModel uses (download.mjs), rejecting with LOAD_FAILED, or ABORTED for the caller's abort. */
export function download(url, options = {}) {
  return downloadBytes(url, options).catch((error) => {
    throw loadError(error, options?.signal);
  });
}

// A failure while loading: ABORTED when the caller's signal aborted, the error's own code when it has one (an
// engine or validation error), else LOAD_FAILED.
function loadError(error, signal) {
  if (signal?.aborted && !(error instanceof AttnlabError && error.code !== ERROR_CODES.LOAD_FAILED)) {
    return new AttnlabError(ERROR_CODES.ABORTED, error?.message ?? 'attnlab: loading was aborted', { cause: error });
  }
  return toAttnlabError(error, ERROR_CODES.LOAD_FAILED);
}

// The .wasm bytes of each build (engine.mjs engineBuild) for workers, through the cached downloader so a second
// visit works offline (shared by every load, so no one caller's abort signal applies to it). Kept per build: a
// worker started after env.threads changed needs the other build's .wasm.
const wasmBytesPromises = new Map();
function wasmBytes(build) {
  const url = wasmUrl(build).href;
  if (!wasmBytesPromises.has(url)) {
    wasmBytesPromises.set(url, downloadBytes(url).then(({ bytes }) => bytes, (error) => {
      wasmBytesPromises.delete(url);
      throw error;
    }));
  }
  return wasmBytesPromises.get(url);
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
      throwIfAborted(signal, `loading ${source}`);
      const { readFile } = await importNodeBuiltin('fs/promises');
      let bytes;
      try {
        bytes = new Uint8Array(await readFile(source, { signal }));
      } catch (error) {
        throwIfAborted(signal, `loading ${source}`);
        throw new AttnlabError(ERROR_CODES.LOAD_FAILED, `attnlab: could not read ${source}: ${error.message}`, { cause: error });
      }
      onProgress?.({ loaded: bytes.length, total: bytes.length });
      await verifySha256(bytes, sha256, String(source));
      return { bytes, fromCache: false, transferable: true };
    }
    const base = globalThis.location?.href;
    const url = base ? new URL(source, base) : new URL(source);
    const { bytes, fromCache } = await downloadBytes(url, { onProgress, signal, timeout, sha256, bytes: expectedBytes, cache });
    return { bytes, fromCache, transferable: true };
  }
  if (source === null || source === undefined) {
    throw new AttnlabError(ERROR_CODES.BAD_INPUT, 'attnlab: loadModel() needs a URL or the model bytes');
  }
  const bytes = asBytes(source);
  throwIfAborted(signal, 'loading the model');
  await verifySha256(bytes, sha256, 'the model bytes');
  onProgress?.({ loaded: bytes.length, total: bytes.length });
  return { bytes, fromCache: false, transferable: false };
}

// Runs tasks one at a time in call order. close(reason): later calls reject, queued ones still run;
// kill(reason): queued and later calls reject. A call whose signal aborts rejects at once (ABORTED); queued, it is
// skipped when its turn comes; running, onAbort (if given) decides what happens to the work under way.
class CallQueue {
  #tail = Promise.resolve();
  #closed = null;
  #killed = null;
  run(task, { signal, what = 'the call' } = {}) {
    if (this.#closed) return Promise.reject(closedError(this.#closed));
    if (signal?.aborted) return Promise.reject(abortError(what, signal));
    const turn = this.#tail.then(() => {
      if (this.#killed) throw closedError(this.#killed);
      throwIfAborted(signal, what);
      return task();
    });
    this.#tail = turn.catch(() => {});
    if (!signal) return turn;
    let onAbort;
    const aborted = new Promise((_, reject) => {
      onAbort = () => reject(abortError(what, signal));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    return Promise.race([turn, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
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

function closedError(reason, code) {
  return new AttnlabError(code ?? (reason === TERMINATED || reason === DISPOSED ? ERROR_CODES.CLOSED : ERROR_CODES.INTERNAL), reason);
}

// A model method's failure: its own code, or BAD_INPUT for the image and audio readers' plain errors.
function callError(error) {
  return toAttnlabError(error, ERROR_CODES.BAD_INPUT);
}

function rejectWith(error) {
  return Promise.reject(callError(error));
}

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
  // The engine runs synchronously on this thread, so an abort can only cancel a call that has not started.
  translate(text, options = {}) {
    try {
      checkSignal(options?.signal, 'translate');
    } catch (error) {
      return rejectWith(error);
    }
    return this.#queue.run(async () => this.#core.translate(text, options),
                           { signal: options?.signal, what: 'the translation' }).catch((error) => { throw callError(error); });
  }
  caption(image, options = {}) {
    // Pixels are read now, in call order with the caller's image as it is at the call.
    let pixels;
    try {
      checkSignal(options?.signal, 'caption');
      if (this.info.task === 'caption') pixels = toPixels(image);
    } catch (error) {
      return rejectWith(error);
    }
    return this.#queue.run(async () => this.#core.caption(pixels, options),
                           { signal: options?.signal, what: 'the caption' }).catch((error) => { throw callError(error); });
  }
  transcribe(input, options = {}) {
    let prepared;
    try {
      if (this.info.task !== 'transcribe') throw wrongTaskError(this.info, 'transcribe');
      prepared = prepareAudio(input, validateTranscribeOptions(options, this.limits));
    } catch (error) {
      return rejectWith(error);
    }
    prepared.catch(() => {});  // rejected before its turn: reported by the queued call, not as unhandled
    return this.#queue.run(async () => {
      const audio = await prepared;
      checkAborted(options.signal);
      return this.#core.transcribe(audio, options);
    }, { signal: options?.signal, what: 'the transcription' }).catch((error) => { throw callError(error); });
  }
  /** Diagnostic, not API: { wasmBytes, mallocBytes } of the engine (scripts/soak.mjs watches them for leaks). */
  _memoryStats() {
    return this.#queue.run(async () => this.#core.memoryStats());
  }
  /** Diagnostic, not API: engineInfo() of the engine that runs this model (this realm's). */
  _engineInfo() {
    return this.#queue.run(async () => this.#core.engineInfo());
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

/**
 * A model inside a worker (a module Web Worker, or a Node worker_threads Worker): requests carry ids and are sent
 * one at a time in call order, each when the last is answered. An abort of the running request terminates the
 * worker and starts a new one with the same weights (kept on this thread for that), which the queued calls then
 * use; an abort of a queued request only drops it.
 */
class WorkerModel {
  #spawn;      // async () => a started worker (see startWorker)
  #loadArgs;   // async () => { args, transfer } of the "load" request, for each worker started
  #worker = null;
  #ready = Promise.resolve();  // the current worker has loaded the model (after an abort: the new worker)
  #audioTail = Promise.resolve();
  #pending = new Map();
  #nextId = 1;
  #closed = null;
  #queue = new CallQueue();
  constructor(spawn, loadArgs) {
    this.#spawn = spawn;
    this.#loadArgs = loadArgs;
    this.inWorker = true;
  }
  /** Starts the first worker and loads the model; resolves to { info, limits }. */
  async start() {
    this.#ready = this.#startWorker();
    return this.#ready;
  }
  async #startWorker() {
    const worker = await this.#spawn();
    if (!worker) throw new AttnlabError(ERROR_CODES.LOAD_FAILED, 'attnlab: the engine worker could not be started');
    if (this.#closed) {  // terminated while the worker started
      worker.terminate();
      throw closedError(this.#closed);
    }
    this.#worker = worker;
    worker.addEventListener('message', (event) => {
      const { id, result, error } = event.data ?? {};
      const pending = this.#pending.get(id);
      if (!pending || worker !== this.#worker) return;
      this.#settle(id);
      if (error !== undefined) pending.reject(deserializeError(error));
      else pending.resolve(result);
    });
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      if (worker === this.#worker) this.#fail(`attnlab: the engine worker failed: ${event.message ?? 'could not start it'}`);
    });
    worker.addEventListener('messageerror', () => {
      if (worker === this.#worker) this.#fail('attnlab: the engine worker sent an unreadable message');
    });
    const { args, transfer } = await this.#loadArgs();
    return this.#send('load', args, transfer);
  }
  #settle(id) {
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#worker?.unref?.();  // an idle Node worker does not keep the process alive
  }
  #send(method, args, transfer = []) {
    if (this.#closed) return Promise.reject(closedError(this.#closed));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, method });
      this.#worker.ref?.();
      this.#worker.postMessage({ id, method, args }, transfer);
    });
  }
  // The running request was aborted: its worker is stopped mid-call and a new one loads the model.
  #restart(reason) {
    if (this.#closed) return;
    const old = this.#worker;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#worker = null;
    old?.terminate();
    this.#ready = this.#startWorker();
    this.#ready.catch((error) => this.#fail(`attnlab: the engine worker could not be restarted after an abort: ${error.message}`));
    for (const { reject } of pending) reject(reason);
  }
  #fail(reason) {
    this.#closed ??= reason;
    this.#queue.kill(reason);
    // A worker that fails before its load is answered could not start the model: LOAD_FAILED, as errors.mjs says.
    for (const { reject, method } of this.#pending.values()) {
      reject(closedError(reason, method === 'load' && reason !== TERMINATED && reason !== DISPOSED ? ERROR_CODES.LOAD_FAILED : undefined));
    }
    this.#pending.clear();
    this.#worker?.terminate();
  }
  /** One request through the queue: waits for its turn (and a restarted worker), then for the answer. */
  call(method, args, transfer = [], { signal, what = 'the call' } = {}) {
    return this.#queue.run(async () => {
      await this.#ready;
      throwIfAborted(signal, what);
      const answer = this.#send(method, args, transfer);
      if (signal) {
        const onAbort = () => this.#restart(abortError(what, signal));
        signal.addEventListener('abort', onAbort, { once: true });
        answer.then(() => signal.removeEventListener('abort', onAbort), () => signal.removeEventListener('abort', onAbort));
      }
      return answer;
    }, { signal, what }).catch((error) => { throw callError(error); });
  }
  translate(text, options = {}) {
    let checked;
    try {
      if (this.info && this.info.task !== 'translate') throw wrongTaskError(this.info, 'translate');
      checked = validateTranslate(text, options, this.limits);  // fail fast, without a round trip
    } catch (error) {
      return rejectWith(error);
    }
    return this.call('translate', { text, options: checked }, [], { signal: options.signal, what: 'the translation' });
  }
  // An ImageBitmap is transferred (it is closed for the caller) when its turn comes and read in the worker; any
  // other image is read here, and its pixels are copied to the worker.
  caption(image, options = {}) {
    let args;
    const transfer = [];
    try {
      if (this.info && this.info.task !== 'caption') throw wrongTaskError(this.info, 'caption');
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
      return rejectWith(error);
    }
    return this.call('caption', args, transfer, { signal: options.signal, what: 'the caption' });
  }
  // The audio is read (and, for formats other than WAV/FLAC, decoded by the browser) here, then sent in call order.
  transcribe(input, options = {}) {
    let prepared, checked;
    try {
      if (this.info && this.info.task !== 'transcribe') throw wrongTaskError(this.info, 'transcribe');
      checked = validateTranscribeOptions(options, this.limits);
      prepared = prepareAudio(input, checked);
    } catch (error) {
      return rejectWith(error);
    }
    prepared.catch(() => {});
    const sent = this.#audioTail.then(async () => {
      const audio = await prepared;
      checkAborted(checked.signal);
      const { beam, ctcWeight, lmWeight, beamTree } = checked;
      return this.call('transcribe', { audio, options: { beam, ctcWeight, lmWeight, beamTree } }, transferablesOfAudio(audio),
                       { signal: checked.signal, what: 'the transcription' });
    }).catch((error) => { throw callError(error); });  // the audio's reading fails here, outside call()
    this.#audioTail = sent.catch(() => {});
    return sent;
  }
  /** Diagnostic, not API: { wasmBytes, mallocBytes } of the worker's engine (scripts/soak.mjs watches them). */
  _memoryStats() {
    return this.call('memoryStats', {});
  }
  /** Diagnostic, not API: the worker's engineInfo(), whose `build` says which build it started. */
  _engineInfo() {
    return this.call('engineInfo', {});
  }
  async dispose() {
    if (this.#closed || this.#queue.closed) return;
    const done = this.call('dispose', {});
    this.#queue.close(DISPOSED);
    try {
      await done;
    } finally {
      this.#fail(DISPOSED);
    }
  }
  terminate() {
    this.#fail(TERMINATED);
  }
}

// A Node worker_threads Worker running node_worker.mjs, with the Web Worker's event interface WorkerModel uses.
async function startNodeWorker() {
  const { Worker } = await importNodeBuiltin('worker_threads');
  // Neither the file name nor the base is a literal inside new URL(), so no browser bundler emits (or warns about)
  // the Node-only file.
  const script = 'node_worker.mjs';
  const here = import.meta.url;
  // The caller's Node flags, less --input-type (for -e/stdin scripts only: a worker file refuses it).
  const execArgv = process.execArgv.filter((flag) => !flag.startsWith('--input-type'));
  const worker = new Worker(new URL(script, here), { name: 'attnlab-engine', execArgv });
  let terminated = false;
  return {
    addEventListener(type, listener) {
      if (type === 'message') worker.on('message', (data) => listener({ data }));
      if (type === 'messageerror') worker.on('messageerror', () => listener({}));
      if (type === 'error') {
        worker.on('error', (error) => listener({ message: error?.message ?? String(error) }));
        worker.on('exit', (code) => {
          if (!terminated) listener({ message: `the worker exited with code ${code}` });
        });
      }
    },
    postMessage: (message, transfer) => worker.postMessage(message, transfer),
    terminate() {
      terminated = true;
      worker.terminate();
    },
    ref: () => worker.ref(),
    unref: () => worker.unref(),
  };
}

/**
 * Loads a translation or captioning model from a URL (fetched with progress, SHA-256 check and the Cache API), a file path in
 * Node, or its GGUF bytes. See index.d.ts for the options and the returned model.
 */
export async function loadModel(source, options = {}) {
  try {
    return await loadModelOrThrow(source, options);
  } catch (error) {
    throw loadError(error, options?.signal);
  }
}

function checkLoadOptions(options) {
  const badOptions = (message) => new AttnlabError(ERROR_CODES.BAD_OPTIONS, message);
  if (options === null || typeof options !== 'object') throw badOptions('attnlab: loadModel() options must be an object');
  checkSignal(options.signal, 'loadModel');
  if (options.sha256 !== undefined && !(typeof options.sha256 === 'string' && /^[0-9a-fA-F]{64}$/.test(options.sha256))) {
    throw badOptions('attnlab: sha256 for the model is not 64 hex digits');
  }
  if (options.useWorker !== undefined && typeof options.useWorker !== 'boolean') {
    throw badOptions('attnlab: useWorker must be true or false');
  }
  if (options.shortlistSha256 !== undefined &&
      !(typeof options.shortlistSha256 === 'string' && /^[0-9a-fA-F]{64}$/.test(options.shortlistSha256))) {
    throw badOptions('attnlab: shortlistSha256 is not 64 hex digits');
  }
  const { shortlist } = options;
  if (shortlist !== undefined && shortlist !== false && shortlist !== true && typeof shortlist !== 'string' &&
      !(shortlist instanceof URL) && !(shortlist instanceof ArrayBuffer) && !ArrayBuffer.isView(shortlist)) {
    throw badOptions('attnlab: shortlist must be true (the manifest\'s, for a model name), a URL or path, or the file\'s bytes');
  }
}

// options.shortlist -> its bytes, or null: true names the manifest entry's shortlist (entry.shortlist).
async function fetchShortlistBytes(options, entry) {
  let { shortlist: source, shortlistSha256: sha256 } = options;
  if (source === undefined || source === false) return null;
  if (source === true) {
    if (!entry) throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, 'attnlab: shortlist: true needs a model name from the manifest');
    if (!entry.shortlist) throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, `attnlab: the model "${entry.id}" has no shortlist in its manifest`);
    source = entry.shortlist.url;
    sha256 = entry.shortlist.sha256;
  }
  const { bytes } = await fetchModelBytes(source, { signal: options.signal, timeout: options.timeout, sha256,
                                                    cache: options.cache });
  return bytes;
}

async function isFile(path) {
  const { stat } = await importNodeBuiltin('fs/promises');
  return stat(path).then((info) => info.isFile(), () => false);
}

async function loadModelOrThrow(source, options) {
  checkLoadOptions(options);
  // Node has worker_threads, but runs in this thread unless asked: no thread to start, and a script that never
  // disposes its model still exits (index.d.ts LoadOptions.useWorker).
  const canUseWorker = isNode || typeof Worker === 'function';
  const useWorker = options.useWorker ?? (!isNode && canUseWorker);
  if (useWorker && !canUseWorker) {
    throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, 'attnlab: Web Workers are not available here; pass useWorker: false');
  }

  // A name from a models/manifest.json (models.mjs), loaded with its size and SHA-256; in Node an existing file of
  // that name (a path without a dot or a slash) stays a path, as it was before names.
  let entry = null;
  if (isModelName(source) && !(isNode && await isFile(source))) {
    let url, sha256, bytes, base;
    ({ url, sha256, bytes, entry, base } = await resolveModelName(source, options));
    if (entry.shortlist) entry = { ...entry, shortlist: { ...entry.shortlist, url: new URL(entry.shortlist.file, base) } };
    source = url;
    options = { ...options, sha256, bytes };
  }
  // The engine this model gets, fixed now: a worker restarted later (after an abort) starts the same one.
  const threads = env.threads;
  const build = engineBuild(threads);
  const { bytes, fromCache } = await fetchModelBytes(source, options);
  const shortlist = await fetchShortlistBytes(options, entry);
  throwIfAborted(options.signal, 'loading the model');
  if (useWorker && !isNode) await wasmBytes(build);  // first, so a failed engine download leaves no worker behind
  const first = !useWorker ? null : isNode ? await startNodeWorker() : await startEngineWorker();
  if (!first) {
    await loadEngineModule(isNode ? undefined : { wasmBinary: await wasmBytes(build), threaded: build.threaded });
    return new DirectModel(await createEngineModel(bytes, shortlist), fromCache);
  }
  let spawned = false;
  const spawn = async () => {
    if (!spawned) {
      spawned = true;
      return first;
    }
    return isNode ? startNodeWorker() : startEngineWorker();
  };
  // Each worker gets its own copies of the weights and the wasm (transferred); `bytes` stays here for a restart.
  const loadArgs = async () => {
    const payload = bytes.slice();
    const shortlistPayload = shortlist ? shortlist.slice() : null;
    const wasmBinary = isNode ? undefined : (await wasmBytes(build)).slice();
    const transfer = [payload.buffer, ...(shortlistPayload ? [shortlistPayload.buffer] : []),
                      ...(wasmBinary ? [wasmBinary.buffer] : [])];
    return { args: { bytes: payload, shortlist: shortlistPayload, wasmBinary, wasmThreaded: build.threaded,
                     wasmPaths: absoluteWasmPaths(), threads },
             transfer };
  };
  const model = new WorkerModel(spawn, loadArgs);
  try {
    ({ info: model.info, limits: model.limits } = await model.start());
  } catch (error) {
    model.terminate();
    throw error;
  }
  model.fromCache = fromCache;
  return model;
}

/** Row i of a {rows, cols, data} matrix as a Float32Array view. */
export function matrixRow(matrix, i) {
  if (!matrix || !(matrix.data instanceof Float32Array) || !Number.isInteger(matrix.rows) || !Number.isInteger(matrix.cols) ||
      matrix.data.length !== matrix.rows * matrix.cols) {
    throw new AttnlabError(ERROR_CODES.BAD_INPUT, 'attnlab: matrixRow() needs a { rows, cols, data: Float32Array } matrix');
  }
  if (!Number.isInteger(i) || i < 0 || i >= matrix.rows) throw new AttnlabError(ERROR_CODES.BAD_INPUT, `attnlab: row ${i} is out of range`);
  return matrix.data.subarray(i * matrix.cols, (i + 1) * matrix.cols);
}

/**
 * Head `head` of layer `layer` of a Transformer attention tensor ({layers, heads, rows, cols, data}) as a
 * {rows, cols, data} matrix view (no copy): element (i, j) is how much query position i attends to key j.
 */
export function attentionHead(tensor, layer, head) {
  const bad = (message) => new AttnlabError(ERROR_CODES.BAD_INPUT, message);
  if (!tensor || !(tensor.data instanceof Float32Array)) throw bad('attnlab: attentionHead() needs an attention tensor');
  const { layers, heads, rows, cols } = tensor;
  if (!Number.isInteger(layer) || layer < 0 || layer >= layers) throw bad(`attnlab: layer ${layer} is out of range (0 to ${layers - 1})`);
  if (!Number.isInteger(head) || head < 0 || head >= heads) throw bad(`attnlab: head ${head} is out of range (0 to ${heads - 1})`);
  const size = rows * cols;
  const offset = (layer * heads + head) * size;
  if (tensor.data.length !== layers * heads * size) throw bad('attnlab: the attention tensor data does not match its shape');
  return { rows, cols, data: tensor.data.subarray(offset, offset + size) };
}
