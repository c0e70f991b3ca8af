// The paragraph benchmark's peer (bench/paragraph_harness.mjs, bench/export_onnx.py, bench/quantize_onnx.py) is
// a fair one only if it decodes as attnlab does: onnxruntime-web's batched beam graphs driven by the JS beam search
// give attnlab's beam-4 tokens on the same f32 weights (the shipped f16 files, widened by both), sentence for
// sentence over one paragraph of unequal lengths (padding, masks, finished sentences dropped mid-search); the
// dynamic-int8 rewrite holds no f32 weight product any more and stays close to the f32 graph.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as ort from 'onnxruntime-web';
import { loadModel } from '../../web/lib/index.mjs';
import { bannedTokens, createOrtSessions, ortBeamParagraph, sourceIdsOf } from '../../bench/paragraph_harness.mjs';
import { repoRoot } from './fixture_model.mjs';

const PYTHON = '/usr/bin/python3';
const MODELS = { rnn: 'models/weights/bahdanau-en-de.f16.gguf', transformer: 'models/weights/transformer-en-de.f16.gguf' };
const GRAPHS = { rnn: ['rnn.beam_encoder', 'rnn.beam_decoder'], transformer: ['transformer.beam_encoder', 'transformer.beam_decoder'] };
const PARAGRAPH = {
  texts: [
    'A man in a blue shirt is standing on a ladder cleaning windows.',
    'Two dogs run.',
    'A little girl climbs into a wooden playhouse.',
    'A group of people are sitting at a table in a restaurant, talking and eating.',
    'A woman rides a bicycle down the street.',
    'Children play soccer in the park while their parents watch from the benches.',
    'A cat sleeps.',
    'Three men are working on a construction site wearing orange vests and hard hats.',
  ],
};

const out = mkdtempSync(join(tmpdir(), 'attnlab-ort-beam-'));
// The RNN's paragraph graphs in the other form (bench/export_onnx.py --rnn-beam-form projected: the decoder's
// products with the context moved into the encoder, as attnlab runs the model).
const outProjected = mkdtempSync(join(tmpdir(), 'attnlab-ort-beam-projected-'));
process.on('exit', () => [out, outProjected].forEach((dir) => rmSync(dir, { recursive: true, force: true })));
const CASES = [{ name: 'rnn', kind: 'rnn', dir: out }, { name: 'transformer', kind: 'transformer', dir: out },
               { name: 'rnn (projected form)', kind: 'rnn', dir: outProjected }];

before(() => {
  const env = { ...process.env, PYTHONPATH: join(repoRoot, 'python') };
  execFileSync(PYTHON, ['-W', 'ignore', 'bench/export_onnx.py', '--rnn', MODELS.rnn, '--transformer', MODELS.transformer,
                        '--out', out], { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync(PYTHON, ['-W', 'ignore', 'bench/export_onnx.py', '--rnn', MODELS.rnn, '--transformer', 'none',
                        '--rnn-beam-form', 'projected', '--out', outProjected],
               { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const pairs = CASES.flatMap(({ kind, dir }) => GRAPHS[kind].flatMap((g) => [join(dir, `${g}.onnx`),
                                                                              join(dir, `${g}.int8.onnx`)]));
  execFileSync(PYTHON, ['bench/quantize_onnx.py', ...pairs], { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'inherit'] });
  ort.env.wasm.numThreads = 1;
});

async function ortRun(kind, dir, suffix, ids) {
  const [encoder, decoder] = GRAPHS[kind].map((g) => readFileSync(join(dir, `${g}${suffix}.onnx`)));
  const sessions = await createOrtSessions(ort, kind, encoder, decoder);
  const info = JSON.parse(readFileSync(join(dir, `${kind}.json`), 'utf8'));
  try {
    return await ortBeamParagraph(ort, sessions, info, ids);
  } finally {
    await sessions.encoder.release();
    await sessions.decoder.release();
  }
}

test('bannedTokens bans what would complete an n-gram already emitted, as search.cpp does', () => {
  assert.deepEqual(bannedTokens([5, 6, 7, 5, 6], 3), [7]);
  assert.deepEqual(bannedTokens([5, 6, 5, 6, 5], 2), [6, 6]);
  assert.deepEqual(bannedTokens([5, 6, 7], 4), []);
  assert.deepEqual(bannedTokens([5, 5], 0), []);
});

test('the int8 rewrite leaves no product with an f32 weight matrix and adds the quantize_dynamic ops', () => {
  const check = `
import sys, onnx
for path in sys.argv[1:]:
    m = onnx.load(path)
    inits = {i.name: i for i in m.graph.initializer}
    ops = [n.op_type for n in m.graph.node]
    f32 = [n.name for n in m.graph.node if n.op_type in ("MatMul", "Gemm") and len(n.input) > 1
           and n.input[1] in inits and inits[n.input[1]].data_type == onnx.TensorProto.FLOAT]
    print(path.rsplit("/", 1)[1], ops.count("DynamicQuantizeLinear"), ops.count("MatMulInteger"), len(f32))
`;
  const files = CASES.flatMap(({ kind, dir }) => GRAPHS[kind].map((g) => join(dir, `${g}.int8.onnx`)));
  const rows = execFileSync(PYTHON, ['-c', check, ...files], { encoding: 'utf8' }).trim().split('\n');
  assert.equal(rows.length, files.length);
  for (const row of rows) {
    const [name, quantizers, products, f32Left] = row.split(' ');
    assert.ok(Number(products) > 0 && quantizers === products, `${name}: ${row}`);
    assert.equal(f32Left, '0', `${name} still multiplies by f32 weights`);
  }
});

for (const { name, kind, dir } of CASES) {
  test(`${name}: ORT's batched beam 4 gives attnlab's tokens on the same f32 weights; int8 stays close`, async () => {
    const model = await loadModel(join(repoRoot, MODELS[kind]));
    let reference;
    let ids;
    try {
      [ids] = await sourceIdsOf(model, [PARAGRAPH]);
      reference = [];
      for (const text of PARAGRAPH.texts) reference.push(Array.from((await model.translate(text, { beam: 4 })).targetIds));
    } finally {
      await model.dispose();
    }
    const f32 = await ortRun(kind, dir, '', ids);
    assert.equal(f32.sentences.length, PARAGRAPH.texts.length);
    f32.sentences.forEach((s, i) => assert.deepEqual(s.targetIds, reference[i], `sentence ${i}`));
    // Fewer rows than 8 sentences x 4 beams x steps: finished sentences left the batch.
    assert.ok(f32.rows < f32.steps * 4 * PARAGRAPH.texts.length, `${f32.rows} rows in ${f32.steps} steps`);
    // int8 weights and activations move log-probabilities by a few hundredths of a nat and may flip a near tie:
    // most sentences keep every token, and each keeps most of its tokens, in order (the edit distance) or, where
    // the flip moved a clause (German puts the verb at the end of one), in another order.
    const int8 = await ortRun(kind, dir, '.int8', ids);
    const same = int8.sentences.filter((s, i) => s.targetIds.join() === reference[i].join()).length;
    assert.ok(same >= 5, `int8: ${same} of 8 sentences equal f32`);
    int8.sentences.forEach((s, i) => {
      const half = Math.ceil(0.5 * reference[i].length);
      const close = editDistance(s.targetIds, reference[i]) <= half || sharedTokens(s.targetIds, reference[i]) >= half;
      assert.ok(close, `sentence ${i}: ${s.targetIds} vs ${reference[i]}`);
    });
  });
}

// How many tokens a and b have in common, each counted as often as it is in both.
function sharedTokens(a, b) {
  const counts = new Map();
  for (const t of b) counts.set(t, (counts.get(t) ?? 0) + 1);
  let shared = 0;
  for (const t of a) {
    if ((counts.get(t) ?? 0) > 0) {
      counts.set(t, counts.get(t) - 1);
      ++shared;
    }
  }
  return shared;
}

function editDistance(a, b) {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; ++i) {
    const row = [i];
    for (let j = 1; j <= b.length; ++j)
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length];
}
