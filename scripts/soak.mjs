#!/usr/bin/env node
// Soak test (issue 8): in headless Chromium, one translator and one captioner, each in its own Web Worker, run
// 2,000 translations (beams 1 and 4, test2016 sentences and long ones) and 200 captions (synthetic images of many
// sizes and the page's sample photos). The engine's memory is read after a warm-up of 10% of the calls and at the
// end; growth of 5% or more in either number fails the run:
//   wasmBytes    the wasm memory's size (what the browser has to give the tab; it only grows, in big steps)
//   mallocBytes  malloc's bytes in use (sees a slow leak long before the memory has to grow)
// Every repeated (input, beam) must give the same text as its first run, so corruption fails too.
// The warm-up starts with the longest inputs and the largest images, so later calls need no new peak.
//
//   node scripts/soak.mjs [--short]     (--short: 200 translations + 20 captions)
// Prints one JSON line: { ok, calls, seconds, memory: { translator, captioner }, ... }; exit status 1 on failure.
// ATTNLAB_SOAK_TRANSLATOR / ATTNLAB_SOAK_CAPTIONER override the models, ATTNLAB_CHROMIUM the browser.
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { createAppServer } from '../web/server.mjs';
import { launchChromium } from '../tests/support/chromium.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const short = process.argv.includes('--short');
const TRANSLATIONS = short ? 200 : 2000;
const CAPTIONS = short ? 20 : 200;
const WARMUP = 0.1;
const MAX_GROWTH_PERCENT = 5;
const BLANK_PATH = '/__soak__/blank.html';

const BUILT_IN_SENTENCES = [
  'A dog runs on the beach.', 'Two men are playing soccer in a park.', 'A woman in a red dress is walking down the street.',
  'Children play in the water.', 'A man is riding a bicycle.', 'A group of people stand in front of a building.',
  'A little girl is climbing a tree.', 'Two dogs are fighting over a stick in the snow.', 'A chef cooks in a kitchen.',
  'An older man sits on a bench reading a newspaper.', 'A boy jumps into a swimming pool.', 'People are shopping at a market.',
];

function fail(message) {
  console.error(`soak: ${message}`);
  process.exit(1);
}

async function chooseModels() {
  let translator = process.env.ATTNLAB_SOAK_TRANSLATOR || join(root, 'models/weights/bahdanau-en-de.q8_0.gguf');
  let captioner = process.env.ATTNLAB_SOAK_CAPTIONER;
  if (!captioner) {
    // A real captioner from the manifest if one is there, else the tiny fixture with an image encoder.
    const { models } = JSON.parse(await readFile(join(root, 'models/manifest.json'), 'utf8'));
    const entry = models.find((m) => m.task === 'caption' && existsSync(join(root, m.file)));
    captioner = entry ? join(root, entry.file) : join(root, 'tests/fixtures/caption/tiny_encoder_model.gguf');
  }
  for (const file of [translator, captioner]) if (!existsSync(file)) fail(`${file} does not exist`);
  return { translator, captioner };
}

// Sentences: test2016 if prepared, else the built-in list; plus long ones (several sentences joined).
async function sentences() {
  const path = join(root, 'build/data/multi30k/test2016.en');
  const base = existsSync(path)
    ? (await readFile(path, 'utf8')).split('\n').map((s) => s.trim()).filter(Boolean)
    : BUILT_IN_SENTENCES;
  const long = [];
  for (let i = 0; i + 4 <= base.length && long.length < 20; i += 7) long.push(base.slice(i, i + 4).join(' '));
  return { base, long };
}

// The translation schedule: [{ text, beam }]; the longest inputs at beam 4 come first (in the warm-up).
function translationSchedule({ base, long }, count) {
  const schedule = [];
  const longest = [...long].sort((a, b) => b.length - a.length);
  for (let i = 0; i < Math.min(3, longest.length); ++i) schedule.push({ text: longest[i], beam: 4 });
  for (let i = 0; schedule.length < count; ++i) {
    const useLong = i % 25 === 24 && long.length > 0;
    const text = useLong ? long[i % long.length] : base[(i * 7919) % base.length];
    schedule.push({ text, beam: i % 4 === 3 ? 4 : 1 });
  }
  return schedule;
}

// The caption schedule: [{ image, beam }] with image a synthetic { kind: 'synthetic', width, height, seed } or
// { kind: 'sample', url }. The largest image at both beams and every sample come first, and the warm-up covers at
// least them: with a warm-up of 2 calls the 14x14 q8_0 captioner's memory grew 48 -> 58 MB later in the short soak
// while malloc's bytes stayed the same, i.e. a later call reached a new peak, not a leak.
function captionSchedule(samples, count) {
  const sizes = [[1600, 1200], [1024, 768], [640, 480], [224, 224], [480, 640], [300, 7], [7, 300], [1, 1], [33, 2000],
    [100, 100], [257, 129], [64, 48]];
  const images = [...sizes.map(([width, height], seed) => ({ kind: 'synthetic', width, height, seed })),
    ...samples.map((url) => ({ kind: 'sample', url }))];
  const schedule = [{ image: images[0], beam: 3 }, { image: images[0], beam: 1 },
    ...images.filter((im) => im.kind === 'sample').map((image) => ({ image, beam: 3 }))];
  schedule.warmup = schedule.length;
  for (let i = 0; schedule.length < count; ++i) schedule.push({ image: images[i % images.length], beam: i % 3 === 2 ? 3 : 1 });
  const trimmed = schedule.slice(0, count);
  trimmed.warmup = Math.min(schedule.warmup, count);
  return trimmed;
}

function growth(before, after) {
  const percent = (key) => (before[key] == null || after[key] == null ? null
    : Math.round(((after[key] - before[key]) / before[key]) * 10000) / 100);
  return { before, after, wasmGrowthPercent: percent('wasmBytes'), mallocGrowthPercent: percent('mallocBytes') };
}

// ---- in the page ----

// Runs in the page: loads both models, exposes window.__soak.
async function pageSetup({ translatorUrl, captionerUrl }) {
  const { loadModel } = await import('/lib/index.mjs');
  const translator = await loadModel(translatorUrl, { cache: false });
  const captioner = await loadModel(captionerUrl, { cache: false }).catch((error) => ({ loadError: error.message }));
  if (!translator.inWorker) throw new Error('the translator is not in a Web Worker');
  const images = new Map();
  // A deterministic RGBA pattern: gradients plus a hashed texture, different per seed.
  const synthetic = ({ width, height, seed }) => {
    const data = new Uint8ClampedArray(width * height * 4);
    for (let y = 0; y < height; ++y) {
      for (let x = 0; x < width; ++x) {
        const i = (y * width + x) * 4;
        const h = Math.imul(x * 73856093 ^ y * 19349663 ^ seed * 83492791, 2654435761) >>> 24;
        data[i] = (x * 255) / Math.max(1, width - 1);
        data[i + 1] = (y * 255) / Math.max(1, height - 1);
        data[i + 2] = (h + seed * 40) & 255;
        data[i + 3] = 255;
      }
    }
    return { data, width, height };
  };
  const sample = async (url) => {
    const bitmap = await createImageBitmap(await (await fetch(url)).blob());
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const context2d = canvas.getContext('2d');
    context2d.drawImage(bitmap, 0, 0);
    return context2d.getImageData(0, 0, bitmap.width, bitmap.height);  // an ImageData
  };
  window.__soak = {
    translator, captioner, seen: new Map(),
    async image(spec) {
      const key = JSON.stringify(spec);
      if (!images.has(key)) images.set(key, spec.kind === 'sample' ? await sample(spec.url) : synthetic(spec));
      const image = images.get(key);
      // Alternate the two input forms: a plain { data, width, height } object and an ImageData.
      return spec.kind === 'synthetic' && spec.seed % 2 === 1 ? new ImageData(image.data, image.width, image.height) : image;
    },
  };
  return {
    captioner: captioner.loadError ? { error: captioner.loadError } : { caption: typeof captioner.caption === 'function' },
  };
}

// Runs in the page: a batch of calls, four at a time in flight; returns the first problem, if any.
async function pageBatch({ kind, calls }) {
  const soak = window.__soak;
  const model = kind === 'translate' ? soak.translator : soak.captioner;
  const problems = [];
  const run = async ({ text, image, beam }) => {
    const key = JSON.stringify({ text, image, beam });
    const result = kind === 'translate' ? await model.translate(text, { beam })
      : await model.caption(await soak.image(image), { beam });
    const rows = result.attention.rows;
    const tokens = kind === 'translate' ? result.targetTokens.length : result.tokens.length;
    if (rows !== tokens) problems.push(`${key}: ${rows} attention rows for ${tokens} tokens`);
    if (result.attention.data.some((v) => !Number.isFinite(v))) problems.push(`${key}: non-finite attention`);
    if (soak.seen.has(key) && soak.seen.get(key) !== result.text) {
      problems.push(`${key}: ${JSON.stringify(result.text)}, earlier ${JSON.stringify(soak.seen.get(key))}`);
    }
    soak.seen.set(key, result.text);
  };
  for (let i = 0; i < calls.length; i += 4) {
    const settled = await Promise.allSettled(calls.slice(i, i + 4).map(run));
    for (const s of settled) if (s.status === 'rejected') problems.push(s.reason?.message ?? String(s.reason));
    if (problems.length) break;
  }
  return problems;
}

// ---- main ----

async function main() {
  const models = await chooseModels();
  const text = await sentences();
  const workDir = await mkdtemp(join(tmpdir(), 'attnlab-soak-'));
  const modelsDir = join(workDir, 'models');
  await mkdir(join(modelsDir, 'weights'), { recursive: true });
  await copyFile(models.translator, join(modelsDir, 'weights/translator.gguf'));
  await copyFile(models.captioner, join(modelsDir, 'weights/captioner.gguf'));
  await writeFile(join(modelsDir, 'manifest.json'), JSON.stringify({ models: [] }));
  const samplesDir = join(root, 'web/app/samples');
  const samples = existsSync(samplesDir)
    ? (await readdir(samplesDir)).filter((f) => /\.(jpe?g|png)$/i.test(f)).sort().map((f) => `/app/samples/${f}`) : [];

  const server = createAppServer({ modelsDir });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://localhost:${server.address().port}`;
  const securityHeaders = Object.fromEntries([...(await fetch(`${origin}/`)).headers].filter(([name]) =>
    /^(content-security-policy|cross-origin-(opener|embedder)-policy)$/.test(name)));
  const browser = await launchChromium();
  const summary = { ok: false, short, calls: { translate: 0, caption: 0 }, seconds: 0, memory: {} };
  const problems = [];
  try {
    const page = await browser.newPage();
    await page.route(`${origin}${BLANK_PATH}`, (route) => route.fulfill({
      status: 200, body: '<!doctype html><title>attnlab soak</title>',
      headers: { 'content-type': 'text/html; charset=utf-8', ...securityHeaders },
    }));
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${origin}${BLANK_PATH}`);
    const setup = await page.evaluate(pageSetup, {
      translatorUrl: '/models/weights/translator.gguf', captionerUrl: '/models/weights/captioner.gguf',
    });
    if (setup.captioner.caption !== true) {
      fail(`the captioner cannot caption: ${setup.captioner.error ?? 'it has no caption() method'}`);
    }

    const jobs = [{ kind: 'translate', calls: translationSchedule(text, TRANSLATIONS) },
      { kind: 'caption', calls: captionSchedule(samples, CAPTIONS) }];
    const memory = (kind) => page.evaluate((k) => window.__soak[k === 'translate' ? 'translator' : 'captioner']._memoryStats(), kind);
    const start = performance.now();
    for (const { kind, calls } of jobs) {
      const warmup = Math.max(1, Math.round(calls.length * WARMUP), calls.warmup ?? 0);
      const batches = [calls.slice(0, warmup)];
      for (let i = warmup; i < calls.length; i += 100) batches.push(calls.slice(i, i + 100));
      let before = null;
      for (const [b, batch] of batches.entries()) {
        const batchProblems = await page.evaluate(pageBatch, { kind, calls: batch });
        problems.push(...batchProblems.map((p) => `${kind}: ${p}`));
        if (problems.length) break;
        summary.calls[kind] += batch.length;
        if (b === 0) before = await memory(kind);
      }
      if (problems.length) break;
      const result = growth(before, await memory(kind));
      summary.memory[kind === 'translate' ? 'translator' : 'captioner'] = result;
      for (const key of ['wasmGrowthPercent', 'mallocGrowthPercent']) {
        if (result[key] !== null && result[key] >= MAX_GROWTH_PERCENT) {
          problems.push(`${kind}: ${key} ${result[key]}% (at most ${MAX_GROWTH_PERCENT}% allowed)`);
        }
      }
    }
    summary.seconds = Math.round((performance.now() - start) / 100) / 10;
    await page.evaluate(() => { window.__soak.translator.terminate(); window.__soak.captioner.terminate?.(); });
  } catch (error) {
    problems.push(error.message);
  } finally {
    await browser.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(workDir, { recursive: true, force: true });
  }
  summary.models = { translator: models.translator.replace(root, ''), captioner: models.captioner.replace(root, '') };
  summary.samples = samples.length;
  if (problems.length) summary.problems = problems.slice(0, 10);
  summary.ok = problems.length === 0;
  console.log(JSON.stringify(summary));
  process.exit(summary.ok ? 0 : 1);
}

main().catch((error) => fail(error.stack ?? error.message));
