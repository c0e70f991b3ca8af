import test from 'node:test';
import assert from 'node:assert/strict';
import { createModelCache, createModelLoader, tokenLabel, continuesWord, formatBytes } from '../../web/app/ui.mjs';

// A fake loadModel: reports progress when told, resolves/rejects when told, honours its signal.
function fakeLoader() {
  const calls = [];
  const load = (entry, { onProgress, signal }) => new Promise((resolve, reject) => {
    const call = { entry, onProgress, signal, resolve, reject, terminated: false };
    calls.push(call);
    signal.addEventListener('abort', () => reject(signal.reason));
  });
  return { calls, load };
}
const tick = () => new Promise((r) => setTimeout(r, 0));
const A = { id: 'a', bytes: 10, sha256: 'x', label: 'A' };

test('one download, progress to every listener, late listener sees the latest', async () => {
  const f = fakeLoader();
  const { getModel } = createModelCache(f.load);
  const seen1 = [], seen2 = [];
  const p1 = getModel(A, { onProgress: (p) => seen1.push(p.loaded), signal: new AbortController().signal });
  await tick();
  f.calls[0].onProgress({ loaded: 3, total: 10 });
  const p2 = getModel(A, { onProgress: (p) => seen2.push(p.loaded) });
  f.calls[0].onProgress({ loaded: 7, total: 10 });
  assert.equal(f.calls.length, 1);
  const model = { fromCache: false };
  f.calls[0].resolve(model);
  assert.equal(await p1, model);
  assert.equal(await p2, model);
  assert.deepEqual(seen1, [3, 7]);
  assert.deepEqual(seen2, [3, 7]);
  assert.equal(await getModel(A), model);
  assert.equal(f.calls.length, 1);
});

test('one caller cancelling does not abort a download another caller waits on', async () => {
  const f = fakeLoader();
  const { getModel } = createModelCache(f.load);
  const c1 = new AbortController(), c2 = new AbortController();
  const seen1 = [];
  const p1 = getModel(A, { onProgress: (p) => seen1.push(p.loaded), signal: c1.signal });
  const p2 = getModel(A, { signal: c2.signal });
  await tick();
  c1.abort();
  await assert.rejects(p1, /aborted/);
  assert.equal(f.calls[0].signal.aborted, false);
  f.calls[0].onProgress({ loaded: 5, total: 10 });
  assert.deepEqual(seen1, []);  // stopped listening
  const model = {};
  f.calls[0].resolve(model);
  assert.equal(await p2, model);
});

test('the last caller cancelling aborts the download; a retry starts afresh', async () => {
  const f = fakeLoader();
  const cache = createModelCache(f.load);
  const c1 = new AbortController();
  const p1 = cache.getModel(A, { signal: c1.signal });
  await tick();
  c1.abort();
  await assert.rejects(p1, /aborted/);
  assert.equal(f.calls[0].signal.aborted, true);
  assert.equal(cache.has('a'), false);
  const p2 = cache.getModel(A);
  await tick();
  assert.equal(f.calls.length, 2);
  f.calls[1].resolve('m2');
  assert.equal(await p2, 'm2');
});

test('a failed download leaves the cache, so a retry works', async () => {
  const f = fakeLoader();
  const cache = createModelCache(f.load);
  const p1 = cache.getModel(A);
  await tick();
  f.calls[0].reject(new Error('HTTP 500'));
  await assert.rejects(p1, /HTTP 500/);
  assert.equal(cache.has('a'), false);
  const p2 = cache.getModel(A);
  await tick();
  f.calls[1].resolve('ok');
  assert.equal(await p2, 'ok');
});

test('a model that arrives after it was abandoned is terminated', async () => {
  const calls = [];
  const load = (entry, { signal }) => new Promise((resolve) => calls.push({ resolve, signal }));  // ignores abort
  const cache = createModelCache(load);
  const c = new AbortController();
  const p = cache.getModel(A, { signal: c.signal });
  await tick();
  c.abort();
  await assert.rejects(p);
  let terminated = false;
  calls[0].resolve({ terminate: () => { terminated = true; } });
  await tick();
  assert.equal(terminated, true);
});

test('loader: a newer load stops the older one waiting; isReady', async () => {
  const f = fakeLoader();
  const { getModel } = createModelCache(f.load);
  const statuses = [];
  const B = { id: 'b', bytes: 2048, sha256: 'y', label: 'B' };
  let current = A;
  const loader = createModelLoader({ getModel, available: () => true, setStatus: (t, o) => statuses.push([t, o]),
                                     noneText: 'none', isCurrent: (e) => e === current });
  const pa = loader.load(A);
  await tick();
  current = B;
  const pb = loader.load(B);
  assert.equal(await pa, null);
  await tick();
  assert.equal(f.calls[0].signal.aborted, true);  // nobody else wanted A
  f.calls[1].onProgress({ loaded: 1024, total: 2048 });
  f.calls[1].resolve({ fromCache: true });
  assert.deepEqual(await pb, { fromCache: true });
  assert.equal(loader.isReady(B), true);
  assert.equal(loader.isReady(A), false);
  assert.ok(statuses.some(([t]) => t === 'Downloading B: 1 kB of 2 kB'));
  assert.match(statuses.at(-1)[0], /^B ready \(2 kB, from cache, \d+ ms\)$/);
  assert.equal(statuses.at(-1)[1].source, 'cache');
  assert.equal(await loader.load(null), null);
  assert.equal(statuses.at(-1)[0], 'none');
  assert.equal(loader.isReady(B), false);
});

test('loader.ensure: one load per entry, a failed one started again, cancel() forgets it', async () => {
  const f = fakeLoader();
  const { getModel } = createModelCache(f.load);
  const loader = createModelLoader({ getModel, available: () => true, setStatus: () => {}, noneText: 'none',
                                     isCurrent: () => true });
  const first = loader.ensure(A);
  assert.equal(loader.ensure(A), first, 'the same entry shares the load');
  await tick();
  assert.equal(f.calls.length, 1);
  f.calls[0].reject(new Error('offline'));
  assert.equal(await first, null);
  const again = loader.ensure(A);
  assert.notEqual(again, first, 'a failed load is started again');
  await tick();
  assert.equal(f.calls.length, 2);
  const model = { fromCache: false };
  f.calls[1].resolve(model);
  assert.equal(await again, model);
  assert.equal(loader.ensure(A), again, 'a loaded entry is kept');
  loader.cancel();
  assert.notEqual(loader.ensure(A), again, 'cancel() forgets it');
});

test('tokens', () => {
  assert.equal(tokenLabel('▁dog'), 'dog');
  assert.equal(tokenLabel('s'), 's');
  assert.equal(tokenLabel('s', { continuation: '·' }), '·s');
  assert.equal(tokenLabel('</s>'), '⟨end⟩');
  assert.equal(tokenLabel('<s>'), '⟨s⟩');
  assert.equal(tokenLabel('▁'), '␣');
  assert.equal(continuesWord('s'), true);
  assert.equal(continuesWord('▁s'), false);
  assert.equal(continuesWord('</s>'), false);
  assert.equal(formatBytes(0), '0 B');
});

test('loader: loading the same entry again keeps its download', async () => {
  const f = fakeLoader();
  const { getModel } = createModelCache(f.load);
  const loader = createModelLoader({ getModel, available: () => true, setStatus: () => {}, noneText: 'none', isCurrent: () => true });
  const p1 = loader.load(A);
  await tick();
  const p2 = loader.load(A);
  assert.equal(await p1, null);
  await tick();
  assert.equal(f.calls.length, 1);
  assert.equal(f.calls[0].signal.aborted, false);
  f.calls[0].resolve({ fromCache: false });
  assert.deepEqual(await p2, { fromCache: false });
});
