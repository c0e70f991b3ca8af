// The Engine tab: which engine build runs in this page (loaded in the page itself, the first time the tab is
// shown), how long it took to start, and the limits it enforces on every call.
import { engineInfo } from '/lib/index.mjs';
import { byId } from '/app/ui.mjs';

const describeLimits = (l) =>
  `beam 1–${l.maxBeam} · ${l.maxSourceTokens} source tokens (${l.maxTextBytes.toLocaleString('en')} bytes) · ` +
  `translations up to ${l.maxTranslationLength} tokens, captions up to ${l.maxCaptionLength} · ` +
  `no-repeat n-grams ${l.minNoRepeatNgram}–${l.maxNoRepeatNgram} · images up to ${l.maxImageSide} px a side`;

/** Returns { show() }: loads the engine and fills in the facts (once it has succeeded). */
export function setupEngine() {
  let shown = false;
  async function show() {
    if (shown) return;
    shown = true;
    const started = performance.now();
    byId('engine-status').textContent = 'loading the WebAssembly engine…';
    try {
      const info = await engineInfo();
      byId('engine-status').textContent = 'ready';
      byId('engine-version').textContent = info.version;
      byId('engine-simd').textContent = info.simd;
      byId('engine-load-ms').textContent = `${Math.round(performance.now() - started)} ms`;
      byId('engine-limits').textContent = describeLimits(info.limits);
    } catch (error) {
      shown = false;
      const status = byId('engine-status');
      status.textContent = error.message;
      status.classList.add('error');
    }
  }
  return { show };
}
