// engineInfo().limits is what the engine enforces: the wasm engine itself (its raw embind Model, no JS checks in
// front) accepts every limit at its value and refuses one past it with its own message; the npm module refuses
// the same values first, with messages naming the same numbers; and the native CLI reports the same limits
// (`attnlab version --json`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { engineInfo, loadEngine, loadModel } from '../../web/lib/index.mjs';
import { MAX_IMAGE_SIDE } from '../../web/lib/image.mjs';
import { CLI, repoRoot } from './fixture_model.mjs';
import { CAPTION_MODEL } from './caption_fixture.mjs';

const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');
const NAMES = ['maxBeam', 'maxTextBytes', 'maxSourceTokens', 'maxTranslationLength', 'maxCaptionLength',
               'minNoRepeatNgram', 'maxNoRepeatNgram', 'maxImageSide'];
const snakeCase = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

let limits;
let engine;
let raw = [];        // raw embind models, deleted after
let translator;      // module models
let captioner;

async function rawModel(path) {
  const bytes = new Uint8Array(await readFile(path));
  const buffer = new engine.ByteBuffer(bytes.length);
  buffer.view().set(bytes);
  const model = new engine.Model(buffer);
  buffer.delete();
  raw.push(model);
  return model;
}

const grey = (width, height) => ({ data: new Uint8Array(width * height * 4).fill(128), width, height });

before(async () => {
  ({ limits } = await engineInfo());
  engine = await loadEngine();
  translator = await loadModel(TRANSLATOR);
  captioner = await loadModel(CAPTION_MODEL);
});

after(async () => {
  for (const model of raw) model.delete();
  await translator?.dispose();
  await captioner?.dispose();
});

test('engineInfo().limits: every limit, an integer, the same as the native CLI\'s and every model\'s', () => {
  assert.deepEqual(Object.keys(limits).sort(), [...NAMES].sort());
  for (const name of NAMES) assert.ok(Number.isInteger(limits[name]) && limits[name] > 0, `${name} = ${limits[name]}`);
  const cli = JSON.parse(execFileSync(CLI, ['version', '--json'], { encoding: 'utf8' }));
  assert.equal(cli.wasm, false);
  assert.deepEqual(cli.limits, Object.fromEntries(NAMES.map((name) => [snakeCase(name), limits[name]])));
  assert.deepEqual({ ...translator.limits }, limits);
  assert.deepEqual({ ...captioner.limits }, limits);
  assert.equal(MAX_IMAGE_SIDE, limits.maxImageSide, 'web/lib/image.mjs checks sizes against the engine\'s limit');
});

test('the engine itself: translate accepts each limit and refuses one more', async () => {
  const model = await rawModel(TRANSLATOR);
  const { maxBeam, maxTranslationLength, maxSourceTokens, maxTextBytes } = limits;
  assert.equal(typeof model.translate('A dog runs.', maxBeam, 0).text, 'string');
  // The engine's own words, with the module's "attnlab: " prefix and a code (the option table of attnlab.hpp).
  assert.throws(() => model.translate('A dog runs.', maxBeam + 1, 0),
                { message: `attnlab: beam must be an integer from 1 to ${maxBeam}, got ${maxBeam + 1}`, code: 'ATTNLAB_BAD_OPTIONS' });
  assert.equal(typeof model.translate('A dog runs.', 1, maxTranslationLength).text, 'string');
  assert.throws(() => model.translate('A dog runs.', 1, maxTranslationLength + 1),
                { message: `attnlab: maxLength must be an integer from 0 (automatic) to ${maxTranslationLength}, got ${maxTranslationLength + 1}`,
                  code: 'ATTNLAB_BAD_OPTIONS' });

  // Words until the model reads exactly maxSourceTokens tokens (the reply lists them, </s> included); "a" is one
  // token in the fixture's small vocabulary.
  const perWord = model.translate('a a', 1, 1).sourceTokens.length - model.translate('a', 1, 1).sourceTokens.length;
  assert.equal(perWord, 1, 'one token per "a"');
  const base = model.translate('a', 1, 1).sourceTokens.length;
  const atLimit = Array(maxSourceTokens - base + 1).fill('a').join(' ');
  assert.equal(model.translate(atLimit, 1, 1).sourceTokens.length, maxSourceTokens);
  assert.throws(() => model.translate(`${atLimit} a`, 1, 1),
                new RegExp(`too long: ${maxSourceTokens + 1} tokens, at most ${maxSourceTokens} are accepted`));

  // maxTextBytes bytes are refused only for their tokens; one more byte, for the bytes themselves.
  assert.throws(() => model.translate('a'.repeat(maxTextBytes), 1, 0), /tokens, at most/);
  assert.throws(() => model.translate('a'.repeat(maxTextBytes + 1), 1, 0),
                new RegExp(`too long: ${maxTextBytes + 1} bytes, at most ${maxTextBytes} are accepted`));
});

test('the engine itself: caption accepts each limit and refuses one more', async () => {
  const model = await rawModel(CAPTION_MODEL);
  const { maxBeam, maxCaptionLength, minNoRepeatNgram, maxNoRepeatNgram, maxImageSide } = limits;
  const { data, width, height } = grey(32, 24);
  const caption = (beam, maxLength, noRepeatNgram) => model.caption(data, width, height, beam, maxLength, noRepeatNgram);
  assert.equal(typeof caption(maxBeam, 0, -1).text, 'string');
  assert.throws(() => caption(maxBeam + 1, 0, -1),
                { message: `attnlab: beam must be an integer from 1 to ${maxBeam}, got ${maxBeam + 1}`, code: 'ATTNLAB_BAD_OPTIONS' });
  assert.equal(typeof caption(1, maxCaptionLength, -1).text, 'string');
  assert.throws(() => caption(1, maxCaptionLength + 1, -1),
                { message: `attnlab: maxLength must be an integer from 0 (the model's default) to ${maxCaptionLength}, got ${maxCaptionLength + 1}`,
                  code: 'ATTNLAB_BAD_OPTIONS' });
  for (const n of [-1, 0, minNoRepeatNgram, maxNoRepeatNgram]) assert.equal(typeof caption(1, 0, n).text, 'string', `noRepeatNgram ${n}`);
  for (const n of [minNoRepeatNgram - 1, maxNoRepeatNgram + 1]) {
    assert.throws(() => caption(1, 0, n),
                  { message: `attnlab: noRepeatNgram must be -1 (the model's default), 0 (off) or an integer from ${minNoRepeatNgram} to ${maxNoRepeatNgram}, got ${n}`,
                    code: 'ATTNLAB_BAD_OPTIONS' }, `noRepeatNgram ${n}`);
  }
  const wide = grey(maxImageSide, 1);
  assert.equal(typeof model.caption(wide.data, maxImageSide, 1, 1, 0, -1).text, 'string');
  assert.equal(typeof model.caption(wide.data, 1, maxImageSide, 1, 0, -1).text, 'string');
  const wider = grey(maxImageSide + 1, 1);
  assert.throws(() => model.caption(wider.data, maxImageSide + 1, 1, 1, 0, -1), new RegExp(`1 to ${maxImageSide} pixels a side`));
  assert.throws(() => model.caption(wider.data, 1, maxImageSide + 1, 1, 0, -1), new RegExp(`1 to ${maxImageSide} pixels a side`));
});

test('the module refuses the same values first, naming the engine\'s limits', async () => {
  const { maxBeam, maxTranslationLength, maxTextBytes, maxCaptionLength, minNoRepeatNgram, maxNoRepeatNgram, maxImageSide } = limits;
  assert.equal(typeof (await translator.translate('A dog runs.', { beam: maxBeam })).text, 'string');
  await assert.rejects(translator.translate('A dog runs.', { beam: maxBeam + 1 }),
                       new RegExp(`^AttnlabError: attnlab: beam must be an integer from 1 to ${maxBeam}, got ${maxBeam + 1}$`));
  assert.equal(typeof (await translator.translate('A dog runs.', { maxLength: maxTranslationLength })).text, 'string');
  await assert.rejects(translator.translate('A dog runs.', { maxLength: maxTranslationLength + 1 }),
                       new RegExp(`^AttnlabError: attnlab: maxLength must be an integer from 0 \\(automatic\\) to ${maxTranslationLength}, got ${maxTranslationLength + 1}$`));
  // UTF-8 bytes, not UTF-16 units: one "ü" is two bytes, one "😀" four.
  const fill = 'a'.repeat(maxTextBytes - 6);
  await assert.rejects(translator.translate(`${fill}ü😀`), /tokens, at most/, 'exactly maxTextBytes bytes reach the engine');
  await assert.rejects(translator.translate(`${fill}üü😀`),
                       new RegExp(`^AttnlabError: attnlab: the text is too long: ${maxTextBytes + 2} bytes of UTF-8, at most ${maxTextBytes} are accepted$`));

  const image = grey(32, 24);
  assert.equal(typeof (await captioner.caption(image, { beam: maxBeam, maxLength: maxCaptionLength })).text, 'string');
  await assert.rejects(captioner.caption(image, { beam: maxBeam + 1 }), new RegExp(`from 1 to ${maxBeam}, got ${maxBeam + 1}$`));
  await assert.rejects(captioner.caption(image, { maxLength: maxCaptionLength + 1 }),
                       new RegExp(`from 0 \\(the model's default\\) to ${maxCaptionLength}, got ${maxCaptionLength + 1}$`));
  for (const n of [minNoRepeatNgram, maxNoRepeatNgram]) assert.equal(typeof (await captioner.caption(image, { noRepeatNgram: n })).text, 'string');
  for (const n of [minNoRepeatNgram - 1, maxNoRepeatNgram + 1]) {
    await assert.rejects(captioner.caption(image, { noRepeatNgram: n }),
                         new RegExp(`an integer from ${minNoRepeatNgram} to ${maxNoRepeatNgram}, got ${n}$`));
  }
  await assert.rejects(captioner.caption(grey(maxImageSide + 1, 1)), new RegExp(`at most ${maxImageSide} pixels a side`));
});
