export interface EngineInfo {
  /** The engine version, e.g. "0.1.0". */
  version: string;
  /** The SIMD instruction set the kernels were compiled for. */
  simd: string;
  /** True in the WebAssembly build. */
  wasm: boolean;
  /** What the engine enforces: options and inputs beyond these are refused with a message. */
  limits: EngineLimits;
}

/** The engine's limits (attnlab::limits() in C++, `attnlab version --json` on the command line). */
export interface EngineLimits {
  /** Widest beam, for translate() and caption() (64). */
  maxBeam: number;
  /** Longest text translate() takes, in UTF-8 bytes (16384). */
  maxTextBytes: number;
  /** Most source tokens a translation model reads, its end-of-sentence token included (400). */
  maxSourceTokens: number;
  /** Largest translate() maxLength (1000). */
  maxTranslationLength: number;
  /** Largest caption() maxLength (200). */
  maxCaptionLength: number;
  /** Shortest and longest n-gram caption() noRepeatNgram may name (2 and 8; 0 is off, -1 the model's own). */
  minNoRepeatNgram: number;
  maxNoRepeatNgram: number;
  /** Largest width and height caption() takes, in pixels (8192). */
  maxImageSide: number;
}

/**
 * A row-major matrix: element (i, j) is `data[i * cols + j]`. Matrices are Float32Arrays rather than arrays of
 * rows so they cross the worker boundary without copying; `matrixRow(m, i)` gives row i.
 */
export interface Matrix {
  rows: number;
  cols: number;
  data: Float32Array;
}

/**
 * A Transformer's attention, every layer and head: `data` is row-major [layers × heads × rows × cols], so
 * weight (layer l, head h, row i, column j) is `data[((l * heads + h) * rows + i) * cols + j]`. Row i is a query
 * position; in the attention weights each row is a softmax over the key positions (columns) and sums to 1, in the
 * raw scores (`encoderSelfScores`, `decoderSelfScores`, `crossScores`), the queries and the keys it does not.
 * `attentionHead(t, l, h)` gives one head as a Matrix view.
 */
export interface AttentionTensor {
  layers: number;
  heads: number;
  rows: number;
  cols: number;
  data: Float32Array;
}

export interface Translation {
  /** The detokenized output. */
  text: string;
  /** The source pieces as the model saw them (SentencePiece pieces, "▁" marks a word start), ending with "</s>". */
  sourceTokens: string[];
  /** The output pieces, without the final "</s>". */
  targetTokens: string[];
  sourceIds: number[];
  targetIds: number[];
  /** The attention score function: "additive", "dot", "general", "cosine" or "scaled_dot". */
  scoreFunction: string;
  /** Stage 2: attention weights, [targetTokens.length × sourceTokens.length]; each row sums to 1. */
  attention: Matrix;
  /** Stage 1: the raw scores the weights are the softmax of, same shape as attention. */
  scores: Matrix;
  /** Stage 3: the context vector of each output token, [targetTokens.length × d] = attention · values. */
  context: Matrix;
  /** The source annotations (encoder states) the context vectors are weighted sums of, [sourceTokens.length × d]. */
  values: Matrix;
  /** Σ log p of the returned tokens (and of the end of sentence when it was produced). */
  logProbability: number;
  /** "eos": the model ended the sentence; "maxLength": it was cut at the length limit (a MAX_LENGTH warning too). */
  stopReason: 'eos' | 'maxLength';
  /** What the caller should know about this result (usually none), computed by the engine. */
  warnings: TranslationWarning[];
  // Transformer models only (absent for RNN models); `attention` and `scores` above are then the last decoder
  // layer's cross-attention weights and scaled dot products, averaged over heads. The decoder's positions are its
  // inputs: "<s>" then targetTokens[0 .. T-2], and position i is the step that wrote targetTokens[i]
  // (T = targetTokens.length).
  /** [encoder layers × heads × S × S], S = sourceTokens.length: source position i attends to source position j. */
  encoderSelfAttention?: AttentionTensor;
  // With { allLayers: true } or { rawScores: true } on a Transformer only (one more decoder pass over the output):
  /** [decoder layers × heads × T × T]: causal, zero above the diagonal (a position sees only itself and earlier ones). */
  decoderSelfAttention?: AttentionTensor;
  /** [decoder layers × heads × T × S]: decoder position i attends to source token j. */
  crossAttention?: AttentionTensor;
  /** With { beamTree: true } only: every hypothesis the search kept, step by step. */
  beamTree?: BeamTree;
  // With { queryKey: true } on a Transformer only: what encoderSelfAttention = softmax(q·k/√d_k) is made of.
  /** [encoder layers × heads × S × d_k]: each head's query of each source token. */
  encoderQueries?: AttentionTensor;
  /** [encoder layers × heads × S × d_k]: each head's key of each source token. */
  encoderKeys?: AttentionTensor;
  /** With { queryKey: true } or { rawScores: true }: [encoder layers × heads × S × S], q·k/√d_k before the softmax. */
  encoderSelfScores?: AttentionTensor;
  // With { rawScores: true } on a Transformer only: the raw scores whose softmax over each row is that row of
  // decoderSelfAttention / crossAttention, from the same pass.
  /** [decoder layers × heads × T × T]: q·k/√d_k before the softmax; -Infinity above the diagonal (the causal mask). */
  decoderSelfScores?: AttentionTensor;
  /** [decoder layers × heads × T × S]: q·k/√d_k before the softmax. */
  crossScores?: AttentionTensor;
}

/** One hypothesis a search kept after one step; its parents, back to step 0, are its prefix. */
export interface BeamNode {
  /** The output position it fills, from 0. */
  step: number;
  /** Index in BeamTree.nodes of its prefix (a node at step - 1); -1 at step 0. */
  parent: number;
  /** The token it appends: the end-of-sentence token for a hypothesis that ended so. */
  id: number;
  /** That token's piece ("</s>" for the end of sentence). */
  piece: string;
  /** log p of the token given the prefix. */
  logProbability: number;
  /** Σ log p from the first token through this one. */
  cumulative: number;
  /** What the search ranked it by: cumulative / length for a finished one with beam > 1, else cumulative. */
  score: number;
  /** The hypothesis ends here (with the end of sentence, or at the length limit). */
  finished: boolean;
}

/** The search, step by step: nodes in step order; the path from `winner` back to step 0 is the output
 *  (and its "</s>" when it has one). */
export interface BeamTree {
  nodes: BeamNode[];
  winner: number;
}

/**
 * UNKNOWN_INPUT: `share` (0..1) of the source pieces are unknown to the model's vocabulary (<unk> or byte
 * fallbacks: a script or language it was not trained on), at least 0.25, so the translation is likely meaningless.
 * LOW_CONFIDENCE: the model gave its own output a mean log-probability of `logProbabilityPerToken` per token
 * (its end token included), below -1.2: the input is likely unlike the sentences it learned from.
 * MAX_LENGTH: the translation was cut at the maximum length.
 */
export type TranslationWarning =
  | { code: 'UNKNOWN_INPUT'; message: string; share: number }
  | { code: 'LOW_CONFIDENCE'; message: string; logProbabilityPerToken: number }
  | { code: 'MAX_LENGTH'; message: string };

export interface TranslateOptions {
  /** Beam width, 1 (greedy, the default) to limits.maxBeam (64). */
  beam?: number;
  /** At most this many output tokens, up to limits.maxTranslationLength (1000); 0 (the default) means 1.5 × the
   *  source length + 10. */
  maxLength?: number;
  /**
   * No target n-gram of this size twice: limits.minNoRepeatNgram to limits.maxNoRepeatNgram (2 to 8), 0 for no
   * such rule, -1 (the default) for the engine's default (docs/decoding.md), which stops repetition loops on
   * input the model does not know.
   */
  noRepeatNgram?: number;
  /** Also return `beamTree`, every hypothesis the search kept (default false: nothing extra is computed). */
  beamTree?: boolean;
  /** Transformers: also return encoderQueries, encoderKeys and encoderSelfScores (default false). */
  queryKey?: boolean;
  /** Transformers: also return every attention's raw scores, encoderSelfScores, decoderSelfScores and crossScores
   *  (default false: nothing extra is computed); implies allLayers. */
  rawScores?: boolean;
  /** Transformers: also return decoderSelfAttention and crossAttention, every decoder layer's and head's weights
   *  (default false: that takes one more decoder pass over the chosen output, an eighth of a paragraph's time). */
  allLayers?: boolean;
  /** Score only the target pieces of the model's shortlist (LoadOptions.shortlist) for the texts decoded together:
   *  faster, at a BLEU cost measured in docs/performance.md. Default: true when a shortlist was loaded, except
   *  with queryKey (that call decodes over the whole vocabulary); true without one rejects with
   *  ATTNLAB_BAD_OPTIONS, as does true with queryKey. */
  shortlist?: boolean;
  /** Cancels the call: it rejects with an AbortError (code ATTNLAB_ABORTED); see Model. */
  signal?: AbortSignal;
}

/** A caption and where each of its tokens looked. */
export interface Caption {
  /** The caption. */
  text: string;
  /** Its SentencePiece pieces ("▁" marks a word start), without the final "</s>". */
  tokens: string[];
  ids: number[];
  /**
   * [tokens.length × gridHeight·gridWidth]: row i is token i's attention over the encoder's feature grid,
   * row-major over (y, x); each row sums to 1. Cell (y, x) covers the part of the photo from (x/gridWidth,
   * y/gridHeight) to ((x+1)/gridWidth, (y+1)/gridHeight) of its width and height.
   */
  attention: Matrix;
  /** The raw scores the weights are made from (before the softmax), same shape as attention. */
  scores: Matrix;
  /** The feature grid (7 × 7 for MobileNetV2). */
  gridWidth: number;
  gridHeight: number;
  /** Σ log p of the tokens (and of the end of the caption when it was produced). */
  logProbability: number;
  /** With { beamTree: true } only: every hypothesis the search kept, step by step. */
  beamTree?: BeamTree;
  /**
   * With { recognize: true } only: the 5 ImageNet classes MobileNetV2's own classifier finds most probable, computed
   * in the same pass as the grid, most probable first. It says what the image encoder sees, which a captioner
   * trained on Flickr8k alone may have no words for.
   */
  recognized?: Recognition[];
}

/** One ImageNet class the image encoder sees. */
export interface Recognition {
  /** The class name, e.g. "tabby, tabby cat". */
  label: string;
  /** MobileNetV2's output index, 0 to 1000 (0 is "background"). */
  index: number;
  /** Softmax over the 1001 classes. */
  probability: number;
}

export interface CaptionOptions {
  /** Beam width, 1 (greedy, the default) to limits.maxBeam (64). */
  beam?: number;
  /** At most this many tokens, up to limits.maxCaptionLength (200); 0 (the default) means the model's own limit. */
  maxLength?: number;
  /**
   * No token n-gram of this size twice in the caption: limits.minNoRepeatNgram to limits.maxNoRepeatNgram (2 to
   * 8), or 0 for no such rule. -1 (the default) means the model's own setting (the shipped Flickr8k captioner's
   * is 3).
   */
  noRepeatNgram?: number;
  /** Also return `beamTree`, every hypothesis the search kept (default false: nothing extra is computed). */
  beamTree?: boolean;
  /**
   * Also return `recognized`, what MobileNetV2's ImageNet classifier sees (default false). Needs a file with the
   * classifier (info.recognizesImages; the shipped q8_0 and 14×14 captioners); otherwise rejects with
   * ATTNLAB_BAD_MODEL.
   */
  recognize?: boolean;
  /** Cancels the call: it rejects with an AbortError (code ATTNLAB_ABORTED); see Model. */
  signal?: AbortSignal;
}

/** RGBA pixels, row-major, 4 bytes a pixel (alpha is ignored): what ImageData holds, and what works in Node. */
export interface RgbaPixels {
  data: Uint8Array | Uint8ClampedArray;
  width: number;
  height: number;
}

/**
 * What caption() takes. In a browser an ImageBitmap is transferred to the worker (it is closed for the caller)
 * and read there; elements and canvases are drawn at their natural size on the calling thread. Sides are 1 to
 * 8192 pixels.
 */
export type CaptionImage =
  | RgbaPixels
  | ImageData
  | ImageBitmap
  | HTMLImageElement
  | HTMLCanvasElement
  | HTMLVideoElement
  | OffscreenCanvas;

export interface ModelInfo {
  /** general.architecture, e.g. "attnlab.bahdanau". */
  architecture: string;
  /** "translate" (translate() works), "caption" (caption() works) or "transcribe" (transcribe() works). */
  task: string;
  /** A captioner whose file holds MobileNetV2's ImageNet classifier: caption() takes { recognize: true }. */
  recognizesImages: boolean;
  /** The translation shortlist loaded with the model (LoadOptions.shortlist), or null. */
  shortlist: { perSource: number; frequent: number } | null;
  /** Every GGUF metadata key with a printable value (long arrays summarized). */
  metadata: Record<string, string>;
}

export interface Progress {
  /** Bytes received so far. */
  loaded: number;
  /** Expected bytes (Content-Length or the `bytes` option); 0 when unknown. */
  total: number;
}

export interface LoadOptions {
  /** Called as bytes arrive (and once with loaded === total for a cached copy or given bytes). */
  onProgress?: (progress: Progress) => void;
  /** Aborts the download; the promise rejects with a message saying so. */
  signal?: AbortSignal;
  /** Milliseconds before the download is given up (0 = no limit, the default). */
  timeout?: number;
  /** Expected SHA-256 (hex) of the file: checked before use; on a mismatch nothing is cached or loaded. */
  sha256?: string;
  /** Expected size in bytes, for progress when the server sends no Content-Length. */
  bytes?: number;
  /** Use the Cache API ("attnlab-v1") for the file and the wasm (default true; ignored where there is none). */
  cache?: boolean;
  /**
   * Run the engine in a worker: a module Web Worker in browsers (the default there), a worker_threads Worker in
   * Node (default false: the calling thread, which a long call blocks). The API is the same either way.
   */
  useWorker?: boolean;
  /** With a model name: the manifest entry's dtype ("q8_0", "f16", ...); default: the entry whose id is the name. */
  dtype?: string;
  /** With a model name: the folder holding models/manifest.json ("{name}" replaced), instead of env.modelsBase. */
  modelsBase?: string | URL;
  /**
   * A translation shortlist (models/weights/<pair>.shortlist.gguf) that translate() then uses: true for the one
   * the manifest names beside a model name (checked by its SHA-256), a URL or path, or the file's bytes. One made
   * for other vocabularies than the model's rejects with ATTNLAB_BAD_MODEL.
   */
  shortlist?: boolean | string | URL | ArrayBuffer | ArrayBufferView;
  /** Expected SHA-256 (hex) of a shortlist given by URL, path or bytes. */
  shortlistSha256?: string;
}

export interface Model {
  /** The model's metadata. */
  readonly info: ModelInfo;
  /** The limits of the engine this model runs in (the same as engineInfo().limits). */
  readonly limits: EngineLimits;
  /** True when the weights came from the Cache API rather than the network. */
  readonly fromCache: boolean;
  /** True when the engine runs in a worker (a Web Worker, or a Node worker_threads Worker). */
  readonly inWorker: boolean;
  /**
   * Translates one sentence; calls run one at a time in call order. Rejects for empty text, text with an unpaired
   * UTF-16 surrogate (not valid Unicode), text over limits.maxTextBytes (ATTNLAB_BAD_INPUT), or bad options
   * (ATTNLAB_BAD_OPTIONS). When options.signal aborts, the call rejects at once with an AbortError: a queued call
   * is dropped; a running one in a worker stops, the worker is replaced by a new one that reloads the weights (kept
   * on the calling thread) and the queued calls run there; on the calling thread (useWorker: false) the engine
   * cannot be interrupted, so only calls that have not started can be aborted.
   */
  translate(text: string, options?: TranslateOptions): Promise<Translation>;
  /**
   * Translates several texts (a paragraph's sentences) in one call: they are decoded together, every decoder
   * step reading each weight once for all of them, and each result is what translate(text) gives for that text
   * alone (the same tokens, stopReason and warnings; attention equal up to float rounding), in input order. An
   * empty array resolves to []. A bad element rejects the whole call, before anything is translated, with the
   * code translate(text) would give it and its index in the message ("attnlab: texts[2]: the text to translate
   * is empty"); options.signal works as for one text. With rawScores the raw scores are the batch's own (equal
   * to one text's up to float rounding); with queryKey the engine takes the texts one by one inside the call.
   */
  translate(texts: readonly string[], options?: TranslateOptions): Promise<Translation[]>;
  /**
   * Captions an image (a model whose info.task is "caption"); calls run one at a time in call order. Rejects
   * with a message for a translation model, anything that is not an accepted image, a side that is not an
   * integer from 1 to 8192, RGBA data whose length is not width × height × 4, bad options, or a captioner file
   * without an image encoder. The model stays usable after any of these.
   */
  caption(image: CaptionImage, options?: CaptionOptions): Promise<Caption>;
  /**
   * Transcribes speech (a model whose info.task is "transcribe"); calls run one at a time in call order. WAV and
   * FLAC are decoded by the engine (in the worker, or in Node); in a browser a Blob or bytes of another format are
   * decoded by the page's decodeAudioData first, in Node they are refused. Rejects with an `attnlab:` message for
   * empty, too short (under ~50 ms), too long (over 60 s) or non-finite audio, a rate outside 8..48 kHz, a
   * Float32Array without options.sampleRate, a file that is not audio, an unsupported WAV encoding, a damaged
   * FLAC, bad options, an aborted signal, or a model that does not transcribe. The model stays usable after any.
   */
  transcribe(input: TranscribeInput, options?: TranscribeOptions): Promise<Transcription>;
  /** Waits for queued calls, then frees the engine memory (and the worker); later calls reject. */
  dispose(): Promise<void>;
  /** Stops now: pending and later calls reject with "attnlab: the model was terminated" (ATTNLAB_CLOSED). */
  terminate(): void;
}

/**
 * Every rejection and throw from attnlab: `code` is stable, the message starts with "attnlab: ". ATTNLAB_CLOSED:
 * the model was terminated or disposed (its worker answers any later request "attnlab: no model is loaded" with
 * this code); ATTNLAB_LOAD_FAILED includes the wasm engine not loading, wherever it starts.
 */
export type AttnlabErrorCode =
  | 'ATTNLAB_BAD_INPUT'
  | 'ATTNLAB_BAD_OPTIONS'
  | 'ATTNLAB_BAD_MODEL'
  | 'ATTNLAB_WRONG_TASK'
  | 'ATTNLAB_LOAD_FAILED'
  | 'ATTNLAB_ABORTED'
  | 'ATTNLAB_CLOSED'
  | 'ATTNLAB_INTERNAL';

export class AttnlabError extends Error {
  constructor(code: AttnlabErrorCode, message: string, options?: { cause?: unknown });
  readonly code: AttnlabErrorCode;
  /** "AbortError" for ATTNLAB_ABORTED, else "AttnlabError". */
  name: string;
}

/** The codes by short name: ERROR_CODES.BAD_INPUT === 'ATTNLAB_BAD_INPUT', .... */
export const ERROR_CODES: {
  readonly BAD_INPUT: 'ATTNLAB_BAD_INPUT';
  readonly BAD_OPTIONS: 'ATTNLAB_BAD_OPTIONS';
  readonly BAD_MODEL: 'ATTNLAB_BAD_MODEL';
  readonly WRONG_TASK: 'ATTNLAB_WRONG_TASK';
  readonly LOAD_FAILED: 'ATTNLAB_LOAD_FAILED';
  readonly ABORTED: 'ATTNLAB_ABORTED';
  readonly CLOSED: 'ATTNLAB_CLOSED';
  readonly INTERNAL: 'ATTNLAB_INTERNAL';
};

/**
 * Loads a translation or captioning model (GGUF) from a URL, a file path (Node), its bytes, or by name
 * ('bahdanau-en-de', with options.dtype) through a models/manifest.json (web/README.md, "Models by name"). In a browser the file and the wasm
 * are fetched with progress, checked against `sha256` and kept in the Cache API; the engine runs in a Web Worker.
 * Rejects with a message for a failed download, a SHA-256 mismatch, an abort or timeout, bytes that are not a
 * GGUF model, or a model that neither translates nor captions.
 */
export function loadModel(source: string | URL | ArrayBuffer | ArrayBufferView, options?: LoadOptions): Promise<Model>;

/** Row i of a matrix, as a view (no copy). */
export function matrixRow(matrix: Matrix, i: number): Float32Array;

/** What transcribe() takes: mono samples (with options.sampleRate), an AudioBuffer, or an audio file's bytes. */
export type TranscribeInput = Float32Array | AudioBuffer | Blob | ArrayBuffer | ArrayBufferView;

export interface TranscribeOptions {
  /** Beam width, 1 (greedy, the default) to limits.maxBeam. */
  beam?: number;
  /**
   * λ of the joint CTC/attention score (1 − λ) log p_att + λ log p_ctc, 0 (attention only) to 1; -1 (the default)
   * is the model's own (0.3 for the shipped model; 0 for a file without a CTC head, which refuses a positive one).
   * With λ > 0, beam 1 is the CTC-aware greedy search.
   */
  ctcWeight?: number;
  /**
   * β of the character language model's share β log p_lm added to each hypothesis's score (shallow fusion), 0 (none)
   * to 2; -1 (the default) is the model's own (0 for a file without a language model, which refuses a positive one).
   */
  lmWeight?: number;
  /** Also return `beamTree`, every hypothesis the search kept (default false: nothing extra is computed). */
  beamTree?: boolean;
  /** The samples' rate in Hz (8000..48000), required with a Float32Array; files and AudioBuffers carry their own. */
  sampleRate?: number;
  /** Rejects the call ("attnlab: transcribe() was aborted", code ATTNLAB_ABORTED) if aborted before it runs. */
  signal?: AbortSignal;
}

/** The 40-band log-mel spectrogram the engine computed, row-major [frames × bands], 100 frames a second. */
export interface Spectrogram {
  bands: number;
  frames: number;
  /** Seconds between frames (0.01): frame t covers [0.01 t, 0.01 t + 0.025625) s. */
  frameSeconds: number;
  data: Float32Array;
}

export interface Transcription {
  /** Lower-case letters, digits as words, apostrophes and single spaces. */
  text: string;
  /** One entry per output character (text split into characters). */
  characters: string[];
  ids: number[];
  /** Encoder frames (S) the attention spans, one per 40 ms of audio. */
  frames: number;
  /** Audio one encoder frame covers (0.04 s): frame j starts at j × frameSeconds. */
  frameSeconds: number;
  /** [characters × frames]: row i is where character i listened (a softmax: it sums to 1); matrixRow() reads it. */
  attention: Matrix;
  /** [characters × frames]: the raw location-aware scores the weights are the softmax of. */
  scores: Matrix;
  spectrogram: Spectrogram;
  /** Σ log p of the characters (and of the end when the model wrote it), by the attention decoder. */
  logProbability: number;
  /** True when the model ended the transcript (false: it stopped at the length limit). */
  finished: boolean;
  /** The CTC weight λ it was decoded with (0: attention only). */
  ctcWeight: number;
  /** The language-model weight β it was decoded with (0: none). */
  lmWeight: number;
  /**
   * With { beamTree: true } only: every hypothesis the search kept, each node's piece its character ("</s>" for the
   * end). logProbability and cumulative are the attention decoder's; with ctcWeight λ > 0 or lmWeight β > 0 the
   * search ranked by the joint score instead, which is each node's `score`: (1 − λ) cumulative + λ log p_ctc(prefix)
   * + β log p_lm(prefix), ÷ length once finished (at any beam).
   */
  beamTree?: BeamTree;
  /** Milliseconds the engine took: decoding the file (if any), the features and the recognizer. */
  timeMs: number;
}

export interface DecodedAudio {
  /** Mono samples in [-1, 1] (channels mixed by their mean). */
  samples: Float32Array;
  sampleRate: number;
  /** Channels in the file. */
  channels: number;
  /** "pcm16", "float32", "flac24", ... */
  encoding: string;
}

/** Decodes a WAV or FLAC file with the engine in this thread (as transcribe() does). */
export function decodeAudio(input: Blob | ArrayBuffer | ArrayBufferView): Promise<DecodedAudio>;

/** One head of an attention tensor as a [rows × cols] matrix view (no copy); throws for a layer or head out of range. */
export function attentionHead(tensor: AttentionTensor, layer: number, head: number): Matrix;

export interface DownloadOptions {
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
  timeout?: number;
  sha256?: string;
  bytes?: number;
  cache?: boolean;
}

/** The downloader loadModel uses: fetch with progress, SHA-256 check, abort/timeout and the Cache API. */
export function download(url: string | URL, options?: DownloadOptions): Promise<{ bytes: Uint8Array; fromCache: boolean }>;

/** Lower-case hex SHA-256 (WebCrypto); rejects with ATTNLAB_BAD_INPUT for anything but bytes. */
export function sha256Hex(bytes: ArrayBuffer | ArrayBufferView): Promise<string>;

/** The Cache API cache name, "attnlab-v1". */
export const CACHE_NAME: string;

/** Where the engine files and named models are; set before the first loadModel() (web/README.md, "Install"). */
export const env: {
  /** Folder URL (a path in Node) of attnlab.mjs and attnlab.wasm, or each file's URL; default: web/dist/. */
  wasmPaths: string | URL | { mjs?: string | URL; wasm?: string | URL; threadedMjs?: string | URL; threadedWasm?: string | URL } | undefined;
  /** The module worker script (web/lib/worker.mjs or a bundled attnlab/worker); default: next to the module. */
  workerUrl: string | URL | undefined;
  /** The folder holding models/manifest.json for loadModel(name) ("{name}" replaced by the name). */
  modelsBase: string | URL | undefined;
  /**
   * 'auto' (unset) and 1: the single-thread engine; 2..16: the threaded engine where the realm is cross-origin
   * isolated. Read when an engine starts: worker models loaded after a change follow it; a realm whose engine is
   * running refuses a value that picks another build or thread count (ATTNLAB_BAD_OPTIONS).
   */
  threads: 'auto' | number | undefined;
};

/** Which engine build is running (in this thread). */
export function engineInfo(): Promise<EngineInfo>;

/** Loads the wasm engine in this thread once; pass the .wasm bytes to skip fetching or reading it. */
export function loadEngine(options?: { wasmBinary?: ArrayBuffer | Uint8Array }): Promise<unknown>;
