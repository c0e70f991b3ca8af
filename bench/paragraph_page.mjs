// Headless Chromium side of the paragraph benchmark (driven by bench/bench_translate.mjs): per model, attnlab
// (f32 and q8_0 weights, each build the page is given) and onnxruntime-web (f32 and dynamic-int8 graphs) translate
// the same 8-sentence paragraphs with beam 4, interleaved paragraph by paragraph, in the page's thread. ORT's
// thread count is one per page (its wasm module starts its pool once), so the driver opens one page per count.
// Sets window.benchResult = { crossOriginIsolated, ortThreads, models: { kind: { engines, outputs } } } or { error }.
import { loadModel } from '/web/lib/index.mjs';
import * as ort from '/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';
import { attnlabParagraphRunner, benchParagraphs, ortParagraphRunner, sourceIdsOf, summarizeParagraphs }
  from '/bench/paragraph_harness.mjs';

const bytesOf = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
const log = (text) => { document.getElementById('log').textContent = text; };

async function main() {
  const config = await (await fetch('/config.json')).json();
  ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
  ort.env.wasm.numThreads = config.ortThreads;
  ort.env.wasm.proxy = false;
  if (config.ortThreads > 1 && !self.crossOriginIsolated) throw new Error('ORT threads need a cross-origin isolated page');
  const models = {};
  for (const model of config.models) {
    const f32 = await bytesOf(model.gguf);
    const q8 = await bytesOf(model.q8);
    const reference = await loadModel(f32, { useWorker: false, cache: false });
    const ids = await sourceIdsOf(reference, config.paragraphs);
    await reference.dispose();
    const runners = [];
    for (const build of config.attnlabBuilds) {
      const loadOptions = { useWorker: false, cache: false, ...build.loadOptions };
      runners.push(attnlabParagraphRunner({ name: `attnlab_f32_${build.name}`, loadModel, bytes: f32, loadOptions }));
      runners.push(attnlabParagraphRunner({ name: `attnlab_q8_${build.name}`, loadModel, bytes: q8, loadOptions }));
    }
    for (const [name, graphs] of Object.entries(model.ort))
      runners.push(ortParagraphRunner({ name: `ort_${name}_t${config.ortThreads}`, ort, kind: model.kind, info: model.info,
                                        encoderBytes: await bytesOf(graphs.encoder), decoderBytes: await bytesOf(graphs.decoder),
                                        idsFor: (p) => ids[p] }));
    const results = await benchParagraphs(runners, config.paragraphs,
                                          { onParagraph: (p) => log(`${model.kind}: paragraph ${p + 1}/${config.paragraphs.length}`) });
    const engines = {};
    const outputs = {};
    for (const [name, r] of Object.entries(results)) {
      engines[name] = summarizeParagraphs(r);
      // The timed paragraphs' outputs (1 on: paragraph 0 is the warm-up), for BLEU.
      outputs[name] = { ids: r.rows.flatMap((row) => row.targetIds) };
      if (name.startsWith('attnlab')) outputs[name].texts = r.rows.flatMap((row) => row.texts);
    }
    models[model.kind] = { engines, outputs };
  }
  return { models, ortThreads: config.ortThreads, userAgent: navigator.userAgent, crossOriginIsolated: self.crossOriginIsolated };
}

main().then((result) => { window.benchResult = result; log('done'); },
            (error) => { window.benchResult = { error: String(error?.stack ?? error) }; });
