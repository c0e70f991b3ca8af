// The page's text rules (web/app/widgets/text.mjs) in Node: the input cap says what it cut, paragraphs split into
// sentences, and a result's notices (the engine's warnings where it returns them, a stop at the maximum length from
// stopReason or, without one, from the engine's automatic limit).
import test from 'node:test';
import assert from 'node:assert/strict';
import { MAX_INPUT_CHARS, automaticMaxLength, clipInput, noticesFor, splitSentences, stoppedAtMaxLength }
  from '../../web/app/widgets/text.mjs';

test('clipInput cuts a long value to the cap and says how much it cut; a short one hides the notice', () => {
  const input = { value: 'y'.repeat(MAX_INPUT_CHARS + 1234) };
  const notice = { textContent: '', hidden: true };
  clipInput(input, notice);
  assert.equal(input.value.length, MAX_INPUT_CHARS);
  assert.equal(notice.hidden, false);
  assert.match(notice.textContent, /the text had 3,234, so the last 1,234 were cut/);
  input.value = 'short';
  clipInput(input, notice);
  assert.equal(notice.hidden, true);
  assert.equal(input.value, 'short');
});

test('splitSentences: one per sentence, trimmed, nothing for blank text', () => {
  assert.deepEqual(splitSentences('  A dog runs.  Two men play soccer! Where is it?  '),
                   ['A dog runs.', 'Two men play soccer!', 'Where is it?']);
  assert.deepEqual(splitSentences('One sentence without a stop'), ['One sentence without a stop']);
  assert.deepEqual(splitSentences('   \n '), []);
  assert.deepEqual(splitSentences('Ein Hund rennt. Eine Katze schläft.', 'de'), ['Ein Hund rennt.', 'Eine Katze schläft.']);
});

test('stoppedAtMaxLength: stopReason when given, else the automatic limit 1.5 × source tokens + 10', () => {
  assert.equal(automaticMaxLength(8), 22);
  assert.equal(automaticMaxLength(13), 29);
  const tokens = (n) => Array.from({ length: n }, () => '▁a');
  assert.equal(stoppedAtMaxLength({ sourceTokens: tokens(8), targetTokens: tokens(22) }), true);
  assert.equal(stoppedAtMaxLength({ sourceTokens: tokens(8), targetTokens: tokens(21) }), false);
  assert.equal(stoppedAtMaxLength({ sourceTokens: tokens(8), targetTokens: tokens(22), stopReason: 'end' }), false);
  assert.equal(stoppedAtMaxLength({ sourceTokens: tokens(8), targetTokens: tokens(3), stopReason: 'maxLength' }), true);
  assert.equal(stoppedAtMaxLength({ tokens: tokens(30) }), false, 'a caption without stopReason: no guess');
});

test('noticesFor lists the warnings (strings or { code, message }) and the length stop', () => {
  const tokens = (n) => Array.from({ length: n }, () => '▁a');
  const notes = noticesFor({ sourceTokens: tokens(8), targetTokens: tokens(22),
                             warnings: ['40% of the source is unknown pieces', { code: 'bytes', message: 'emoji as bytes' }] },
                           { what: 'Sentence 2' });
  assert.equal(notes.length, 3);
  assert.equal(notes[0], 'Sentence 2: 40% of the source is unknown pieces');
  assert.equal(notes[1], 'Sentence 2: emoji as bytes');
  assert.match(notes[2], /^Sentence 2 stopped at the maximum length \(22 tokens\)/);
  assert.deepEqual(noticesFor({ sourceTokens: tokens(8), targetTokens: tokens(5) }), []);
  // What the engine returns for a length stop: one notice, not its warning and the page's own as well.
  const engineShaped = noticesFor({ sourceTokens: tokens(8), targetTokens: tokens(22), stopReason: 'maxLength',
                                    warnings: [{ code: 'MAX_LENGTH', message: 'the translation stopped at the maximum length' }] });
  assert.equal(engineShaped.length, 1);
  assert.match(engineShaped[0], /^The translation stopped at the maximum length \(22 tokens\)/);
});
