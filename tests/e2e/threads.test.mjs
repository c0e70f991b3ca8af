// The threaded wasm build (web/dist/attnlab-mt.*) in headless Chromium: a page served with the app's COOP/COEP
// headers is cross-origin isolated, loads it and says so (engineInfo: build 'threaded', 2 threads), and translates
// (beam 4, in the page's thread and in the module's worker) and captions exactly as the single-thread build does
// (env.threads = 1 on the same page, and a page without COOP/COEP, which must fall back to it): the same tokens and
// the same attention bits. The translations also equal the native CLI's (tokens exactly, attention to 1e-3). The
// shipped translator and captioner are used, since the fixtures' matrices are too small to be split at all.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { cliTranslate, repoRoot } from '../js/fixture_model.mjs';
import { patternPixels } from '../js/caption_fixture.mjs';
import { offsiteRequests } from '../support/chromium.mjs';
import { securityHeadersOf, startSite } from '../support/site.mjs';

const TRANSLATOR = join(repoRoot, 'models/weights/bahdanau-en-de.q8_0.gguf');
const CAPTIONER = join(repoRoot, 'models/weights/captioner-flickr8k.q8_0.gguf');
const SENTENCES = ['A man in a blue shirt is riding a bicycle down the street.', 'Two dogs are playing in the snow.'];
const BEAM = 4;
const ISOLATED_PATH = '/__tests__/isolated.html';
const PLAIN_PATH = '/__tests__/plain.html';

let site;
let securityHeaders;

before(async () => {
  for (const file of [TRANSLATOR, CAPTIONER, join(repoRoot, 'web/dist/attnlab-mt.wasm')]) {
    if (!existsSync(file)) throw new Error(`${file} does not exist: run npm run build`);
  }
  site = await startSite({ prefix: 'attnlab-e2e-threads-',
                           unlisted: { 'translator.gguf': TRANSLATOR, 'captioner.gguf': CAPTIONER } });
  securityHeaders = await securityHeadersOf(site);
  assert.equal(securityHeaders['cross-origin-opener-policy'], 'same-origin', 'npm start sends COOP');
  assert.equal(securityHeaders['cross-origin-embedder-policy'], 'require-corp', 'npm start sends COEP');
  const withoutIsolation = Object.fromEntries(Object.entries(securityHeaders)
    .filter(([name]) => !/^cross-origin-(opener|embedder)-policy$/.test(name)));
  for (const [path, headers] of [[ISOLATED_PATH, securityHeaders], [PLAIN_PATH, withoutIsolation]]) {
    await site.context.route(`${site.origin}${path}`, (route) => route.fulfill({
      status: 200, body: '<!doctype html><title>attnlab threads</title>',
      headers: { 'content-type': 'text/html; charset=utf-8', ...headers },
    }));
  }
});

after(async () => {
  await site?.close();
});

// Everything one page computes, as plain arrays (bit-exact comparisons below).
async function runPage(path, threads) {
  const page = await site.context.newPage();
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  try {
    await page.goto(`${site.origin}${path}`);
    const result = await page.evaluate(async ({ threads, sentences, beam, pixels }) => {
      const lib = await import('/lib/index.mjs');
      if (threads !== undefined) lib.env.threads = threads;
      const plain = (t) => ({ text: t.text, sourceTokens: t.sourceTokens, targetTokens: t.targetTokens,
                              targetIds: t.targetIds, scoreFunction: t.scoreFunction,
                              attention: { rows: t.attention.rows, cols: t.attention.cols, data: Array.from(t.attention.data) },
                              scores: { rows: t.scores.rows, cols: t.scores.cols, data: Array.from(t.scores.data) } });
      const out = { isolated: self.crossOriginIsolated, info: await lib.engineInfo(), inPage: [], inWorker: [] };
      for (const [where, useWorker] of [['inPage', false], ['inWorker', true]]) {
        const model = await lib.loadModel('/models/weights/translator.gguf', { useWorker, cache: false });
        for (const text of sentences) out[where].push(plain(await model.translate(text, { beam })));
        await model.dispose();
      }
      const captioner = await lib.loadModel('/models/weights/captioner.gguf', { cache: false });
      const image = { data: new Uint8ClampedArray(pixels.data), width: pixels.width, height: pixels.height };
      const caption = await captioner.caption(image, { beam: 3 });
      out.caption = { text: caption.text, tokens: caption.tokens, attention: Array.from(caption.attention.data) };
      await captioner.dispose();
      return out;
    }, { threads, sentences: SENTENCES, beam: BEAM, pixels: { ...patternPixels(300, 200), data: Array.from(patternPixels(300, 200).data) } });
    assert.deepEqual(pageErrors, [], `${path}: page errors`);
    return result;
  } finally {
    await page.close();
  }
}

let threaded;
let single;
let plain;

test('COOP/COEP: the page is cross-origin isolated and runs the threaded build on 2 threads', { timeout: 300_000 }, async () => {
  threaded = await runPage(ISOLATED_PATH, 2);
  assert.equal(threaded.isolated, true);
  assert.equal(threaded.info.build, 'threaded');
  assert.equal(threaded.info.threads, 2);
  assert.ok(threaded.info.maxThreads >= 2, `maxThreads ${threaded.info.maxThreads}`);
  const offsite = offsiteRequests(site.requests, site.origin);
  assert.deepEqual(offsite, [], `requests left the origin: ${offsite.join(', ')}`);
});

test('the single-thread build: env.threads = 1 or auto, and a page without COOP/COEP falls back to it', { timeout: 300_000 }, async () => {
  single = await runPage(ISOLATED_PATH, 1);
  assert.equal(single.info.build, 'single-thread');
  assert.equal(single.info.threads, 1);
  assert.equal(single.info.maxThreads, 1);
  const auto = await runPage(ISOLATED_PATH, undefined);
  assert.equal(auto.isolated, true);
  assert.equal(auto.info.build, 'single-thread', "env.threads 'auto' keeps the single-thread build (the threaded one is opt-in)");
  plain = await runPage(PLAIN_PATH, undefined);
  assert.equal(plain.isolated, false);
  assert.equal(plain.info.build, 'single-thread');
  assert.equal(plain.info.threads, 1);
});

test('threaded and single-thread builds translate and caption to the same bits; translations equal the CLI\'s', { timeout: 120_000 }, async () => {
  assert.ok(threaded && single && plain, 'the pages above ran');
  for (const where of ['inPage', 'inWorker']) {
    assert.deepEqual(threaded[where], single.inPage, `threaded ${where} vs single-thread`);
    assert.deepEqual(plain[where], single.inPage, `non-isolated ${where} vs single-thread`);
  }
  assert.deepEqual(threaded.caption, single.caption, 'caption: threaded vs single-thread');
  assert.deepEqual(plain.caption, single.caption, 'caption: non-isolated vs single-thread');
  assert.ok(threaded.caption.tokens.length > 0, 'a caption came out');
  // The native CLI's Q8_0 kernels sum in another order than wasm's (AVX-512 lanes, fused multiply-adds), so its
  // attention agrees to 1e-3, not to the last bit; the tokens must be the same.
  SENTENCES.forEach((text, i) => {
    const cli = cliTranslate(text, { beam: BEAM }, TRANSLATOR);
    const got = threaded.inWorker[i];
    const label = `sentence ${i}, threaded build vs CLI`;
    assert.equal(got.text, cli.text, `${label}: text`);
    assert.deepEqual(got.targetTokens, cli.target_tokens, `${label}: target tokens`);
    assert.deepEqual(got.targetIds, cli.target_ids, `${label}: target ids`);
    cli.attention.forEach((row, r) => row.forEach((value, c) => {
      const actual = got.attention.data[r * got.attention.cols + c];
      assert.ok(Math.abs(actual - value) <= 1e-3, `${label}: attention[${r}][${c}] = ${actual}, CLI ${value}`);
    }));
  });
});
