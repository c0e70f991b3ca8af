// Issue 20: a translation shortlist through the module and the CLI. The wasm engine decodes a paragraph with the
// shortlist as the native engine does (the CLI's output, token for token, on sentences without a near tie: the
// log-softmax rounds differently in wasm and natively, as q8_models.test.mjs explains), one text as in a batch; shortlist: false decodes over the whole vocabulary; the manifest's shortlist loads by name,
// SHA-256 checked; wrong or missing shortlists reject with stable codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { ERROR_CODES, loadModel } from '../../web/lib/index.mjs';
import { CLI, repoRoot } from './fixture_model.mjs';

const TRANSFORMER = join(repoRoot, 'models/weights/transformer-en-de.q8_0.gguf');
const RNN = join(repoRoot, 'models/weights/bahdanau-en-de.q8_0.gguf');
const DE_EN = join(repoRoot, 'models/weights/transformer-de-en.q8_0.gguf');
const SHORTLIST = join(repoRoot, 'models/weights/en-de.shortlist.gguf');

const PARAGRAPH = [
  'Two men are playing soccer in a park.',
  'A dog runs.',
  'A little girl with a red hat is sitting on a bench next to her grandmother.',
  'Where is the train station?',
  'My brother is a doctor.',
];

function cliTranslate(model, lines, extra = []) {
  const run = spawnSync(CLI, ['translate', '--model', model, '--beam', '4', '--batch', '16', ...extra],
                        { input: `${lines.join('\n')}\n`, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout.trimEnd().split('\n');
}

for (const [name, path] of [['Transformer', TRANSFORMER], ['RNN', RNN]]) {
  test(`${name}: the module's shortlist decodes a paragraph as the CLI's --shortlist does`, async () => {
    const model = await loadModel(path, { shortlist: SHORTLIST });
    try {
      assert.deepEqual(model.info.shortlist, { perSource: 32, frequent: 500 });
      const shortlisted = await model.translate(PARAGRAPH, { beam: 4 });
      assert.deepEqual(shortlisted.map((t) => t.text), cliTranslate(path, PARAGRAPH, ['--shortlist', SHORTLIST]));
      const whole = await model.translate(PARAGRAPH, { beam: 4, shortlist: false });
      assert.deepEqual(whole.map((t) => t.text), cliTranslate(path, PARAGRAPH));
      const alone = await model.translate(PARAGRAPH[3], { beam: 4 });
      const oneInBatch = await model.translate([PARAGRAPH[3]], { beam: 4 });
      assert.deepEqual(alone.targetIds, oneInBatch[0].targetIds);
      assert.equal(alone.text, 'Wo ist der Bahnhof?');
    } finally {
      await model.dispose();
    }
  });
}

test('the manifest names each EN↔DE translator\'s shortlist; loadModel(name, { shortlist: true }) checks its SHA-256', async () => {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'models/manifest.json'), 'utf8'));
  const named = manifest.models.filter((entry) => entry.shortlist);
  assert.ok(named.some((entry) => entry.id === 'transformer-en-de'));
  for (const entry of named) assert.equal(entry.shortlist.file, `models/weights/${entry.src}-${entry.tgt}.shortlist.gguf`);
  const model = await loadModel('transformer-en-de', { shortlist: true, modelsBase: repoRoot });
  try {
    assert.deepEqual(model.info.shortlist, { perSource: 32, frequent: 500 });
  } finally {
    await model.dispose();
  }
  await assert.rejects(loadModel(TRANSFORMER, { shortlist: SHORTLIST, shortlistSha256: '0'.repeat(64) }),
                       (error) => error.code === ERROR_CODES.INTEGRITY || error.code === ERROR_CODES.LOAD_FAILED);
});

test('wrong or missing shortlists reject with stable codes', async () => {
  await assert.rejects(loadModel(DE_EN, { shortlist: SHORTLIST }),
                       (error) => error.code === ERROR_CODES.BAD_MODEL && /other vocabularies/.test(error.message));
  await assert.rejects(loadModel(TRANSFORMER, { shortlist: TRANSFORMER }),
                       (error) => error.code === ERROR_CODES.BAD_MODEL && /not a translation shortlist/.test(error.message));
  await assert.rejects(loadModel(TRANSFORMER, { shortlist: true }), (error) => error.code === ERROR_CODES.BAD_OPTIONS);
  await assert.rejects(loadModel(TRANSFORMER, { shortlist: 7 }), (error) => error.code === ERROR_CODES.BAD_OPTIONS);
  const plain = await loadModel(TRANSFORMER);
  try {
    assert.equal(plain.info.shortlist, null);
    await assert.rejects(plain.translate('A dog runs.', { shortlist: true }), (error) => error.code === ERROR_CODES.BAD_OPTIONS);
    await assert.rejects(plain.translate('A dog runs.', { shortlist: 'yes' }), (error) => error.code === ERROR_CODES.BAD_OPTIONS);
  } finally {
    await plain.dispose();
  }
  const withShortlist = await loadModel(TRANSFORMER, { shortlist: readFileSync(SHORTLIST) });
  try {
    await assert.rejects(withShortlist.translate('A dog runs.', { queryKey: true, shortlist: true }),
                         (error) => error.code === ERROR_CODES.BAD_OPTIONS);
  } finally {
    await withShortlist.dispose();
  }
  const cli = spawnSync(CLI, ['translate', '--model', DE_EN, '--shortlist', SHORTLIST, 'Hallo'], { encoding: 'utf8' });
  assert.equal(cli.status, 1);
  assert.match(cli.stderr, /other vocabularies/);
});
