// The Speech tab: audio in (the microphone, a file or a dropped one, the sample clips), the engine's transcript
// out, and under the audio's log-mel spectrogram the attention of every character over the encoder's frames,
// on one time axis (an attention frame is 40 ms, four spectrogram frames of 10 ms). Hovering or focusing a
// character highlights the frames it attended to; clicking it (or Enter) plays that slice of the audio. Step by
// step (the stepper of widgets/decoding.mjs) writes the transcript a character at a time, the attention row
// and the dimmed spectrogram following the character being written, and under it the search's tree of
// hypotheses (the same widget as Caption's). Every number drawn comes from the engine (Transcription.spectrogram,
// .attention, .beamTree); this module only draws. The panel's DOM is built here, so index.html
// holds only the empty section. main.mjs calls setupSpeech() with the manifest.
import { matrixRow } from '/lib/index.mjs';
import { byId, el, showError as showErrorIn, statusLine, createModelLoader } from '/app/ui.mjs';
import { fillModelPicker, pickedEntry } from '/app/widgets/model_picker.mjs';
import { modelControls } from '/app/widgets/model_controls.mjs';
import { enableTab } from '/app/widgets/tablist.mjs';
import { publish, restoreFor } from '/app/share.mjs';
import { noticesFor } from '/app/widgets/text.mjs';
import { drawBeamTree, drawStepper, winningPath } from '/app/widgets/decoding.mjs';
import { canvasToPng, exportBar, heatmapSvg, hideTip, legend, matrixRows, showTip, weightLines } from '/app/widgets/figure.mjs';

const SAMPLES_URL = '/app/samples/speech/speech.json';
const SAMPLES_BASE = '/app/samples/speech/';
const MAX_RECORD_SECONDS = 60;     // the engine's limit (kMaxTranscribeSeconds): recording stops there
const SPEC_PX = 3;                 // CSS pixels per 10 ms spectrogram frame
const LABEL_PX = 28;               // the character column left of both canvases
const BAND_PX = 3;                 // per mel band
const ROW_PX = 14;                 // per character
const FRAMES_PER_ATTENTION_FRAME = 4;

const view = {
  entries: [],
  loader: null,
  result: null,       // the engine's last Transcription
  audio: null,        // { samples, sampleRate } of what was transcribed, for playback (null: cannot play)
  selected: -1,       // character highlighted
  recording: null,    // { stream, context, chunks, started, timer, level } while recording
  busy: false,
  playback: null,     // AudioContext for slices
  stepper: null,      // drawStepper() of the transcript shown
  cell: null,         // { i, j }: the attention cell the keyboard is on (null: none)
  last: null,         // { input, playable, sample } of the last transcript, run again when the model or beam changes
  rerun: false,       // the model or beam changed while a transcript was being made: run it again after
  restoreSample: null, // a shared link's sample clip and character, transcribed once the clips are listed
  spoken: new Map(),  // sample clip file -> what it says (speech.json), shown beside its transcript
  restoreChar: null,
};

// The tab's part of the URL: model, beam, the sample clip (a recording or file cannot be in a link) and the
// character selected.
function share() {
  publish('speech', { model: currentEntry()?.id, beam: byId('sp-beam').value, sample: view.last?.sample ?? null,
                      char: view.result && view.selected >= 0 ? view.selected + 1 : null });
}

// The model or beam changed: the last input again (the old transcript goes at once), else just the model.
function rerunLast() {
  clearResult();
  if (view.busy) view.rerun = true;
  else if (view.last) transcribe(view.last.input, view.last.playable, view.last.sample);
  else ensureModel();
  share();
}

const setStatus = statusLine('sp');
const showError = (error) => {
  if (error) clearResult();
  showErrorIn(byId('sp-error'), error);
};

function clearResult() {
  view.stepper?.stop();
  view.result = null;
  byId('sp-result').hidden = true;
}

const currentEntry = () => pickedEntry(byId('sp-model'), view.entries);

// The selected recognizer, loading it once (a failed or aborted load is retried on the next call).
const ensureModel = () => view.loader.ensure(currentEntry());

// ---------------------------------------------------------------- panel

function buildPanel(panel) {
  panel.append(
    el('p', { className: 'lead', text: 'Listen, Attend and Spell: the encoder turns the audio into frames of 40 ms, and ' +
      'the decoder attends to them before writing each character, its attention nudged forward by where it ' +
      'looked last (location-aware attention). Speak, or drop a recording: under the spectrogram each row is a ' +
      'character, lit where it listened. The shipped model is an interim one, trained for minutes on ' +
      'about 12 hours of speech, most of it synthetic: it gets most characters of spoken commands and digits ' +
      'right and much of read speech wrong (models/speech-las.md has its numbers), but its alignment is already visible.' }),
    ...modelControls('sp', { modelLabel: 'Recognizer', beams: [1, 2, 4, 8], beam: 4 }),
    el('div', { className: 'cap-drop', attrs: { id: 'sp-drop', 'data-testid': 'sp-drop' } }, [
      el('button', { className: 'primary', text: '● Record', attrs: { id: 'sp-record', type: 'button', 'data-testid': 'sp-record' } }),
      el('button', { className: 'chip', text: '■ Stop', attrs: { id: 'sp-stop', type: 'button', 'data-testid': 'sp-stop', hidden: '' } }),
      el('meter', { attrs: { id: 'sp-level', 'data-testid': 'sp-level', min: '0', max: '1', value: '0', 'aria-label': 'Microphone level', hidden: '' } }),
      el('span', { className: 'muted small', attrs: { id: 'sp-record-time', 'aria-live': 'off' } }),
      el('span', { text: 'or drop an audio file here, or' }),
      el('button', { className: 'chip', text: 'Choose a file…', attrs: { id: 'sp-choose', type: 'button' } }),
      el('input', { attrs: { id: 'sp-file', 'data-testid': 'sp-file', type: 'file', accept: 'audio/*,.wav,.flac', hidden: '' } }),
    ]),
    el('h2', { text: 'Sample clips' }),
    el('div', { className: 'cap-gallery', attrs: { id: 'sp-samples', 'data-testid': 'sp-samples', 'aria-label': 'Sample clips' } }),
    el('p', { className: 'hint' }, [
      'Spoken by Debian\'s text-to-speech engines in voices the model never heard in training (',
      el('a', { text: 'voices and licences', attrs: { href: '/app/samples/speech/ATTRIBUTION.md' } }),
      '). Your recordings and files stay in this tab.',
    ]),
    el('p', { className: 'error', attrs: { id: 'sp-error', 'data-testid': 'sp-error', role: 'alert', hidden: '' } }),
    el('div', { className: 'result', attrs: { id: 'sp-result', hidden: '' } }, [
      el('h2', {}, ['Transcript ', el('span', { className: 'muted small', attrs: { id: 'sp-timing', 'data-testid': 'sp-timing' } })]),
      el('p', { className: 'output', attrs: { id: 'sp-output', 'data-testid': 'sp-output', 'aria-live': 'polite' } }),
      el('p', { className: 'muted small', attrs: { id: 'sp-reference', 'data-testid': 'sp-reference', hidden: '' } }),
      el('div', { className: 'notices', attrs: { id: 'sp-notices', 'data-testid': 'sp-notices', hidden: '' } }),
      el('div', { attrs: { id: 'sp-chars', 'data-testid': 'sp-chars', role: 'group', 'aria-label': 'Characters: hover or focus to see their frames, click to play them' },
                  }),
      el('section', { className: 'steps', attrs: { id: 'sp-steps', 'data-testid': 'sp-steps', 'aria-labelledby': 'sp-steps-title' } }, [
        el('h2', { text: 'Step by step', attrs: { id: 'sp-steps-title' } }),
        el('p', { className: 'hint', text: 'The decoder writes the transcript one character at a time; step or play ' +
          'through it and the attention row over the spectrogram follows the character being written (the spectrogram under the controls dims where it did not listen).' }),
        el('div', { className: 'stepper chars', attrs: { id: 'sp-stepper', 'data-testid': 'sp-stepper' } }),
        el('h3', { text: 'The search' }),
        el('p', { className: 'hint', attrs: { id: 'sp-tree-hint', 'data-testid': 'sp-tree-hint' } }),
        el('div', { className: 'beam-tree', attrs: { id: 'sp-beam-tree', 'data-testid': 'sp-beam-tree' } }),
      ]),
      el('p', { className: 'hint', text: 'Top: the 40-band log-mel spectrogram the engine computed (100 frames a second, ' +
        'low frequencies at the bottom). Below: attention, one row per character over the 40 ms encoder frames on ' +
        'the same time axis. Hover or focus a character to light its frames; click it to hear them.' }),
      el('div', { attrs: { id: 'sp-figure' } }, [
        el('canvas', { attrs: { id: 'sp-spectrogram', 'data-testid': 'sp-spectrogram', role: 'img', 'aria-label': 'Log-mel spectrogram' } }),
        el('canvas', { attrs: { id: 'sp-attention', 'data-testid': 'sp-attention', role: 'img', 'aria-label': 'Attention of every character over the audio frames' } }),
      ]),
      el('p', { className: 'muted small', attrs: { id: 'sp-readout', 'data-testid': 'sp-readout', 'aria-live': 'polite' } }),
      el('div', { className: 'figure-tools', attrs: { id: 'sp-tools', 'data-testid': 'sp-tools' } }),
    ]),
  );
  // Through the CSSOM: the page's CSP refuses style attributes (and style.css belongs to the other tabs' layout).
  Object.assign(byId('sp-chars').style, { display: 'flex', flexWrap: 'wrap', gap: '2px', margin: '0.4rem 0', fontFamily: 'monospace' });
  Object.assign(byId('sp-figure').style, { overflowX: 'auto', maxWidth: '100%' });
  byId('sp-spectrogram').style.display = 'block';
  Object.assign(byId('sp-attention').style, { display: 'block', cursor: 'pointer' });
}

// ---------------------------------------------------------------- drawing

// A dark-to-bright ramp (black, purple, orange, yellow) for the spectrogram.
function ramp(v) {
  const stops = [[0, 0, 4], [87, 16, 110], [188, 55, 84], [249, 142, 9], [252, 255, 164]];
  const x = Math.max(0, Math.min(1, v)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  return stops[i].map((c, k) => Math.round(c + (stops[i + 1][k] - c) * f));
}

function sizeCanvas(canvas, width, height) {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const context = canvas.getContext('2d');
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  return context;
}

function drawSpectrogram(t, highlight) {
  const { bands, frames, data } = t.spectrogram;
  const canvas = byId('sp-spectrogram');
  const width = LABEL_PX + frames * SPEC_PX;
  const height = bands * BAND_PX;
  const context = sizeCanvas(canvas, width, height);
  let lo = Infinity, hi = -Infinity;
  for (const v of data) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  const image = context.createImageData(frames, bands);
  for (let f = 0; f < frames; ++f) {
    for (let b = 0; b < bands; ++b) {
      const [r, g, bl] = ramp((data[f * bands + b] - lo) / (hi - lo || 1));
      const at = ((bands - 1 - b) * frames + f) * 4;  // low bands at the bottom
      image.data.set([r, g, bl, 255], at);
    }
  }
  const bitmap = document.createElement('canvas');
  bitmap.width = frames;
  bitmap.height = bands;
  bitmap.getContext('2d').putImageData(image, 0, 0);
  context.imageSmoothingEnabled = false;
  context.fillStyle = '#fff';
  context.fillRect(0, 0, LABEL_PX, height);
  context.drawImage(bitmap, LABEL_PX, 0, frames * SPEC_PX, height);
  if (highlight >= 0) {
    // The character's attention over the same time axis: dim what it did not attend to.
    const row = matrixRow(t.attention, highlight);
    const peak = Math.max(...row) || 1;
    for (let j = 0; j < row.length; ++j) {
      context.fillStyle = `rgba(255, 255, 255, ${0.75 * (1 - row[j] / peak)})`;
      context.fillRect(LABEL_PX + j * FRAMES_PER_ATTENTION_FRAME * SPEC_PX, 0, FRAMES_PER_ATTENTION_FRAME * SPEC_PX, height);
    }
  }
  context.fillStyle = '#555';
  context.font = '10px sans-serif';
  context.fillText('mel', 2, 12);
}

const charLabel = (c) => (c === ' ' ? '␣' : c === '</s>' ? '⟨end⟩' : c);

function drawAttention(t, highlight) {
  const T = t.attention.rows, S = t.attention.cols;
  const canvas = byId('sp-attention');
  const width = LABEL_PX + t.spectrogram.frames * SPEC_PX;
  const cell = FRAMES_PER_ATTENTION_FRAME * SPEC_PX;
  const context = sizeCanvas(canvas, Math.max(width, LABEL_PX + S * cell), T * ROW_PX + 16);
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  for (let i = 0; i < T; ++i) {
    const row = matrixRow(t.attention, i);
    const peak = Math.max(...row) || 1;
    for (let j = 0; j < S; ++j) {
      context.fillStyle = `rgba(194, 65, 12, ${row[j] / peak})`;
      context.fillRect(LABEL_PX + j * cell, i * ROW_PX, cell, ROW_PX - 1);
    }
    context.fillStyle = i === highlight ? '#c2410c' : '#222';
    context.font = `${i === highlight ? 'bold ' : ''}12px monospace`;
    context.fillText(charLabel(t.characters[i]), 8, i * ROW_PX + 11);
  }
  if (highlight >= 0) {
    context.strokeStyle = '#111';
    context.strokeRect(LABEL_PX + 0.5, highlight * ROW_PX + 0.5, S * cell - 1, ROW_PX - 1);
  }
  // The time axis, in seconds.
  context.fillStyle = '#555';
  context.font = '10px sans-serif';
  const seconds = t.spectrogram.frames / 100;
  for (let s = 0; s <= seconds; s += seconds > 20 ? 5 : 1) {
    const x = LABEL_PX + s * 100 * SPEC_PX;
    context.fillRect(x, T * ROW_PX, 1, 4);
    context.fillText(`${s} s`, x + 2, T * ROW_PX + 13);
  }
}

// The frames a character attended to: from the first to the last frame holding at least half its peak weight.
export function characterSpan(row) {
  let peakAt = 0;
  for (let j = 1; j < row.length; ++j) if (row[j] > row[peakAt]) peakAt = j;
  let first = peakAt, last = peakAt;
  while (first > 0 && row[first - 1] >= row[peakAt] / 2) --first;
  while (last < row.length - 1 && row[last + 1] >= row[peakAt] / 2) ++last;
  return { peakAt, first, last, peak: row[peakAt] };
}

function select(i) {
  const t = view.result;
  if (!t) return;
  view.selected = i;
  drawSpectrogram(t, i);
  drawAttention(t, i);
  byId('sp-attention').dataset.row = String(i);  // the row outlined (-1: none)
  for (const [k, node] of [...byId('sp-chars').children].entries()) node.setAttribute('aria-pressed', String(k === i));
  if (i < 0) {
    byId('sp-readout').textContent = '';
    share();
    return;
  }
  byId('sp-readout').textContent = `“${charLabel(t.characters[i])}” (character ${i + 1} of ${t.characters.length}): ` +
    `${whereItListened(t, i)}${view.audio ? ' Click to hear them.' : ''}`;
  share();
}

// Where character i listened, in seconds of the audio.
function whereItListened(t, i) {
  const { peakAt, first, last, peak } = characterSpan(matrixRow(t.attention, i));
  const at = (j) => (j * t.frameSeconds).toFixed(2);
  return `peak weight ${peak.toFixed(2)} on the frame at ${at(peakAt)} s; frames over half the peak ${at(first)}–${at(last + 1)} s.`;
}

function play(i) {
  const t = view.result;
  if (!t || !view.audio || i < 0) return;
  const { first, last } = characterSpan(matrixRow(t.attention, i));
  const { samples, sampleRate } = view.audio;
  // A little context either side, so a 40 ms slice is audible as more than a click.
  const from = Math.max(0, Math.floor((first * t.frameSeconds - 0.05) * sampleRate));
  const to = Math.min(samples.length, Math.ceil(((last + 1) * t.frameSeconds + 0.05) * sampleRate));
  if (to <= from) return;
  view.playback ??= new AudioContext();
  const buffer = view.playback.createBuffer(1, to - from, sampleRate);
  buffer.copyToChannel(samples.subarray(from, to), 0);
  const source = view.playback.createBufferSource();
  source.buffer = buffer;
  source.connect(view.playback.destination);
  source.start();
}

// Levenshtein distance between two strings' characters: the edits of a character error rate.
function characterEdits(a, b) {
  const x = [...a], y = [...b];
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; ++i) {
    const row = [i];
    for (let j = 1; j <= y.length; ++j) {
      row.push(Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (x[i - 1] === y[j - 1] ? 0 : 1)));
    }
    previous = row;
  }
  return previous[y.length];
}

// beam: the width this transcript was searched with (the picker may have changed while it ran).
function render(t, beam) {
  view.result = t;
  byId('sp-result').hidden = false;
  byId('sp-output').textContent = t.text || '(nothing: the model wrote no characters)';
  // A sample clip's words are known: the reader sees how far the model is from them.
  const spoken = view.last?.sample ? view.spoken.get(view.last.sample) : undefined;
  byId('sp-reference').hidden = spoken === undefined;
  if (spoken !== undefined) {
    const edits = characterEdits(t.text, spoken);
    byId('sp-reference').textContent = `The clip says “${spoken}”: the transcript is ${edits} character ` +
      `edit${edits === 1 ? '' : 's'} away (${Math.round((100 * edits) / [...spoken].length)}% of its characters).`;
  }
  const notes = noticesFor(t, { what: 'The transcript', unit: 'character' });  // finished: false is a length stop
  byId('sp-notices').replaceChildren(...notes.map((text) => el('p', { className: 'notice', text })));
  byId('sp-notices').hidden = notes.length === 0;
  const seconds = t.spectrogram.frames / 100;
  byId('sp-timing').textContent = `${seconds.toFixed(1)} s of audio transcribed in ${Math.round(t.timeMs)} ms ` +
    `(beam ${beam})`;
  const box = byId('sp-chars');
  box.replaceChildren(...t.characters.map((c, i) => {
    const node = el('button', { className: 'chip', text: charLabel(c),
                                attrs: { type: 'button', 'data-index': String(i), 'aria-pressed': 'false',
                                         'aria-label': `character ${i + 1}: ${c === ' ' ? 'space' : c}` } });
    Object.assign(node.style, { padding: '0 0.35rem', minWidth: '1.4rem' });
    node.addEventListener('pointerenter', () => select(i));
    node.addEventListener('focus', () => select(i));
    node.addEventListener('click', () => {
      select(i);
      play(i);
    });
    return node;
  }));
  const attention = byId('sp-attention');
  attention.onpointermove = attention.onpointerdown = (event) => {
    const rect = attention.getBoundingClientRect();
    const i = Math.floor((event.clientY - rect.top) / ROW_PX);
    const j = Math.floor((event.clientX - rect.left - LABEL_PX) / (FRAMES_PER_ATTENTION_FRAME * SPEC_PX));
    if (i >= 0 && i < t.characters.length && i !== view.selected) select(i);
    // The numbers behind the cell under the pointer (a tap is a pointer event too, so touch gets them).
    if (i >= 0 && i < t.characters.length && j >= 0 && j < t.attention.cols) {
      showTip(attention, cellLines(t, i, j), { point: { x: event.clientX, y: event.clientY }, pin: event.pointerType === 'touch' });
    } else {
      hideTip(attention);
    }
  };
  attention.onpointerleave = () => hideTip(attention);
  // The keyboard reaches every cell too: focus starts on the selected character's strongest frame, arrow keys move
  // by a character (up / down) or a frame (left / right), Home / End go to the row's ends.
  attention.tabIndex = 0;
  attention.setAttribute('aria-label', `Attention of every character over the audio frames: ${t.characters.length} rows, ` +
                         `${t.attention.cols} frames; arrow keys move between cells`);
  attention.onfocus = () => {
    const i = Math.max(0, view.selected);
    if (t.characters.length) showCell(t, i, characterSpan(matrixRow(t.attention, i)).peakAt);
  };
  attention.onblur = () => { view.cell = null; hideTip(attention); };
  attention.onkeydown = (event) => {
    if (!view.cell) return;
    const { i, j } = view.cell;
    const moves = { ArrowUp: [i - 1, j], ArrowDown: [i + 1, j], ArrowLeft: [i, j - 1], ArrowRight: [i, j + 1],
                    Home: [i, 0], End: [i, t.attention.cols - 1] };
    const to = moves[event.key];
    if (!to) return;
    event.preventDefault();
    showCell(t, Math.max(0, Math.min(t.characters.length - 1, to[0])), Math.max(0, Math.min(t.attention.cols - 1, to[1])));
  };
  attention.onclick = () => play(view.selected);
  const wanted = view.restoreChar;
  view.restoreChar = null;
  select(t.characters.length ? (wanted !== null && wanted < t.characters.length ? wanted : 0) : -1);
  drawTools(t, beam);
  drawSteps(t, beam);
}

// Keyboard inspection: cell (i, j) selected, scrolled into the figure's view and its numbers shown at it.
function showCell(t, i, j) {
  view.cell = { i, j };
  if (i !== view.selected) select(i);
  const attention = byId('sp-attention');
  const cell = FRAMES_PER_ATTENTION_FRAME * SPEC_PX;
  const x = LABEL_PX + (j + 0.5) * cell;
  const figure = byId('sp-figure');
  if (x < figure.scrollLeft + LABEL_PX || x > figure.scrollLeft + figure.clientWidth - cell) {
    figure.scrollLeft = Math.max(0, x - figure.clientWidth / 2);
  }
  drawAttention(t, i);
  const context = attention.getContext('2d');
  context.strokeStyle = '#1d4ed8';
  context.lineWidth = 2;
  context.strokeRect(LABEL_PX + j * cell, i * ROW_PX, cell, ROW_PX - 1);
  const rect = attention.getBoundingClientRect();
  showTip(attention, cellLines(t, i, j), { point: { x: rect.left + x, y: rect.top + (i + 1) * ROW_PX } });
}

// The tooltip of attention cell (character i, encoder frame j): the weight, the raw location-aware score, rank and
// the row's entropy, and the stretch of audio the frame covers (t.frameSeconds: 40 ms for the shipped recognizer).
function cellLines(t, i, j) {
  const row = matrixRow(t.attention, i);
  const score = t.scores ? t.scores.data[i * t.scores.cols + j] : null;
  const from = j * t.frameSeconds;
  return [`“${charLabel(t.characters[i])}” (character ${i + 1}) → frame ${j + 1}, ${from.toFixed(2)}–${(from + t.frameSeconds).toFixed(2)} s`,
          ...weightLines(row, j, { score, rowName: 'character’s row', scoreMeaning: 'location-aware, before the softmax' })];
}

// The figure's legends (both colour scales) and its export bar: PNG of the spectrogram over the attention as drawn,
// SVG of the attention grid, JSON of the engine's numbers.
function drawTools(t, beam) {
  const name = () => `attnlab-${currentEntry()?.id}-speech-attention`;
  const frameLabel = (j) => `${(j * t.frameSeconds).toFixed(2)} s`;
  byId('sp-tools').replaceChildren(
    legend({ stops: [0, 0.25, 0.5, 0.75, 1].map((v) => `rgb(${ramp(v).join(', ')})`).join(', '),
             low: 'quiet', high: 'loud', meaning: 'spectrogram: log-mel energy of each 10 ms frame and band' }),
    legend({ from: 'rgba(194, 65, 12, 0)', to: 'rgb(194, 65, 12)', low: '0', high: 'peak',
             meaning: `attention: each character's weight over the ${Math.round(t.frameSeconds * 1000)} ms frames, relative to its strongest frame (each row sums to 1)` }),
    exportBar({ name, label: 'speech attention', png: () => canvasToPng(stackedCanvas()),
                svg: () => heatmapSvg({ rowLabels: t.characters.map(charLabel), colLabels: Array.from({ length: t.attention.cols }, (_, j) => frameLabel(j)),
                                        weights: t.attention.data, rows: t.attention.rows, cols: t.attention.cols, colour: '194, 65, 12',
                                        title: `“${t.text}”: where each character listened`, cell: 10 }),
                json: () => ({ model: currentEntry()?.id, text: t.text, characters: t.characters, beam, ctcWeight: t.ctcWeight, lmWeight: t.lmWeight,
                               frameSeconds: t.frameSeconds, attention: matrixRows(t.attention),
                               ...(t.scores ? { scores: matrixRows(t.scores, 4) } : {}) }) }),
  );
}

// The spectrogram above the attention, one canvas, at the backing stores' resolution.
function stackedCanvas() {
  const top = byId('sp-spectrogram');
  const bottom = byId('sp-attention');
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(top.width, bottom.width);
  canvas.height = top.height + bottom.height;
  const context = canvas.getContext('2d');
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.drawImage(top, 0, 0);
  context.drawImage(bottom, 0, top.height);
  return canvas;
}

// What the tree's numbers are: the nodes' log p and Σ log p are the attention decoder's, but with a CTC weight
// λ > 0 or a language-model weight β > 0 the search ranked by the joint score (each node's `score`), so the winner
// need not have the best Σ log p.
function treeHint(ctcWeight, lmWeight = 0) {
  const common = 'Every hypothesis the search kept; the number is the attention decoder’s Σ log p so far.';
  const how = 'Hover, focus or tap a node for its numbers; arrow keys walk the tree.';
  if (!(ctcWeight > 0) && !(lmWeight > 0)) return `${common} With CTC weight 0 the search ranked by that sum alone (at beam > 1 a finished hypothesis’s divided by its length). ${how}`;
  const terms = [`(1 − λ) Σ log p_att${ctcWeight > 0 ? ' + λ log p_ctc(prefix)' : ''}`, lmWeight > 0 ? ' + β Σ log p_lm' : ''].join('');
  const weights = [ctcWeight > 0 ? `the CTC weight λ = ${ctcWeight.toFixed(2)}` : 'no CTC weight',
                   lmWeight > 0 ? ` and the language-model weight β = ${lmWeight.toFixed(2)}` : ''].join('');
  const meaning = [ctcWeight > 0 ? 'the CTC head’s probability of the prefix given the audio' : '',
                   lmWeight > 0 ? 'the character language model’s probability of the text so far, audio unseen' : '']
    .filter(Boolean).join('; ');
  return `${common} With ${weights} the search ranked by the joint score ${terms} instead (${meaning}; ` +
    'divided by the length once a hypothesis finishes), so the highlighted winner has the best joint score of the ' +
    `finished ones, not necessarily the best Σ log p. ${how}`;
}

// Step by step, and the search's tree of the same transcript.
function drawSteps(t, beam) {
  view.stepper?.stop();
  const tree = t.beamTree;
  const path = tree ? winningPath(tree) : [];
  byId('sp-tree-hint').textContent = treeHint(t.ctcWeight, t.lmWeight);
  const drawn = drawBeamTree(byId('sp-beam-tree'), tree, {
    beam, lang: 'en', name: `attnlab-${currentEntry()?.id}-speech-beam-tree`, label: 'transcript search tree',
    title: `${t.text} (beam ${beam}, CTC weight ${t.ctcWeight.toFixed(2)}${t.lmWeight > 0 ? `, LM weight ${t.lmWeight.toFixed(2)}` : ''})`,
    labelOf: charLabel, ranking: t.ctcWeight > 0 || t.lmWeight > 0 ? { name: 'joint score' } : null,
  });
  view.stepper = drawStepper(byId('sp-stepper'), {
    pieces: t.characters, lang: 'en', label: 'Transcript', unit: 'character', labelOf: charLabel,
    attaches: () => false,  // one character a step, each its own item so a long transcript wraps
    describe: (i) => {
      const node = tree?.nodes[path[i]];
      const numbers = node ? ` log p ${node.logProbability.toFixed(3)}, Σ log p ${node.cumulative.toFixed(3)}.` : '';
      return `${whereItListened(t, i)}${numbers}`;
    },
    onStep: (i) => {
      drawn.mark(i);
      if (i !== null) select(i);
    },
  });
}

// ---------------------------------------------------------------- transcribing

// input: what model.transcribe() takes; playable: { samples, sampleRate } for slices, or a Blob to decode for them.
// sample: the sample clip's file name (for the URL), null for the visitor's own audio.
async function transcribe(input, playable, sample = null) {
  view.last = { input, playable, sample };
  if (view.busy) {  // the newest input runs once this one is done; this one is then not shown
    view.rerun = true;
    return;
  }
  view.busy = true;
  showError(null);
  byId('sp-record').disabled = true;
  try {
    const model = await ensureModel();
    if (!model) return;
    setStatus('Transcribing…');
    const beam = Number(byId('sp-beam').value);
    const t = await model.transcribe(input, { beam, beamTree: true, sampleRate: playable?.sampleRate });
    if (view.rerun) return;  // the model, the beam or the input changed meanwhile: not this one
    view.audio = playable instanceof Blob ? await decodeForPlayback(playable) : playable ?? null;
    setStatus(`${currentEntry().label ?? currentEntry().id} ready`);
    render(t, beam);
  } catch (error) {
    setStatus('');
    showError(error);
  } finally {
    view.busy = false;
    byId('sp-record').disabled = false;
    if (view.rerun) {
      view.rerun = false;
      rerunLast();
    }
  }
}

// The browser's own decoding of a file, only to play slices of it (the transcript never depends on it).
async function decodeForPlayback(blob) {
  try {
    view.playback ??= new AudioContext();
    const buffer = await view.playback.decodeAudioData(await blob.arrayBuffer());
    return { samples: buffer.getChannelData(0), sampleRate: buffer.sampleRate };
  } catch {
    return null;
  }
}

function transcribeFile(file) {
  if (!file) return;
  transcribe(file, file);
}

async function renderSamples() {
  const box = byId('sp-samples');
  let samples;
  try {
    const response = await fetch(SAMPLES_URL);
    if (!response.ok) throw new Error(`${response.status}`);
    samples = await response.json();
  } catch (error) {
    box.textContent = `The sample clips could not be loaded (${error.message}).`;
    return;
  }
  view.spoken = new Map(samples.map((sample) => [sample.file, sample.transcript]));
  box.replaceChildren(...samples.map((sample) => {
    const chip = el('button', { className: 'chip', text: sample.label,
                                attrs: { type: 'button', 'data-sample': sample.file, title: `“${sample.transcript}”` } });
    chip.addEventListener('click', async () => {
      try {
        const response = await fetch(SAMPLES_BASE + sample.file);
        if (!response.ok) throw new Error(`the sample ${sample.file} could not be loaded (${response.status})`);
        const blob = await response.blob();
        transcribe(blob, blob, sample.file);
      } catch (error) {
        showError(error);
      }
    });
    return chip;
  }));
  const wanted = view.restoreSample && box.querySelector(`[data-sample="${CSS.escape(view.restoreSample)}"]`);
  view.restoreSample = null;
  wanted?.click();
}

// ---------------------------------------------------------------- microphone

export function microphoneMessage(error) {
  const name = error?.name ?? '';
  if (name === 'NotAllowedError' || name === 'SecurityError' || name === 'PermissionDeniedError') {
    return 'Microphone permission was denied. Allow this page to use the microphone (the icon in the address bar), then press Record again.';
  }
  if (name === 'NotFoundError' || name === 'DevicesNotFoundError' || name === 'OverconstrainedError') {
    return 'No microphone was found. Connect one (or upload a recording instead) and press Record again.';
  }
  if (name === 'NotReadableError' || name === 'TrackStartError') {
    return 'The microphone is in use by another program or could not be started.';
  }
  return `The microphone could not be opened: ${error?.message ?? error}`;
}

async function startRecording() {
  if (view.recording || view.busy) return;
  showError(null);
  if (!navigator.mediaDevices?.getUserMedia) {
    showError(new Error('This browser gives no microphone access to this page (it needs https or localhost).'));
    return;
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
    });
  } catch (error) {
    showError(new Error(microphoneMessage(error)));
    return;
  }
  const context = new AudioContext();
  const source = context.createMediaStreamSource(stream);
  // A ScriptProcessor reads the raw samples everywhere without a worklet module; a muted gain keeps it running
  // without playing the microphone back.
  const processor = context.createScriptProcessor(4096, 1, 1);
  const mute = context.createGain();
  mute.gain.value = 0;
  const recording = { stream, context, chunks: [], started: performance.now(), timer: null };
  processor.onaudioprocess = (event) => {
    const input = event.inputBuffer.getChannelData(0);
    recording.chunks.push(new Float32Array(input));
    let sum = 0;
    for (const v of input) sum += v * v;
    byId('sp-level').value = Math.min(1, Math.sqrt(sum / input.length) * 4);
  };
  source.connect(processor);
  processor.connect(mute);
  mute.connect(context.destination);
  view.recording = recording;
  byId('sp-record').hidden = true;
  byId('sp-stop').hidden = false;
  byId('sp-level').hidden = false;
  byId('sp-stop').focus();
  recording.timer = setInterval(() => {
    const seconds = (performance.now() - recording.started) / 1000;
    byId('sp-record-time').textContent = `recording ${seconds.toFixed(1)} s`;
    if (seconds >= MAX_RECORD_SECONDS) stopRecording(`Stopped at ${MAX_RECORD_SECONDS} s, the longest the engine transcribes at once.`);
  }, 100);
  ensureModel();  // download while the visitor speaks
}

function stopRecording(note = '') {
  const recording = view.recording;
  if (!recording) return;
  view.recording = null;
  clearInterval(recording.timer);
  for (const track of recording.stream.getTracks()) track.stop();
  const sampleRate = recording.context.sampleRate;
  recording.context.close();
  byId('sp-record').hidden = false;
  byId('sp-stop').hidden = true;
  byId('sp-level').hidden = true;
  byId('sp-level').value = 0;
  byId('sp-record-time').textContent = note;
  // The timer stops a recording only after the limit has passed, so its last chunk is cut to the limit.
  const recorded = recording.chunks.reduce((n, c) => n + c.length, 0);
  const samples = new Float32Array(Math.min(recorded, Math.floor(MAX_RECORD_SECONDS * sampleRate)));
  let at = 0;
  for (const chunk of recording.chunks) {
    if (at >= samples.length) break;
    const part = chunk.subarray(0, samples.length - at);
    samples.set(part, at);
    at += part.length;
  }
  transcribe(samples, { samples, sampleRate });
}

/** True while the microphone is open (for tests and for the page's own bookkeeping). */
export const isRecording = () => !!view.recording;

// ---------------------------------------------------------------- setup

export function setupSpeech({ entries, getModel, available }) {
  const panel = byId('tab-speech');
  if (!panel) return;
  buildPanel(panel);
  view.entries = entries;
  const select = byId('sp-model');
  view.loader = createModelLoader({
    getModel, available, setStatus, noneText: 'No speech model is listed in the manifest.',
    isCurrent: (entry) => currentEntry() === entry,
  });
  fillModelPicker(select, entries, available);
  if (entries.some(available)) enableTab(byId('tab-btn-speech'));
  const saved = restoreFor('speech');
  if (saved) {
    const entry = entries.find((e) => e.id === saved.get('model') && available(e));
    if (entry) select.value = entry.id;
    if ([...byId('sp-beam').options].some((o) => o.value === saved.get('beam'))) byId('sp-beam').value = saved.get('beam');
    view.restoreSample = saved.get('sample');
    view.restoreChar = saved.get('char') ? Number(saved.get('char')) - 1 : null;
  }
  select.addEventListener('change', rerunLast);
  byId('sp-beam').addEventListener('change', rerunLast);
  byId('sp-record').addEventListener('click', startRecording);
  byId('sp-stop').addEventListener('click', () => stopRecording());
  byId('sp-choose').addEventListener('click', () => byId('sp-file').click());
  byId('sp-file').addEventListener('change', (event) => transcribeFile(event.target.files[0]));
  const drop = byId('sp-drop');
  drop.addEventListener('dragover', (event) => {
    event.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    drop.classList.remove('over');
    transcribeFile(event.dataTransfer.files[0]);
  });
  renderSamples();
  // The model downloads the first time the tab is shown, not on page load.
  new MutationObserver(() => {
    if (!panel.hidden) ensureModel();
  }).observe(panel, { attributes: true, attributeFilter: ['hidden'] });
}
