// The translation benchmark's timed loops, shared by Node (bench/bench_translate.mjs) and headless Chromium
// (bench/translate_page.mjs): one function per engine, both greedy, both batch 1, both fed the same source ids.
//
// attnlab is timed through its public API (loadModel / translate), so its numbers include what a user pays for:
// the attention, scores and context returned with every token. Its encoder time is measured by a second call
// with maxLength 1 (encoder + one step) and its per-token decoder time by the difference:
//     per_token = (t(full) - t(maxLength 1)) / (steps - 1),   encoder = t(maxLength 1) - per_token
// onnxruntime-web is timed directly: encoder session once, then the decoder-step session in a JS greedy loop
// (argmax over the tokens the engine's default no-repeat-4-gram rule allows, stop at EOS, at most
// floor(1.5 * |source ids| + 10) tokens: the engine's rules, search.cpp).

import { bannedTokens, SEARCH_DEFAULTS } from './paragraph_harness.mjs';

const now = () => performance.now();

export const maxTargetLength = (sourceLength, a = 1.5, b = 10) => Math.floor(Math.fround(a * sourceLength) + b);

// Steps the decoder ran to produce `tokens` (the EOS step counts, unless the length limit stopped it first).
export const stepsFor = (tokens, sourceLength) => tokens + (tokens < maxTargetLength(sourceLength) ? 1 : 0);

// First index of the largest value (the engine's kernels::argmax breaks ties the same way).
export function argmax(values) {
  let best = 0;
  for (let i = 1; i < values.length; ++i) if (values[i] > values[best]) best = i;
  return best;
}

// The greedy choice after `tokens` under the engine's default n-gram rule: the banned tokens leave the argmax.
function chooseGreedy(logits, tokens) {
  const banned = bannedTokens(tokens, SEARCH_DEFAULTS.noRepeatNgram);
  if (!banned.length) return argmax(logits);
  let best = -1;
  for (let i = 0; i < logits.length; ++i)
    if ((best < 0 || logits[i] > logits[best]) && !banned.includes(i)) best = i;
  return best;
}

const words = (text) => text.trim().split(/\s+/).filter(Boolean).length;

async function ortGreedy(ort, encoder, decoder, info, sourceIds) {
  const S = sourceIds.length;
  const ids = new ort.Tensor('int64', BigInt64Array.from(sourceIds, BigInt), [1, S]);
  let t = now();
  const encoded = await encoder.run({ source_ids: ids });
  const encoderMs = now() - t;
  const limit = maxTargetLength(S, info.max_len_a, info.max_len_b);
  const tokens = [];
  let token = info.bos;
  let steps = 0;
  t = now();
  if (info.kind === 'rnn') {
    let state = encoded.s0;
    const memory = Object.fromEntries(info.memory_names.map((name) => [name, encoded[name]]));
    for (let i = 0; i < limit; ++i) {
      const out = await decoder.run({ token: new ort.Tensor('int64', BigInt64Array.of(BigInt(token)), [1]), state,
                                      ...memory });
      ++steps;
      token = chooseGreedy(out.logits.data, tokens);
      state = out.next_state;
      if (token === info.eos) break;
      tokens.push(token);
    }
  } else {
    const { layers, heads, head_size: hd } = info;
    let pastK = new ort.Tensor('float32', new Float32Array(0), [layers, 1, heads, 0, hd]);
    let pastV = pastK;
    for (let i = 0; i < limit; ++i) {
      const out = await decoder.run({ token: new ort.Tensor('int64', BigInt64Array.of(BigInt(token)), [1]),
                                      position: new ort.Tensor('int64', BigInt64Array.of(BigInt(i)), [1]),
                                      past_k: pastK, past_v: pastV, cross_k: encoded.cross_k, cross_v: encoded.cross_v });
      ++steps;
      token = chooseGreedy(out.logits.data, tokens);
      pastK = out.present_k;
      pastV = out.present_v;
      if (token === info.eos) break;
      tokens.push(token);
    }
  }
  return { targetIds: tokens, encoder_ms: encoderMs, decoder_ms: now() - t, steps };
}

// Both engines as "runners" ({ name, load(), run(text, i) -> row, close() }) so they can be interleaved sentence
// by sentence: on a shared machine the load drifts over seconds, and alternating exposes both engines to it alike.

/** attnlab through its npm API: loadModel(bytes), translate(text, { beam: 1 }) (+ maxLength 1 for the encoder). */
// idsSink (optional array): receives each sentence's source ids, for the ORT runner's idsFor.
export function attnlabRunner({ name = 'attnlab', loadModel, bytes, loadOptions = {}, idsSink = null }) {
  let model = null;
  return {
    name,
    async load() { model = await loadModel(bytes, loadOptions); },
    async run(text, i) {
      let t = now();
      const full = await model.translate(text, { beam: 1 });
      const totalMs = now() - t;
      t = now();
      await model.translate(text, { beam: 1, maxLength: 1 });
      const firstStepMs = now() - t;
      if (idsSink) idsSink[i] = Array.from(full.sourceIds);
      return { sourceIds: Array.from(full.sourceIds), targetIds: Array.from(full.targetIds), total_ms: totalMs,
               first_step_ms: firstStepMs, words: words(text) };
    },
    async close() { await model.dispose(); },
  };
}

/** onnxruntime-web (wasm, 1 thread): idsFor(i) gives sentence i's source ids (attnlab's tokenizer). */
export function ortRunner({ name = 'ort', ort, encoderBytes, decoderBytes, info, idsFor }) {
  let encoder = null;
  let decoder = null;
  return {
    name,
    async load() {
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.proxy = false;
      const options = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
      encoder = await ort.InferenceSession.create(encoderBytes, options);
      decoder = await ort.InferenceSession.create(decoderBytes, options);
    },
    async run(text, i) {
      const t = now();
      const result = await ortGreedy(ort, encoder, decoder, info, idsFor(i));
      return { ...result, total_ms: now() - t, words: words(text) };
    },
    async close() {
      await encoder.release();
      await decoder.release();
    },
  };
}

// Untimed sentences each runner translates after its first result, before the timed pass: V8 first runs wasm
// compiled by its baseline compiler and recompiles a function optimized once it has run enough (in the browser;
// Node runs these with --no-liftoff). A function called once per sentence, such as an encoder's, is still baseline
// code after one sentence: with one warm-up sentence, Chromium's encoder times were twice Node's for both engines.
export const WARMUP_SENTENCES = 8;

/**
 * Loads the runners one after another (load_ms, first_result_ms = load + translating sentence 0), warms each up on
 * the first WARMUP_SENTENCES sentences (untimed, interleaved), then runs every sentence on every runner in turn.
 * -> { [runner name]: { load_ms, first_result_ms, sentences: [row...] } }
 */
export async function benchInterleaved(runners, sentences) {
  const results = {};
  for (const runner of runners) {
    const t0 = now();
    await runner.load();
    const loaded = now();
    results[runner.name] = { load_ms: loaded - t0, sentences: [] };
    results[runner.name].sentences.push(await runner.run(sentences[0], 0));
    results[runner.name].first_result_ms = now() - t0;
  }
  for (let i = 1; i < Math.min(WARMUP_SENTENCES, sentences.length); ++i)
    for (const runner of runners) await runner.run(sentences[i], i);
  for (const runner of runners) results[runner.name].sentences = [];  // the warm-up runs are not timed
  for (let i = 0; i < sentences.length; ++i)
    for (const runner of runners) results[runner.name].sentences.push(await runner.run(sentences[i], i));
  for (const runner of runners) await runner.close();
  return results;
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

// Per-engine summary: encoder ms (mean per sentence), decoder ms per generated step, sentences/s, words/s.
export function summarizeAttnlab(result) {
  const rows = result.sentences;
  let decoderMs = 0;
  let decoderSteps = 0;
  let encoderMs = 0;
  for (const row of rows) {
    const steps = stepsFor(row.targetIds.length, row.sourceIds.length);
    const perToken = steps > 1 ? Math.max(0, row.total_ms - row.first_step_ms) / (steps - 1) : 0;
    if (steps > 1) {
      decoderMs += row.total_ms - row.first_step_ms;
      decoderSteps += steps - 1;
    }
    encoderMs += Math.max(0, row.first_step_ms - perToken);
  }
  const total = sum(rows.map((r) => r.total_ms));
  return summary(result, rows, encoderMs / rows.length, decoderMs / Math.max(1, decoderSteps), total);
}

export function summarizeOrt(result) {
  const rows = result.sentences;
  const total = sum(rows.map((r) => r.total_ms));
  return summary(result, rows, sum(rows.map((r) => r.encoder_ms)) / rows.length,
                 sum(rows.map((r) => r.decoder_ms)) / Math.max(1, sum(rows.map((r) => r.steps))), total);
}

function summary(result, rows, encoderMs, perTokenMs, totalMs) {
  return {
    sentences: rows.length,
    tokens: sum(rows.map((r) => r.targetIds.length)),
    encoder_ms: encoderMs,
    per_token_ms: perTokenMs,
    sentences_per_s: rows.length / (totalMs / 1000),
    words_per_s: sum(rows.map((r) => r.words)) / (totalMs / 1000),
    load_ms: result.load_ms,
    first_result_ms: result.first_result_ms,
  };
}

// Sentences whose target ids differ between the two engines (index, both id lists), at most `limit`.
export function tokenMismatches(a, b, limit = 5) {
  const out = [];
  let count = 0;
  for (let i = 0; i < Math.min(a.sentences.length, b.sentences.length); ++i) {
    const x = a.sentences[i].targetIds;
    const y = b.sentences[i].targetIds;
    if (x.length !== y.length || x.some((v, j) => v !== y[j])) {
      ++count;
      if (out.length < limit) out.push({ sentence: i, a: x, b: y });
    }
  }
  return { count, examples: out };
}
