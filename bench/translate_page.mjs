// Headless Chromium side of the translation benchmark (driven by bench/bench_translate.mjs): attnlab through its
// npm module in the page's thread (no worker, so both engines run on the same thread) and onnxruntime-web's wasm
// backend, interleaved sentence by sentence on the same sentences and source ids. Sets
// window.benchResult = { models: { kind: { attnlab, ort, [attnlab_q8], mismatches } } } or { error }.
import { env, loadModel } from '/web/lib/index.mjs';
import * as ort from '/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';
import { attnlabRunner, benchInterleaved, ortRunner, summarizeAttnlab, summarizeOrt, tokenMismatches }
  from '/bench/translate_harness.mjs';

const bytesOf = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());

async function main() {
  const config = await (await fetch('/config.json')).json();
  ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
  // Batch 1 on one thread, both engines (the page is cross-origin isolated, where attnlab would pick its threaded build).
  env.threads = 1;
  const loadOptions = { useWorker: false, cache: false };
  const models = {};
  for (const model of config.models) {
    const ids = [];
    // q8_0 first: it is the page's model, and the first runner of a fresh page pays the engine's cold start.
    const runners = [];
    if (model.q8) runners.push(attnlabRunner({ name: 'attnlab_q8', loadModel, bytes: await bytesOf(model.q8), loadOptions }));
    runners.push(attnlabRunner({ loadModel, bytes: await bytesOf(model.gguf), loadOptions, idsSink: ids }));
    runners.push(ortRunner({ ort, encoderBytes: await bytesOf(model.encoder), decoderBytes: await bytesOf(model.decoder),
                             info: model.info, idsFor: (i) => ids[i] }));
    const r = await benchInterleaved(runners, config.sentences);
    models[model.kind] = { attnlab: summarizeAttnlab(r.attnlab), ort: summarizeOrt(r.ort),
                           mismatches: tokenMismatches(r.attnlab, r.ort) };
    if (r.attnlab_q8) models[model.kind].attnlab_q8 = summarizeAttnlab(r.attnlab_q8);
  }
  return { models, userAgent: navigator.userAgent, crossOriginIsolated: self.crossOriginIsolated };
}

main().then((result) => { window.benchResult = result; document.getElementById('log').textContent = 'done'; },
            (error) => { window.benchResult = { error: String(error?.stack ?? error) }; });
