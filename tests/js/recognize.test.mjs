// caption(image, { recognize: true }) on the shipped captioners (issue 19: captioning's scope): the image encoder's
// own top-5 ImageNet classes, the same as the native CLI's (`caption --recognize --json`) directly and in a Node
// worker, nothing unless asked, info.recognizesImages saying which files can, and clear refusals otherwise.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { CLI, repoRoot } from './fixture_model.mjs';
import { encodePng, patternPixels } from './caption_fixture.mjs';

const WITH_CLASSIFIER = join(repoRoot, 'models/weights/captioner-flickr8k.q8_0.gguf');
const WITHOUT_CLASSIFIER = join(repoRoot, 'models/weights/captioner-flickr8k.f16.gguf');

let workDir;
let model;
before(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'attnlab-recognize-'));
  model = await loadModel(WITH_CLASSIFIER);
});
after(async () => {
  await model?.dispose();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

function cliRecognized(png, modelPath = WITH_CLASSIFIER) {
  const out = execFileSync(CLI, ['caption', '--model', modelPath, '--recognize', '--json', png], { encoding: 'utf8' });
  return JSON.parse(out).recognized;
}

// The engine's classes in wasm and natively: the same order except where two probabilities are too close for the
// kernels' rounding (native FMA, wasm none) to keep them apart.
function assertSameClasses(got, expected, label) {
  assert.equal(got.length, 5, label);
  assert.equal(expected.length, 5, label);
  for (let i = 0; i < 5; ++i) {
    assert.ok(Math.abs(got[i].probability - expected[i].probability) < 2e-3,
              `${label} #${i}: ${got[i].probability} vs ${expected[i].probability}`);
    if (got[i].index !== expected[i].index) {
      const close = [i - 1, i + 1].some((j) => j >= 0 && j < 5 &&
                                            Math.abs(expected[i].probability - expected[j].probability) < 2e-3);
      assert.ok(close, `${label} #${i}: ${got[i].label} vs ${expected[i].label}`);
    } else {
      assert.equal(got[i].label, expected[i].label, label);
    }
    if (i > 0) assert.ok(got[i].probability <= got[i - 1].probability, `${label}: most probable first`);
  }
}

test('recognize: the encoder\'s top-5 ImageNet classes, as the CLI gives them, and nothing else changes', async () => {
  assert.equal(model.info.recognizesImages, true);
  for (const [width, height, seed] of [[96, 72, 0], [224, 224, 3]]) {
    const pixels = patternPixels(width, height, seed);
    const png = join(workDir, `pattern-${seed}.png`);
    await writeFile(png, encodePng(pixels));
    const plain = await model.caption(pixels, { beam: 3 });
    assert.equal(plain.recognized, undefined, 'not unless asked');
    const c = await model.caption(pixels, { beam: 3, recognize: true });
    assert.deepEqual(c.ids, plain.ids);
    assertSameClasses(c.recognized, cliRecognized(png), `${width}x${height}`);
    for (const r of c.recognized) {
      assert.equal(typeof r.label, 'string');
      assert.ok(Number.isInteger(r.index) && r.index >= 0 && r.index <= 1000);
    }
  }
});

test('recognize in a Node worker gives the same classes; a file without the classifier or a bad option is refused', async () => {
  const pixels = patternPixels(96, 72);
  const worker = await loadModel(WITH_CLASSIFIER, { useWorker: true });
  try {
    assert.equal(worker.info.recognizesImages, true);
    const here = await model.caption(pixels, { recognize: true });
    const there = await worker.caption(pixels, { recognize: true });
    assert.deepEqual(there.recognized, here.recognized);
  } finally {
    await worker.dispose();
  }
  const bare = await loadModel(WITHOUT_CLASSIFIER);
  try {
    assert.equal(bare.info.recognizesImages, false);
    await assert.rejects(bare.caption(pixels, { recognize: true }),
                         (e) => e.code === 'ATTNLAB_BAD_MODEL' && /no ImageNet classifier/.test(e.message));
    assert.ok((await bare.caption(pixels)).text.length > 0, 'the model still captions');
  } finally {
    await bare.dispose();
  }
  for (const bad of [1, 'yes', null]) {
    await assert.rejects(model.caption(pixels, { recognize: bad }),
                         (e) => e.code === 'ATTNLAB_BAD_OPTIONS' && /recognize must be true or false/.test(e.message));
  }
  assert.throws(() => execFileSync(CLI, ['caption', '--model', WITHOUT_CLASSIFIER, '--recognize', 'x.png'],
                                   { encoding: 'utf8', stdio: 'pipe' }),
                (e) => /no ImageNet classifier/.test(e.stderr));
  assert.throws(() => execFileSync(CLI, ['translate', '--model', join(repoRoot, 'tests/fixtures/rnn/additive.gguf'),
                                         '--recognize', 'Hello'], { encoding: 'utf8', stdio: 'pipe' }),
                (e) => /takes no --recognize/.test(e.stderr));
});
