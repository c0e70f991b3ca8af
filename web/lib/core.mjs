// The engine side of a model, shared by the Web Worker (worker.mjs) and the worker-less path (Node, or
// useWorker: false): turns bytes into an engine Model and runs translations and captions with validated options.
import { loadEngine } from './engine.mjs';
import { checkPixels } from './image.mjs';

export const MAX_BEAM = 64;
export const MAX_LENGTH = 1000;
export const MAX_CAPTION_LENGTH = 200;  // the engine's limit (kMaxCaptionLength)
export const MAX_NO_REPEAT_NGRAM = 8;  // the engine's limit (captioner.cpp, decode/search.cpp)
export const TASKS = ['translate', 'caption'];

function engineError(error) {
  if (error instanceof Error) return error;
  return new Error(`attnlab: engine error (${String(error)})`);
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Checks translate()'s arguments; returns { beam, maxLength } with defaults filled in. */
export function validateTranslate(text, options = {}) {
  if (typeof text !== 'string') throw new Error('attnlab: translate() needs the text as a string');
  if (text.trim() === '') throw new Error('attnlab: the text to translate is empty');
  // Refused rather than replaced by U+FFFD: embind's UTF-8 conversion would silently merge a lone high surrogate
  // with the next character into an unrelated code point (issue 8).
  const lone = LONE_SURROGATE.exec(text);
  if (lone) {
    const unit = lone[0].charCodeAt(0).toString(16).toUpperCase();
    throw new Error(`attnlab: the text has an unpaired UTF-16 surrogate (U+${unit}) at index ${lone.index}; it is not valid Unicode`);
  }
  if (options === null || typeof options !== 'object') throw new Error('attnlab: translate() options must be an object');
  const { beam = 1, maxLength = 0 } = options;
  if (!Number.isInteger(beam) || beam < 1 || beam > MAX_BEAM) {
    throw new Error(`attnlab: beam must be an integer from 1 to ${MAX_BEAM}, got ${beam}`);
  }
  if (!Number.isInteger(maxLength) || maxLength < 0 || maxLength > MAX_LENGTH) {
    throw new Error(`attnlab: maxLength must be an integer from 0 (automatic) to ${MAX_LENGTH}, got ${maxLength}`);
  }
  return { beam, maxLength };
}

/**
 * Checks caption()'s options; returns { beam, maxLength, noRepeatNgram } with defaults filled in (maxLength 0 and
 * noRepeatNgram -1: the model's).
 */
export function validateCaptionOptions(options = {}) {
  if (options === null || typeof options !== 'object') throw new Error('attnlab: caption() options must be an object');
  const { beam = 1, maxLength = 0, noRepeatNgram = -1 } = options;
  if (!Number.isInteger(beam) || beam < 1 || beam > MAX_BEAM) {
    throw new Error(`attnlab: beam must be an integer from 1 to ${MAX_BEAM}, got ${beam}`);
  }
  if (!Number.isInteger(maxLength) || maxLength < 0 || maxLength > MAX_CAPTION_LENGTH) {
    throw new Error(`attnlab: maxLength must be an integer from 0 (the model's default) to ${MAX_CAPTION_LENGTH}, got ${maxLength}`);
  }
  if (!Number.isInteger(noRepeatNgram) || !(noRepeatNgram === -1 || noRepeatNgram === 0 ||
                                            (noRepeatNgram >= 2 && noRepeatNgram <= MAX_NO_REPEAT_NGRAM))) {
    throw new Error(`attnlab: noRepeatNgram must be -1 (the model's default), 0 (off) or an integer from 2 to ${MAX_NO_REPEAT_NGRAM}, got ${noRepeatNgram}`);
  }
  return { beam, maxLength, noRepeatNgram };
}

/** The message for calling a method the model's task does not have. */
export function wrongTask(info, method) {
  const what = { translate: 'translates text: use translate()', caption: 'captions images: use caption()' }[info.task];
  return `attnlab: ${method}() needs a ${method === 'translate' ? 'translation' : 'captioning'} model, but this one ` +
         `(${info.architecture}) ${what ?? `has the task "${info.task}"`}`;
}

/** A Uint8Array over bytes (ArrayBuffer or any ArrayBufferView); throws for anything else. */
export function asBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new Error('attnlab: model bytes must be an ArrayBuffer or a typed array');
}

/**
 * Creates an engine model from GGUF bytes. Returns { info, translate(text, options), caption(pixels, options),
 * dispose() }, all synchronous; engine errors are thrown as Errors with the engine's message.
 */
export async function createEngineModel(bytes, { wasmBinary } = {}) {
  const engine = await loadEngine(wasmBinary ? { wasmBinary } : undefined);
  const data = asBytes(bytes);
  if (data.length === 0) throw new Error('attnlab: the model file is empty');
  let model;
  const buffer = new engine.ByteBuffer(data.length);
  try {
    buffer.view().set(data);
    model = new engine.Model(buffer);
  } catch (error) {
    throw engineError(error);
  } finally {
    buffer.delete();
  }
  let info;
  try {
    info = model.info();
    if (!TASKS.includes(info.task)) {
      throw new Error(`attnlab: this model's task is "${info.task}" (${info.architecture}), not "translate" or "caption"`);
    }
  } catch (error) {
    model.delete();
    throw engineError(error);
  }
  return {
    info,
    translate(text, options) {
      if (info.task !== 'translate') throw new Error(wrongTask(info, 'translate'));
      const { beam, maxLength } = validateTranslate(text, options);
      try {
        return model.translate(text, beam, maxLength);
      } catch (error) {
        throw engineError(error);
      }
    },
    // pixels: { data: Uint8Array | Uint8ClampedArray (RGBA), width, height }
    caption(pixels, options) {
      if (info.task !== 'caption') throw new Error(wrongTask(info, 'caption'));
      const { beam, maxLength, noRepeatNgram } = validateCaptionOptions(options);
      const { data, width, height } = checkPixels(pixels);
      try {
        return model.caption(data, width, height, beam, maxLength, noRepeatNgram);
      } catch (error) {
        throw engineError(error);
      }
    },
    dispose() {
      model.delete();
    },
    /**
     * Diagnostic (scripts/soak.mjs), not API: { wasmBytes, mallocBytes } of this realm's engine: the wasm memory size
     * (it only grows) and malloc's bytes in use (null with a wasm built before engineMemory existed).
     */
    memoryStats() {
      const wasmBytes = engine.HEAP8.buffer.byteLength;
      const mallocBytes = typeof engine.engineMemory === 'function' ? engine.engineMemory().mallocBytes : null;
      return { wasmBytes, mallocBytes };
    },
  };
}
