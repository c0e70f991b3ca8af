#!/usr/bin/env node
// How fast the module transcribes in Node (the single-thread wasm engine, this thread), per speech model: the
// Speech tab's sample clips, decoded once, their samples given to model.transcribe() at each beam; the models
// interleaved clip by clip, round by round, the first round a warm-up. Prints the median milliseconds per clip and
// the real-time factor (audio seconds transcribed per second), with --baseline FILE.gguf the ratio of each model's
// time to that file's, and last a JSON line.
//   node bench/bench_speech.mjs [--rounds 5] [--beams 1,4] [--baseline FILE.gguf]
// e.g. the previous recognizer: git show 2852b72:models/weights/speech-las.q8_0.gguf > /tmp/previous.q8_0.gguf
// Needs web/dist (npm run build). The numbers depend on the machine: quote them with the CPU it prints.
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { decodeAudio, loadModel } from '../web/lib/index.mjs';
import { cpuDescription } from './cpu.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 && process.argv[at + 1] ? process.argv[at + 1] : fallback;
}

const rounds = Number(option('--rounds', '5'));
const beams = option('--beams', '1,4').split(',').map(Number);
const baseline = option('--baseline', null);
if (!(rounds >= 2)) throw new Error('--rounds needs at least 2 (the first is a warm-up)');

const manifest = JSON.parse(readFileSync(join(root, 'models/manifest.json'), 'utf8'));
const files = manifest.models.filter((m) => m.task === 'transcribe').map((m) => ({ name: m.id, path: join(root, m.file) }));
if (baseline) files.push({ name: `baseline ${basename(baseline)}`, path: baseline });
const samplesDir = join(root, 'web/app/samples/speech');
const clips = [];
for (const name of readdirSync(samplesDir).filter((f) => f.endsWith('.wav')).sort()) {
  const audio = await decodeAudio(new Uint8Array(readFileSync(join(samplesDir, name))));
  clips.push({ name, samples: audio.samples, sampleRate: audio.sampleRate, seconds: audio.samples.length / audio.sampleRate });
}

const models = [];
for (const file of files) models.push({ ...file, model: await loadModel(file.path) });
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const cpu = cpuDescription();
console.log(`cpu: ${cpu}`);

const results = [];
try {
  for (const beam of beams) {
    const ms = new Map(models.map((m) => [m.name, clips.map(() => [])]));
    for (let round = 0; round < rounds; ++round) {
      for (const [c, clip] of clips.entries()) {
        for (const m of models) {
          const t0 = performance.now();
          await m.model.transcribe(clip.samples, { sampleRate: clip.sampleRate, beam });
          if (round > 0) ms.get(m.name)[c].push(performance.now() - t0);
        }
      }
    }
    for (const m of models) {
      const perClip = ms.get(m.name).map(median);
      const total = perClip.reduce((a, b) => a + b, 0);
      const audio = clips.reduce((a, c) => a + c.seconds, 0);
      const row = { model: m.name, beam, clips: Object.fromEntries(clips.map((c, i) => [c.name, +perClip[i].toFixed(1)])),
                    total_ms: +total.toFixed(1), audio_seconds: +audio.toFixed(2), realtime_factor: +(audio / (total / 1000)).toFixed(1) };
      results.push(row);
    }
    const base = baseline ? results.find((r) => r.beam === beam && r.model.startsWith('baseline')) : null;
    for (const row of results.filter((r) => r.beam === beam)) {
      if (base) row.time_vs_baseline = +(row.total_ms / base.total_ms).toFixed(2);
      console.log(`${row.model.padEnd(36)} beam ${beam}: ${Object.entries(row.clips).map(([k, v]) => `${k} ${v} ms`).join(', ')}; ` +
                  `${row.realtime_factor}x real time${base ? `, ${row.time_vs_baseline}x the baseline's time` : ''}`);
    }
  }
} finally {
  for (const m of models) await m.model.dispose();
}
console.log(JSON.stringify({ bench: 'speech-node', cpu, rounds, results }));
