// Issue 22 item 5, the CLI side: `attnlab COMMAND --help` (and -h) prints that command's usage and exits 0, and the
// numeric flags accept exactly the JS module's ranges (one option table, attnlab.hpp's Option) and refuse the rest
// in the same words, the flag's name in place of the option's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { CLI, repoRoot } from './fixture_model.mjs';
import { CAPTION_MODEL } from './caption_fixture.mjs';

const TRANSLATOR = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');
const PHOTO = join(repoRoot, 'web/app/samples/cat.jpg');
const run = (args) => spawnSync(CLI, args, { encoding: 'utf8', timeout: 120_000 });

let translator;
let captioner;
before(async () => {
  translator = await loadModel(TRANSLATOR);
  captioner = await loadModel(CAPTION_MODEL);
});
after(async () => {
  await translator?.dispose();
  await captioner?.dispose();
});

test('--help and -h on every command: that command\'s usage on stdout, exit 0', () => {
  for (const command of ['version', 'info', 'translate', 'caption', 'transcribe']) {
    for (const flag of ['--help', '-h']) {
      for (const args of [[command, flag], [command, '--model', 'x.gguf', flag], [command, '--beam', 'x', flag]]) {
        const result = run(args);
        assert.equal(result.status, 0, `${args.join(' ')}: ${result.stderr}`);
        assert.equal(result.stderr, '');
        assert.match(result.stdout, new RegExp(`^usage: attnlab ${command}\\b`), args.join(' '));
        for (const other of ['version', 'info', 'translate', 'caption', 'transcribe'].filter((c) => c !== command)) {
          assert.doesNotMatch(result.stdout, new RegExp(`^\\s*(usage: attnlab )?${other} `, 'm'), `${args.join(' ')} lists ${other}`);
        }
      }
    }
    const help = run(['help', command]);
    assert.equal(help.status, 0);
    assert.equal(help.stdout, run([command, '--help']).stdout);
  }
  const all = run(['--help']);
  assert.equal(all.status, 0);
  for (const command of ['version', 'info', 'translate', 'caption', 'transcribe']) assert.match(all.stdout, new RegExp(`^  ${command} `, 'm'));
  // After "--" it is text to translate, not a flag.
  assert.equal(run(['translate', '--model', TRANSLATOR, '--', '--help']).status, 0);
  const unknown = run(['translate', '--model', TRANSLATOR, '--frobnicate']);
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /unknown option --frobnicate \(attnlab translate --help lists them\)/);
});

/** The module's message for `options`, and the CLI's for the same value of `flag`. */
async function bothRefuse(call, options, args) {
  let message;
  await call(options).then(() => assert.fail(`the module accepted ${JSON.stringify(options)}`), (error) => { message = error.message; });
  const result = run(args);
  assert.equal(result.status, 1, `the CLI accepted ${args.join(' ')}`);
  return { module: message, cli: result.stderr.trim() };
}

const ranges = {
  translate: [
    ['beam', '--beam', [0, -3, 65, 100000, 1000000]],
    ['maxLength', '--max-length', [-1, 1001, 100000, 1000000]],
    ['noRepeatNgram', '--no-repeat-ngram', [-2, 1, 9, 1000000]],
  ],
  caption: [
    ['beam', '--beam', [0, 65]],
    ['maxLength', '--max-length', [-1, 201, 1000000]],
    ['noRepeatNgram', '--no-repeat-ngram', [-2, 1, 9]],
  ],
};

test('out of range: the CLI and the module refuse the same values in the same words', async () => {
  for (const [task, options] of Object.entries(ranges)) {
    const call = task === 'translate' ? (o) => translator.translate('A dog runs.', o)
                                      : (o) => captioner.caption({ data: new Uint8Array(4 * 8 * 8), width: 8, height: 8 }, o);
    const base = task === 'translate' ? ['translate', '--model', TRANSLATOR] : ['caption', '--model', CAPTION_MODEL];
    const input = task === 'translate' ? ['A dog runs.'] : [PHOTO];
    for (const [name, flag, values] of options) {
      for (const value of values) {
        const { module, cli } = await bothRefuse(call, { [name]: value }, [...base, flag, String(value), ...input]);
        assert.match(module, new RegExp(`^attnlab: ${name} must be .*, got ${value}$`));
        assert.equal(cli, module.replace(`attnlab: ${name} `, `attnlab: ${flag} `), `${task} ${flag} ${value}`);
      }
    }
  }
});

test('the edges of every range are accepted by both', async () => {
  const { limits } = translator;
  const ok = (args) => {
    const result = run(args);
    assert.equal(result.status, 0, `${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  for (const beam of [1, limits.maxBeam]) {
    assert.equal(typeof (await translator.translate('A dog.', { beam })).text, 'string');
    ok(['translate', '--model', TRANSLATOR, '--beam', String(beam), 'A dog.']);
  }
  for (const maxLength of [0, limits.maxTranslationLength]) {
    const t = await translator.translate('A dog.', { maxLength });
    assert.equal(JSON.parse(ok(['translate', '--model', TRANSLATOR, '--json', '--max-length', String(maxLength), 'A dog.'])).text, t.text);
  }
  for (const n of [-1, 0, limits.minNoRepeatNgram, limits.maxNoRepeatNgram]) {
    const t = await translator.translate('A dog runs on the beach.', { noRepeatNgram: n });
    assert.equal(JSON.parse(ok(['translate', '--model', TRANSLATOR, '--json', '--no-repeat-ngram', String(n), 'A dog runs on the beach.'])).text, t.text);
  }
  // Not a number at all: the CLI's own message, naming the flag.
  for (const text of ['2x', '', '1e9', '-']) {
    const result = run(['translate', '--model', TRANSLATOR, '--beam', text, 'A dog.']);
    assert.equal(result.status, 1);
    assert.equal(result.stderr, `attnlab: --beam needs a whole number, got '${text}'\n`);
  }
});
