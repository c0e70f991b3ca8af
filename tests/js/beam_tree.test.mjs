// The npm module's opt-in extras for the page's views (issue 23). { beamTree: true }: translate(), caption() and
// transcribe() return the search's tree only when asked; its winner's path is the output (ids and pieces, then </s> when it
// ended so), its log-probabilities add up to the result's, beam 1 keeps one path and beam 4 more; in a Node worker
// the tree arrives the same. { queryKey: true }: a Transformer's encoder queries and keys, whose q·k/√d_k is the
// returned raw score and its softmax the returned weight. { rawScores: true }: every Transformer attention's raw
// scores, whose softmax over each row (the causal mask's -Infinity left out) is the weights, directly and in a worker.
// Captions carry their raw scores. Options that are not booleans are BAD_OPTIONS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { repoRoot } from './fixture_model.mjs';
import { CAPTION_MODEL, patternPixels } from './caption_fixture.mjs';

const SENTENCE = 'Two dogs are running through the snow.';
const SPEECH_MODEL = join(repoRoot, 'models/weights/speech-las.q8_0.gguf');
const SPEECH_CLIP = join(repoRoot, 'web/app/samples/speech/digits.wav');
const TRANSLATORS = ['models/weights/bahdanau-en-de.q8_0.gguf', 'models/weights/transformer-en-de.q8_0.gguf',
                     'tests/fixtures/rnn/additive.gguf'];

const models = {};
before(async () => {
  for (const path of TRANSLATORS) models[path] = await loadModel(join(repoRoot, path));
  models.caption = await loadModel(CAPTION_MODEL);
  models.speech = await loadModel(SPEECH_MODEL);
});
after(async () => { for (const m of Object.values(models)) await m.dispose(); });

const winningPath = (tree) => {
  const out = [];
  for (let n = tree.winner; n >= 0; n = tree.nodes[n].parent) out.unshift(tree.nodes[n]);
  return out;
};

// The tree against the result it came with; ids / pieces: the result's tokens.
function checkTree(tree, result, ids, pieces, beam) {
  assert.ok(tree && Array.isArray(tree.nodes), 'no beamTree');
  const path = winningPath(tree);
  const ended = path.length > 0 && path.at(-1).piece === '</s>';
  const body = ended ? path.slice(0, -1) : path;
  assert.deepEqual(body.map((n) => n.id), ids);
  assert.deepEqual(body.map((n) => n.piece), pieces);
  assert.ok(path.at(-1).finished);
  const sum = path.reduce((s, n) => s + n.logProbability, 0);
  assert.ok(Math.abs(sum - result.logProbability) < 1e-3, `Σ log p ${sum} vs ${result.logProbability}`);
  assert.ok(Math.abs(path.at(-1).cumulative - result.logProbability) < 1e-5);
  path.forEach((n, k) => assert.equal(n.step, k));
  for (const n of tree.nodes) {
    if (n.parent >= 0) assert.equal(tree.nodes[n.parent].step, n.step - 1);
    assert.ok(n.logProbability <= 1e-5 && Number.isFinite(n.cumulative));  // a difference of sums: rounding may pass 0
  }
  const live = new Map();
  for (const n of tree.nodes) if (!n.finished) live.set(n.step, (live.get(n.step) ?? 0) + 1);
  for (const count of live.values()) assert.ok(count <= beam);
  if (beam === 1) assert.equal(tree.nodes.length, path.length);
}

for (const path of TRANSLATORS) {
  test(`translate ${path}: the tree only when asked, its winner is the output, beams 1 and 4`, async () => {
    const model = models[path];
    for (const beam of [1, 4]) {
      const plain = await model.translate(SENTENCE, { beam });
      assert.equal(plain.beamTree, undefined);
      const t = await model.translate(SENTENCE, { beam, beamTree: true });
      assert.deepEqual(t.targetIds, plain.targetIds);
      assert.equal(t.logProbability, plain.logProbability);
      checkTree(t.beamTree, t, t.targetIds, t.targetTokens, beam);
      if (beam === 4 && !path.startsWith('tests/')) assert.ok(t.beamTree.nodes.length > winningPath(t.beamTree).length);
    }
  });
}

test('caption: the tree only when asked, its winner is the caption, beams 1 and 3', async () => {
  const pixels = patternPixels(64, 48);
  for (const beam of [1, 3]) {
    const plain = await models.caption.caption(pixels, { beam });
    assert.equal(plain.beamTree, undefined);
    const c = await models.caption.caption(pixels, { beam, beamTree: true });
    assert.deepEqual(c.ids, plain.ids);
    checkTree(c.beamTree, c, c.ids, c.tokens, beam);
  }
});

test('a Node worker returns the same tree; a beamTree that is not a boolean is BAD_OPTIONS', async () => {
  const path = join(repoRoot, TRANSLATORS[0]);
  const worker = await loadModel(path, { useWorker: true });
  try {
    const here = await models[TRANSLATORS[0]].translate(SENTENCE, { beam: 4, beamTree: true });
    const there = await worker.translate(SENTENCE, { beam: 4, beamTree: true });
    assert.deepEqual(there.beamTree, here.beamTree);
  } finally {
    await worker.dispose();
  }
  for (const bad of [1, 'yes', null]) {
    await assert.rejects(models[TRANSLATORS[1]].translate(SENTENCE, { queryKey: bad }),
                         (e) => e.code === 'ATTNLAB_BAD_OPTIONS' && /queryKey must be true or false/.test(e.message));
    await assert.rejects(models[TRANSLATORS[0]].translate(SENTENCE, { beamTree: bad }),
                         (e) => e.code === 'ATTNLAB_BAD_OPTIONS' && /beamTree must be true or false/.test(e.message));
    await assert.rejects(models.caption.caption(patternPixels(64, 48), { beamTree: bad }), (e) => e.code === 'ATTNLAB_BAD_OPTIONS');
  }
});

test('queryKey: the Transformer\'s q and k make its raw scores, whose softmax is its weights; nothing unless asked', async () => {
  const model = models[TRANSLATORS[1]];
  const plain = await model.translate(SENTENCE);
  assert.equal(plain.encoderQueries, undefined);
  const t = await model.translate(SENTENCE, { queryKey: true, beamTree: true });
  assert.deepEqual(t.targetIds, plain.targetIds);
  assert.ok(t.beamTree, 'both extras at once');
  const { encoderQueries: q, encoderKeys: k, encoderSelfScores: s, encoderSelfAttention: a } = t;
  assert.deepEqual([q.layers, q.heads, q.rows], [a.layers, a.heads, a.rows]);
  assert.deepEqual([s.rows, s.cols], [a.rows, a.cols]);
  const S = a.rows;
  const hd = q.cols;
  for (const [l, h, i] of [[0, 0, 0], [a.layers - 1, a.heads - 1, S - 1], [0, a.heads - 1, 2]]) {
    const base = (l * a.heads + h) * S;
    const scores = [];
    for (let j = 0; j < S; ++j) {
      let dot = 0;
      for (let c = 0; c < hd; ++c) dot += q.data[(base + i) * hd + c] * k.data[(base + j) * hd + c];
      scores.push(s.data[(base + i) * S + j]);
      assert.ok(Math.abs(dot / Math.sqrt(hd) - scores[j]) < 1e-3 * Math.max(1, Math.abs(scores[j])), `q·k/√d ${l} ${h} ${i} ${j}`);
    }
    const top = Math.max(...scores);
    const sum = scores.reduce((acc, x) => acc + Math.exp(x - top), 0);
    scores.forEach((x, j) => assert.ok(Math.abs(Math.exp(x - top) / sum - a.data[(base + i) * S + j]) < 1e-4, `softmax ${j}`));
  }
  const rnn = await models[TRANSLATORS[0]].translate(SENTENCE, { queryKey: true });
  assert.equal(rnn.encoderQueries, undefined);
});

// Every row of scores: its softmax over the finite entries is the row of weights; -Infinity only where the weight
// is 0. Returns how many entries were -Infinity.
function checkSoftmaxRows(scores, weights, what) {
  assert.ok(scores && scores.data instanceof Float32Array, `${what}: no scores`);
  assert.deepEqual([scores.layers, scores.heads, scores.rows, scores.cols], [weights.layers, weights.heads, weights.rows, weights.cols]);
  let masked = 0;
  const { cols } = scores;
  for (let r = 0; r < scores.data.length / cols; ++r) {
    const row = scores.data.subarray(r * cols, (r + 1) * cols);
    assert.ok(row.every((x) => !Number.isNaN(x) && x !== Infinity), `${what} row ${r}: NaN or +Infinity`);
    const top = Math.max(...row);
    assert.ok(Number.isFinite(top), `${what} row ${r}: every key masked`);
    const sum = row.reduce((acc, x) => acc + Math.exp(x - top), 0);
    row.forEach((x, j) => {
      const w = weights.data[r * cols + j];
      if (x === -Infinity) ++masked;
      assert.ok(Math.abs(Math.exp(x - top) / sum - w) < 1e-5, `${what} row ${r} col ${j}: softmax ${Math.exp(x - top) / sum}, weight ${w}`);
    });
  }
  return masked;
}

test('rawScores: every Transformer attention\'s raw scores, whose row softmax is its weights; nothing unless asked', async () => {
  const path = TRANSLATORS[1];
  const plain = await models[path].translate(SENTENCE);
  for (const name of ['encoderSelfScores', 'decoderSelfScores', 'crossScores']) assert.equal(plain[name], undefined, name);
  const worker = await loadModel(join(repoRoot, path), { useWorker: true });
  try {
    for (const [where, model] of [['direct', models[path]], ['worker', worker]]) {
      const t = await model.translate(SENTENCE, { rawScores: true, beam: 2 });
      assert.equal(t.encoderQueries, undefined, `${where}: queries and keys are queryKey's`);
      assert.equal(checkSoftmaxRows(t.encoderSelfScores, t.encoderSelfAttention, `${where} encoder`), 0);
      assert.equal(checkSoftmaxRows(t.crossScores, t.crossAttention, `${where} cross`), 0);
      const { layers, heads, rows: T } = t.decoderSelfScores;
      assert.ok(T > 2);
      assert.equal(checkSoftmaxRows(t.decoderSelfScores, t.decoderSelfAttention, `${where} decoder`), layers * heads * T * (T - 1) / 2,
                   'exactly the causal entries are -Infinity');
      assert.equal(t.decoderSelfScores.data[1], -Infinity, 'row 0 sees only itself');
    }
    const both = await models[path].translate([SENTENCE, 'A dog.'], { rawScores: true, queryKey: true });
    for (const t of both) {
      assert.ok(t.encoderQueries && t.crossScores, 'several texts carry both extras');
      checkSoftmaxRows(t.crossScores, t.crossAttention, 'several texts');
    }
  } finally {
    await worker.dispose();
  }
  const rnn = await models[TRANSLATORS[0]].translate(SENTENCE, { rawScores: true });
  assert.equal(rnn.crossScores, undefined, 'an RNN has only Translation.scores');
  await assert.rejects(models[path].translate(SENTENCE, { rawScores: 'yes' }),
                       (e) => e.code === 'ATTNLAB_BAD_OPTIONS' && /rawScores must be true or false/.test(e.message));
});

test('caption: raw scores with the weights, the same shape', async () => {
  const c = await models.caption.caption(patternPixels(64, 48), { beam: 2 });
  assert.deepEqual([c.scores.rows, c.scores.cols], [c.attention.rows, c.attention.cols]);
  assert.ok(c.scores.data.every(Number.isFinite));
  assert.ok(c.scores.data.some((x, i) => x !== c.attention.data[i]), 'the scores are not the weights');
});

// The speech search ranks by the joint CTC/attention score when ctcWeight > 0 (the shipped model's default): the
// nodes' log p and cumulative stay the attention decoder's, their score is the joint one.
test('transcribe: the tree only when asked, its winner spells the transcript, beams 1 and 4, in a worker too', async () => {
  const clip = readFileSync(SPEECH_CLIP);
  for (const [beam, ctcWeight] of [[1, 0], [1, -1], [4, -1]]) {
    const plain = await models.speech.transcribe(clip, { beam, ctcWeight });
    assert.equal(plain.beamTree, undefined);
    const t = await models.speech.transcribe(clip, { beam, ctcWeight, beamTree: true });
    assert.deepEqual(t.ids, plain.ids);
    const tree = t.beamTree;
    const path = winningPath(tree);
    assert.equal(path.at(-1).piece === '</s>', t.finished);
    const body = t.finished ? path.slice(0, -1) : path;
    assert.deepEqual(body.map((n) => n.id), t.ids);
    assert.deepEqual(body.map((n) => n.piece), t.characters);
    assert.equal(body.map((n) => n.piece).join(''), t.text);
    assert.ok(Math.abs(path.at(-1).cumulative - t.logProbability) < 1e-4);
    const best = Math.max(...tree.nodes.filter((n) => n.finished).map((n) => n.score));
    assert.equal(path.at(-1).score, best, 'the winner has the best score of the finished hypotheses');
    if (t.ctcWeight > 0) assert.notEqual(path.at(-1).score, path.at(-1).cumulative / path.length, 'the joint score');
    if (beam === 4) assert.ok(tree.nodes.length > path.length);
  }
  const worker = await loadModel(SPEECH_MODEL, { useWorker: true });
  try {
    const here = await models.speech.transcribe(clip, { beam: 4, beamTree: true });
    const there = await worker.transcribe(clip, { beam: 4, beamTree: true });
    assert.deepEqual(there.beamTree, here.beamTree);
    await assert.rejects(worker.transcribe(clip, { beamTree: 'yes' }),
                         (e) => e.code === 'ATTNLAB_BAD_OPTIONS' && /beamTree must be true or false/.test(e.message));
  } finally {
    await worker.dispose();
  }
  for (const bad of [1, 'yes', null]) {
    await assert.rejects(models.speech.transcribe(clip, { beamTree: bad }),
                         (e) => e.code === 'ATTNLAB_BAD_OPTIONS' && /beamTree must be true or false/.test(e.message));
  }
});
