// The paragraph benchmark's engines (issue 20: Multi30k test2016 in 8-sentence paragraphs, beam 4), shared by
// headless Chromium (bench/paragraph_page.mjs) and Node (tests/js/ort_beam.test.mjs):
//
//   attnlab through its npm module: model.translate(texts[], { beam }) when the module takes an array (batched
//     sentences), else one translate(text) per sentence; which one ran is reported (`api`).
//   onnxruntime-web driven by ortBeamParagraph below: a JS beam search over the batched beam graphs of
//     bench/export_onnx.py (every live sentence's K rows in one decoder run, the state reordered by the
//     back-pointers inside the graph), with attnlab's search rules (src/attnlab/decode/batched.hpp BeamSearch;
//     docs/decoding.md): length penalty 1 (score = Σ log p / steps), at most ⌊1.5·|source| + 10⌋ tokens, no
//     repeated 4-gram, the 2K best continuations per step of which at most K stay live, a sentence done when K
//     hypotheses have finished or its length limit is reached, ties broken by row then token.

const now = () => performance.now();

export const SEARCH_DEFAULTS = { beam: 4, lengthPenalty: 1.0, maxLengthRatio: 1.5, maxLengthExtra: 10, noRepeatNgram: 4 };

export const maxTargetLength = (sourceLength, a = SEARCH_DEFAULTS.maxLengthRatio, b = SEARCH_DEFAULTS.maxLengthExtra) =>
  Math.floor(Math.fround(Math.fround(a) * sourceLength) + b);

export const wordCount = (text) => text.trim().split(/\s+/).filter(Boolean).length;

/** The tokens that would complete an n-gram `tokens` already holds (search.cpp ban_repeated_ngrams). */
export function bannedTokens(tokens, n) {
  const banned = [];
  if (n < 2 || tokens.length < n - 1) return banned;
  const context = n - 1;
  const last = tokens.length - context;
  for (let i = 0; i + context < tokens.length; ++i) {
    let same = true;
    for (let j = 0; j < context && same; ++j) same = tokens[i + j] === tokens[last + j];
    if (same) banned.push(tokens[i + context]);
  }
  return banned;
}

// decode/batched.hpp ranks_before: higher log p, then the lower row, then the lower token.
const ranksBefore = (a, b) => (a.logp !== b.logp ? b.logp - a.logp : a.row !== b.row ? a.row - b.row : a.token - b.token);

/**
 * Sessions for one model: { kind: 'rnn', encoder, decoder } (rnn.beam_encoder + rnn.beam_decoder) or
 * { kind: 'transformer', encoder, decoder } (transformer.beam_encoder + transformer.beam_decoder), created by the
 * caller with the thread count and graphs (f32 or int8) it wants.
 */
export async function createOrtSessions(ort, kind, encoderBytes, decoderBytes) {
  const options = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
  return { kind, encoder: await ort.InferenceSession.create(encoderBytes, options),
           decoder: await ort.InferenceSession.create(decoderBytes, options) };
}

// The encoder outputs of the live sentences, padded to the longest: RNN info.beam_memory_names [N,S,*]; Transformer
// cross_k/v [L,N,h,S,hd]; mask [N,S] true on real positions.
function packMemory(ort, info, encoded, live) {
  const { kind } = info;
  const S = Math.max(...live.map((s) => encoded[s].length));
  const N = live.length;
  const mask = new Uint8Array(N * S);
  live.forEach((s, n) => mask.fill(1, n * S, n * S + encoded[s].length));
  const out = { mask: new ort.Tensor('bool', mask, [N, S]) };
  if (kind === 'rnn') {
    for (const name of info.beam_memory_names) {
      const width = encoded[live[0]][name].dims[2];
      const data = new Float32Array(N * S * width);
      live.forEach((s, n) => data.set(encoded[s][name].data, n * S * width));
      out[name] = new ort.Tensor('float32', data, [N, S, width]);
    }
  } else {
    for (const name of ['cross_k', 'cross_v']) {
      const [L, , h, Sfull, hd] = encoded.full[name].dims;
      const data = new Float32Array(L * N * h * S * hd);
      const src = encoded.full[name].data;
      const Nfull = encoded.full[name].dims[1];
      for (let l = 0; l < L; ++l)
        live.forEach((s, n) => {
          for (let head = 0; head < h; ++head) {
            const from = (((l * Nfull + s) * h + head) * Sfull) * hd;
            const to = (((l * N + n) * h + head) * S) * hd;
            data.set(src.subarray(from, from + S * hd), to);
          }
        });
      out[name] = new ort.Tensor('float32', data, [L, N, h, S, hd]);
    }
  }
  return out;
}

/**
 * Beam search with ORT over a paragraph: sourceIds[i] are sentence i's source ids (attnlab's tokenizer, ending
 * with </s>). -> { sentences: [{ targetIds, logProbability, finished }], encoder_ms, decoder_ms, steps, rows }
 */
export async function ortBeamParagraph(ort, sessions, info, sourceIds, options = {}) {
  const { beam: K, lengthPenalty, noRepeatNgram } = { ...SEARCH_DEFAULTS, ...options };
  const { kind } = sessions;
  const N = sourceIds.length;
  const int64 = (values) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), [values.length]);
  let t = now();
  // Encoders: the RNN one sentence at a time (its BiGRU has no padding mask); the Transformer all at once, padded.
  const encoded = [];
  let state;
  if (kind === 'rnn') {
    const H = info.state_size;
    const s0 = new Float32Array(N * H);
    for (let i = 0; i < N; ++i) {
      const ids = sourceIds[i];
      const out = await sessions.encoder.run({ source_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]) });
      encoded.push({ length: ids.length, ...Object.fromEntries(info.beam_memory_names.map((name) => [name, out[name]])) });
      s0.set(out.s0.data, i * H);
    }
    state = { state: new ort.Tensor('float32', s0, [N, H]) };
  } else {
    const S = Math.max(...sourceIds.map((ids) => ids.length));
    const padded = new BigInt64Array(N * S);  // PAD_ID 0
    sourceIds.forEach((ids, i) => ids.forEach((id, j) => { padded[i * S + j] = BigInt(id); }));
    const out = await sessions.encoder.run({ source_ids: new ort.Tensor('int64', padded, [N, S]) });
    sourceIds.forEach((ids) => encoded.push({ length: ids.length }));
    encoded.full = out;
    const { layers: L, heads: h, head_size: hd } = info;
    const empty = new ort.Tensor('float32', new Float32Array(0), [L, N, h, 0, hd]);
    state = { past_k: empty, past_v: empty };
  }
  const encoderMs = now() - t;
  t = now();

  // The tree of chosen tokens: a hypothesis is a node; its tokens are found by walking to the root.
  const nodeParent = [];
  const nodeToken = [];
  const addNode = (parent, token) => { nodeParent.push(parent); nodeToken.push(token); return nodeParent.length - 1; };
  const tokensOf = (node) => {
    const out = [];
    for (let n = node; n >= 0; n = nodeParent[n]) out.push(nodeToken[n]);
    return out.reverse();
  };
  // Per sentence: K rows (live ones first, then dead rows with log p -inf), the finished hypotheses.
  const sentences = sourceIds.map((ids, i) => ({
    index: i, maxLength: maxTargetLength(ids.length), finished: [], done: false,
    rows: Array.from({ length: K }, (_, r) => ({ token: info.bos, logp: r === 0 ? 0 : -Infinity, node: -1, prefix: [],
                                                  parent: i })),
  }));
  let live = sentences.map((s) => s.index);
  let memory = packMemory(ort, info, encoded, live);
  let steps = 0;
  let rowsStepped = 0;
  for (let step = 0; live.length; ++step) {
    const rows = live.flatMap((s) => sentences[s].rows);
    const bans = rows.map((row) => (row.logp === -Infinity ? [] : bannedTokens(row.prefix, noRepeatNgram)));
    const k = 2 * K + Math.max(0, ...bans.map((b) => b.length));
    const feeds = {
      token: int64(rows.map((r) => r.token)), parents: int64(rows.map((r) => r.parent)),
      beam_log_probability: new ort.Tensor('float32', Float32Array.from(rows, (r) => r.logp), [rows.length]),
      k: int64([k]), mask: memory.mask, ...state,
    };
    if (kind === 'rnn') for (const name of info.beam_memory_names) feeds[name] = memory[name];
    else Object.assign(feeds, { cross_k: memory.cross_k, cross_v: memory.cross_v, position: int64([step]) });
    const out = await sessions.decoder.run(feeds);
    ++steps;
    rowsStepped += rows.length;
    state = kind === 'rnn' ? { state: out.next_state } : { past_k: out.present_k, past_v: out.present_v };
    const values = out.top_values.data;
    const tokens = out.top_tokens.data;
    const width = out.top_values.dims[1];
    let base = 0;  // this sentence's first row in the step's layout
    let changed = false;
    for (const s of live) {
      const sentence = sentences[s];
      // Each row's 2K best allowed continuations (TopK gave them in order), then the 2K best of all.
      const candidates = [];
      for (let r = 0; r < K; ++r) {
        const banned = bans[base + r];
        let taken = 0;
        for (let j = 0; j < width && taken < 2 * K; ++j) {
          const logp = values[(base + r) * width + j];
          if (logp === -Infinity) break;
          const token = Number(tokens[(base + r) * width + j]);
          if (banned.includes(token)) continue;
          candidates.push({ logp, row: r, token });
          ++taken;
        }
      }
      candidates.sort(ranksBefore);
      const keep = Math.min(candidates.length, 2 * K);
      const lastStep = step + 1 >= sentence.maxLength;
      const next = [];
      for (let c = 0; c < keep; ++c) {
        const candidate = candidates[c];
        const parentRow = sentence.rows[candidate.row];
        const isEos = candidate.token === info.eos;
        if (isEos || lastStep) {
          if (sentence.finished.length < K) {
            const node = isEos ? parentRow.node : addNode(parentRow.node, candidate.token);
            const score = Math.fround(candidate.logp / Math.pow(step + 1, lengthPenalty));
            sentence.finished.push({ node, logp: candidate.logp, score, finished: isEos });
          }
        } else {
          next.push({ token: candidate.token, logp: candidate.logp, node: addNode(parentRow.node, candidate.token),
                      prefix: [...parentRow.prefix, candidate.token], parent: base + candidate.row });
        }
        if (next.length === K) break;
      }
      // Done as BeamSearch ends: K finished, the length limit, or no live continuation left.
      if (sentence.finished.length >= K || lastStep || !next.length) {
        sentence.done = true;
        changed = true;
      } else {
        while (next.length < K) next.push({ token: info.eos, logp: -Infinity, node: -1, prefix: [], parent: base });
        sentence.rows = next;
      }
      base += K;
    }
    if (changed) {
      live = live.filter((s) => !sentences[s].done);
      if (live.length) memory = packMemory(ort, info, encoded, live);
    }
  }
  const results = sentences.map((sentence) => {
    if (!sentence.finished.length) return { targetIds: [], logProbability: 0, finished: false };
    let best = sentence.finished[0];
    for (const f of sentence.finished) if (f.score > best.score) best = f;  // the first of equal scores wins
    return { targetIds: tokensOf(best.node), logProbability: best.logp, finished: best.finished };
  });
  return { sentences: results, encoder_ms: encoderMs, decoder_ms: now() - t, steps, rows: rowsStepped };
}

// ---- runners: { name, load(), run(paragraph) -> row, close() }, interleaved paragraph by paragraph -------------

/** Whether model.translate takes an array of sentences (batched sentences); else one call per sentence. */
async function takesArrays(model) {
  try {
    const out = await model.translate(['A dog .'], { beam: 1, maxLength: 2 });
    return Array.isArray(out);
  } catch {
    return false;
  }
}

/** attnlab through its npm module; paragraph = { texts, words }. loadOptions pick the build/threads if any. */
export function attnlabParagraphRunner({ name, loadModel, bytes, loadOptions = {}, beam = SEARCH_DEFAULTS.beam }) {
  let model = null;
  let batched = false;
  return {
    name,
    get api() { return batched ? 'translate(texts[])' : 'translate(text) per sentence'; },
    async load() {
      model = await loadModel(bytes, loadOptions);
      batched = await takesArrays(model);
    },
    async run(paragraph, p) {
      const t = now();
      const out = batched ? await model.translate(paragraph.texts, { beam })
        : await (async () => { const all = []; for (const text of paragraph.texts) all.push(await model.translate(text, { beam })); return all; })();
      const ms = now() - t;
      return { ms, words: paragraph.words, texts: out.map((x) => x.text), targetIds: out.map((x) => Array.from(x.targetIds)) };
    },
    async close() { await model.dispose(); },
  };
}

/** onnxruntime-web over the beam graphs; idsFor(p) gives paragraph p's source ids (attnlab's tokenizer). */
export function ortParagraphRunner({ name, ort, kind, encoderBytes, decoderBytes, info, idsFor, beam = SEARCH_DEFAULTS.beam }) {
  let sessions = null;
  return {
    name,
    api: 'JS beam search over the batched decoder graph',
    async load() { sessions = await createOrtSessions(ort, kind, encoderBytes, decoderBytes); },
    async run(paragraph, p) {
      const t = now();
      const out = await ortBeamParagraph(ort, sessions, info, idsFor(p), { beam });
      return { ms: now() - t, words: paragraph.words, targetIds: out.sentences.map((s) => s.targetIds),
               encoder_ms: out.encoder_ms, decoder_ms: out.decoder_ms, steps: out.steps, rows: out.rows };
    },
    async close() {
      await sessions.encoder.release();
      await sessions.decoder.release();
    },
  };
}

/**
 * How often each runner translates paragraph 0 before the timed ones. V8 compiles wasm in two tiers: functions start
 * in its baseline compiler and are recompiled optimized, on background threads, once they have run enough; after one
 * warm-up paragraph part of both engines (ORT's more) still ran baseline code, recompiled on the two cores during the
 * timed paragraphs. Four runs gave ORT int8 4-7% more at 2 threads on the Intel Xeon (docs/performance.md); what is
 * left against a Chromium that compiles everything optimized up front (--no-liftoff) is what a visitor's gets too.
 */
export const WARMUP_RUNS = 4;

/**
 * The untimed pause before each timed paragraph: long enough for the engine that ran before to go idle (its pool
 * threads stop spinning, its garbage is collected), which otherwise took a core from the one being timed (attnlab's
 * 2 / 1 threads ratio 1.69 alone in the page, 1.57 beside ORT; ORT gained from the pause as well).
 */
export const SETTLE_MS = 200;

/**
 * Loads every runner, runs paragraph 0 on each WARMUP_RUNS times as the warm-up (not timed), then every paragraph
 * on every runner in turn, each after SETTLE_MS, the order rotating by paragraph so that no engine always runs right
 * after the same one.
 */
export async function benchParagraphs(runners, paragraphs, { onParagraph = () => {}, warmupRuns = WARMUP_RUNS } = {}) {
  const results = {};
  for (const runner of runners) {
    const t0 = now();
    await runner.load();
    results[runner.name] = { load_ms: now() - t0, api: runner.api, rows: [] };
  }
  for (let p = 0; p < paragraphs.length; ++p) {
    for (let i = 0; i < runners.length; ++i) {
      const runner = runners[(i + p) % runners.length];
      if (p === 0) {
        for (let run = 0; run < warmupRuns; ++run) await runner.run(paragraphs[p], p);
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      const row = await runner.run(paragraphs[p], p);
      results[runner.name].rows.push({ paragraph: p, ...row });
    }
    onParagraph(p);
  }
  for (const runner of runners) await runner.close();
  return results;
}

/** Every paragraph's source ids as attnlab tokenizes them (one greedy step each; ORT is fed these). */
export async function sourceIdsOf(model, paragraphs) {
  const ids = [];
  for (const paragraph of paragraphs) {
    const one = [];
    for (const text of paragraph.texts) one.push(Array.from((await model.translate(text, { beam: 1, maxLength: 1 })).sourceIds));
    ids.push(one);
  }
  return ids;
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : null;
};

/** words/s over the timed paragraphs, the median and mean time to a whole paragraph. */
export function summarizeParagraphs(result) {
  const rows = result.rows;
  const ms = rows.map((r) => r.ms);
  return { api: result.api, paragraphs: rows.length, words: sum(rows.map((r) => r.words)),
           words_per_s: sum(rows.map((r) => r.words)) / (sum(ms) / 1000), paragraph_ms_median: median(ms),
           paragraph_ms_mean: sum(ms) / Math.max(1, ms.length), load_ms: result.load_ms };
}
