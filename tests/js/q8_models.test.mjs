// The shipped q8_0 Transformer and captioner in the npm module (wasm, in Node) and in the native CLI: the same
// tokens, and attention equal within float tolerance. Both builds run the same Q8_0 kernels; the float sums
// around the block dots are ordered differently (AVX2 natively, SIMD128 in wasm), hence the tolerances below.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { CLI, cliTranslate, repoRoot } from './fixture_model.mjs';
import { cliCaption, encodePng, patternPixels } from './caption_fixture.mjs';

const TRANSFORMER = join(repoRoot, 'models/weights/transformer-en-de.q8_0.gguf');
const CAPTIONER = join(repoRoot, 'models/weights/captioner-flickr8k-14x14.q8_0.gguf');
const SENTENCES = ['A man in a blue shirt is standing on a ladder.', 'Two dogs are running through the snow.',
                   'A little girl is playing with a ball in the park.'];
// Every Q8_0 product of the Transformer rounds its input rows to int8 per 32-block (the decoder steps' gemv_q8_q8,
// the encoder's and the per-layer re-run's int8 rows, nn::linear_rows): an activation that lies within float
// rounding of a rounding boundary can land on neighbouring int8 values in the two builds (FMA natively, none in
// wasm), a step of max|x_block|/127 in one input, which moves a weight by up to about 1/127 of itself, and through
// the later layers a little more. Measured on the sentences below: the per-word attention 8.5e-4 on one sentence
// and 2e-5 on the others; the per-layer tensors 5.5e-3 on that sentence. A wrong computation moves them by tenths.
const STEP_TOLERANCE = 5e-3;
const TENSOR_TOLERANCE = 1e-2;
// The captioner's image goes through the resize and the encoder first, whose float sums differ between the builds
// (FMA natively, none in wasm) by a rounding; few of its decoder's int8 inputs move, so its attention stays within
// 2e-5 of the CLI's (measured), while the f16 file's attention, a near miss, is 7e-5 to 1.3e-4 away.
const CAPTION_TOLERANCE = 5e-5;

// The file really holds Q8_0 weights, so the int8 paths are the ones compared.
function assertQuantized(path) {
  assert.match(execFileSync(CLI, ['info', '--model', path], { encoding: 'utf8' }), /^tensor \S+ q8_0 /m, `${path}: no q8_0 tensor`);
}

function assertClose(actual, expected, tolerance, label) {
  assert.equal(actual.length, expected.length, `${label}: length`);
  let worst = 0, at = -1;
  for (let k = 0; k < expected.length; ++k) {
    const diff = Math.abs(actual[k] - expected[k]);
    if (!(diff <= worst)) { worst = diff; at = k; }
  }
  assert.ok(worst <= tolerance, `${label}: element ${at} differs by ${worst} (${actual[at]} vs CLI ${expected[at]})`);
}

test('q8_0 Transformer: module and CLI give the same tokens and every attention tensor', async () => {
  for (const path of [TRANSFORMER, CLI]) assert.ok(existsSync(path), `${path} is missing (npm run build)`);
  assertQuantized(TRANSFORMER);
  const model = await loadModel(TRANSFORMER);
  try {
    for (const text of SENTENCES) {
      for (const options of [{ beam: 1 }, { beam: 4 }]) {
        const label = `${JSON.stringify(text)} ${JSON.stringify(options)}`;
        const t = await model.translate(text, { ...options, allLayers: true });  // the CLI's --json has every layer
        const cli = cliTranslate(text, options, TRANSFORMER);
        assert.equal(t.text, cli.text, `${label}: text`);
        assert.deepEqual(t.sourceIds, cli.source_ids, `${label}: source ids`);
        assert.deepEqual(t.targetIds, cli.target_ids, `${label}: target ids`);
        assert.deepEqual(t.targetTokens, cli.target_tokens, `${label}: target tokens`);
        assert.ok(t.targetIds.length > 0, `${label}: an empty translation compares nothing`);
        assertClose(t.attention.data, cli.attention.flat(), STEP_TOLERANCE, `${label}: attention`);
        for (const [name, cliName] of [['encoderSelfAttention', 'encoder_self_attention'],
                                       ['decoderSelfAttention', 'decoder_self_attention'],
                                       ['crossAttention', 'cross_attention']]) {
          const tensor = t[name], reference = cli[cliName];
          assert.deepEqual([tensor.layers, tensor.heads, tensor.rows, tensor.cols],
                           [reference.layers, reference.heads, reference.rows, reference.cols], `${label}: ${name} shape`);
          assertClose(tensor.data, reference.data, TENSOR_TOLERANCE, `${label}: ${name}`);
        }
      }
    }
  } finally {
    await model.dispose();
  }
});

test('q8_0 captioner: module and CLI give the same caption and attention for the same pixels', async () => {
  for (const path of [CAPTIONER, CLI]) assert.ok(existsSync(path), `${path} is missing (npm run build)`);
  assertQuantized(CAPTIONER);
  const model = await loadModel(CAPTIONER);
  const dir = await mkdtemp(join(tmpdir(), 'attnlab-q8-caption-'));
  try {
    assert.equal(model.info.task, 'caption');
    for (const [width, height, seed] of [[224, 224, 0], [320, 240, 1], [97, 131, 2]]) {
      const image = patternPixels(width, height, seed);
      const png = join(dir, `pattern-${seed}.png`);
      await writeFile(png, encodePng(image));
      for (const options of [{ beam: 1 }, { beam: 3 }]) {
        const label = `${width}×${height} seed ${seed} ${JSON.stringify(options)}`;
        const got = await model.caption(image, options);
        const cli = cliCaption(png, options, CAPTIONER);
        assert.equal(got.text, cli.text, `${label}: text`);
        assert.deepEqual(got.ids, cli.ids, `${label}: ids`);
        assert.deepEqual(got.tokens, cli.tokens, `${label}: tokens`);
        assert.ok(got.ids.length > 0, `${label}: an empty caption compares nothing`);
        assert.deepEqual([got.gridHeight, got.gridWidth], [cli.grid_height, cli.grid_width], `${label}: grid`);
        assertClose(got.attention.data, cli.attention.flat(), CAPTION_TOLERANCE, `${label}: attention`);
      }
    }
  } finally {
    await model.dispose();
    await rm(dir, { recursive: true, force: true });
  }
});
