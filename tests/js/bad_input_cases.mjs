// The bad-input matrix of issue 8, written once and run twice: in Node by tests/js/bad_input.test.mjs (engine in
// the calling thread) and in headless Chromium by tests/e2e/bad_input.test.mjs (engine in a Web Worker). No Node
// imports here: the browser imports this file as a module.
//
// Every case: each bad call must be a rejected promise whose message matches a regex (never a hang: every await
// has a timeout; never a crash: a dead worker or wasm instance fails the "still translates" check), and afterwards
// the case's own model still translates the probe sentence exactly as the CLI does.
//
// ctx = {
//   loadModel,                  the module's loadModel
//   translator: Uint8Array,     tests/fixtures/rnn/additive.gguf (f32, so dims can be rewritten freely)
//   captioner: Uint8Array,      tests/fixtures/caption/tiny_encoder_model.gguf
//   expected: { [sentence]: text },   the CLI's greedy translations of PROBE and of CONCURRENT's sentences
//   translatorUrl?: string,     browser only: the translator served by the test server (SHA-256 + Cache API check)
//   cacheName?: string,         browser only: the module's Cache API name
// }
// A case returns undefined when it passed or { todo: reason } when part of it cannot run yet.

export const PROBE = 'A dog runs on the beach.';
export const CONCURRENT = ['A dog runs on the beach.', 'Two men are playing soccer in a park.', 'Zyxx qwerty!',
  'A woman in a red dress.', 'Children play in the water.'];
const TIMEOUT_MS = 60_000;

// ---- tiny assertion helpers (no node:assert in a browser) ----

function fail(message) {
  throw new Error(message);
}

function withTimeout(promise, label, ms = TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`hang: ${label} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Runs make() (a call that may throw synchronously or return a promise) and requires a rejection matching re. */
async function expectReject(label, make, re) {
  let promise;
  try {
    promise = make();
  } catch (error) {
    fail(`${label}: threw synchronously instead of returning a rejected promise: ${error?.message ?? error}`);
  }
  if (!promise || typeof promise.then !== 'function') fail(`${label}: did not return a promise`);
  let outcome;
  try {
    outcome = { value: await withTimeout(promise, label) };
  } catch (error) {
    if (/^hang: /.test(error?.message)) throw error;
    if (!(error instanceof Error)) fail(`${label}: rejected with a non-Error: ${String(error)}`);
    if (!re.test(error.message)) fail(`${label}: message ${JSON.stringify(error.message)} does not match ${re}`);
    return error.message;
  }
  // Do not leak a model (or a worker) that loaded when it should not have.
  outcome.value?.terminate?.();
  fail(`${label}: resolved, expected a rejection matching ${re}`);
}

async function load(ctx, bytes, label) {
  return withTimeout(ctx.loadModel(bytes.slice()), `loading ${label}`);
}

/** The model still translates PROBE exactly as the CLI does. */
async function assertStillTranslates(ctx, model, after) {
  const t = await withTimeout(model.translate(PROBE), `translate after ${after}`);
  if (t.text !== ctx.expected[PROBE]) {
    fail(`after ${after} the model translates ${JSON.stringify(PROBE)} as ${JSON.stringify(t.text)}, ` +
         `the CLI as ${JSON.stringify(ctx.expected[PROBE])}`);
  }
}

// ---- a minimal GGUF walker: offsets of the header, metadata, tensor infos and data ----

const SCALAR_BYTES = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/** { metadataStart, tensorInfoStart, dataStart, tensors: [{ name, dims, dimsOffset }] } (dims innermost first). */
export function walkGguf(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder();
  let at = 0;
  const u32 = () => { const v = view.getUint32(at, true); at += 4; return v; };
  const u64 = () => { const v = Number(view.getBigUint64(at, true)); at += 8; return v; };
  const string = () => { const n = u64(); const s = decoder.decode(bytes.subarray(at, at + n)); at += n; return s; };
  const skipValue = (type) => {
    if (type === 8) { string(); return; }
    if (type === 9) {
      const itemType = u32();
      const count = u64();
      for (let i = 0; i < count; ++i) skipValue(itemType);
      return;
    }
    const size = SCALAR_BYTES[type];
    if (!size) fail(`walkGguf: unknown value type ${type}`);
    at += size;
  };
  if (decoder.decode(bytes.subarray(0, 4)) !== 'GGUF') fail('walkGguf: not a GGUF file');
  at = 8;
  const tensorCount = u64();
  const keyCount = u64();
  const metadataStart = at;
  let alignment = 32;
  for (let i = 0; i < keyCount; ++i) {
    const key = string();
    const type = u32();
    if (key === 'general.alignment' && type === 4) alignment = view.getUint32(at, true);
    skipValue(type);
  }
  const tensorInfoStart = at;
  const tensors = [];
  for (let i = 0; i < tensorCount; ++i) {
    const name = string();
    const nDims = u32();
    const dimsOffset = at;
    const dims = [];
    for (let d = 0; d < nDims; ++d) dims.push(u64());
    at += 4 + 8;  // type, offset
    tensors.push({ name, dims, dimsOffset });
  }
  const dataStart = Math.ceil(at / alignment) * alignment;
  return { metadataStart, tensorInfoStart, dataStart, tensors };
}

/** A copy of bytes with one tensor's GGUF dims replaced (same number of dims). */
function withDims(bytes, tensor, dims) {
  const copy = bytes.slice();
  const view = new DataView(copy.buffer);
  dims.forEach((d, i) => view.setBigUint64(tensor.dimsOffset + 8 * i, BigInt(d), true));
  return copy;
}

// ---- the cases ----

export const cases = {
  async 'truncated weights: cut inside the header, the metadata, the tensor infos and the tensor data'(ctx) {
    const model = await load(ctx, ctx.translator, 'the translator');
    const good = ctx.translator;
    const layout = walkGguf(good);
    const cuts = {
      'in the magic': 3,
      'in the header': 12,
      'in the metadata': Math.floor((layout.metadataStart + layout.tensorInfoStart) / 2),
      'in the tensor infos': Math.floor((layout.tensorInfoStart + layout.dataStart) / 2),
      'at the start of the tensor data': layout.dataStart + 10,
      'in the middle of the tensor data': Math.floor((layout.dataStart + good.length) / 2),
      'one byte short': good.length - 1,
    };
    for (const [where, cut] of Object.entries(cuts)) {
      await expectReject(`weights cut ${where} (${cut} of ${good.length} bytes)`,
                         () => ctx.loadModel(good.slice(0, cut)),
                         /truncated|not a GGUF|cannot fit|needs bytes|bytes remain|beyond|past the end/i);
    }
    await expectReject('empty weights', () => ctx.loadModel(new Uint8Array(0)), /empty/i);
    await assertStillTranslates(ctx, model, 'truncated weights');
    model.terminate();
  },

  async 'wrong magic'(ctx) {
    const model = await load(ctx, ctx.translator, 'the translator');
    const bad = ctx.translator.slice();
    bad.set([0x47, 0x47, 0x4d, 0x4c], 0);  // "GGML"
    await expectReject('magic GGML', () => ctx.loadModel(bad), /not a GGUF file.*magic|magic.*GGML/i);
    await expectReject('a PNG', () => ctx.loadModel(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10, 0, 0, 0, 0])),
                       /not a GGUF file/i);
    await assertStillTranslates(ctx, model, 'wrong magic');
    model.terminate();
  },

  async 'SHA-256 mismatch: rejected, and nothing is cached'(ctx) {
    const model = await load(ctx, ctx.translator, 'the translator');
    const wrong = '0123456789abcdef'.repeat(4);
    await expectReject('bytes with a wrong sha256', () => ctx.loadModel(ctx.translator.slice(), { sha256: wrong }),
                       new RegExp(`SHA-256 mismatch.*expected ${wrong}`));
    await expectReject('sha256 that is not hex', () => ctx.loadModel(ctx.translator.slice(), { sha256: 'xyz' }),
                       /sha256 .*64 hex digits/);
    if (ctx.translatorUrl) {
      const cache = await caches.open(ctx.cacheName);
      await cache.delete(new URL(ctx.translatorUrl, location.href).href);
      await expectReject('a download with a wrong sha256', () => ctx.loadModel(ctx.translatorUrl, { sha256: wrong }),
                         /SHA-256 mismatch/);
      const keys = (await cache.keys()).map((request) => request.url);
      if (keys.some((url) => url.endsWith(ctx.translatorUrl))) {
        fail(`after a SHA-256 mismatch the Cache API holds ${ctx.translatorUrl}: ${keys.join(', ')}`);
      }
      // Control: a good download is cached under the URL this check looks for.
      (await withTimeout(ctx.loadModel(ctx.translatorUrl), 'a good download')).terminate();
      if (!(await cache.keys()).some((request) => request.url.endsWith(ctx.translatorUrl))) {
        fail(`a good download of ${ctx.translatorUrl} was not cached, so the check above proves nothing`);
      }
      await cache.delete(new URL(ctx.translatorUrl, location.href).href);
    }
    await assertStillTranslates(ctx, model, 'a SHA-256 mismatch');
    model.terminate();
  },

  async 'a model of the wrong kind: translate on a captioner, caption on a translator'(ctx) {
    const model = await load(ctx, ctx.translator, 'the translator');
    const captioner = await load(ctx, ctx.captioner, 'the captioner');
    await expectReject('translate on a captioner', () => captioner.translate(PROBE), /caption.*translat|translat.*caption/i);
    captioner.terminate();
    await expectReject('caption on a translator', () => model.caption({ data: new Uint8Array(4 * 32 * 32), width: 32, height: 32 }),
                       /translat.*caption|caption.*translat/i);
    await assertStillTranslates(ctx, model, 'wrong-kind calls');
    model.terminate();
  },

  async 'tensors of the wrong shape: refused with a message naming the tensor'(ctx) {
    const model = await load(ctx, ctx.translator, 'the translator');
    const { tensors } = walkGguf(ctx.translator);
    const matrix = tensors.find((t) => t.dims.length === 2 && t.dims[0] !== t.dims[1] && t.dims[0] > 1);
    if (!matrix) fail('the translator fixture has no non-square matrix');
    const escaped = matrix.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const named = new RegExp(`'${escaped}'`);
    // Same bytes, transposed dims: only a shape check can catch it.
    await expectReject(`${matrix.name} transposed`, () => ctx.loadModel(withDims(ctx.translator, matrix, [...matrix.dims].reverse())),
                       named);
    // One column fewer: the data still fits, the shape does not.
    await expectReject(`${matrix.name} one column short`,
                       () => ctx.loadModel(withDims(ctx.translator, matrix, [matrix.dims[0] - 1, matrix.dims[1]])), named);
    const vector = tensors.find((t) => t.dims.length === 1 && t.dims[0] > 1);
    if (vector) {
      await expectReject(`${vector.name} one element short`, () => ctx.loadModel(withDims(ctx.translator, vector, [vector.dims[0] - 1])),
                         new RegExp(`'${vector.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`));
    }
    await assertStillTranslates(ctx, model, 'wrong tensor shapes');
    model.terminate();
  },

  async 'text: empty, blank, 10,000 characters, unpaired surrogates'(ctx) {
    const model = await load(ctx, ctx.translator, 'the translator');
    await expectReject('empty text', () => model.translate(''), /attnlab: the text to translate is empty/);
    await expectReject('blank text', () => model.translate(' \n\t '), /empty/);
    await expectReject('10,000 characters of words', () => model.translate('a dog runs '.repeat(1000).slice(0, 10_000)),
                       /too long: \d+ tokens, at most \d+/);
    await expectReject('10,000 characters, no space', () => model.translate('x'.repeat(10_000)), /too long/);
    // Unpaired UTF-16 surrogates are refused (decided in issue 8): embind's UTF-8 conversion would otherwise
    // merge a lone high surrogate with the next character into an unrelated code point, silently.
    for (const [label, text] of [['a lone high surrogate', 'A \uD800 dog'], ['a lone low surrogate', 'A dog\uDC00'],
                                 ['a high surrogate at the end', 'A dog \uD83D'], ['reversed pair', 'A \uDE00\uD83D dog']]) {
      await expectReject(label, () => model.translate(text), /attnlab: the text has an unpaired UTF-16 surrogate \(U\+D[89A-F][0-9A-F]{2}\) at index \d+/);
    }
    // A proper pair (an emoji) is fine; so is a NUL character.
    await withTimeout(model.translate('A dog \uD83D\uDE00 runs.'), 'translate with an emoji');
    await withTimeout(model.translate('A dog\u0000 runs.'), 'translate with a NUL');
    await expectReject('text that is not a string', () => model.translate(new TextEncoder().encode(PROBE)), /string/);
    await assertStillTranslates(ctx, model, 'bad text');
    model.terminate();
  },

  async 'caption inputs: zero-size, huge and non-image'(ctx) {
    const translator = await load(ctx, ctx.translator, 'the translator');
    const model = await load(ctx, ctx.captioner, 'the captioner');
    const rgba = (w, h) => ({ data: new Uint8ClampedArray(w * h * 4).fill(128), width: w, height: h });
    const size = /attnlab: .*(width|height|size|pixels)/i;
    const tooLarge = /attnlab: the image is too large.*\d+ pixels a side/;
    const notImage = /attnlab: caption\(\) needs an image/;
    const bad = [
      ['zero width', { data: new Uint8ClampedArray(0), width: 0, height: 10 }, size],
      ['zero height', { data: new Uint8ClampedArray(0), width: 10, height: 0 }, size],
      ['zero by zero', { data: new Uint8ClampedArray(0), width: 0, height: 0 }, size],
      ['negative width', { data: new Uint8ClampedArray(40), width: -1, height: 10 }, size],
      ['fractional height', { data: new Uint8ClampedArray(40), width: 2, height: 2.5 }, size],
      ['100000 × 100000 claimed', { data: new Uint8ClampedArray(16), width: 100_000, height: 100_000 }, tooLarge],
      ['100000 × 1 (too wide)', { data: new Uint8ClampedArray(400_000), width: 100_000, height: 1 }, tooLarge],
      ['data one byte short', { data: new Uint8ClampedArray(4 * 8 * 8 - 1), width: 8, height: 8 }, /attnlab: .*255 bytes.*256/],
      ['data not bytes', { data: new Float32Array(4 * 8 * 8), width: 8, height: 8 }, notImage],
      ['data a plain array', { data: new Array(4 * 8 * 8).fill(0), width: 8, height: 8 }, notImage],
      ['no data', { width: 8, height: 8 }, notImage],
      ['a string', 'cat.jpg', notImage],
      ['a number', 42, notImage],
      ['null', null, notImage],
      ['undefined', undefined, notImage],
      ['bare bytes', new Uint8Array(4 * 8 * 8), notImage],
    ];
    if (typeof createImageBitmap === 'function') {  // browser: a closed ImageBitmap has no pixels left
      const bitmap = await createImageBitmap(new ImageData(8, 8));
      bitmap.close();
      bad.push(['a closed ImageBitmap', bitmap, /attnlab: the ImageBitmap was closed/]);
    }
    for (const [label, image, re] of bad) {
      await expectReject(`caption(${label})`, () => model.caption(image), re);
    }
    await expectReject('caption with beam 0', () => model.caption(rgba(8, 8), { beam: 0 }), /beam/);
    // The captioner still captions, and the same image gives the same caption as before the errors.
    const first = await withTimeout(model.caption(rgba(16, 16)), 'caption after bad images');
    if (typeof first.text !== 'string') fail('caption() did not return a text');
    const again = await withTimeout(model.caption(rgba(16, 16)), 'caption again');
    if (again.text !== first.text) fail(`the same image captioned as ${JSON.stringify(first.text)} then ${JSON.stringify(again.text)}`);
    model.terminate();
    await assertStillTranslates(ctx, translator, 'bad images');
    translator.terminate();
  },

  async 'calls after terminate() and dispose() reject with a message, pending ones too'(ctx) {
    const model = await load(ctx, ctx.translator, 'the translator');
    const pending = [model.translate(PROBE), model.translate(PROBE, { beam: 4 })];
    model.terminate();
    for (const [i, promise] of pending.entries()) {
      await expectReject(`pending call ${i} at terminate()`, () => promise, /attnlab: the model was terminated/);
    }
    await expectReject('translate after terminate()', () => model.translate(PROBE), /attnlab: the model was terminated/);
    const captioner = await load(ctx, ctx.captioner, 'the captioner');
    captioner.terminate();
    await expectReject('caption after terminate()', () => captioner.caption({ data: new Uint8Array(4), width: 1, height: 1 }),
                       /attnlab: the model was terminated/);
    model.terminate();  // a second terminate() is harmless
    await withTimeout(model.dispose(), 'dispose() after terminate()');

    const other = await load(ctx, ctx.translator, 'the translator');
    const queued = other.translate(PROBE);
    await withTimeout(other.dispose(), 'dispose()');
    const t = await withTimeout(queued, 'a call queued before dispose()');
    if (t.text !== ctx.expected[PROBE]) fail(`a call queued before dispose() gave ${JSON.stringify(t.text)}`);
    await expectReject('translate after dispose()', () => other.translate(PROBE), /attnlab: the model was disposed/);

    const third = await load(ctx, ctx.translator, 'the translator');
    await assertStillTranslates(ctx, third, 'terminating other models');
    third.terminate();
  },

  async '20 concurrent calls all resolve, in order, equal to sequential calls'(ctx) {
    const model = await load(ctx, ctx.translator, 'the translator');
    const calls = Array.from({ length: 20 }, (_, i) => ({ text: CONCURRENT[i % CONCURRENT.length], beam: 1 + (i % 3) }));
    const sequential = [];
    for (const { text, beam } of calls) sequential.push(await withTimeout(model.translate(text, { beam }), 'a sequential call'));
    const order = [];
    const concurrent = await withTimeout(Promise.all(calls.map(({ text, beam }, i) =>
      model.translate(text, { beam }).then((t) => { order.push(i); return t; }))), '20 concurrent calls');
    if (order.join() !== calls.map((_, i) => i).join()) fail(`concurrent calls settled out of order: ${order.join()}`);
    concurrent.forEach((t, i) => {
      const s = sequential[i];
      if (t.text !== s.text) fail(`call ${i}: ${JSON.stringify(t.text)} concurrently, ${JSON.stringify(s.text)} sequentially`);
      if (t.attention.data.length !== s.attention.data.length ||
          t.attention.data.some((v, j) => v !== s.attention.data[j])) fail(`call ${i}: attention differs`);
    });
    // Greedy results also equal the CLI's (so sequential and concurrent are not merely equally wrong).
    calls.forEach(({ text, beam }, i) => {
      if (beam === 1 && concurrent[i].text !== ctx.expected[text]) {
        fail(`call ${i}: ${JSON.stringify(concurrent[i].text)}, the CLI ${JSON.stringify(ctx.expected[text])}`);
      }
    });
    // Errors in the middle of a burst reject only their own call.
    const mixed = await withTimeout(Promise.allSettled([model.translate(PROBE), model.translate(''), model.translate(PROBE, { beam: 0 }),
                                                        model.translate(PROBE)]), 'a burst with bad calls');
    const states = mixed.map((r) => r.status).join();
    if (states !== 'fulfilled,rejected,rejected,fulfilled') fail(`a burst with bad calls settled as ${states}`);
    await assertStillTranslates(ctx, model, 'concurrent calls');
    model.terminate();
  },
};

/** Runs one case by name; resolves to undefined or { todo }. */
export async function runCase(name, ctx) {
  const body = cases[name];
  if (!body) fail(`no bad-input case named ${JSON.stringify(name)}`);
  return body(ctx);
}
