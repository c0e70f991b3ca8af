// The model every JS test translates with, and the CLI translation it must equal. One constant to switch to a
// shipped model; ATTNLAB_TEST_MODEL overrides it (an absolute path or one relative to the repository root).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const TEST_MODEL = 'tests/fixtures/rnn/additive.gguf';
export const CLI = process.env.ATTNLAB_CLI || join(repoRoot, 'build/native/attnlab');

const chosen = process.env.ATTNLAB_TEST_MODEL || TEST_MODEL;
export const modelPath = isAbsolute(chosen) ? chosen : join(repoRoot, chosen);

export function requireModel() {
  if (!existsSync(modelPath)) throw new Error(`the test model ${modelPath} does not exist (see tests/js/fixture_model.mjs)`);
  if (!existsSync(CLI)) throw new Error(`${CLI} does not exist: run npm run build`);
  return modelPath;
}

// Sentences with words the training data has, plus one it does not.
export const SENTENCES = ['A dog runs on the beach.', 'Two men are playing soccer in a park.', 'Zyxx qwerty!'];

/** The CLI's translation (parsed JSON) of text with the same options. */
export function cliTranslate(text, { beam = 1, maxLength = 0 } = {}, model = modelPath) {
  const args = ['translate', '--model', model, '--json', '--beam', String(beam)];
  if (maxLength > 0) args.push('--max-length', String(maxLength));
  args.push(text);
  return JSON.parse(execFileSync(CLI, args, { encoding: 'utf8' }));
}

/** Asserts that a module translation equals the CLI's: text and tokens exactly, attention and scores to 1e-5. */
export function assertSameAsCli(assert, got, cli, label) {
  assert.equal(got.text, cli.text, `${label}: text`);
  assert.deepEqual(got.sourceTokens, cli.source_tokens, `${label}: source tokens`);
  assert.deepEqual(got.targetTokens, cli.target_tokens, `${label}: target tokens`);
  assert.deepEqual(got.targetIds, cli.target_ids, `${label}: target ids`);
  assert.equal(got.scoreFunction, cli.score_function, `${label}: score function`);
  for (const name of ['attention', 'scores']) {
    const matrix = got[name];
    const rows = cli[name];
    assert.equal(matrix.rows, rows.length, `${label}: ${name} rows`);
    assert.equal(matrix.cols, cli.source_tokens.length, `${label}: ${name} cols`);
    rows.forEach((row, i) => row.forEach((value, j) => {
      const actual = matrix.data[i * matrix.cols + j];
      assert.ok(Math.abs(actual - value) <= 1e-5 * Math.max(1, Math.abs(value)),
                `${label}: ${name}[${i}][${j}] = ${actual}, CLI ${value}`);
    }));
  }
}
