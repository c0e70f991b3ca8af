// Weight delivery: fetch with byte progress, abort and timeout, a SHA-256 check before anything is used, and
// the Cache API so a second visit (the wasm included) works offline. Only verified bytes are ever cached.

import { AttnlabError, ERROR_CODES } from './errors.mjs';

export const CACHE_NAME = 'attnlab-v1';

/** Lower-case hex SHA-256 of bytes, with WebCrypto (globalThis.crypto in browsers and Node 20). */
export async function sha256Hex(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new AttnlabError(ERROR_CODES.LOAD_FAILED, 'attnlab: SHA-256 needs WebCrypto (a secure context: https or localhost)');
  if (!(bytes instanceof ArrayBuffer || ArrayBuffer.isView(bytes))) {
    throw new AttnlabError(ERROR_CODES.BAD_INPUT, 'attnlab: sha256Hex() needs an ArrayBuffer or a typed array');
  }
  const digest = new Uint8Array(await subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Throws unless bytes hash to expected (hex, any case); `what` names the bytes in the message. */
export async function verifySha256(bytes, expected, what) {
  if (!expected) return;
  checkSha256(expected, what);
  const actual = await sha256Hex(bytes);
  if (actual !== expected.toLowerCase()) {
    throw new AttnlabError(ERROR_CODES.LOAD_FAILED, `attnlab: SHA-256 mismatch for ${what}: expected ${expected.toLowerCase()}, got ${actual}`);
  }
}

// A malformed sha256 option is the caller's mistake, whatever the bytes are.
function checkSha256(expected, what) {
  if (expected !== undefined && expected !== null && expected !== '' && !(typeof expected === 'string' && /^[0-9a-fA-F]{64}$/.test(expected))) {
    throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, `attnlab: sha256 for ${what} is not 64 hex digits`);
  }
}

async function openCache(enabled) {
  if (!enabled || typeof globalThis.caches?.open !== 'function') return null;
  try {
    return await globalThis.caches.open(CACHE_NAME);
  } catch {
    return null;  // e.g. storage disabled: still works, just without the offline copy
  }
}

// One signal for the caller's abort and the timeout; the reason tells the two apart in the message.
function combinedSignal(signal, timeout, url) {
  const controller = new AbortController();
  let timer = null;
  const onAbort = () => controller.abort(new Error(`attnlab: download of ${url} was aborted`));
  if (signal) {
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }
  if (timeout > 0) {
    timer = setTimeout(() => controller.abort(new Error(`attnlab: download of ${url} timed out after ${timeout} ms`)),
                       timeout);
  }
  const release = () => {
    if (timer) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  };
  return { signal: controller.signal, release };
}

function abortError(signal) {
  return signal.reason instanceof Error ? signal.reason : new Error('attnlab: download aborted');
}

async function readWithProgress(response, { signal, onProgress, expectedBytes }) {
  const header = Number(response.headers.get('content-length'));
  const total = Number.isFinite(header) && header > 0 ? header : expectedBytes ?? 0;
  onProgress?.({ loaded: 0, total });
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onProgress?.({ loaded: bytes.length, total: total || bytes.length });
    return bytes;
  }
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    if (signal.aborted) {
      reader.cancel().catch(() => {});
      throw abortError(signal);
    }
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    onProgress?.({ loaded, total });
  }
  const bytes = new Uint8Array(loaded);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

/**
 * Downloads url and returns { bytes: Uint8Array, fromCache: boolean }.
 * options: onProgress({loaded, total}), signal (AbortSignal), timeout (ms, 0 = none), sha256 (hex),
 * bytes (the expected size, used as total when the server sends no length), cache (default true).
 */
export async function download(url, options = {}) {
  const { onProgress, sha256, cache: useCache = true, timeout = 0 } = options;
  const href = String(url);
  checkSha256(sha256, href);  // before the cache: a bad value would otherwise evict a good cached copy
  const { signal, release } = combinedSignal(options.signal, timeout, href);
  try {
    if (signal.aborted) throw abortError(signal);
    const cache = await openCache(useCache);
    const cached = cache ? await cache.match(href) : undefined;
    if (cached) {
      const bytes = new Uint8Array(await cached.arrayBuffer());
      try {
        await verifySha256(bytes, sha256, href);
        onProgress?.({ loaded: bytes.length, total: bytes.length });
        return { bytes, fromCache: true };
      } catch {
        await cache.delete(href);  // stale or corrupt copy: fetch it again
      }
    }
    let response;
    try {
      response = await fetch(href, { signal, credentials: 'same-origin' });
    } catch (error) {
      if (signal.aborted) throw abortError(signal);
      throw new Error(`attnlab: could not download ${href}: ${error?.message ?? error}`);
    }
    if (!response.ok) throw new Error(`attnlab: could not download ${href}: HTTP ${response.status}`);
    let bytes;
    try {
      bytes = await readWithProgress(response, { signal, onProgress, expectedBytes: options.bytes });
    } catch (error) {
      if (signal.aborted) throw abortError(signal);
      throw error;
    }
    if (signal.aborted) throw abortError(signal);
    await verifySha256(bytes, sha256, href);
    if (cache) {
      const type = response.headers.get('content-type') ?? 'application/octet-stream';
      await cache.put(href, new Response(bytes, { headers: { 'content-type': type } })).catch(() => {});
    }
    return { bytes, fromCache: false };
  } finally {
    release();
  }
}
