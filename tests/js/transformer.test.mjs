// The npm module with a Transformer (tests/fixtures/transformer/tiny.gguf, made by python/attnlab/golden/transformer.py):
// text, tokens and ids equal the native CLI's, and the three per-layer, per-head attention tensors have the
// documented shapes, hold softmax rows (causal for the decoder), equal the CLI's numbers, and are read
// correctly by attentionHead().
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { attentionHead, loadModel, matrixRow } from '../../web/lib/index.mjs';
import { CLI, cliTranslate, repoRoot } from './fixture_model.mjs';

const MODEL = join(repoRoot, 'tests/fixtures/transformer/tiny.gguf');
const SENTENCES = [
  'The Law will never be perfect, but its application should be just.',  // the page's long-range sample
  'A man is riding a red bike.',
  'Zyxx qwerty!',
];
const OPTIONS = [{ beam: 1 }, { beam: 3 }, { beam: 2, maxLength: 3 }];
const NAMES = [['encoderSelfAttention', 'encoder_self_attention'], ['decoderSelfAttention', 'decoder_self_attention'],
               ['crossAttention', 'cross_attention']];

let model;
let metadataNumber;
before(async () => {
  assert.ok(existsSync(MODEL), `${MODEL} is missing`);
  assert.ok(existsSync(CLI), `${CLI} does not exist: run npm run build`);
  model = await loadModel(MODEL);
  metadataNumber = (key) => Number(model.info.metadata[`attnlab.transformer.${key}`]);
});
after(() => model?.dispose());

// Shapes from the model's own metadata, not from the tensors being checked.
function expectedShapes(t) {
  const S = t.sourceTokens.length, T = t.targetTokens.length, H = metadataNumber('heads');
  const encoder = metadataNumber('encoder_layers'), decoder = metadataNumber('decoder_layers');
  return {
    encoderSelfAttention: [encoder, H, S, S],
    decoderSelfAttention: [decoder, H, T, T],
    crossAttention: [decoder, H, T, S],
  };
}

function checkSoftmaxRows(tensor, label, { causal = false } = {}) {
  for (let l = 0; l < tensor.layers; ++l) {
    for (let h = 0; h < tensor.heads; ++h) {
      const head = attentionHead(tensor, l, h);
      for (let i = 0; i < head.rows; ++i) {
        const row = matrixRow(head, i);
        let sum = 0;
        row.forEach((w, j) => {
          assert.ok(w >= 0 && w <= 1, `${label}[${l}][${h}][${i}][${j}] = ${w} is not a weight`);
          if (causal && j > i) assert.equal(w, 0, `${label}[${l}][${h}][${i}][${j}] is above the diagonal`);
          sum += w;
        });
        assert.ok(Math.abs(sum - 1) < 1e-5, `${label}[${l}][${h}] row ${i} sums to ${sum}`);
      }
    }
  }
}

test('Transformer translations equal the CLI: text, tokens, ids and every attention weight', async () => {
  assert.equal(model.info.architecture, 'attnlab.transformer');
  for (const text of SENTENCES) {
    for (const options of OPTIONS) {
      const label = `${JSON.stringify(text)} ${JSON.stringify(options)}`;
      const t = await model.translate(text, { ...options, allLayers: true });  // the CLI's --json has every layer
      const cli = cliTranslate(text, options, MODEL);
      assert.equal(t.text, cli.text, `${label}: text`);
      assert.deepEqual(t.sourceTokens, cli.source_tokens, `${label}: source tokens`);
      assert.deepEqual(t.targetTokens, cli.target_tokens, `${label}: target tokens`);
      assert.deepEqual(t.sourceIds, cli.source_ids, `${label}: source ids`);
      assert.deepEqual(t.targetIds, cli.target_ids, `${label}: target ids`);
      assert.equal(t.scoreFunction, 'scaled_dot', `${label}: score function`);

      const shapes = expectedShapes(t);
      for (const [name, cliName] of NAMES) {
        const tensor = t[name];
        const [layers, heads, rows, cols] = shapes[name];
        assert.deepEqual([tensor.layers, tensor.heads, tensor.rows, tensor.cols], shapes[name], `${label}: ${name} shape`);
        assert.ok(tensor.data instanceof Float32Array, `${label}: ${name} data`);
        assert.equal(tensor.data.length, layers * heads * rows * cols, `${label}: ${name} size`);
        const reference = cli[cliName];
        assert.deepEqual([reference.layers, reference.heads, reference.rows, reference.cols], shapes[name],
                         `${label}: CLI ${name} shape`);
        tensor.data.forEach((value, k) => {
          assert.ok(Math.abs(value - reference.data[k]) <= 1e-5, `${label}: ${name}.data[${k}] = ${value}, CLI ${reference.data[k]}`);
        });
      }
      checkSoftmaxRows(t.encoderSelfAttention, `${label}: encoder`);
      checkSoftmaxRows(t.decoderSelfAttention, `${label}: decoder`, { causal: true });
      checkSoftmaxRows(t.crossAttention, `${label}: cross`);
    }
  }
});

test('the alignment of a Transformer is the last decoder layer\'s cross-attention averaged over heads', async () => {
  const t = await model.translate(SENTENCES[1], { beam: 3, allLayers: true });
  const cross = t.crossAttention;
  assert.ok(cross.rows > 0);
  assert.deepEqual([t.attention.rows, t.attention.cols], [cross.rows, cross.cols]);
  for (let i = 0; i < cross.rows; ++i) {
    for (let j = 0; j < cross.cols; ++j) {
      let mean = 0;
      for (let h = 0; h < cross.heads; ++h) mean += attentionHead(cross, cross.layers - 1, h).data[i * cross.cols + j];
      mean /= cross.heads;
      assert.ok(Math.abs(mean - t.attention.data[i * cross.cols + j]) < 1e-5, `attention[${i}][${j}]`);
    }
  }
});

test('attentionHead() indexes [layer, head, row, col], shares the data, and rejects bad indices', () => {
  const layers = 2, heads = 3, rows = 2, cols = 4;
  const data = Float32Array.from({ length: layers * heads * rows * cols }, (_, k) => k);
  const tensor = { layers, heads, rows, cols, data };
  const head = attentionHead(tensor, 1, 2);
  assert.deepEqual([head.rows, head.cols], [rows, cols]);
  // element (l=1, h=2, i=1, j=3) = ((1·3 + 2)·2 + 1)·4 + 3 = 47
  assert.equal(matrixRow(head, 1)[3], 47);
  assert.equal(head.data[0], 40);
  assert.equal(head.data.buffer, data.buffer, 'a view, not a copy');
  for (const [l, h] of [[2, 0], [-1, 0], [0, 3], [0.5, 0], [0, '1']]) {
    assert.throws(() => attentionHead(tensor, l, h), /out of range/, `layer ${l}, head ${h}`);
  }
  assert.throws(() => attentionHead({ ...tensor, data: data.subarray(1) }, 0, 0), /does not match its shape/);
  assert.throws(() => attentionHead(null, 0, 0), /needs an attention tensor/);
});

test('a Transformer\'s decoder tensors only with allLayers (or rawScores); nothing else changes', async () => {
  const plain = await model.translate(SENTENCES[1], { beam: 3 });
  const full = await model.translate(SENTENCES[1], { beam: 3, allLayers: true });
  assert.equal(plain.decoderSelfAttention, undefined);
  assert.equal(plain.crossAttention, undefined);
  assert.ok(full.crossAttention && full.decoderSelfAttention);
  for (const key of ['targetIds', 'attention', 'scores', 'encoderSelfAttention']) assert.deepEqual(plain[key], full[key], key);
  const many = await model.translate([SENTENCES[1], SENTENCES[0]], { allLayers: true });
  assert.ok(many.every((t) => t.crossAttention && t.decoderSelfAttention), 'several texts');
  await assert.rejects(model.translate(SENTENCES[1], { allLayers: 1 }),
                       (e) => e.code === 'ATTNLAB_BAD_OPTIONS' && /allLayers must be true or false/.test(e.message));
});

test('RNN models have no Transformer attention tensors', async () => {
  const rnn = await loadModel(join(repoRoot, 'tests/fixtures/rnn/additive.gguf'));
  const t = await rnn.translate('A dog runs.', { allLayers: true });
  for (const [name] of NAMES) assert.equal(t[name], undefined, name);
  await rnn.dispose();
});
