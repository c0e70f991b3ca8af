// The command line (src/cli/main.cpp) as a user runs it: spawns build/native/attnlab (ATTNLAB_CLI overrides the
// path) on the tiny fixture models of python/attnlab/golden/rnn.py, whose PyTorch outputs are in <score>.expected.gguf.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { gguf } from '@huggingface/gguf';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = process.env.ATTNLAB_CLI ?? join(root, 'build/native/attnlab');
const fixtures = join(root, 'tests/fixtures/rnn');
const model = join(fixtures, 'additive.gguf');

async function expectedOf(score) {
  const { metadata } = await gguf(join(fixtures, `${score}.expected.gguf`), { allowLocalFile: true });
  const count = Number(metadata['expected.sentences']);
  return Array.from({ length: count }, (_, i) => {
    const field = (name) => metadata[`sentence.${i}.${name}`];
    return {
      text: field('text'),
      sourceIds: Array.from(field('source_ids'), Number),
      greedyIds: Array.from(field('greedy_ids'), Number),
      greedyText: field('greedy_text'),
      beamIds: Array.from(field('beam_ids'), Number),
      beamText: field('beam_text'),
    };
  });
}
const expected = await expectedOf('additive');
// PyTorch decoded these without a no-repeat n-gram rule (the engine's default has one: attnlab.hpp).
const asPyTorch = ['--no-repeat-ngram', '0'];

// Runs the CLI to completion; stdin gets `input` (string or Buffer) and is then closed.
function run(args, input = '') {
  const result = spawnSync(cli, args, { input, encoding: 'utf8', timeout: 120_000 });
  assert.equal(result.error, undefined, `could not run ${cli}: ${result.error}`);
  assert.equal(result.signal, null, `${cli} ${args.join(' ')} died of ${result.signal}:\n${result.stderr}`);
  return result;
}

function assertFailure(result, messagePattern) {
  assert.equal(result.status, 1, `expected exit 1, stderr: ${result.stderr}`);
  assert.equal(result.stdout, '', 'nothing on stdout for a failed command');
  assert.match(result.stderr, /^attnlab: /);
  assert.match(result.stderr, messagePattern);
}

const lines = (text) => text.split('\n').filter((line) => line !== '');

function assertTranslationJson(object, sentence) {
  for (const key of ['text', 'source_tokens', 'target_tokens', 'source_ids', 'target_ids', 'score_function',
    'attention', 'scores']) {
    assert.ok(key in object, `JSON output lacks "${key}"`);
  }
  const S = object.source_tokens.length;
  const T = object.target_tokens.length;
  assert.equal(object.score_function, 'additive');
  assert.deepEqual(object.source_ids, sentence.sourceIds);
  assert.deepEqual(object.target_ids, sentence.greedyIds);
  assert.equal(object.text, sentence.greedyText);
  assert.equal(object.source_tokens.at(-1), '</s>');
  assert.equal(object.target_ids.length, T);
  for (const name of ['attention', 'scores']) {
    const matrix = object[name];
    assert.equal(matrix.length, T, `${name} has one row per target token`);
    for (const row of matrix) assert.equal(row.length, S, `${name} rows have one column per source token`);
  }
  for (const row of object.attention) {
    const sum = row.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - 1) < 1e-4, `attention row sums to ${sum}`);
    assert.ok(row.every((w) => w >= 0 && w <= 1));
  }
}

test('the CLI binary exists', () => {
  assert.ok(existsSync(cli), `${cli} is missing: build it (npm run build) or set ATTNLAB_CLI`);
});

test('translate TEXT prints the greedy translation PyTorch made, one line, nothing on stderr', () => {
  const sentence = expected[0];
  const result = run(['translate', ...asPyTorch, '--model', model, ...sentence.text.split(' ')]);
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stderr, '');
  assert.equal(result.stdout, sentence.greedyText + '\n');
});

test('translate --json prints one object with tokens, ids and [T][S] attention whose rows sum to 1', () => {
  const sentence = expected[1];
  const result = run(['translate', ...asPyTorch, '--json', '--model', model, sentence.text]);
  assert.equal(result.status, 0, result.stderr);
  const out = lines(result.stdout);
  assert.equal(out.length, 1);
  assertTranslationJson(JSON.parse(out[0]), sentence);
});

test('--beam 5 gives the tokens of PyTorch beam_search', () => {
  for (const sentence of expected.slice(0, 4)) {
    const result = run(['translate', ...asPyTorch, '--model', model, '--beam', '5', '--json', sentence.text]);
    assert.equal(result.status, 0, result.stderr);
    const object = JSON.parse(result.stdout);
    assert.deepEqual(object.target_ids, sentence.beamIds, sentence.text);
    assert.equal(object.text, sentence.beamText);
    const plain = run(['translate', ...asPyTorch, '--model', model, '--beam', '5', sentence.text]);
    assert.equal(plain.stdout, sentence.beamText + '\n');
  }
});

test('stdin: one result per line, in order', () => {
  const three = expected.slice(2, 5);
  const json = run(['translate', ...asPyTorch, '--model', model, '--json'], three.map((s) => s.text).join('\n') + '\n');
  assert.equal(json.status, 0, json.stderr);
  const out = lines(json.stdout);
  assert.equal(out.length, 3);
  out.forEach((line, i) => assertTranslationJson(JSON.parse(line), three[i]));

  // Plain text, CRLF line ends and no final newline.
  const plain = run(['translate', ...asPyTorch, '--model', model], three.map((s) => s.text).join('\r\n'));
  assert.equal(plain.status, 0, plain.stderr);
  assert.deepEqual(plain.stdout.split('\n').slice(0, -1), three.map((s) => s.greedyText));
});

// The lines a running child prints on stdout, one at a time; next() rejects when the child exits first or when
// `ms` pass without a line (a guard against a stall, not a timing measurement: the answer takes well under a second).
function stdoutLines(child) {
  let buffered = '';
  const ready = [];
  const waiting = [];
  let ended = false;
  const settle = () => {
    while (waiting.length && (ready.length || ended)) {
      const { resolve, reject } = waiting.shift();
      if (ready.length) resolve(ready.shift());
      else reject(new Error('the CLI ended its output before this line'));
    }
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop();
    ready.push(...parts);
    settle();
  });
  child.stdout.on('end', () => {
    ended = true;
    settle();
  });
  return {
    next(label, ms = 60_000) {
      let timer;
      return Promise.race([
        new Promise((resolve, reject) => {
          waiting.push({ resolve, reject });
          settle();
        }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no output line within ${ms / 1000} s: ${label}`)), ms);
        }),
      ]).finally(() => clearTimeout(timer));
    },
  };
}

test('stdin: a complete line is answered while the next one is still being written', { timeout: 180_000 }, async () => {
  const [first, second] = [expected[0], expected[1]];
  const child = spawn(cli, ['translate', ...asPyTorch, '--model', model, '--json'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  try {
    const out = stdoutLines(child);
    // One whole line and the start of the next, in one write: the CLI must not wait for the rest of the second.
    child.stdin.write(`${first.text}\n${second.text.slice(0, 6)}`);
    const answer = await out.next('the first line was not answered while the second was only partly written (a stall)');
    assertTranslationJson(JSON.parse(answer), first);
    child.stdin.end(`${second.text.slice(6)}\n`);
    assertTranslationJson(JSON.parse(await out.next('the second line, once complete')), second);
    assert.deepEqual(await exited, { code: 0, signal: null }, stderr);
  } finally {
    child.kill();
  }
});

test('stdin: a nonblocking pipe is waited on (EAGAIN), not refused', { timeout: 180_000 }, async () => {
  // O_NONBLOCK belongs to the open pipe, so python3 sets it and exec()s the CLI on the same stdin, as a parent
  // that shares its own nonblocking stdin would.
  const [first, second] = [expected[0], expected[1]];
  const setNonblocking = 'import os, sys; os.set_blocking(0, False); os.execv(sys.argv[1], sys.argv[1:])';
  const child = spawn('/usr/bin/python3', ['-c', setNonblocking, cli, 'translate', ...asPyTorch, '--model', model, '--json'],
                      { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  try {
    const out = stdoutLines(child);
    // Nothing is written for a while, so the CLI's first read finds the pipe empty.
    await new Promise((resolve) => setTimeout(resolve, 500));
    child.stdin.write(`${first.text}\n`);
    assertTranslationJson(JSON.parse(await out.next(`the first line (stderr: ${stderr})`)), first);
    // Its next read finds the pipe empty again, between two lines.
    await new Promise((resolve) => setTimeout(resolve, 300));
    child.stdin.end(`${second.text}\n`);
    assertTranslationJson(JSON.parse(await out.next(`the second line (stderr: ${stderr})`)), second);
    assert.deepEqual(await exited, { code: 0, signal: null }, stderr);
  } finally {
    child.kill();
  }
});

test('stdin: a bad line answers with an error in its place, the others are translated, exit 1', () => {
  const [first, third] = [expected[5], expected[6]];
  const input = Buffer.concat([Buffer.from(first.text + '\n'), Buffer.from([0x41, 0xff, 0xfe, 0x0a]),
    Buffer.from(third.text + '\n')]);
  const json = run(['translate', ...asPyTorch, '--model', model, '--json'], input);
  assert.equal(json.status, 1);
  const out = lines(json.stdout);
  assert.equal(out.length, 3);
  assertTranslationJson(JSON.parse(out[0]), first);
  const error = JSON.parse(out[1]);
  assert.deepEqual(Object.keys(error), ['error', 'code']);
  assert.match(error.error, /UTF-8/i);
  assert.equal(error.code, 'ATTNLAB_BAD_INPUT');
  assertTranslationJson(JSON.parse(out[2]), third);
  assert.match(json.stderr, /^attnlab: .*UTF-8/im);

  // Plain text: an empty line stands for the failed one, so output line i still answers input line i.
  const plain = run(['translate', ...asPyTorch, '--model', model], input);
  assert.equal(plain.status, 1);
  assert.deepEqual(plain.stdout.split('\n'), [first.greedyText, '', third.greedyText, '']);
  assert.match(plain.stderr, /^attnlab: .*UTF-8/m);
});

test('stdin: a blank line is a blank result, not an error, alone or among lines decoded together', () => {
  const [first, third] = [expected[5], expected[6]];
  const input = `${first.text}\n\n \t \n${third.text}\n\n`;
  for (const batch of ['1', '16']) {
    const plain = run(['translate', ...asPyTorch, '--model', model, '--batch', batch], input);
    assert.equal(plain.status, 0, plain.stderr);
    assert.equal(plain.stderr, '');
    assert.deepEqual(plain.stdout.split('\n'), [first.greedyText, '', '', third.greedyText, '', '']);

    const json = run(['translate', ...asPyTorch, '--model', model, '--json', '--batch', batch], input);
    assert.equal(json.status, 0, json.stderr);
    const out = lines(json.stdout).map((line) => JSON.parse(line));
    assert.equal(out.length, 5);
    assertTranslationJson(out[0], first);
    assertTranslationJson(out[3], third);
    for (const i of [1, 2, 4]) {
      assert.equal(out[i].text, '');
      assert.deepEqual([out[i].source_tokens, out[i].target_ids, out[i].attention], [[], [], []]);
      assert.deepEqual(Object.keys(out[i]), Object.keys(out[0]).filter((key) => !key.endsWith('_attention')));
    }
  }
  // Given as TEXT, nothing to translate is still an error.
  const argument = run(['translate', '--model', model, ' ']);
  assert.equal(argument.status, 1);
  assert.match(argument.stderr, /nothing to translate/);
});

test('info prints the metadata, including general.architecture', () => {
  const result = run(['info', '--model', model]);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /^general\.architecture = .*attnlab\.bahdanau/m);
  assert.match(result.stdout, /^attnlab\.bahdanau\.score = .*additive/m);
  assert.match(result.stdout, /^tensor tgt_embed\.weight f32 /m);
});

test('errors: exit 1, a message on stderr, nothing on stdout, never a signal', () => {
  const dir = mkdtempSync(join(tmpdir(), 'attnlab-cli-'));
  try {
    const corrupt = join(dir, 'corrupt.gguf');
    writeFileSync(corrupt, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(60, 0xab)]));
    const truncated = join(dir, 'truncated.gguf');
    const bytes = readFileSync(model);
    writeFileSync(truncated, bytes.subarray(0, bytes.length >> 1));
    const missing = join(dir, 'missing.gguf');

    assertFailure(run(['translate', '--model', missing, 'A dog.']), /missing\.gguf/);
    assertFailure(run(['info', '--model', missing]), /missing\.gguf/);
    // "GGUF" then 0xAB bytes: the version field reads 0xABABABAB.
    assertFailure(run(['translate', '--model', corrupt, 'A dog.']), /corrupt\.gguf: unsupported GGUF version 2880154539/);
    assertFailure(run(['info', '--model', corrupt]), /corrupt\.gguf: unsupported GGUF version 2880154539/);
    assertFailure(run(['translate', '--model', truncated, 'A dog.']),
      new RegExp(`truncated\\.gguf: GGUF file truncated: tensor '[^']+' needs bytes \\d+\\.\\.\\d+ but the file has ${bytes.length >> 1}`));
    assertFailure(run(['translate', '--model', model, '--frobnicate', 'A dog.']), /unknown option --frobnicate/);
    assertFailure(run(['translate', 'A dog.']), /--model/);
    assertFailure(run(['info']), /--model/);
    assertFailure(run(['translate', '--model']), /needs a value/);
    assertFailure(run(['translate', '--model', model, '--beam', '0', 'A dog.']), /beam/);
    assertFailure(run(['translate', '--model', model, '--beam', 'many', 'A dog.']), /--beam/);
    assertFailure(run(['translate', '--model', model, '--beam', '65', 'A dog.']), /beam/);
    // A valid GGUF file that is not a translation model.
    assertFailure(run(['translate', '--model', join(root, 'models/tokenizers/multi30k.en.gguf'), 'A dog.']),
      /attnlab\.tokenizer/);
    assertFailure(run(['translate', '--model', model, '   ']), /empty/);
    assertFailure(run(['frobnicate']), /unknown command/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a terminal gets the alignment as a text heatmap', (t) => {
  const script = spawnSync('script', ['--version'], { encoding: 'utf8' });
  if (script.error || script.status !== 0) {
    t.skip('util-linux `script` is not installed: cannot give the CLI a pseudo-terminal');
    return;
  }
  const sentence = expected[0];
  const quote = (s) => `'${s.replaceAll("'", "'\\''")}'`;
  const command = [cli, 'translate', ...asPyTorch, '--model', model, sentence.text].map(quote).join(' ');
  // script gives the command a pty (-q: no banner, -e: its exit status, -c: the command; typescript to /dev/null).
  const result = spawnSync('script', ['-qec', command, '/dev/null'], { input: '', encoding: 'utf8', timeout: 120_000 });
  assert.equal(result.signal, null);
  assert.equal(result.status, 0, result.stdout + result.stderr);
  const out = result.stdout.replaceAll('\r', '').split('\n');
  assert.equal(out[0], sentence.greedyText);
  const target = JSON.parse(run(['translate', ...asPyTorch, '--json', '--model', model, sentence.text]).stdout);
  // A header of source positions, one shaded row per target token, then the source tokens by position.
  const header = out.findIndex((line) => /^\s+0\s+1\s+2/.test(line));
  assert.ok(header > 0, `no heatmap header in:\n${result.stdout}`);
  const rows = out.slice(header + 1, header + 1 + target.target_tokens.length);
  const cells = new RegExp(`( [ ░▒▓█]){${target.source_tokens.length}}$`, 'u');
  rows.forEach((row, i) => {
    assert.ok(row.startsWith(target.target_tokens[i].slice(0, 5)), `row ${i}: ${row}`);
    assert.match(row, cells, `row ${i} is not one shade per source token: ${row}`);
  });
  assert.match(rows.join('\n'), /[░▒▓█]/u, 'the heatmap shows no attention at all');
  const legend = out.slice(header + 1 + rows.length).filter((line) => line.trim() !== '');
  assert.equal(legend.length, target.source_tokens.length);
  assert.match(legend.at(-1), /<\/s>$/);
  // Without a terminal there is no heatmap (the other tests check stdout is exactly the text).
});
