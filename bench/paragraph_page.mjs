// Headless Chromium side of the paragraph benchmark (driven by bench/bench_translate.mjs): per model, attnlab
// (f32 and q8_0 weights, and q8_0 with the pair's shortlist where the config names one) and onnxruntime-web (f32 and dynamic-int8 graphs) translate the same 8-sentence
// paragraphs with beam 4, interleaved paragraph by paragraph, in the page's thread. Both engines fix their thread
// count once per realm (ORT starts its pool with the first session, attnlab loads its single-thread or threaded
// build with the first model: env.threads), so the driver opens one page per thread count, both engines at it.
// The 2-thread page also runs attnlab's fastest configuration (q8_0, with the shortlist where there is one) in two
// workers of its own, as the demo page runs a model: one on the single-thread build ("worker1_..."), one on the
// threaded build at 2 threads ("worker2_..."); interleaved with the rest, the pair gives threads_speedup without the
// machine's drift between two pages. When the page runs the threaded build it also runs that configuration on it
// set to one thread ("threaded1_..."): what the threaded build's own code costs.
// Sets window.benchResult = { crossOriginIsolated, threads, attnlabEngine, models: { kind: { engines, outputs } } }
// or { error }.
import { engineInfo, env, loadEngine, loadModel } from '/web/lib/index.mjs';
import * as ort from '/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';
import { attnlabParagraphRunner, benchParagraphs, ortParagraphRunner, sourceIdsOf, summarizeParagraphs }
  from '/bench/paragraph_harness.mjs';

const bytesOf = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
const log = (text) => { document.getElementById('log').textContent = text; };

// The runner on this page's (threaded) engine set to one thread while it translates, back to `threads` after.
function atOneThread(runner, threads) {
  return {
    name: runner.name,
    get api() { return runner.api; },
    load: () => runner.load(),
    close: () => runner.close(),
    async run(paragraph, p) {
      const engine = await loadEngine();
      engine.setThreads(1);
      try {
        return await runner.run(paragraph, p);
      } finally {
        engine.setThreads(threads);
      }
    },
  };
}

// attnlab in a worker of its own that starts the build `threads` picks (the worker reads env.threads when the model
// loads); refuses to run on another build than that.
function workerRunner({ name, bytes, loadOptions, threads }) {
  const loadInWorker = async (modelBytes, options) => {
    const pageThreads = env.threads;
    env.threads = threads;
    let model;
    try {
      model = await loadModel(modelBytes, { ...options, useWorker: true });
    } finally {
      env.threads = pageThreads;
    }
    const { build } = await model._engineInfo();
    const expected = threads > 1 ? 'threaded' : 'single-thread';
    if (build !== expected) throw new Error(`${name}: its worker runs the ${build} build, not the ${expected} one`);
    return model;
  };
  return attnlabParagraphRunner({ name, loadModel: loadInWorker, bytes, loadOptions });
}

async function main() {
  const config = await (await fetch('/config.json')).json();
  ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
  ort.env.wasm.numThreads = config.threads;
  ort.env.wasm.proxy = false;
  env.threads = config.threads;
  if (config.threads > 1 && !self.crossOriginIsolated) throw new Error('threads need a cross-origin isolated page');
  const models = {};
  for (const model of config.models) {
    const f32 = await bytesOf(model.gguf);
    const q8 = await bytesOf(model.q8);
    const reference = await loadModel(f32, { useWorker: false, cache: false });
    const ids = await sourceIdsOf(reference, config.paragraphs);
    await reference.dispose();
    const loadOptions = { useWorker: false, cache: false };
    const runners = [
      attnlabParagraphRunner({ name: `attnlab_f32_t${config.threads}`, loadModel, bytes: f32, loadOptions }),
      attnlabParagraphRunner({ name: `attnlab_q8_t${config.threads}`, loadModel, bytes: q8, loadOptions }),
    ];
    let fastest = { config: 'q8', loadOptions };
    if (model.shortlist) {
      fastest = { config: 'q8_shortlist', loadOptions: { ...loadOptions, shortlist: await bytesOf(model.shortlist) } };
      runners.push(attnlabParagraphRunner({ name: `attnlab_q8_shortlist_t${config.threads}`, loadModel, bytes: q8,
                                            loadOptions: fastest.loadOptions }));
    }
    if (config.threads === 2) {
      for (const threads of [1, 2])
        runners.push(workerRunner({ name: `worker${threads}_${fastest.config}_t2`, bytes: q8, loadOptions: fastest.loadOptions,
                                    threads }));
    }
    if ((await engineInfo()).build === 'threaded')
      runners.push(atOneThread(attnlabParagraphRunner({ name: `threaded1_${fastest.config}_t${config.threads}`, loadModel,
                                                        bytes: q8, loadOptions: fastest.loadOptions }), config.threads));
    for (const [name, graphs] of Object.entries(model.ort))
      runners.push(ortParagraphRunner({ name: `ort_${name}_t${config.threads}`, ort, kind: model.kind, info: model.info,
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
  // Which attnlab build ran ({ build, threads } where the module reports it).
  const attnlabEngine = await engineInfo().then((info) => ({ build: info.build ?? null, threads: info.threads ?? null }),
                                                () => ({ build: null, threads: null }));
  return { models, threads: config.threads, attnlabEngine, userAgent: navigator.userAgent,
           crossOriginIsolated: self.crossOriginIsolated };
}

main().then((result) => { window.benchResult = result; log('done'); },
            (error) => { window.benchResult = { error: String(error?.stack ?? error) }; });
