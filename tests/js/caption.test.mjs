// model.caption() in Node (no worker) on tests/fixtures/caption/tiny_encoder_model.gguf (a tiny captioner with an
// image encoder, scripts/make_caption_fixture.py): the same pixels give the native CLI's caption (text, tokens, ids,
// attention to 1e-5), PyTorch's ids for the fixture image, attention rows that sum to 1, and every bad input is a
// rejected promise with a clear message after which the model still works.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadModel, matrixRow } from '../../web/lib/index.mjs';
import { CLI, repoRoot } from './fixture_model.mjs';
import { CAPTION_MODEL, assertSameCaption, cliCaption, encodePng, patternPixels } from './caption_fixture.mjs';

const NO_ENCODER_MODEL = join(repoRoot, 'tests/fixtures/caption/tiny_model.gguf');
const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');

function assertRowsSumToOne(attention, label) {
  for (let i = 0; i < attention.rows; ++i) {
    const sum = matrixRow(attention, i).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - 1) < 1e-5, `${label}: attention row ${i} sums to ${sum}`);
  }
}

let workDir;
let model;
before(async () => {
  for (const path of [CAPTION_MODEL, CLI]) assert.ok(existsSync(path), `${path} is missing (npm run build; scripts/make_caption_fixture.py)`);
  workDir = await mkdtemp(join(tmpdir(), 'attnlab-caption-'));
  model = await loadModel(CAPTION_MODEL);
});
after(async () => {
  await model?.dispose();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

test('the fixture image: PyTorch\'s greedy ids (stored in the file), and the CLI\'s caption for beams 1 and 3', async () => {
  assert.equal(model.info.task, 'caption');
  assert.equal(model.info.architecture, 'attnlab.captioner');
  assert.equal(model.inWorker, false);
  const width = Number(model.info.metadata['fixture.image_width']);
  const height = Number(model.info.metadata['fixture.image_height']);
  const image = patternPixels(width, height);
  const greedy = await model.caption(image);
  const torchIds = model.info.metadata['fixture.greedy_ids'].match(/:\s*(.*)\]$/)[1].split(',').map(Number);
  assert.deepEqual(greedy.ids, torchIds, 'ids equal PyTorch on the F16 weights');
  assert.equal(JSON.stringify(greedy.text), model.info.metadata['fixture.greedy_text']);
  assert.equal(greedy.tokens.length, greedy.ids.length);
  assert.ok(Number.isFinite(greedy.logProbability) && greedy.logProbability <= 0);

  const png = join(workDir, 'fixture.png');
  await writeFile(png, encodePng(image));
  for (const options of [{ beam: 1 }, { beam: 3 }, { beam: 2, maxLength: 3 }, { beam: 3, noRepeatNgram: 2 },
                         { beam: 1, noRepeatNgram: 0 }]) {
    const got = await model.caption(image, options);
    const label = `fixture ${JSON.stringify(options)}`;
    assertSameCaption(got, cliCaption(png, options), label);
    assertRowsSumToOne(got.attention, label);
    if (options.maxLength) assert.ok(got.tokens.length <= options.maxLength);
    if (options.noRepeatNgram === 2) {
      const bigrams = got.ids.slice(1).map((id, i) => `${got.ids[i]} ${id}`);
      assert.equal(new Set(bigrams).size, bigrams.length, `${label}: a bigram repeats: ${got.ids}`);
    }
  }
});

test('other sizes and kinds of pixel arrays: same as the CLI on the same pixels', async () => {
  for (const [width, height, seed] of [[1, 1, 1], [300, 17, 2], [224, 224, 3], [97, 251, 4]]) {
    const image = patternPixels(width, height, seed);
    const png = join(workDir, `image-${width}x${height}.png`);
    await writeFile(png, encodePng(image));
    const cli = cliCaption(png, { beam: 2 });
    const label = `${width}×${height}`;
    const got = await model.caption(image, { beam: 2 });
    assertSameCaption(got, cli, label);
    assertRowsSumToOne(got.attention, label);
    // A Uint8ClampedArray (what ImageData holds) gives the same result, and the caller's pixels are not changed.
    const clamped = { data: new Uint8ClampedArray(image.data), width, height };
    assertSameCaption(await model.caption(clamped, { beam: 2 }), cli, `${label} (Uint8ClampedArray)`);
    assert.deepEqual(new Uint8Array(clamped.data), image.data);
  }
});

test('different images give different attention, and calls queue in order', async () => {
  const a = patternPixels(64, 48, 5);
  const b = patternPixels(64, 48, 6);
  const [ca, cb, ca2] = await Promise.all([model.caption(a), model.caption(b), model.caption(a)]);
  assert.deepEqual(ca2.ids, ca.ids);
  assert.deepEqual(ca2.attention.data, ca.attention.data);
  assert.notDeepEqual(cb.attention.data, ca.attention.data);
});

test('bad images and options reject with clear messages, and the model keeps working', async () => {
  const good = patternPixels(8, 6);
  const cases = [
    [null, /needs an image.*got null/],
    [42, /needs an image.*got number/],
    ['cat.jpg', /needs an image.*got string/],
    [{ width: 8, height: 6 }, /Uint8Array or Uint8ClampedArray/],
    [{ data: [1, 2, 3, 4], width: 1, height: 1 }, /Uint8Array or Uint8ClampedArray/],
    [{ data: new Float32Array(4), width: 1, height: 1 }, /Uint8Array or Uint8ClampedArray/],
    [{ data: new Uint8Array(0), width: 0, height: 0 }, /width must be a positive integer, got 0/],
    [{ ...good, height: 0 }, /height must be a positive integer, got 0/],
    [{ ...good, width: -8 }, /width must be a positive integer, got -8/],
    [{ ...good, width: 2.5 }, /width must be a positive integer, got 2.5/],
    [{ ...good, width: '8' }, /width must be a positive integer/],
    [{ ...good, height: 7 }, /192 bytes, but 8 × 7 RGBA needs 224/],
    [{ data: good.data.subarray(1), width: 8, height: 6 }, /191 bytes/],
    [{ data: new Uint8Array(4), width: 8193, height: 1 }, /too large: 8193 × 1, at most 8192/],
    [{ data: new Uint8Array(4), width: 1 << 20, height: 1 << 20 }, /too large/],
  ];
  for (const [image, message] of cases) {
    await assert.rejects(model.caption(image), message, `image ${JSON.stringify(image)?.slice(0, 60)}`);
  }
  for (const [options, message] of [[{ beam: 0 }, /beam must be/], [{ beam: 65 }, /beam must be/], [{ beam: 1.5 }, /beam/],
                                    [{ maxLength: -1 }, /maxLength/], [{ maxLength: 201 }, /maxLength/], [null, /options/],
                                    [{ noRepeatNgram: 1 }, /noRepeatNgram must be/], [{ noRepeatNgram: 9 }, /noRepeatNgram/],
                                    [{ noRepeatNgram: -2 }, /noRepeatNgram/], [{ noRepeatNgram: 2.5 }, /noRepeatNgram/]]) {
    await assert.rejects(model.caption(good, options), message, JSON.stringify(options));
  }
  const after = await model.caption(good);
  assert.ok(after.tokens.length > 0);
  assertRowsSumToOne(after.attention, 'after the errors');
});

test('the wrong kind of model: caption on a translator, translate on a captioner, a captioner without encoder', async () => {
  const image = patternPixels(8, 6);
  const translator = await loadModel(TRANSLATOR);
  await assert.rejects(translator.caption(image), /caption\(\) needs a captioning model, but this one \(attnlab\.bahdanau\) translates text: use translate\(\)/);
  assert.ok((await translator.translate('A dog runs.')).text.length > 0, 'the translator still works');
  await translator.dispose();

  await assert.rejects(model.translate('A dog runs.'), /translate\(\) needs a translation model, but this one \(attnlab\.captioner\) captions images: use caption\(\)/);
  assert.ok((await model.caption(image)).tokens.length > 0, 'the captioner still works');

  const noEncoder = await loadModel(NO_ENCODER_MODEL);
  assert.equal(noEncoder.info.task, 'caption');
  await assert.rejects(noEncoder.caption(image), /no image encoder/);
  await noEncoder.dispose();
  await assert.rejects(noEncoder.caption(image), /disposed/);
});
