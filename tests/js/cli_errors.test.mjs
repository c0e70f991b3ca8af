// The command line on bad input (issue 8): whatever the model file, the flags or stdin hold, build/native/attnlab
// exits with status exactly 1 and a message on stderr, never by a signal. tests/js/cli.test.mjs covers the common
// cases (missing/corrupt/half-truncated files, unknown flags, a line of invalid UTF-8 among good ones); these are
// the hostile ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = process.env.ATTNLAB_CLI ?? join(root, 'build/native/attnlab');
const model = join(root, 'tests/fixtures/rnn/additive.gguf');
const captioner = join(root, 'tests/fixtures/caption/tiny_model.gguf');

function run(args, input = '') {
  const result = spawnSync(cli, args, { input, encoding: 'utf8', timeout: 120_000 });
  // EPIPE: the CLI refused the model and exited before reading stdin, which is fine; anything else is not.
  if (result.error?.code !== 'EPIPE') assert.equal(result.error, undefined, `could not run ${cli}: ${result.error}`);
  return result;
}

// Exit status exactly 1, no signal, and an "attnlab: <message>" line on stderr.
// `pattern`: what the message must say for this case, so that a generic or wrong message fails the test.
function assertCleanFailure(args, input, pattern) {
  assert.ok(pattern instanceof RegExp, 'each case names the message it expects');
  const result = run(args, input);
  const label = `attnlab ${args.join(' ').slice(0, 120)}`;
  assert.equal(result.signal, null, `${label} died of ${result.signal}:\n${result.stderr}`);
  assert.equal(result.status, 1, `${label}: expected exit 1, got ${result.status}; stderr: ${result.stderr}`);
  assert.match(result.stderr, /^attnlab: \S/m, `${label}: no message on stderr`);
  assert.match(result.stderr, pattern, `${label}: stderr does not say why`);
  return result;
}

const scratch = mkdtempSync(join(tmpdir(), 'attnlab-cli-errors-'));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
const file = (name, bytes) => {
  const path = join(scratch, name);
  writeFileSync(path, bytes);
  return path;
};

const good = readFileSync(model);
// Header: magic, u32 version, u64 tensor count, u64 key count.
const header = (version, tensors, keys) => {
  const b = Buffer.alloc(24);
  b.write('GGUF', 0, 'latin1');
  b.writeUInt32LE(version, 4);
  b.writeBigUInt64LE(tensors, 8);
  b.writeBigUInt64LE(keys, 16);
  return b;
};
// Each bad file with the message that names its own defect (and the file), not just any message.
const badModels = {
  empty: [file('empty.gguf', Buffer.alloc(0)), /empty\.gguf: not a GGUF file \(magic is '', file has only 0 bytes\)/],
  'three bytes': [file('short.gguf', Buffer.from('GGU')), /short\.gguf: not a GGUF file \(magic is 'GGU', file has only 3 bytes\)/],
  directory: [(() => { const d = join(scratch, 'model.gguf.d'); mkdirSync(d); return d; })(),
    /cannot read GGUF file '.*model\.gguf\.d'/],
  'a text file': [file('notes.gguf', 'this is not a model\n'.repeat(20)), /notes\.gguf: not a GGUF file \(magic is 'this'\)/],
  'a PNG header': [file('image.gguf', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...Array(64).fill(0)])),
    /image\.gguf: not a GGUF file \(magic is '\\x89PNG'\)/],
  'wrong magic': [file('magic.gguf', Buffer.concat([Buffer.from('GGML'), good.subarray(4)])),
    /magic\.gguf: not a GGUF file \(magic is 'GGML'\)/],
  'version 99': [file('version.gguf', Buffer.concat([header(99, 0n, 0n), good.subarray(24)])),
    /version\.gguf: unsupported GGUF version 99 \(attnlab reads versions 2 and 3\)/],
  'huge counts': [file('counts.gguf', header(3, 1n << 62n, 1n << 62n)),
    /counts\.gguf: GGUF metadata count 4611686018427387904 cannot fit in the file's remaining 0 bytes/],
  'truncated in the header': [file('header.gguf', good.subarray(0, 20)),
    /header\.gguf: GGUF file truncated: metadata count needs bytes 16\.\.24 but the file has 20/],
  'truncated in the metadata': [file('metadata.gguf', good.subarray(0, 1000)),
    /metadata\.gguf: GGUF tensor count \d+ cannot fit in the file's remaining 976 bytes/],
  'missing its last byte': [file('last.gguf', good.subarray(0, good.length - 1)),
    new RegExp(`last\\.gguf: GGUF file truncated: tensor '[^']+' needs bytes \\d+\\.\\.${good.length} but the file has ${good.length - 1}`)],
  'random bytes after the magic': [file('random.gguf', Buffer.concat([Buffer.from('GGUF'),
    Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 2654435761) >>> 24))])),
  /random\.gguf: unsupported GGUF version \d+ \(attnlab reads versions 2 and 3\)/],
};

for (const [what, [path, message]] of Object.entries(badModels)) {
  test(`a model file that is ${what}: translate and info exit 1 with a message`, () => {
    assertCleanFailure(['translate', '--model', path, 'A dog.'], '', message);
    assertCleanFailure(['translate', '--model', path], 'A dog.\n', message);
    if (what !== 'missing its last byte') assertCleanFailure(['info', '--model', path], '', message);
  });
}

test('stdin that is not UTF-8 (lone continuation, overlong, surrogate half, beyond U+10FFFF, NUL): exit 1', () => {
  for (const bytes of [[0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc3], [0x61, 0x00, 0x62]]) {
    const input = Buffer.from([0x41, 0x20, ...bytes, 0x0a]);
    const result = run(['translate', '--model', model], input);
    assert.equal(result.signal, null, `died of ${result.signal} on ${bytes}`);
    // NUL is valid UTF-8: that line may translate; every other one must be refused.
    if (bytes.includes(0x00)) assert.ok(result.status === 0 || result.status === 1);
    else assert.equal(result.status, 1, `bytes ${bytes}: ${result.stderr}`);
  }
});

test('invalid UTF-8 as a command-line argument: exit 1 with a UTF-8 message', () => {
  // Node encodes spawn arguments as UTF-8, so the raw byte 0xFF has to come from a shell's printf.
  const result = spawnSync('bash', ['-c', '"$0" translate --model "$1" "$(printf \'A \\377 dog\')"', cli, model],
    { encoding: 'utf8', timeout: 120_000 });
  assert.equal(result.signal, null);
  assert.equal(result.status, 1, result.stderr);  // bash passes a signal on as 128 + n, which this also rejects
  assert.match(result.stderr, /^attnlab: .*UTF-8/im);
});

test('a 10,000-character line, as TEXT and on stdin: exit 1, "too long"-style message, no signal', () => {
  const long = 'a dog runs '.repeat(1000).slice(0, 10_000);
  assertCleanFailure(['translate', '--model', model, long], '', /token|long/i);
  assertCleanFailure(['translate', '--model', model, '--json'], `${long}\n`, /token|long/i);
  assertCleanFailure(['translate', '--model', model], 'x'.repeat(10_000) + '\n',
                     /the input is too long: \d+ tokens, at most \d+ are accepted/);
});

test('stdin of binary garbage: one answer per line, exit 1, never a signal', () => {
  const garbage = Buffer.from(Array.from({ length: 20_000 }, (_, i) => (i * 2246822519) >>> 24));
  const result = assertCleanFailure(['translate', '--model', model], garbage, /tokenizer input: invalid UTF-8 at byte \d+/);
  // Every line that fails says why (the UTF-8 error), none with some other message.
  for (const line of result.stderr.split('\n').filter((l) => l !== '')) assert.match(line, /^attnlab: tokenizer input: invalid UTF-8|^attnlab: .*(empty|too long)/);
});

test('bad flag values: exit 1 with a message naming the flag', () => {
  const flags = [
    [['--max-length', '-1'], /--max-length/],
    [['--max-length', '1e9'], /--max-length/],
    [['--max-length', '99999999999999999999'], /--max-length/],
    [['--beam', ''], /--beam/],
    [['--beam', '2x'], /--beam/],
    [['--beam', '-3'], /--beam/],
    [['--beam', '100000'], /beam/],
  ];
  for (const [extra, pattern] of flags) assertCleanFailure(['translate', '--model', model, ...extra, 'A dog.'], '', pattern);
  assertCleanFailure(['translate', '--model', model, '--beam'], '', /needs a value/);
  assertCleanFailure(['info', '--model', model, '--max-length'], '', /needs a value/);
  assertCleanFailure(['translate', '--model', '', 'A dog.'], '', /translate needs --model FILE/);
  assertCleanFailure([''], '', /unknown command/);
});

test('caption: wrong model kind, missing, empty, non-image and directory images exit 1', () => {
  const image = file('image.png', Buffer.from('not a png at all'));
  const empty = file('empty.png', Buffer.alloc(0));
  assertCleanFailure(['caption', '--model', model, image], '', /caption/);
  assertCleanFailure(['caption', '--model', captioner], '', /IMAGE/);
  for (const path of [image, empty, scratch]) {
    assertCleanFailure(['caption', '--model', captioner, path], '',
                       new RegExp(`cannot read image '${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}': unknown image type`));
  }
  assertCleanFailure(['caption', '--model', captioner, join(scratch, 'missing.jpg')], '', /cannot read image '.*missing\.jpg'/);
  assertCleanFailure(['caption', '--model', badModels.empty[0], image], '', badModels.empty[1]);
  const withEncoder = join(root, 'tests/fixtures/caption/tiny_encoder_model.gguf');
  const photo = join(root, 'web/app/samples/cat.jpg');
  for (const value of ['1', '9', '-2', 'x', '']) {
    assertCleanFailure(['caption', '--model', withEncoder, '--no-repeat-ngram', value, photo], '',
                       /no-repeat-ngram|noRepeatNgram/);
  }
  // -1 is the model's own setting, as in the JS module's caption(): the same caption as no flag at all.
  const byDefault = run(['caption', '--model', withEncoder, photo]);
  const minusOne = run(['caption', '--model', withEncoder, '--no-repeat-ngram', '-1', photo]);
  assert.equal(minusOne.status, 0, minusOne.stderr);
  assert.equal(minusOne.stdout, byDefault.stdout);
});

// Issue 8's bad-input matrix, the CLI side of tests/js/bad_input_cases.mjs.
test('empty or blank text, as TEXT and as the whole of stdin: exit 1, "empty"', () => {
  assertCleanFailure(['translate', '--model', model, ''], '', /empty/);
  assertCleanFailure(['translate', '--model', model, ' \t '], '', /empty/);
  assertCleanFailure(['translate', '--model', model], '\n\n', /empty/);
  assertCleanFailure(['translate', '--model', model], '', /empty/);
});

test('translate on a captioner: exit 1, the message says the model cannot translate', () => {
  assertCleanFailure(['translate', '--model', captioner, 'A dog.'], '', /captioner.*cannot translate|caption.*translat/i);
});

test('a tensor of the wrong shape (transposed, or one column short): exit 1 naming the tensor', async () => {
  const { walkGguf } = await import('./bad_input_cases.mjs');
  const bytes = new Uint8Array(good);
  const tensor = walkGguf(bytes).tensors.find((t) => t.dims.length === 2 && t.dims[0] !== t.dims[1] && t.dims[0] > 1);
  for (const [label, dims] of [['transposed', [...tensor.dims].reverse()], ['short', [tensor.dims[0] - 1, tensor.dims[1]]]]) {
    const copy = bytes.slice();
    const view = new DataView(copy.buffer);
    dims.forEach((d, i) => view.setBigUint64(tensor.dimsOffset + 8 * i, BigInt(d), true));
    const path = file(`shape-${label}.gguf`, copy);
    assertCleanFailure(['translate', '--model', path, 'A dog.'], '', new RegExp(`'${tensor.name.replace(/\./g, '\\.')}'`));
  }
});
