// Text in, notices out: the page's input cap (said out loud, never silent), the sentence split that lets a
// paragraph through a sentence-level translator one sentence at a time, and the notices a result carries (the
// engine's warnings, a stop at the maximum length).

// The text boxes keep this many characters; a longer paste is cut, with a notice under the box.
export const MAX_INPUT_CHARS = 2000;

/** Cuts input's value to MAX_INPUT_CHARS and says so in notice (hidden again when nothing was cut). */
export function clipInput(input, notice) {
  const length = input.value.length;
  if (length > MAX_INPUT_CHARS) {
    input.value = input.value.slice(0, MAX_INPUT_CHARS);
    notice.textContent = `This box holds ${MAX_INPUT_CHARS.toLocaleString('en')} characters: the text had ` +
      `${length.toLocaleString('en')}, so the last ${(length - MAX_INPUT_CHARS).toLocaleString('en')} were cut.`;
    notice.hidden = false;
  } else if (length < MAX_INPUT_CHARS) {
    notice.hidden = true;
  }
}

/**
 * The sentences of text (Intl.Segmenter, or a split after . ! ? where the browser has none), trimmed, empty
 * ones dropped. The models learned from single sentences: a paragraph goes through one sentence per call.
 */
export function splitSentences(text, lang = 'en') {
  const trimmed = text.trim();
  if (!trimmed) return [];
  let parts;
  if (typeof Intl.Segmenter === 'function') {
    parts = [...new Intl.Segmenter(lang, { granularity: 'sentence' }).segment(trimmed)].map((s) => s.segment);
  } else {
    parts = trimmed.split(/(?<=[.!?。！？])\s+/);
  }
  return parts.map((s) => s.trim()).filter(Boolean);
}

// Whether a translation ended because it reached the maximum length: the engine's stopReason where it gives one,
// else a length equal to the engine's automatic limit (1.5 × the source tokens + 10; the end token is not among
// targetTokens, so a finished and a cut translation look alike otherwise).
export const automaticMaxLength = (sourceTokens) => Math.floor(1.5 * sourceTokens + 10);

export function stoppedAtMaxLength(result) {
  if (typeof result.stopReason === 'string') return /length|limit/i.test(result.stopReason);
  if (typeof result.finished === 'boolean') return !result.finished;  // a transcript: the model ended it or not
  if (!Array.isArray(result.targetTokens) || !Array.isArray(result.sourceTokens)) return false;
  return result.targetTokens.length >= automaticMaxLength(result.sourceTokens.length);
}

/**
 * The notices of one result, as sentences: its warnings (when the engine returns them) and a length stop (a
 * translation's stopReason, a transcript's finished: false). unit: what the result counts (its tokens, characters).
 */
export function noticesFor(result, { what = 'The translation', unit = 'token' } = {}) {
  const notes = [];
  for (const warning of Array.isArray(result.warnings) ? result.warnings : []) {
    if (warning?.code === 'MAX_LENGTH') continue;   // said once, with the token count, below
    const text = typeof warning === 'string' ? warning : warning?.message ?? warning?.code;
    if (text) notes.push(`${what}: ${text}`);
  }
  if (stoppedAtMaxLength(result)) {
    const n = (result.targetTokens ?? result.tokens ?? result.characters ?? []).length;
    notes.push(`${what} stopped at the maximum length (${n} ${unit}${n === 1 ? '' : 's'}) before the model wrote ` +
               'its end token: the end is missing, and a word repeated over and over is a model that lost its place.');
  }
  return notes;
}
