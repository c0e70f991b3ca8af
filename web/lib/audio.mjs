// Audio for transcribe(): every accepted input becomes either the bytes of a WAV/FLAC file (decoded by the engine,
// in the worker or in Node) or mono samples with their rate, checked here so that a bad input is a clear message.
//   Float32Array            mono samples in [-1, 1]; options.sampleRate (Hz) is required
//   AudioBuffer             its channels mixed to mono by their mean, at its own sampleRate
//   Blob / File, ArrayBuffer, Uint8Array (or another view)
//                           WAV or FLAC (told apart by their first bytes) go to the engine as bytes; in a browser any
//                           other format is decoded by the page's decodeAudioData (an OfflineAudioContext), in Node
//                           it is refused
// The engine then refuses empty, too short (fewer feature frames than the model's time reduction: 4, about 55 ms,
// for the shipped one), too long (over its maxSeconds) and non-finite audio, and rates outside 8..48 kHz, each with
// its own message.

import { isNode, loadEngine } from './engine.mjs';
import { AttnlabError } from './errors.mjs';

const KINDS = 'a Float32Array (with options.sampleRate), an AudioBuffer, or a Blob, ArrayBuffer or Uint8Array of a WAV or FLAC file';

/** The module's AttnlabError (ATTNLAB_BAD_INPUT, ATTNLAB_BAD_OPTIONS, or ATTNLAB_ABORTED as an AbortError). */
export function audioError(message, code = 'ATTNLAB_BAD_INPUT') {
  return new AttnlabError(code, message);
}

/** True when the bytes start like a RIFF/WAVE file or a FLAC stream (after an optional ID3v2 tag). */
export function sniffAudio(bytes) {
  const text = (at, n) => String.fromCharCode(...bytes.subarray(at, at + n));
  if (bytes.length >= 12 && ['RIFF', 'RF64', 'RIFX'].includes(text(0, 4)) && text(8, 4) === 'WAVE') return 'wav';
  let at = 0;
  if (bytes.length >= 10 && text(0, 3) === 'ID3' && bytes.subarray(6, 10).every((b) => b < 0x80)) {
    at = 10 + ((bytes[6] << 21) | (bytes[7] << 14) | (bytes[8] << 7) | bytes[9]) + (bytes[5] & 0x10 ? 10 : 0);
  }
  if (bytes.length >= at + 4 && text(at, 4) === 'fLaC') return 'flac';
  return null;
}

function isAudioBuffer(input) {
  if (typeof globalThis.AudioBuffer === 'function' && input instanceof globalThis.AudioBuffer) return true;
  return !!input && typeof input === 'object' && typeof input.getChannelData === 'function' &&
         Number.isInteger(input.numberOfChannels) && typeof input.sampleRate === 'number';
}

/** An AudioBuffer's channels mixed to mono by their mean -> { samples, sampleRate }. */
export function samplesFromAudioBuffer(buffer) {
  const channels = buffer.numberOfChannels;
  if (channels < 1) throw audioError('the AudioBuffer has no channels');
  if (channels === 1) return { samples: new Float32Array(buffer.getChannelData(0)), sampleRate: buffer.sampleRate };
  const mixed = new Float64Array(buffer.length);
  for (let c = 0; c < channels; ++c) {
    const data = buffer.getChannelData(c);
    for (let i = 0; i < mixed.length; ++i) mixed[i] += data[i];
  }
  const samples = new Float32Array(mixed.length);
  for (let i = 0; i < mixed.length; ++i) samples[i] = mixed[i] / channels;
  return { samples, sampleRate: buffer.sampleRate };
}

/** Throws the module's abort error when the signal has fired. */
export function checkAborted(signal) {
  if (signal?.aborted) throw audioError('transcribe() was aborted', 'ATTNLAB_ABORTED');
}

/**
 * Checks transcribe()'s options against the engine's limits (engineLimits(): maxBeam); returns { beam, ctcWeight,
 * lmWeight, beamTree, sampleRate, signal } with the default beam 1, ctcWeight and lmWeight -1 (the model's: the
 * engine decides, and refuses a positive weight for a model without a CTC head or a language model) and beamTree
 * false.
 */
export function validateTranscribeOptions(options = {}, limits) {
  if (options === null || typeof options !== 'object') {
    throw audioError('transcribe() options must be an object', 'ATTNLAB_BAD_OPTIONS');
  }
  const { beam = 1, ctcWeight = -1, lmWeight = -1, beamTree = false, sampleRate, signal } = options;
  const maxBeam = limits?.maxBeam;
  if (!Number.isInteger(beam) || beam < 1 || (Number.isInteger(maxBeam) && beam > maxBeam)) {
    throw audioError(`beam must be an integer from 1 to ${maxBeam}, got ${beam}`, 'ATTNLAB_BAD_OPTIONS');
  }
  if (typeof ctcWeight !== 'number' || !(ctcWeight === -1 || (ctcWeight >= 0 && ctcWeight <= 1))) {
    throw audioError(`ctcWeight must be a number from 0 to 1 (or -1, the model's), got ${ctcWeight}`, 'ATTNLAB_BAD_OPTIONS');
  }
  if (typeof lmWeight !== 'number' || !(lmWeight === -1 || (lmWeight >= 0 && lmWeight <= 2))) {
    throw audioError(`lmWeight must be a number from 0 to 2 (or -1, the model's), got ${lmWeight}`, 'ATTNLAB_BAD_OPTIONS');
  }
  if (typeof beamTree !== 'boolean') {
    throw audioError(`beamTree must be true or false, got ${beamTree}`, 'ATTNLAB_BAD_OPTIONS');
  }
  if (sampleRate !== undefined && (!Number.isInteger(sampleRate) || sampleRate <= 0)) {
    throw audioError(`sampleRate must be a positive integer (Hz), got ${sampleRate}`, 'ATTNLAB_BAD_OPTIONS');
  }
  if (signal !== undefined && signal !== null && typeof signal.aborted !== 'boolean') {
    throw audioError('signal must be an AbortSignal', 'ATTNLAB_BAD_OPTIONS');
  }
  return { beam, ctcWeight, lmWeight, beamTree, sampleRate, signal };
}

// The browser's decoder, for formats the engine does not read (MP3, Ogg, WebM/Opus from a MediaRecorder, ...).
async function decodeInPage(bytes) {
  const Offline = globalThis.OfflineAudioContext ?? globalThis.webkitOfflineAudioContext;
  if (typeof Offline !== 'function') {
    throw audioError(`transcribe() reads WAV and FLAC here; this is neither, and there is no Web Audio decoder to try (${bytes.length} bytes)`);
  }
  // The context's own rate does not matter: decodeAudioData resamples to it, so ask for the engine's 16 kHz.
  const context = new Offline(1, 1, 16000);
  try {
    return samplesFromAudioBuffer(await context.decodeAudioData(bytes.slice().buffer));
  } catch (error) {
    throw audioError(`the audio is not WAV or FLAC, and the browser could not decode it either (${error?.message ?? error})`);
  }
}

/**
 * transcribe()'s input in the calling thread -> { bytes: Uint8Array } (a WAV/FLAC file, for the engine) or
 * { samples: Float32Array, sampleRate }, with owned: true where the buffer is a copy made here (not the caller's).
 * Resolves after reading a Blob or decoding another format in the page.
 */
export async function prepareAudio(input, options) {
  const { sampleRate, signal } = options;
  checkAborted(signal);
  if (input instanceof Float32Array) {
    if (sampleRate === undefined) {
      throw audioError('transcribe() needs options.sampleRate (in Hz) with a Float32Array of samples', 'ATTNLAB_BAD_OPTIONS');
    }
    return { samples: input, sampleRate };
  }
  if (isAudioBuffer(input)) return { ...samplesFromAudioBuffer(input), owned: true };
  let bytes, owned = false;
  if (typeof Blob === 'function' && input instanceof Blob) {
    try {
      bytes = new Uint8Array(await input.arrayBuffer());
    } catch (error) {
      throw audioError(`the audio Blob could not be read (${error?.message ?? error})`);
    }
    owned = true;
    checkAborted(signal);
  } else if (input instanceof ArrayBuffer) {
    bytes = new Uint8Array(input);
  } else if (ArrayBuffer.isView(input)) {
    bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  } else {
    throw audioError(`transcribe() needs ${KINDS}; got ${input === null ? 'null' : typeof input === 'object' ? input.constructor?.name ?? 'an object' : typeof input}`);
  }
  if (bytes.length === 0) throw audioError('the audio file is empty (0 bytes)');
  if (sniffAudio(bytes)) return { bytes, owned };
  if (isNode) {
    throw audioError(`transcribe() reads WAV and FLAC files in Node, and these ${bytes.length} bytes start like neither (convert other formats with sox or ffmpeg, or pass a Float32Array with options.sampleRate)`);
  }
  const decoded = await decodeInPage(bytes);
  checkAborted(signal);
  return { ...decoded, owned: true };
}

/**
 * transcribe() on an engine Model (core.mjs) that holds a speech recognizer: { transcribe(prepared, { beam,
 * ctcWeight, lmWeight, beamTree }) }, synchronous. The Model itself transcribes, so its weights are loaded once.
 */
export function speechCalls(model) {
  if (typeof model.transcribeFile !== 'function') throw audioError('the engine has no speech support: web/dist is out of date', 'ATTNLAB_INTERNAL');
  return {
    transcribe(prepared, { beam, ctcWeight, lmWeight = -1, beamTree = false }) {
      const start = performance.now();
      const tree = beamTree ? [true] : [];
      const result = prepared.bytes ? model.transcribeFile(prepared.bytes, beam, ctcWeight, lmWeight, ...tree)
                                    : model.transcribe(prepared.samples, prepared.sampleRate, beam, ctcWeight, lmWeight,
                                                       ...tree);
      result.timeMs = performance.now() - start;
      return result;
    },
  };
}

/** What of prepareAudio()'s result may be transferred to a worker: only buffers it made itself. */
export function transferablesOfAudio(audio) {
  if (!audio.owned) return [];
  return [(audio.bytes ?? audio.samples).buffer];
}

/**
 * The samples of a WAV or FLAC file, decoded by the engine in this thread: { samples: Float32Array (mono),
 * sampleRate, channels, encoding }. Rejects with the engine's message for anything else.
 */
export async function decodeAudio(input) {
  let bytes;
  if (typeof Blob === 'function' && input instanceof Blob) bytes = new Uint8Array(await input.arrayBuffer());
  else if (input instanceof ArrayBuffer) bytes = new Uint8Array(input);
  else if (ArrayBuffer.isView(input)) bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  else throw audioError('decodeAudio() needs a Blob, ArrayBuffer or Uint8Array of a WAV or FLAC file');
  const engine = await loadEngine();
  if (typeof engine.decodeAudio !== 'function') throw audioError('the engine has no speech support: web/dist is out of date', 'ATTNLAB_INTERNAL');
  return engine.decodeAudio(bytes);
}
