// The engine side of a model, shared by the Web Worker (worker.mjs) and the worker-less path (Node, or
// useWorker: false): turns bytes into an engine Model and runs translations and captions with validated options.
import { loadEngine } from './engine.mjs';
import { checkPixels } from './image.mjs';
import { AttnlabError, ERROR_CODES, checkSignal, toAttnlabError } from './errors.mjs';
import { speechCalls, validateTranscribeOptions } from './audio.mjs';

export const TASKS = ['translate', 'caption', 'transcribe'];

const LIMIT_NAMES = ['maxBeam', 'maxTextBytes', 'maxSourceTokens', 'maxTranslationLength', 'maxCaptionLength',
                     'minNoRepeatNgram', 'maxNoRepeatNgram', 'maxImageSide'];

/** The engine's own limits (attnlab::limits(), through engineInfo()), checked for shape once per engine. */
export function engineLimits(engine) {
  const limits = engine.engineInfo().limits;
  for (const name of LIMIT_NAMES) {
    if (!Number.isInteger(limits?.[name])) {
      throw new AttnlabError(ERROR_CODES.LOAD_FAILED, `attnlab: the engine reports no limit ${name}: web/dist is out of date`);
    }
  }
  return Object.freeze({ ...limits });
}

function requireLimits(limits) {
  if (limits === null || typeof limits !== 'object') throw new AttnlabError(ERROR_CODES.INTERNAL, 'attnlab: the engine limits are missing');
  return limits;
}

// The UTF-8 length of a string without lone surrogates (each half of a pair is 2 of the pair's 4 bytes).
function utf8Length(text) {
  let bytes = 0;
  for (let i = 0; i < text.length; ++i) {
    const unit = text.charCodeAt(i);
    bytes += unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3;
  }
  return bytes;
}

// An engine exception: the bindings throw Errors with the "attnlab: " prefix and a code (ERROR_CODES).
function engineError(error, fallback = ERROR_CODES.INTERNAL) {
  if (error instanceof Error) return toAttnlabError(error, fallback);
  return new AttnlabError(fallback, `attnlab: engine error (${String(error)})`);
}

const badInput = (message) => new AttnlabError(ERROR_CODES.BAD_INPUT, message);
const badOptions = (message) => new AttnlabError(ERROR_CODES.BAD_OPTIONS, message);

// The engine's option table (src/attnlab/attnlab.hpp, Option), in its words: "<name> must be <range>, got <value>".
function checkRange(name, value, range, accepts) {
  if (!Number.isInteger(value) || !accepts(value)) throw badOptions(`attnlab: ${name} must be ${range}, got ${value}`);
  return value;
}

function checkNoRepeatNgram(value, limits, defaultText) {
  const { minNoRepeatNgram, maxNoRepeatNgram } = limits;
  return checkRange('noRepeatNgram', value, `-1 (${defaultText}), 0 (off) or an integer from ${minNoRepeatNgram} to ${maxNoRepeatNgram}`,
                    (n) => n === -1 || n === 0 || (n >= minNoRepeatNgram && n <= maxNoRepeatNgram));
}

function checkBoolean(name, value) {
  if (typeof value !== 'boolean') throw badOptions(`attnlab: ${name} must be true or false, got ${value}`);
  return value;
}

function checkOptionsObject(options, method) {
  if (options === null || typeof options !== 'object') throw badOptions(`attnlab: ${method}() options must be an object`);
  checkSignal(options.signal, method);
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Checks translate()'s arguments against the engine's limits (engineLimits()); returns { beam, maxLength,
 * noRepeatNgram } with defaults filled in (noRepeatNgram -1: the engine's default). `text` may be an array of
 * texts: a bad element is refused with its index in the message ("attnlab: texts[2]: ...") and its usual code.
 */
export function validateTranslate(text, options = {}, limits) {
  if (Array.isArray(text)) {
    text.forEach((item, index) => {
      try {
        checkText(item, limits);
      } catch (error) {
        throw new AttnlabError(error.code, `attnlab: texts[${index}]: ${error.message.replace(/^attnlab: /, '')}`);
      }
    });
  } else {
    checkText(text, limits);
  }
  return checkTranslateOptions(options, limits);
}

// One text translate() takes: a non-empty string of valid Unicode within the engine's byte limit.
function checkText(text, limits) {
  const { maxTextBytes } = requireLimits(limits);
  if (typeof text !== 'string') throw badInput('attnlab: translate() needs the text as a string (or an array of strings)');
  if (text.trim() === '') throw badInput('attnlab: the text to translate is empty');
  // Refused rather than replaced by U+FFFD: embind's UTF-8 conversion would silently merge a lone high surrogate
  // with the next character into an unrelated code point (issue 8).
  const lone = LONE_SURROGATE.exec(text);
  if (lone) {
    const unit = lone[0].charCodeAt(0).toString(16).toUpperCase();
    throw badInput(`attnlab: the text has an unpaired UTF-16 surrogate (U+${unit}) at index ${lone.index}; it is not valid Unicode`);
  }
  const bytes = utf8Length(text);
  if (bytes > maxTextBytes) {
    throw badInput(`attnlab: the text is too long: ${bytes} bytes of UTF-8, at most ${maxTextBytes} are accepted`);
  }
}

function checkTranslateOptions(options, limits) {
  const { maxBeam, maxTranslationLength } = requireLimits(limits);
  checkOptionsObject(options, 'translate');
  const { beam = 1, maxLength = 0, noRepeatNgram = -1, beamTree = false, queryKey = false, rawScores = false,
          allLayers = false, shortlist } = options;
  checkRange('beam', beam, `an integer from 1 to ${maxBeam}`, (b) => b >= 1 && b <= maxBeam);
  checkRange('maxLength', maxLength, `an integer from 0 (automatic) to ${maxTranslationLength}`,
             (n) => n >= 0 && n <= maxTranslationLength);
  checkNoRepeatNgram(noRepeatNgram, limits, 'the default');
  checkBoolean('beamTree', beamTree);
  checkBoolean('queryKey', queryKey);
  checkBoolean('rawScores', rawScores);
  checkBoolean('allLayers', allLayers);
  if (shortlist !== undefined) checkBoolean('shortlist', shortlist);
  return { beam, maxLength, noRepeatNgram, beamTree, queryKey, rawScores, allLayers, shortlist };
}

/**
 * Checks caption()'s options against the engine's limits (engineLimits()); returns { beam, maxLength,
 * noRepeatNgram } with defaults filled in (maxLength 0 and noRepeatNgram -1: the model's).
 */
export function validateCaptionOptions(options = {}, limits) {
  const { maxBeam, maxCaptionLength } = requireLimits(limits);
  checkOptionsObject(options, 'caption');
  const { beam = 1, maxLength = 0, noRepeatNgram = -1, beamTree = false, recognize = false } = options;
  checkRange('beam', beam, `an integer from 1 to ${maxBeam}`, (b) => b >= 1 && b <= maxBeam);
  checkRange('maxLength', maxLength, `an integer from 0 (the model's default) to ${maxCaptionLength}`,
             (n) => n >= 0 && n <= maxCaptionLength);
  checkNoRepeatNgram(noRepeatNgram, limits, "the model's default");
  checkBoolean('beamTree', beamTree);
  checkBoolean('recognize', recognize);
  return { beam, maxLength, noRepeatNgram, beamTree, recognize };
}

/** The WRONG_TASK error for calling a method the model's task does not have. */
export function wrongTaskError(info, method) {
  return new AttnlabError(ERROR_CODES.WRONG_TASK, wrongTask(info, method));
}

/** The message for calling a method the model's task does not have. */
export function wrongTask(info, method) {
  const what = { translate: 'translates text: use translate()', caption: 'captions images: use caption()',
                 transcribe: 'transcribes speech: use transcribe()' }[info.task];
  const kind = { translate: 'translation', caption: 'captioning', transcribe: 'speech recognition' }[method];
  return `attnlab: ${method}() needs a ${kind} model, but this one ` +
         `(${info.architecture}) ${what ?? `has the task "${info.task}"`}`;
}

/** A Uint8Array over bytes (ArrayBuffer or any ArrayBufferView); throws for anything else. */
export function asBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw badInput('attnlab: model bytes must be an ArrayBuffer or a typed array');
}

/**
 * Creates an engine model from GGUF bytes on this realm's engine (its callers, index.mjs and worker.mjs, start that
 * engine first with the build and .wasm they chose), with a translation shortlist's bytes when given. Returns
 * { info, limits, translate(text, options), caption(pixels, options), transcribe(prepared, options), dispose() },
 * all synchronous; engine errors are thrown as Errors with the engine's message. info.shortlist is
 * { perSource, frequent } or null; translate() uses a loaded shortlist unless options.shortlist is false.
 */
export async function createEngineModel(bytes, shortlistBytes = null) {
  const engine = await loadEngine();
  const limits = engineLimits(engine);
  const data = asBytes(bytes);
  if (data.length === 0) throw new AttnlabError(ERROR_CODES.BAD_MODEL, 'attnlab: the model file is empty');
  let model;
  const buffer = new engine.ByteBuffer(data.length);
  try {
    buffer.view().set(data);
    model = new engine.Model(buffer);
  } catch (error) {
    throw engineError(error, ERROR_CODES.BAD_MODEL);
  } finally {
    buffer.delete();
  }
  let info;
  let speech = null;
  let disposed = false;
  try {
    info = model.info();
    if (!TASKS.includes(info.task)) {
      throw new AttnlabError(ERROR_CODES.BAD_MODEL,
                             `attnlab: this model's task is "${info.task}" (${info.architecture}), not one of ${TASKS.join(', ')}`);
    }
    if (info.task === 'transcribe') speech = speechCalls(model);
    info.shortlist = null;
    if (shortlistBytes !== null) {
      if (info.task !== 'translate') {
        throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, `attnlab: a shortlist is for translation models, and this one (${info.architecture}) does not translate`);
      }
      const shortlist = asBytes(shortlistBytes);
      if (shortlist.length === 0) throw new AttnlabError(ERROR_CODES.BAD_MODEL, 'attnlab: the shortlist file is empty');
      const buffer = new engine.ByteBuffer(shortlist.length);
      try {
        buffer.view().set(shortlist);
        model.setShortlist(buffer);
      } finally {
        buffer.delete();
      }
      info.shortlist = model.shortlistInfo();
    }
  } catch (error) {
    model.delete();
    throw engineError(error, ERROR_CODES.BAD_MODEL);
  }
  return {
    info,
    limits,
    translate(text, options) {
      if (info.task !== 'translate') throw wrongTaskError(info, 'translate');
      const { beam, maxLength, noRepeatNgram, beamTree, queryKey, rawScores, allLayers, shortlist } =
        validateTranslate(text, options, limits);
      if (shortlist && !info.shortlist) {
        throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, 'attnlab: shortlist: true needs a shortlist loaded with the model (loadModel\'s shortlist option)');
      }
      if (shortlist && queryKey) throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, 'attnlab: queryKey and shortlist cannot be asked together');
      if (info.shortlist && shortlist !== false && !queryKey) {
        // The nine-argument forms: every option explicit, the last one the shortlist.
        const call = Array.isArray(text) ? 'translateMany' : 'translate';
        try {
          return model[call](text, beam, maxLength, noRepeatNgram, beamTree, false, rawScores, allLayers, true);
        } catch (error) {
          throw engineError(error, ERROR_CODES.BAD_INPUT);
        }
      }
      // allLayers without rawScores takes the eight-argument form (raw scores imply every layer's weights).
      const layersOnly = allLayers && !rawScores;
      if (Array.isArray(text)) {
        // Several texts are decoded together, each as alone (attnlab::Model::translate of several texts), the
        // extras included (one engine call: the engine takes query/key text by text itself); an engine built
        // before translateMany takes them one by one.
        if (typeof model.translateMany !== 'function') return text.map((item) => this.translate(item, options));
        try {
          if (layersOnly) return model.translateMany(text, beam, maxLength, noRepeatNgram, beamTree, queryKey, false, true);
          if (queryKey || rawScores) return model.translateMany(text, beam, maxLength, noRepeatNgram, beamTree, queryKey, rawScores);
          return model.translateMany(text, beam, maxLength, noRepeatNgram, beamTree);
        } catch (error) {
          throw engineError(error, ERROR_CODES.BAD_INPUT);
        }
      }
      try {
        // The three-argument form is the engine's default rule, and what an engine built before the option takes.
        if (layersOnly) return model.translate(text, beam, maxLength, noRepeatNgram, beamTree, queryKey, false, true);
        if (rawScores) return model.translate(text, beam, maxLength, noRepeatNgram, beamTree, queryKey, true);
        if (queryKey) return model.translate(text, beam, maxLength, noRepeatNgram, beamTree, true);
        if (beamTree) return model.translate(text, beam, maxLength, noRepeatNgram, true);
        return noRepeatNgram === -1 ? model.translate(text, beam, maxLength) : model.translate(text, beam, maxLength, noRepeatNgram);
      } catch (error) {
        throw engineError(error, ERROR_CODES.BAD_INPUT);
      }
    },
    // pixels: { data: Uint8Array | Uint8ClampedArray (RGBA), width, height }
    caption(pixels, options) {
      if (info.task !== 'caption') throw wrongTaskError(info, 'caption');
      const { beam, maxLength, noRepeatNgram, beamTree, recognize } = validateCaptionOptions(options, limits);
      let checked;
      try {
        checked = checkPixels(pixels);
      } catch (error) {
        throw toAttnlabError(error, ERROR_CODES.BAD_INPUT);
      }
      try {
        if (recognize) {
          return model.caption(checked.data, checked.width, checked.height, beam, maxLength, noRepeatNgram, beamTree, true);
        }
        if (beamTree) return model.caption(checked.data, checked.width, checked.height, beam, maxLength, noRepeatNgram, true);
        return model.caption(checked.data, checked.width, checked.height, beam, maxLength, noRepeatNgram);
      } catch (error) {
        throw engineError(error, ERROR_CODES.BAD_INPUT);
      }
    },
    // prepared: audio.mjs prepareAudio()'s { bytes } or { samples, sampleRate }
    transcribe(prepared, options) {
      if (info.task !== 'transcribe') throw wrongTaskError(info, 'transcribe');
      const { beam, ctcWeight, lmWeight, beamTree } = validateTranscribeOptions(options, limits);
      // A model terminated while its caller read or decoded the audio (DirectModel awaits that inside its turn).
      if (disposed) throw new AttnlabError(ERROR_CODES.CLOSED, 'attnlab: the model was terminated');
      try {
        return speech.transcribe(prepared, { beam, ctcWeight, lmWeight, beamTree });
      } catch (error) {
        throw engineError(error);
      }
    },
    dispose() {
      disposed = true;
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
    /** Diagnostic, not API: engineInfo() of the engine that runs this model ({ build, threads, ... }). */
    engineInfo() {
      return engine.engineInfo();
    },
  };
}
