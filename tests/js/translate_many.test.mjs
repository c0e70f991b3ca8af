// Issue 20 item 3: model.translate(texts) decodes several texts together and gives each exactly what
// translate(text) gives it alone (tokens, stop reason, warnings; attention within float rounding), in input order,
// on the calling thread and in a Node worker; [] for no texts; a bad element rejects the call with its index and
// its usual code; a signal aborts it as it aborts one text. And the CLI's stdin mode, which translates waiting lines
// together (--batch), prints what it prints line by line (--json floats within rounding), a bad line's error included.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { AttnlabError, ERROR_CODES, loadModel } from '../../web/lib/index.mjs';
import { loadEngine } from '../../web/lib/engine.mjs';
import { CLI, repoRoot } from './fixture_model.mjs';

const RNN = join(repoRoot, 'models/weights/bahdanau-en-de.q8_0.gguf');
const TRANSFORMER = join(repoRoot, 'models/weights/transformer-en-de.q8_0.gguf');
const FIXTURE = join(repoRoot, 'tests/fixtures/rnn/additive.gguf');

// Mixed lengths; the long one reaches maxLength 9, the short ones end with </s>; the last one is unknown input.
const PARAGRAPH = [
  'Two men are playing soccer in a park.',
  'A dog runs.',
  'A little girl with a red hat is sitting on a bench next to her grandmother while a group of boys plays football.',
  'Hello.',
  'A man in a blue shirt is standing on a ladder.',
  '我们在学习中文和德语。',
];

/** translate(texts) against translate(text) for each text: equal, attention/scores/context to 1e-4. */
function assertSameAsAlone(batched, alone, label) {
  assert.equal(batched.length, alone.length, `${label}: one result per text`);
  batched.forEach((t, i) => {
    const a = alone[i];
    const where = `${label}, text ${i}`;
    assert.deepEqual(Object.keys(t).sort(), Object.keys(a).sort(), `${where}: the same fields`);
    for (const key of ['text', 'sourceTokens', 'targetTokens', 'sourceIds', 'targetIds', 'scoreFunction', 'stopReason']) {
      assert.deepEqual(t[key], a[key], `${where}: ${key}`);
    }
    // The same warnings; a LOW_CONFIDENCE's log p per token within float rounding, as logProbability.
    const exact = (warnings) => warnings.map(({ logProbabilityPerToken, ...rest }) => rest);
    assert.deepEqual(exact(t.warnings), exact(a.warnings), `${where}: warnings`);
    t.warnings.forEach((w, k) => {
      if (!('logProbabilityPerToken' in w)) return;
      const expected = a.warnings[k].logProbabilityPerToken;
      assert.ok(Math.abs(w.logProbabilityPerToken - expected) <= 1e-4 * Math.max(1, Math.abs(expected)), `${where}: warning ${k}`);
    });
    assert.ok(Math.abs(t.logProbability - a.logProbability) <= 1e-4 * Math.max(1, Math.abs(a.logProbability)), `${where}: logProbability`);
    for (const key of ['attention', 'scores', 'context', 'values', 'encoderSelfAttention', 'decoderSelfAttention', 'crossAttention',
      'encoderQueries', 'encoderKeys', 'encoderSelfScores', 'decoderSelfScores', 'crossScores']) {
      if (!a[key]) continue;
      assert.equal(t[key].data.length, a[key].data.length, `${where}: ${key} size`);
      for (const dim of ['rows', 'cols', 'layers', 'heads']) assert.equal(t[key][dim], a[key][dim], `${where}: ${key}.${dim}`);
      t[key].data.forEach((value, j) => {
        // The causal mask's raw scores are -Infinity in both, or in neither.
        if (a[key].data[j] === -Infinity) assert.equal(value, -Infinity, `${where}: ${key}[${j}] = ${value}, alone -Infinity`);
        else assert.ok(Math.abs(value - a[key].data[j]) <= 1e-4 * Math.max(1, Math.abs(a[key].data[j])),
                       `${where}: ${key}[${j}] = ${value}, alone ${a[key].data[j]}`);
      });
    }
  });
}

async function alone(model, texts, options) {
  const out = [];
  for (const text of texts) out.push(await model.translate(text, options));
  return out;
}

let models;
before(async () => {
  models = {
    rnn: await loadModel(RNN),
    transformer: await loadModel(TRANSFORMER),
    rnnWorker: await loadModel(RNN, { useWorker: true }),
    transformerWorker: await loadModel(TRANSFORMER, { useWorker: true }),
  };
});
after(async () => {
  for (const model of Object.values(models ?? {})) await model?.dispose();
});

for (const name of ['rnn', 'transformer']) {
  test(`translate(texts), ${name}: each result as translate(text) alone, greedy and beam 4, with and without the length cut`, { timeout: 300_000 }, async () => {
    const model = models[name];
    let cut = 0;
    for (const options of [{}, { beam: 4 }, { maxLength: 9 }, { beam: 4, maxLength: 9 }]) {
      const batched = await model.translate(PARAGRAPH, options);
      assertSameAsAlone(batched, await alone(model, PARAGRAPH, options), `${name} ${JSON.stringify(options)}`);
      cut += batched.filter((t) => t.stopReason === 'maxLength').length;
    }
    assert.ok(cut > 0, 'some sentence reached maxLength');
    const [unknown] = await model.translate([PARAGRAPH.at(-1)]);
    assert.equal(unknown.warnings[0].code, 'UNKNOWN_INPUT');
  });

  test(`translate(texts), ${name}: a Node worker gives what the calling thread gives`, { timeout: 300_000 }, async () => {
    const options = { beam: 4 };
    const inWorker = await models[`${name}Worker`].translate(PARAGRAPH, options);
    assertSameAsAlone(inWorker, await models[name].translate(PARAGRAPH, options), `${name} in a worker`);
    assert.deepEqual(await models[`${name}Worker`].translate([]), []);
  });
}

test('translate(texts): the beam tree of each text is the one translate(text) records', { timeout: 120_000 }, async () => {
  const options = { beam: 4, beamTree: true };
  const batched = await models.rnn.translate(PARAGRAPH.slice(0, 3), options);
  const one = await alone(models.rnn, PARAGRAPH.slice(0, 3), options);
  batched.forEach((t, i) => {
    assert.equal(t.beamTree.winner, one[i].beamTree.winner);
    assert.deepEqual(t.beamTree.nodes.map((n) => [n.step, n.parent, n.id, n.piece, n.finished]),
                     one[i].beamTree.nodes.map((n) => [n.step, n.parent, n.id, n.piece, n.finished]));
  });
});

// Counts the engine Model's translate and translateMany calls (embind methods on the shared prototype of this
// realm's engine, the one the in-thread models run on) while fn runs.
async function engineCalls(fn) {
  const proto = (await loadEngine()).Model.prototype;
  const counts = { translate: 0, translateMany: 0 };
  const originals = { translate: proto.translate, translateMany: proto.translateMany };
  for (const name of Object.keys(counts)) {
    const counted = function (...args) {
      counts[name] += 1;
      return originals[name].apply(this, args);
    };
    // embind's overload dispatcher finds its table through proto[name], which is now this wrapper.
    if (originals[name].overloadTable) counted.overloadTable = originals[name].overloadTable;
    proto[name] = counted;
  }
  try {
    return { result: await fn(), counts };
  } finally {
    Object.assign(proto, originals);
  }
}

test('translate(texts) with rawScores or queryKey: one engine call, each result (the extras included) as translate(text) alone', { timeout: 300_000 }, async () => {
  for (const options of [{ rawScores: true }, { rawScores: true, beam: 4 }, { queryKey: true }, { queryKey: true, rawScores: true, beam: 2 }]) {
    const label = `transformer ${JSON.stringify(options)}`;
    const { result: batched, counts } = await engineCalls(() => models.transformer.translate(PARAGRAPH, options));
    assert.deepEqual(counts, { translate: 0, translateMany: 1 }, `${label}: the batch is one translateMany call`);
    const one = await alone(models.transformer, PARAGRAPH, options);
    for (const key of ['encoderSelfScores', ...(options.rawScores ? ['decoderSelfScores', 'crossScores'] : []),
      ...(options.queryKey ? ['encoderQueries', 'encoderKeys'] : [])]) {
      assert.ok(batched.every((t) => t[key]), `${label}: every result has ${key}`);
    }
    assertSameAsAlone(batched, one, label);
  }
  // In a worker too (its engine is its own, so only the results are compared).
  const options = { rawScores: true, beam: 4 };
  assertSameAsAlone(await models.transformerWorker.translate(PARAGRAPH, options), await alone(models.transformer, PARAGRAPH, options),
                    'transformer in a worker, rawScores');
  // An RNN has no raw-score extras: the batch is still one call, with none of them.
  const { result: rnn, counts } = await engineCalls(() => models.rnn.translate(PARAGRAPH.slice(0, 2), { rawScores: true }));
  assert.deepEqual(counts, { translate: 0, translateMany: 1 });
  assert.ok(rnn.every((t) => !('crossScores' in t) && !('encoderSelfScores' in t)));
});

test('translate([]) resolves to []; one text in an array is that text\'s result', async () => {
  assert.deepEqual(await models.rnn.translate([]), []);
  assert.deepEqual(await models.rnn.translate([], { beam: 4 }), []);
  const [single] = await models.rnn.translate(['A dog runs.']);
  assert.deepEqual(single.targetIds, (await models.rnn.translate('A dog runs.')).targetIds);
});

/** Awaits a rejection: an AttnlabError with `code` whose message matches `re`. */
async function rejectsWith(promise, code, re, label) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof AttnlabError, `${label}: ${error?.constructor?.name}: ${error?.message}`);
    assert.equal(error.code, code, `${label}: ${error.message}`);
    assert.match(error.message, re, label);
    return true;
  }, label);
}

for (const where of ['rnn', 'rnnWorker']) {
  test(`translate(texts) ${where === 'rnn' ? 'on the calling thread' : 'in a worker'}: a bad element rejects with its index and its code`, { timeout: 120_000 }, async () => {
    const model = models[where];
    await rejectsWith(model.translate(['A dog runs.', '  ']), ERROR_CODES.BAD_INPUT,
                      /^attnlab: texts\[1\]: the text to translate is empty$/, 'an empty element');
    await rejectsWith(model.translate(['A dog runs.', 'Hello.', 42]), ERROR_CODES.BAD_INPUT,
                      /^attnlab: texts\[2\]: translate\(\) needs the text as a string/, 'a number');
    await rejectsWith(model.translate(['\uD800 x']), ERROR_CODES.BAD_INPUT, /^attnlab: texts\[0\]: the text has an unpaired UTF-16 surrogate/, 'a lone surrogate');
    // Under the byte limit but over the engine's token limit: refused by the engine, which names the index too.
    await rejectsWith(model.translate(['Hello.', 'a '.repeat(500)]), ERROR_CODES.BAD_INPUT,
                      /^attnlab: texts\[1\]: the input is too long: \d+ tokens, at most 400 are accepted$/, 'too many tokens');
    await rejectsWith(model.translate(['A dog runs.'], { beam: 0 }), ERROR_CODES.BAD_OPTIONS, /beam must be an integer from 1 to 64, got 0/, 'bad options');
    // The model keeps translating after each refusal.
    assert.equal((await model.translate(['A dog runs.']))[0].text, (await model.translate('A dog runs.')).text);
  });

  test(`translate(texts) ${where === 'rnn' ? 'on the calling thread' : 'in a worker'}: an AbortSignal aborts it as it aborts one text`, { timeout: 120_000 }, async () => {
    const model = models[where];
    await rejectsWith(model.translate(PARAGRAPH, { signal: AbortSignal.abort() }), ERROR_CODES.ABORTED,
                      /^attnlab: the translation was aborted$/, 'already aborted');
    const controller = new AbortController();
    const first = model.translate(PARAGRAPH, { beam: 8 });
    const queued = model.translate(PARAGRAPH, { signal: controller.signal });
    controller.abort();
    await rejectsWith(queued, ERROR_CODES.ABORTED, /the translation was aborted/, 'a queued call');
    assert.equal((await first).length, PARAGRAPH.length);
  });
}

// ---- the CLI's stdin mode ------------------------------------------------------------------------------------

const LINES = ['Two men are playing soccer in a park.', 'A dog runs.', '', 'Hello.', 'a '.repeat(500),
               'A man in a blue shirt is standing on a ladder.', 'People walk.', 'Two dogs are running through the snow.',
               'A woman is cooking dinner in a small kitchen.', '我们在学习中文和德语。'];

function cliStdin(model, lines, args) {
  const result = spawnSync(CLI, ['translate', '--model', model, ...args], { input: `${lines.join('\n')}\n`, encoding: 'utf8', timeout: 300_000, maxBuffer: 256 * 1024 * 1024 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Equal output: text lines exactly; --json lines with every field equal but the floats, which may differ by rounding. */
function assertSameOutput(batched, oneByOne, json, label) {
  assert.equal(batched.status, oneByOne.status, `${label}: status`);
  assert.equal(batched.stderr, oneByOne.stderr, `${label}: stderr`);
  if (!json) {
    assert.equal(batched.stdout, oneByOne.stdout, `${label}: stdout`);
    return;
  }
  const close = (a, b, path) => {
    if (typeof b === 'number' && !Number.isInteger(b)) {
      assert.ok(Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b)), `${label}: ${path} = ${a}, line by line ${b}`);
    } else if (b && typeof b === 'object') {
      assert.deepEqual(Object.keys(a), Object.keys(b), `${label}: ${path} keys`);
      for (const key of Object.keys(b)) close(a[key], b[key], `${path}.${key}`);
    } else {
      assert.deepEqual(a, b, `${label}: ${path}`);
    }
  };
  const lines = (out) => out.stdout.split('\n');
  assert.equal(lines(batched).length, lines(oneByOne).length, `${label}: lines`);
  lines(oneByOne).forEach((line, i) => {
    if (line === '') assert.equal(lines(batched)[i], '', `${label}: line ${i}`);
    else close(JSON.parse(lines(batched)[i]), JSON.parse(line), `line ${i}`);
  });
}

test('CLI stdin: lines translated in batches print what line by line prints, bad lines included', { timeout: 600_000 }, () => {
  for (const model of [RNN, TRANSFORMER, FIXTURE]) {
    for (const args of [['--json', '--beam', '4'], ['--max-length', '9'], ['--beam', '4'], ['--json']]) {
      const json = args.includes('--json');
      const oneByOne = cliStdin(model, LINES, [...args, '--batch', '1']);
      assert.equal(oneByOne.status, 1, 'the too-long line fails (the empty one is a blank result)');
      assert.equal(oneByOne.stdout.split('\n').length, LINES.length + 1, 'one output line per input line');
      assert.equal((oneByOne.stderr.match(/^attnlab: /gm) ?? []).length, 1, oneByOne.stderr);
      for (const batch of ['4', '16']) {
        assertSameOutput(cliStdin(model, LINES, [...args, '--batch', batch]), oneByOne, json, `${model} ${args.join(' ')} --batch ${batch}`);
      }
      // Good and blank lines only: the batches never fall back to one by one.
      const good = LINES.filter((line, i) => i !== 4);
      const goodOne = cliStdin(model, good, [...args, '--batch', '1']);
      assert.equal(goodOne.status, 0);
      assertSameOutput(cliStdin(model, good, args), goodOne, json, `${model} ${args.join(' ')}: the default batch`);
    }
  }
});

test('CLI --batch: a whole number from 1 to 256, for translate only', () => {
  for (const value of ['0', '257', 'x', '-1']) {
    const result = cliStdin(FIXTURE, ['a'], ['--batch', value]);
    assert.equal(result.status, 1, value);
    assert.match(result.stderr, /--batch (must be an integer from 1 to 256|needs a whole number), got '?[-\w]+'?/, value);
  }
  const caption = spawnSync(CLI, ['caption', '--model', FIXTURE, '--batch', '4', 'x.jpg'], { encoding: 'utf8' });
  assert.equal(caption.status, 1);
  assert.match(caption.stderr, /caption takes no --batch/);
  const help = spawnSync(CLI, ['translate', '--help'], { encoding: 'utf8' });
  assert.match(help.stdout, /--batch 1\.\.256/);
});
