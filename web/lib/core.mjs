// The engine side of a model, shared by the Web Worker (worker.mjs) and the worker-less path (Node, or
// useWorker: false): turns bytes into an engine Model and runs translations with validated options.
import { loadEngine } from './engine.mjs';

export const MAX_BEAM = 64;
export const MAX_LENGTH = 1000;

function engineError(error) {
  if (error instanceof Error) return error;
  return new Error(`attnlab: engine error (${String(error)})`);
}

/** Checks translate()'s arguments; returns { beam, maxLength } with defaults filled in. */
export function validateTranslate(text, options = {}) {
  if (typeof text !== 'string') throw new Error('attnlab: translate() needs the text as a string');
  if (text.trim() === '') throw new Error('attnlab: the text to translate is empty');
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

/** A Uint8Array over bytes (ArrayBuffer or any ArrayBufferView); throws for anything else. */
export function asBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new Error('attnlab: model bytes must be an ArrayBuffer or a typed array');
}

/**
 * Creates an engine model from GGUF bytes. Returns { info, translate(text, options), dispose() }, all synchronous;
 * engine errors are thrown as Errors with the engine's message.
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
    if (info.task !== 'translate') {
      throw new Error(`attnlab: this model's task is "${info.task}" (${info.architecture}), not "translate"`);
    }
  } catch (error) {
    model.delete();
    throw engineError(error);
  }
  return {
    info,
    translate(text, options) {
      const { beam, maxLength } = validateTranslate(text, options);
      try {
        return model.translate(text, beam, maxLength);
      } catch (error) {
        throw engineError(error);
      }
    },
    dispose() {
      model.delete();
    },
  };
}
