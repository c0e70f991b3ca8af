// `attnlab transcribe` as a user runs it, on the tiny speech fixture (python/attnlab/golden/speech.py) and the
// front end's audio fixtures (python/attnlab/golden/audio.py, flac.py): WAV in any layout, FLAC and Sphinx .mfc
// features in, one line per file out, in order, with a clear error in the place of a file it cannot read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = process.env.ATTNLAB_CLI ?? join(root, 'build/native/attnlab');
const model = join(root, 'tests/fixtures/speech/las.gguf');
const audio = (name) => join(root, 'tests/fixtures/audio', name);

function run(args) {
  const result = spawnSync(cli, args, { encoding: 'utf8', timeout: 120_000 });
  assert.equal(result.error, undefined, `could not run ${cli}: ${result.error}`);
  assert.equal(result.signal, null, `${cli} ${args.join(' ')} died of ${result.signal}:\n${result.stderr}`);
  return result;
}

test('transcribe --json: characters, and one attention row over the frames per character', () => {
  const r = run(['transcribe', '--model', model, '--json', audio('speech.wav'), audio('speech.sphinx_fe.mfc')]);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n').map((line) => JSON.parse(line));
  assert.deepEqual(lines.map((l) => l.audio), [audio('speech.wav'), audio('speech.sphinx_fe.mfc')]);
  for (const t of lines) {
    assert.equal(t.characters.length, t.ids.length);
    assert.equal(t.characters.join(''), t.text);
    assert.ok(t.frames > 0);
    assert.equal(t.frame_seconds, 0.04);
    assert.equal(t.attention.length, t.characters.length);
    for (const row of t.attention) {
      assert.equal(row.length, t.frames);
      assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-4);
    }
  }
  // sphinx_fe's features of the same clip match the engine's to ~1e-5 (docs/speech.md): the same frames.
  assert.equal(lines[0].frames, lines[1].frames);
});

test('transcribe reads every WAV layout the front end does, and the plain output is one line per file', () => {
  const files = ['synth_8k_pcm8.wav', 'synth_16k_pcm16.wav', 'synth_22k_pcm32.wav', 'synth_32k_pcm24.wav',
    'synth_44k_stereo_pcm16.wav', 'synth_48k_float32_ext.wav', 'synth_16k_float64.wav'].map(audio);
  const r = run(['transcribe', '--model', model, ...files]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.split('\n').length, files.length + 1);
});

test('transcribe reads FLAC (flac and sox encodings) to the transcript and attention of the WAV it was made from', () => {
  const pairs = [['flac/speech.flac', 'speech.wav'], ['flac/speech_sox.flac', 'speech.wav'],
    ['flac/stereo_44k.flac', 'synth_44k_stereo_pcm16.wav'], ['flac/pcm24_32k.flac', 'synth_32k_pcm24.wav'],
    ['flac/mixed.flac', 'flac/mixed.wav']];
  const r = run(['transcribe', '--model', model, '--json', '--beam', '3', ...pairs.flat().map(audio)]);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n').map((line) => JSON.parse(line));
  assert.equal(lines.length, pairs.length * 2);
  for (let i = 0; i < pairs.length; ++i) {
    const [flac, wav] = [lines[2 * i], lines[2 * i + 1]];
    assert.equal(flac.text, wav.text, pairs[i][0]);
    assert.deepEqual(flac.ids, wav.ids, pairs[i][0]);
    assert.deepEqual(flac.attention, wav.attention, pairs[i][0]);  // the same samples, so the same numbers
  }
  const damaged = mkdtempSync(join(tmpdir(), 'attnlab-flac-'));
  try {
    const cut = join(damaged, 'cut.flac');
    writeFileSync(cut, readFileSync(audio('flac/speech.flac')).subarray(0, 3000));
    const bad = run(['transcribe', '--model', model, cut]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /attnlab: .*cut\.flac: FLAC: truncated/);
  } finally {
    rmSync(damaged, { recursive: true, force: true });
  }
});

test('transcribe answers a bad file with its error in its place, and exits 1', () => {
  const dir = mkdtempSync(join(tmpdir(), 'attnlab-transcribe-'));
  try {
    const text = join(dir, 'notes.wav');
    writeFileSync(text, 'this is a text file, not audio\n');
    const r = run(['transcribe', '--model', model, '--json', audio('speech.wav'), text, join(dir, 'missing.wav')]);
    assert.equal(r.status, 1);
    const lines = r.stdout.trim().split('\n').map((line) => JSON.parse(line));
    assert.equal(lines.length, 3);
    assert.ok(lines[0].text !== undefined);
    assert.match(lines[1].error, /is not a WAV or FLAC file \(transcribe reads WAV, FLAC and Sphinx \.mfc/);
    assert.match(lines[2].error, /cannot open .*missing\.wav/);
    assert.match(r.stderr, /attnlab: .*notes\.wav: .*is not a WAV or FLAC file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('transcribe refuses models that cannot transcribe, and a call without files', () => {
  const translator = run(['transcribe', '--model', join(root, 'tests/fixtures/rnn/additive.gguf'), audio('speech.wav')]);
  assert.equal(translator.status, 1);
  assert.match(translator.stderr, /cannot transcribe speech/);
  const none = run(['transcribe', '--model', model]);
  assert.equal(none.status, 1);
  assert.match(none.stderr, /transcribe needs at least one AUDIO file/);
});

test('transcribe --ctc-weight: the file\'s weight by default, an explicit one is the one used, bad values are refused', () => {
  const files = [audio('speech.wav'), audio('synth_16k_pcm16.wav')];
  const byWeight = (flags) => {
    const r = run(['transcribe', '--model', model, '--json', '--beam', '3', ...flags, ...files]);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim().split('\n').map((line) => JSON.parse(line));
  };
  const fixtureWeight = Math.fround(0.3);   // the fixture's attnlab.las.ctc_weight (float32)
  const byDefault = byWeight([]);
  assert.deepEqual(byDefault.map((t) => t.ctc_weight), [fixtureWeight, fixtureWeight].map((w) => Number(w.toPrecision(12))));
  assert.deepEqual(byWeight(['--ctc-weight', '-1']), byDefault);
  for (const weight of ['0', '1', '0.5']) {
    assert.deepEqual(byWeight(['--ctc-weight', weight]).map((t) => t.ctc_weight), [Number(weight), Number(weight)]);
  }
  for (const [bad, message] of [['x', /--ctc-weight needs a number from 0 to 1 \(or -1, the model's\), got 'x'/],
                                ['0.3x', /--ctc-weight needs a number .* got '0\.3x'/],
                                ['nan', /--ctc-weight needs a number .* got 'nan'/],
                                ['2', /ctc weight must be between 0 and 1 \(or -1 for the model's\), got 2$/m]]) {
    const r = run(['transcribe', '--model', model, '--ctc-weight', bad, audio('speech.wav')]);
    assert.equal(r.status, 1, bad);
    assert.match(r.stderr, message, bad);
  }
  // A file without the CTC head refuses a positive weight; the other commands take no --ctc-weight at all.
  const headless = run(['transcribe', '--model', join(root, 'tests/fixtures/speech/las.q8_0.gguf'), '--ctc-weight', '0.3',
                        audio('speech.wav')]);
  assert.equal(headless.status, 1);
  assert.match(headless.stderr, /this speech model has no CTC head/);
  const translate = run(['translate', '--model', join(root, 'tests/fixtures/rnn/additive.gguf'), '--ctc-weight', '0.3', 'hi']);
  assert.equal(translate.status, 1);
  assert.match(translate.stderr, /translate takes no --ctc-weight/);
});

test('transcribe --lm-weight: the file\'s weight by default, 0 leaves the language model out, bad values are refused', () => {
  const withLm = join(root, 'tests/fixtures/speech/las-lm.gguf');
  const files = [audio('speech.wav'), audio('synth_16k_pcm16.wav')];
  const byWeight = (flags, file = withLm) => {
    const r = run(['transcribe', '--model', file, '--json', '--beam', '3', ...flags, ...files]);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim().split('\n').map((line) => JSON.parse(line));
  };
  const fixtureWeight = Number(Math.fround(0.8).toPrecision(12));   // the fixture's attnlab.las.lm_weight (float32)
  const byDefault = byWeight([]);
  assert.deepEqual(byDefault.map((t) => t.lm_weight), [fixtureWeight, fixtureWeight]);
  assert.deepEqual(byWeight(['--lm-weight', '-1']), byDefault);
  // Without the LM's share the file transcribes as the same recognizer without one does.
  const none = byWeight(['--lm-weight', '0']);
  assert.deepEqual(none.map((t) => t.lm_weight), [0, 0]);
  assert.deepEqual(none.map((t) => t.text), byWeight([], model).map((t) => t.text));
  // The fixture's LM was trained on other sentences, and its share changes what these files say.
  assert.notDeepEqual(byDefault.map((t) => t.text), none.map((t) => t.text));
  assert.deepEqual(byWeight([], model).map((t) => t.lm_weight), [0, 0]);
  assert.deepEqual(byWeight(['--lm-weight', '2']).map((t) => t.lm_weight), [2, 2]);
  for (const [bad, message] of [['x', /--lm-weight needs a number from 0 to 2 \(or -1, the model's\), got 'x'/],
                                ['inf', /--lm-weight needs a number .* got 'inf'/],
                                ['2.5', /lm weight must be between 0 and 2 \(or -1 for the model's\), got 2\.5$/m]]) {
    const r = run(['transcribe', '--model', withLm, '--lm-weight', bad, audio('speech.wav')]);
    assert.equal(r.status, 1, bad);
    assert.match(r.stderr, message, bad);
  }
  const without = run(['transcribe', '--model', model, '--lm-weight', '0.3', audio('speech.wav')]);
  assert.equal(without.status, 1);
  assert.match(without.stderr, /this speech model has no language model/);
  const translate = run(['translate', '--model', join(root, 'tests/fixtures/rnn/additive.gguf'), '--lm-weight', '0.3', 'hi']);
  assert.equal(translate.status, 1);
  assert.match(translate.stderr, /translate takes no --lm-weight/);
});
