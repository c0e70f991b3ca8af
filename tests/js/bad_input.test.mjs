// The bad-input matrix of issue 8 through the npm module in Node (no worker): the cases live in
// bad_input_cases.mjs and run again in headless Chromium through the Web Worker (tests/e2e/bad_input.test.mjs).
// Each case: every bad call is a rejected promise with a message saying what is wrong, nothing hangs, and the same
// model still translates exactly as the native CLI afterwards.
import { test, before } from 'node:test';
import { readFile } from 'node:fs/promises';

import { loadModel } from '../../web/lib/index.mjs';
import { CONCURRENT, PROBE, cases, runCase } from './bad_input_cases.mjs';
import { cliTranslate, repoRoot } from './fixture_model.mjs';

const TRANSLATOR = `${repoRoot}/tests/fixtures/rnn/additive.gguf`;  // f32: its dims can be rewritten freely
// A captioner with an image encoder (tiny_model.gguf has none: it captions only precomputed features).
const CAPTIONER = `${repoRoot}/tests/fixtures/caption/tiny_encoder_model.gguf`;

let ctx;
before(async () => {
  const expected = {};
  for (const text of new Set([PROBE, ...CONCURRENT])) expected[text] = cliTranslate(text, {}, TRANSLATOR).text;
  ctx = {
    loadModel,
    translator: new Uint8Array(await readFile(TRANSLATOR)),
    captioner: new Uint8Array(await readFile(CAPTIONER)),
    expected,
  };
});

for (const name of Object.keys(cases)) {
  test(name, { timeout: 300_000 }, async (t) => {
    const outcome = await runCase(name, ctx);
    if (outcome?.todo) t.todo(outcome.todo);
  });
}
