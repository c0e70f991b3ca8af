// The module's one error class. Every rejection (and every throw) from attnlab is an AttnlabError whose `code`
// is one of ERROR_CODES, stable across versions, so callers branch on the code rather than on the message; the
// message always starts with "attnlab: ". Engine errors get their code from the engine (src/attnlab/error.hpp's
// ErrorKind, mapped by the embind bindings); errors from a worker travel as { name, code, message } and are
// rebuilt here.

export const ERROR_CODES = Object.freeze({
  /** The text, image or audio is refused: empty, too long, not valid Unicode, not an image, a bad size. */
  BAD_INPUT: 'ATTNLAB_BAD_INPUT',
  /** An option is of the wrong type or outside its range (beam, maxLength, noRepeatNgram, sha256, ...). */
  BAD_OPTIONS: 'ATTNLAB_BAD_OPTIONS',
  /** The bytes are not a model the engine can run: not GGUF, truncated, wrong shapes, unknown architecture. */
  BAD_MODEL: 'ATTNLAB_BAD_MODEL',
  /** The model does not do what was asked: translate() on a captioner, caption() on a translator. */
  WRONG_TASK: 'ATTNLAB_WRONG_TASK',
  /** The model or the engine could not be fetched or read: network, HTTP status, a missing file, a SHA-256
   *  mismatch, a timeout, a worker that cannot start. */
  LOAD_FAILED: 'ATTNLAB_LOAD_FAILED',
  /** An AbortSignal aborted the load or the call; `name` is "AbortError". */
  ABORTED: 'ATTNLAB_ABORTED',
  /** The model was terminated or disposed (a worker holding no model answers "attnlab: no model is loaded"). */
  CLOSED: 'ATTNLAB_CLOSED',
  /** Anything else: a bug or the engine running out of memory. */
  INTERNAL: 'ATTNLAB_INTERNAL',
});

const KNOWN = new Set(Object.values(ERROR_CODES));

export class AttnlabError extends Error {
  /**
   * @param {string} code one of ERROR_CODES
   * @param {string} message starting with "attnlab: " (added when missing)
   * @param {{ cause?: unknown }} [options]
   */
  constructor(code, message, options) {
    super(String(message).startsWith('attnlab:') ? message : `attnlab: ${message}`, options);
    this.code = KNOWN.has(code) ? code : ERROR_CODES.INTERNAL;
    // AbortError is what fetch() and the DOM use for an abort, so `error.name === 'AbortError'` checks work.
    this.name = this.code === ERROR_CODES.ABORTED ? 'AbortError' : 'AttnlabError';
  }
}

/**
 * `error` as an AttnlabError: itself when it is one; an engine Error keeps its code (set by the bindings); any
 * other error or value gets `fallback` and becomes the cause.
 */
export function toAttnlabError(error, fallback = ERROR_CODES.INTERNAL) {
  if (error instanceof AttnlabError) return error;
  if (error instanceof Error) {
    const code = KNOWN.has(error.code) ? error.code : fallback;
    return new AttnlabError(code, error.message, { cause: error });
  }
  return new AttnlabError(fallback, `attnlab: ${String(error)}`, { cause: error });
}

/** What crosses a worker boundary (structured clone drops an Error's own properties in some engines). */
export function serializeError(error) {
  const e = toAttnlabError(error);
  return { name: e.name, code: e.code, message: e.message };
}

/** The AttnlabError a worker sent; an old-style string message is INTERNAL. */
export function deserializeError(data) {
  if (typeof data === 'string') return new AttnlabError(ERROR_CODES.INTERNAL, data);
  return new AttnlabError(data?.code, data?.message ?? 'attnlab: the engine worker sent an error without a message');
}

/** The ABORTED error for `what` ("the translation", "loading x.gguf"), with the signal's reason as its cause. */
export function abortError(what, signal) {
  return new AttnlabError(ERROR_CODES.ABORTED, `attnlab: ${what} was aborted`, { cause: signal?.reason });
}

/** Throws abortError(what, signal) when the signal has aborted. */
export function throwIfAborted(signal, what) {
  if (signal?.aborted) throw abortError(what, signal);
}

/** Checks that `signal` is an AbortSignal (or absent). */
export function checkSignal(signal, method) {
  if (signal === undefined || signal === null) return;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, `attnlab: ${method}() signal must be an AbortSignal`);
  }
}
