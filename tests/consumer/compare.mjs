// tests/consumer/run.sh: the example's output (text, then one "attention\t<token>\t<weights>" line per output token)
// against build/native/attnlab --json for the same inputs, number for number (both print floats with %.9g).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [work, target, example] = process.argv.slice(2);

function parseExample(file) {
  const lines = readFileSync(join(work, file), 'utf8').trimEnd().split('\n');
  const out = { engine: '', text: null, tokens: [], attention: [] };
  for (const line of lines) {
    const [kind, ...rest] = line.split('\t');
    if (kind === 'engine') out.engine = rest[0];
    else if (kind === 'text') out.text = rest.join('\t');
    else if (kind === 'attention') {
      out.tokens.push(rest[0]);
      out.attention.push(rest[1].split(' ').map(Number));
    } else assert.fail(`${file}: unexpected line ${JSON.stringify(line)}`);
  }
  return out;
}

const expectedSimd = { baseline: 'sse2', avx2: 'avx2+fma', avx512: 'avx512' }[target];
for (const [name, tokensKey] of [['translate', 'target_tokens'], ['caption', 'tokens']]) {
  const mine = parseExample(`${name}.txt`);
  const cli = JSON.parse(readFileSync(join(work, `${name}.json`), 'utf8'));
  assert.match(mine.engine, new RegExp(`\\(${expectedSimd.replace('+', '\\+')}\\)$`), `${example} ${name}: ATTNLAB_CPU=${target}`);
  assert.ok(cli.text.length > 0, `${name}: the CLI gave no text`);
  assert.equal(mine.text, cli.text, `${example} ${name} (${target}): text`);
  assert.deepEqual(mine.tokens, cli[tokensKey], `${example} ${name} (${target}): tokens`);
  assert.deepEqual(mine.attention, cli.attention, `${example} ${name} (${target}): attention`);
  console.log(`  ${target} ${example.split('/').pop()} ${name}: "${mine.text}", ${mine.attention.length}x${mine.attention[0].length} attention as the CLI's`);
}
