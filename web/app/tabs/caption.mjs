// The Caption tab: a photo in (sample gallery, file, drag and drop, camera), the engine's caption out, and for the
// word under the pointer (or focus) its attention over the encoder's feature grid, drawn as a heat overlay that is
// smoothly (bilinearly) upsampled from gridHeight × gridWidth to the photo. Every weight comes from the engine
// (Caption.attention); this module only draws. The photo goes to the engine at full size, so the page captions it
// exactly as the CLI captions the file (the engine's own resize, antialiased, makes the 224 × 224 input); only
// what is drawn is shrunk. main.mjs calls setupCaption() once it has read the manifest.
import { matrixRow } from '/lib/index.mjs';
import {
  byId, el, showError as showErrorIn, tokenLabel, continuesWord, statusLine, createModelLoader,
} from '/app/ui.mjs';
import { fillModelPicker, pickedEntry } from '/app/widgets/model_picker.mjs';
import { mountModelControls } from '/app/widgets/model_controls.mjs';
import { enableTab, watchPanel } from '/app/widgets/tablist.mjs';
import { canvasToPng, entropyBits, escapeXml, exportBar, hideTip, legend, makeCellsInspectable, matrixRows,
         weightLines } from '/app/widgets/figure.mjs';
import { noticesFor } from '/app/widgets/text.mjs';
import { drawBeamTree, drawStepper, winningPath } from '/app/widgets/decoding.mjs';
import { publish, restoreFor } from '/app/share.mjs';

const SAMPLES_URL = '/app/samples/samples.json';
const MAX_DISPLAY_SIDE = 1024;  // the photo and its overlay are drawn at most this large (CSS scales them further)
const THUMB_HEIGHT = 84;        // per-word strip, CSS pixels

const view = {
  entries: [],
  loader: null,        // createModelLoader() of this tab
  input: null,         // canvas holding the pixels that were captioned
  caption: null,       // the engine's last Caption
  selected: 0,         // token whose attention is drawn
  sample: null,        // the gallery sample captioned (for the URL), null for the visitor's own photo
  restoreSample: null, // a shared link's sample and word, captioned once the gallery is there
  restoreWord: null,
  stream: null,        // the camera's MediaStream while it is open
  cameraRequest: 0,    // counts camera requests: one still pending when this moved on was cancelled
  busy: false,
  pending: null,       // an input that arrived while captioning: run it next
  stepper: null,       // drawStepper() of the caption shown
};

const setStatus = statusLine('cap');
// An error replaces the result it is about: a new photo's error never sits under the last photo's caption.
const showError = (error) => {
  if (error) clearResult();
  showErrorIn(byId('cap-error'), error);
};

function clearResult() {
  view.stepper?.stop();
  view.caption = null;
  byId('cap-result').hidden = true;
  hideTip();
}

function share() {
  publish('caption', {
    model: currentEntry()?.id, beam: byId('cap-beam').value, sample: view.sample,
    word: view.caption ? view.selected + 1 : null,
  });
}

// The word shown first: the one whose attention is most concentrated (lowest entropy over the grid), since the
// first word ("a") looks everywhere and shows least; ties go to the earlier word.
export function sharpestToken(caption) {
  let best = 0;
  let bestBits = Infinity;
  for (let i = 0; i < caption.tokens.length; ++i) {
    const { bits } = entropyBits(matrixRow(caption.attention, i));
    if (bits < bestBits - 1e-9) {
      best = i;
      bestBits = bits;
    }
  }
  return best;
}

const currentEntry = () => pickedEntry(byId('cap-model'), view.entries);

// ---------------------------------------------------------------- model

// The selected captioner, loading it once (a failed or aborted load is retried on the next call).
const ensureModel = () => view.loader.ensure(currentEntry());

// ---------------------------------------------------------------- inputs

// A canvas of width × height holding source drawn into it (smoothed when that changes its size).
function drawnCanvas(source, width, height, { readBack = false } = {}) {
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext('2d', readBack ? { willReadFrequently: true } : undefined);
  if (!context) throw new Error(`That image is too large to draw in this browser (${width} × ${height} pixels).`);
  context.imageSmoothingQuality = 'high';
  context.drawImage(source, 0, 0, width, height);
  return canvas;
}

const fitted = (width, height, maxSide) => {
  const scale = Math.min(1, maxSide / Math.max(width, height));
  return [Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale))];
};

// Any drawable (image element, ImageBitmap, video frame) -> a canvas with its pixels, at full size.
function toInputCanvas(source, width, height) {
  if (!(width > 0 && height > 0)) throw new Error('That image is empty (0 × 0 pixels).');
  return drawnCanvas(source, width, height, { readBack: true });
}

// The pixels the engine gets: the photo as it is. Only a photo beyond the engine's own limit (which the CLI
// refuses) is shrunk to fit it, rather than refused.
function enginePixels(canvas, { maxImageSide }) {
  const [width, height] = fitted(canvas.width, canvas.height, maxImageSide);
  const source = width === canvas.width && height === canvas.height ? canvas
    : drawnCanvas(canvas, width, height, { readBack: true });
  return source.getContext('2d', { willReadFrequently: true }).getImageData(0, 0, width, height);
}

async function captionSource(source, width, height, label) {
  showError(null);
  let canvas;
  try {
    canvas = toInputCanvas(source, width, height);
  } catch (error) {
    showError(error);
    return;
  }
  canvas.dataset.label = label;
  if (view.busy) {
    view.pending = canvas;  // the latest input wins; it runs when the current one is done
    return;
  }
  await run(canvas);
}

async function fromFile(file) {
  if (!file) return;
  if (!file.type.startsWith('image/')) {
    showError(new Error(`${file.name || 'That file'} is not an image (${file.type || 'unknown type'}).`));
    return;
  }
  markSample(null);
  view.sample = null;
  let bitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    showError(new Error(`${file.name || 'That file'} could not be decoded as an image.`));
    return;
  }
  try {
    await captionSource(bitmap, bitmap.width, bitmap.height, file.name || 'your photo');
  } finally {
    bitmap.close();
  }
}

function markSample(button) {
  for (const other of byId('cap-gallery').children) other.setAttribute('aria-pressed', String(other === button));
}

async function fromSample(sample, button) {
  markSample(button);
  view.sample = sample.name;
  const image = new Image();
  image.src = `/app/samples/${sample.file}`;
  try {
    await image.decode();
  } catch {
    showError(new Error(`The sample ${sample.file} could not be loaded.`));
    return;
  }
  await captionSource(image, image.naturalWidth, image.naturalHeight, sample.alt);
}

async function renderGallery() {
  const box = byId('cap-gallery');
  let samples = [];
  try {
    const response = await fetch(SAMPLES_URL);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    ({ samples } = await response.json());
  } catch (error) {
    box.append(el('p', { className: 'muted small', text: `The sample photos could not be loaded (${error.message}).` }));
    return;
  }
  for (const sample of samples) {
    const button = el('button', { className: 'cap-sample', attrs: {
      type: 'button', 'aria-pressed': 'false', 'data-sample': sample.name, title: sample.alt,
    } }, [el('img', { attrs: { src: `/app/samples/${sample.file}`, alt: sample.alt, width: sample.width,
                               height: sample.height, loading: 'lazy', decoding: 'async' } })]);
    button.addEventListener('click', () => fromSample(sample, button));
    box.append(button);
    if (view.restoreSample === sample.name) {
      view.restoreSample = null;
      fromSample(sample, button);
    }
  }
}

function setupDrop() {
  const drop = byId('cap-drop');
  const panel = byId('tab-caption');
  const file = byId('cap-file');
  byId('cap-choose').addEventListener('click', () => file.click());
  byId('cap-own').addEventListener('click', () => file.click());  // the gallery's "no dog here" note
  file.addEventListener('change', () => {
    fromFile(file.files?.[0]);
    file.value = '';  // choosing the same file again fires change again
  });
  // The whole panel takes drops, so a near miss still works; the box lights up while a file is over it.
  panel.addEventListener('dragover', (event) => {
    if (![...(event.dataTransfer?.types ?? [])].includes('Files')) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    drop.classList.add('over');
  });
  panel.addEventListener('dragleave', (event) => {
    if (!panel.contains(event.relatedTarget)) drop.classList.remove('over');
  });
  panel.addEventListener('drop', (event) => {
    drop.classList.remove('over');
    const dropped = event.dataTransfer?.files?.[0];
    if (!dropped) return;
    event.preventDefault();
    fromFile(dropped);
  });
}

// ---------------------------------------------------------------- camera (opened only on click, always stopped)

function stopCamera() {
  view.cameraRequest += 1;  // a request still pending is cancelled: its stream is stopped when it arrives
  view.stream?.getTracks().forEach((track) => track.stop());
  view.stream = null;
  const video = byId('cap-video');
  video.srcObject = null;
  byId('cap-camera-box').hidden = true;
  byId('cap-camera').disabled = false;
}

async function openCamera() {
  showError(null);
  if (!navigator.mediaDevices?.getUserMedia) {
    showError(new Error('This browser gives no camera access here (it needs a secure page: https or localhost).'));
    return;
  }
  byId('cap-camera').disabled = true;
  const request = ++view.cameraRequest;
  const cancelled = () => request !== view.cameraRequest || byId('tab-caption').hidden;
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
  } catch (error) {
    if (cancelled()) return;
    byId('cap-camera').disabled = false;
    showError(new Error(`The camera could not be opened: ${error.message || error.name}.`));
    return;
  }
  // The user left the tab (or stopped the camera) while the browser was asking: never keep a hidden camera on.
  if (cancelled()) {
    stream.getTracks().forEach((track) => track.stop());
    if (request === view.cameraRequest) stopCamera();
    return;
  }
  view.stream = stream;
  const video = byId('cap-video');
  video.srcObject = view.stream;
  byId('cap-camera-box').hidden = false;
  await video.play().catch(() => {});
}

async function snapCamera() {
  const video = byId('cap-video');
  const { videoWidth: width, videoHeight: height } = video;
  if (!view.stream || !width) return;
  let canvas;
  try {
    canvas = toInputCanvas(video, width, height);  // grab the frame before the stream stops
  } catch (error) {
    showError(error);  // the camera stays open: the user can try again or stop it
    return;
  }
  stopCamera();
  markSample(null);
  view.sample = null;
  await captionSource(canvas, canvas.width, canvas.height, 'a camera photo');
}

// ---------------------------------------------------------------- captioning

async function run(canvas) {
  view.busy = true;
  const stage = byId('cap-stage');
  stage.setAttribute('aria-busy', 'true');
  try {
    const model = await ensureModel();
    if (!model) return;
    const pixels = enginePixels(canvas, model.limits);
    const started = performance.now();
    const caption = await model.caption(pixels, { beam: Number(byId('cap-beam').value), beamTree: true,
                                                   recognize: model.info.recognizesImages });
    const ms = Math.round(performance.now() - started);
    view.input = canvas;
    view.caption = caption;
    const wanted = view.restoreWord;
    view.restoreWord = null;
    view.selected = wanted !== null && wanted >= 0 && wanted < caption.tokens.length ? wanted : sharpestToken(caption);
    render(caption, ms, canvas.dataset.label);
  } catch (error) {
    showError(error);
  } finally {
    share();
    view.busy = false;
    stage.removeAttribute('aria-busy');
    const next = view.pending;
    view.pending = null;
    if (next) await run(next);
  }
}

function render(caption, ms, label) {
  byId('cap-result').hidden = false;
  byId('cap-timing').textContent = `· captioned in ${ms} ms`;
  byId('cap-grid-size').textContent = `${caption.gridHeight} × ${caption.gridWidth}`;
  const photo = byId('cap-photo');
  [photo.width, photo.height] = fitted(view.input.width, view.input.height, MAX_DISPLAY_SIDE);
  const context = photo.getContext('2d');
  context.imageSmoothingQuality = 'high';
  context.drawImage(view.input, 0, 0, photo.width, photo.height);
  photo.setAttribute('aria-label', `The captioned photo: ${label}`);
  const overlay = byId('cap-overlay');
  overlay.width = photo.width;
  overlay.height = photo.height;

  const output = byId('cap-output');
  output.replaceChildren();
  output.dataset.text = caption.text;
  if (caption.tokens.length === 0) output.textContent = '(the model wrote no words)';
  caption.tokens.forEach((piece, i) => {
    const word = el('button', { className: `cap-word${continuesWord(piece) && i > 0 ? ' cont' : ''}`, text: tokenLabel(piece),
                                attrs: { type: 'button', 'data-token': i, 'aria-pressed': String(i === view.selected) } });
    word.addEventListener('pointerenter', () => select(i));
    word.addEventListener('focus', () => select(i));
    word.addEventListener('click', () => select(i));
    output.append(word);
  });
  renderStrip(caption);
  renderRecognized(caption);
  const notes = noticesFor(caption, { what: 'The caption' });
  byId('cap-notices').replaceChildren(...notes.map((text) => el('p', { className: 'notice', text })));
  byId('cap-notices').hidden = notes.length === 0;
  drawCells(caption);
  drawTools(caption, label);
  select(view.selected, { first: true });
  drawSteps(caption);
}

// Step by step: the caption written word by word while the overlay shows where each word looked, and the search's
// tree of hypotheses.
function drawSteps(caption) {
  view.stepper?.stop();
  const beam = Number(byId('cap-beam').value);
  const tree = caption.beamTree;
  const path = tree ? winningPath(tree) : [];
  const drawn = drawBeamTree(byId('cap-beam-tree'), tree, {
    beam, lang: 'en', name: `attnlab-${currentEntry()?.id}-caption-beam-tree`, label: 'caption search tree',
    title: `${caption.text} (beam ${beam})`,
  });
  view.stepper = drawStepper(byId('cap-stepper'), {
    pieces: caption.tokens, lang: 'en', label: 'Caption',
    describe: (i) => {
      const node = tree?.nodes[path[i]];
      return node ? `log p ${node.logProbability.toFixed(3)}, Σ log p ${node.cumulative.toFixed(3)}.` : '';
    },
    onStep: (i) => {
      drawn.mark(i);
      if (i !== null) select(i);
    },
  });
}

// Focusable, hoverable, tappable cells over the photo, one per feature-grid cell: the numbers of the selected
// word's attention on that cell.
function drawCells(caption) {
  const old = byId('cap-cells');
  const cells = el('div', { className: 'cap-cells', attrs: { id: 'cap-cells', 'data-testid': 'cap-cells', role: 'grid',
                                                             'aria-label': `The ${caption.gridHeight} × ${caption.gridWidth} feature grid over the photo: arrow keys move between cells` } });
  cells.style.setProperty('--gw', String(caption.gridWidth));
  cells.style.setProperty('--gh', String(caption.gridHeight));
  for (let y = 0; y < caption.gridHeight; ++y) {
    const row = el('div', { className: 'heatmap-row', attrs: { role: 'row' } });
    for (let x = 0; x < caption.gridWidth; ++x) {
      row.append(el('div', { className: 'cell', attrs: { role: 'gridcell', tabindex: '-1', 'data-row': y, 'data-col': x,
                                                          'aria-label': `cell row ${y + 1}, column ${x + 1}` } }));
    }
    cells.append(row);
  }
  if (old) old.replaceWith(cells);
  else byId('cap-stage').append(cells);
  makeCellsInspectable(cells, {
    rows: caption.gridHeight, cols: caption.gridWidth,
    info: (y, x) => {
      const weights = matrixRow(caption.attention, view.selected);
      const k = y * caption.gridWidth + x;
      const score = caption.scores?.rows === caption.attention.rows ? matrixRow(caption.scores, view.selected)[k] : null;
      return [`“${tokenLabel(caption.tokens[view.selected])}”, cell row ${y + 1}, column ${x + 1}`,
              ...weightLines(weights, k, { score, rowName: 'word\'s grid' })];
    },
  });
}

function drawTools(caption, label) {
  const stem = () => `attnlab-${currentEntry()?.id}-caption-${tokenLabel(caption.tokens[view.selected] ?? '') || 'word'}`;
  byId('cap-tools').replaceChildren(
    legend({ stops: 'rgba(0,0,0,0.45), rgba(255,90,20,0.6), rgb(255,240,140)', low: 'least', high: 'most',
             meaning: "the word's attention, relative to its strongest cell (dark = the photo veiled)" }),
    exportBar({ name: stem, label: 'caption attention', png: () => canvasToPng(compositeCanvas()),
                svg: () => captionSvg(caption, label), json: () => ({
                  model: currentEntry()?.id, photo: label, text: caption.text, tokens: caption.tokens,
                  gridHeight: caption.gridHeight, gridWidth: caption.gridWidth, selected: view.selected,
                  attention: matrixRows(caption.attention),
                  ...(caption.scores ? { scores: matrixRows(caption.scores) } : {}) }) }),
  );
}

// The photo with the selected word's overlay, as one canvas.
function compositeCanvas() {
  const photo = byId('cap-photo');
  const canvas = document.createElement('canvas');
  canvas.width = photo.width;
  canvas.height = photo.height;
  const context = canvas.getContext('2d');
  context.drawImage(photo, 0, 0);
  context.drawImage(byId('cap-overlay'), 0, 0);
  return canvas;
}

function captionSvg(caption, label) {
  const photo = byId('cap-photo');
  const { width, height } = photo;
  const weights = matrixRow(caption.attention, view.selected);
  const max = Math.max(1e-12, ...weights);
  const cw = width / caption.gridWidth;
  const ch = height / caption.gridHeight;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="${width}" height="${height + 40}" viewBox="0 0 ${width} ${height + 40}" font-family="system-ui, sans-serif" font-size="13">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<image width="${width}" height="${height}" href="${photo.toDataURL('image/jpeg', 0.85)}"/>`];
  for (let y = 0; y < caption.gridHeight; ++y) {
    for (let x = 0; x < caption.gridWidth; ++x) {
      const w = weights[y * caption.gridWidth + x];
      parts.push(`<rect x="${(x * cw).toFixed(2)}" y="${(y * ch).toFixed(2)}" width="${cw.toFixed(2)}" height="${ch.toFixed(2)}" ` +
                 `fill="rgb(255, ${Math.round(90 + 150 * w / max)}, 40)" fill-opacity="${(0.75 * w / max).toFixed(3)}"><title>${w.toFixed(4)}</title></rect>`);
    }
  }
  parts.push(`<text x="6" y="${height + 26}">${escapeXml(`“${tokenLabel(caption.tokens[view.selected])}” in “${caption.text}” (${label})`)}</text>`, '</svg>');
  return parts.join('');
}

function select(i, { first = false } = {}) {
  const caption = view.caption;
  if (!caption || i < 0 || i >= caption.tokens.length) {
    drawOverlay(byId('cap-overlay'), null, -1);
    return;
  }
  const changed = view.selected !== i;
  view.selected = i;
  if (changed || first) share();
  byId('cap-output').querySelectorAll('.cap-word').forEach((word, k) => word.setAttribute('aria-pressed', String(k === i)));
  byId('cap-strip').querySelectorAll('.cap-thumb').forEach((thumb, k) => thumb.classList.toggle('active', k === i));
  const weights = matrixRow(caption.attention, i);
  drawOverlay(byId('cap-overlay'), caption, i);
  let best = 0;
  for (let k = 1; k < weights.length; ++k) if (weights[k] > weights[best]) best = k;
  const y = Math.floor(best / caption.gridWidth);
  const x = best % caption.gridWidth;
  byId('cap-readout').textContent = `“${tokenLabel(caption.tokens[i])}”: strongest attention ${(weights[best] * 100).toFixed(1)}% ` +
    `on cell (row ${y + 1}, column ${x + 1}); a uniform spread would give ${(100 / weights.length).toFixed(1)}% per cell.` +
    (first && i === sharpestToken(caption) ? ' Shown first: the word whose attention is most concentrated.' : '');
}

// The grid as a tiny RGBA image (one pixel per cell, alpha ∝ weight / max weight), for the browser to upsample.
function heatGrid(caption, weights) {
  const { gridWidth: w, gridHeight: h } = caption;
  const grid = document.createElement('canvas');
  grid.width = w;
  grid.height = h;
  const image = grid.getContext('2d').createImageData(w, h);
  const max = Math.max(1e-12, ...weights);
  for (let k = 0; k < w * h; ++k) {
    const t = weights[k] / max;  // 0..1
    // Transparent -> orange -> yellow-white as attention grows.
    image.data[k * 4] = 255;
    image.data[k * 4 + 1] = Math.round(90 + 150 * t);
    image.data[k * 4 + 2] = Math.round(20 + 120 * t * t);
    image.data[k * 4 + 3] = Math.round(215 * t);
  }
  grid.getContext('2d').putImageData(image, 0, 0);
  return grid;
}

// Darkens the photo, then adds the heat; both upsampled from the grid with high-quality smoothing (bilinear or
// better): each cell's value sits at its centre and blends into its neighbours.
function drawOverlay(canvas, caption, token) {
  const context = canvas.getContext('2d');
  context.clearRect(0, 0, canvas.width, canvas.height);
  delete canvas.dataset.token;
  if (!caption || token < 0) return;
  const weights = matrixRow(caption.attention, token);
  const grid = heatGrid(caption, weights);
  const veil = document.createElement('canvas');
  veil.width = caption.gridWidth;
  veil.height = caption.gridHeight;
  const veilImage = veil.getContext('2d').createImageData(veil.width, veil.height);
  const max = Math.max(1e-12, ...weights);
  for (let k = 0; k < weights.length; ++k) veilImage.data[k * 4 + 3] = Math.round(150 * (1 - weights[k] / max));
  veil.getContext('2d').putImageData(veilImage, 0, 0);
  context.imageSmoothingEnabled = true;
  context.imageSmoothingQuality = 'high';
  context.drawImage(veil, 0, 0, canvas.width, canvas.height);
  context.globalAlpha = 0.8;
  context.drawImage(grid, 0, 0, canvas.width, canvas.height);
  context.globalAlpha = 1;
  canvas.dataset.token = String(token);
}

// One small picture per word: the photo with that word's overlay.
// What MobileNetV2's own ImageNet classifier sees in the same pass, beside a caption from a decoder that learned only
// Flickr8k's words: the gap between the two is the captioner's scope, shown rather than hidden.
function renderRecognized(caption) {
  const box = byId('cap-recognized');
  if (!caption.recognized) {
    box.replaceChildren(el('p', { className: 'muted small', text: 'This model file has no ImageNet classifier (the ' +
      'two-decoder f16 file would pass the 25 MB limit with it): pick a q8_0 or 14 × 14 model to see what the ' +
      'image encoder recognises.' }));
    return;
  }
  const list = el('ol', { className: 'cap-classes', attrs: { 'data-testid': 'cap-classes' } });
  for (const r of caption.recognized) {
    const item = el('li', { attrs: { 'data-index': String(r.index) } });
    const bar = el('span', { className: 'cap-class-bar', attrs: { 'aria-hidden': 'true' } });
    bar.style.width = `${Math.max(1, Math.round(r.probability * 100))}%`;
    item.append(el('span', { className: 'cap-class-label', text: r.label }),
                el('span', { className: 'cap-class-p', text: `${(r.probability * 100).toFixed(1)}%` }), bar);
    list.append(item);
  }
  box.replaceChildren(
    el('p', { className: 'small', text: 'What the image encoder recognises (MobileNetV2\'s own ImageNet classes, ' +
      'computed in the same pass as the grid the captioner attends to):' }),
    list,
    el('p', { className: 'muted small', text: 'The captioner learned its words from Flickr8k alone (people and dogs ' +
      'outdoors), so it may have no word for what the encoder sees.' }));
}

function renderStrip(caption) {
  const strip = byId('cap-strip');
  strip.replaceChildren();
  const scale = THUMB_HEIGHT / view.input.height;
  const width = Math.max(1, Math.round(view.input.width * scale));
  const ratio = Math.min(2, window.devicePixelRatio || 1);
  caption.tokens.forEach((piece, i) => {
    const canvas = el('canvas', { attrs: { 'aria-hidden': 'true' } });
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(THUMB_HEIGHT * ratio);
    const context = canvas.getContext('2d');
    context.imageSmoothingQuality = 'high';
    context.drawImage(view.input, 0, 0, canvas.width, canvas.height);
    const overlay = document.createElement('canvas');
    overlay.width = canvas.width;
    overlay.height = canvas.height;
    drawOverlay(overlay, caption, i);
    context.drawImage(overlay, 0, 0);
    const thumb = el('button', { className: 'cap-thumb', attrs: { type: 'button', 'aria-label': `attention of “${tokenLabel(piece)}”` } },
                     [canvas, el('span', { text: tokenLabel(piece) })]);
    thumb.addEventListener('pointerenter', () => select(i));
    thumb.addEventListener('focus', () => select(i));
    thumb.addEventListener('click', () => select(i));
    strip.append(thumb);
  });
}

// ---------------------------------------------------------------- set-up

export function setupCaption({ entries, getModel, available }) {
  mountModelControls('cap', { modelLabel: 'Captioner', beams: [1, 2, 3, 4, 5], beam: 3 });
  view.entries = entries;
  view.loader = createModelLoader({
    getModel, available, setStatus, noneText: 'No captioner yet.', isCurrent: (entry) => currentEntry() === entry,
  });
  if (entries.length === 0) return;
  enableTab(byId('tab-btn-caption'));

  const select = byId('cap-model');
  if (!fillModelPicker(select, entries, available)) select.value = entries[0].id;
  const saved = restoreFor('caption');
  if (saved) {
    const entry = entries.find((e) => e.id === saved.get('model') && available(e));
    if (entry) select.value = entry.id;
    if ([...byId('cap-beam').options].some((o) => o.value === saved.get('beam'))) byId('cap-beam').value = saved.get('beam');
    view.restoreSample = saved.get('sample');
    view.restoreWord = saved.get('word') ? Number(saved.get('word')) - 1 : null;
  }
  // A different captioner or beam: the caption goes, and the same photo is captioned again.
  const rerun = () => {
    const input = view.caption ? view.input : null;
    if (input) clearResult();
    share();
    if (input) captionSource(input, input.width, input.height, input.dataset.label);
  };
  select.addEventListener('change', () => {
    view.loader.cancel();  // a different captioner: stop waiting for the previous one
    const pending = ensureModel();
    if (view.caption) rerun();
    else pending.then(() => share());
  });
  byId('cap-beam').addEventListener('change', rerun);
  setStatus('The model loads when you open this tab.');

  setupDrop();
  byId('cap-camera').addEventListener('click', openCamera);
  byId('cap-snap').addEventListener('click', snapCamera);
  byId('cap-camera-stop').addEventListener('click', stopCamera);
  renderGallery();

  // Download the weights the first time the tab is shown; stop the camera whenever it is hidden.
  let loaded = false;
  watchPanel(byId('tab-caption'), {
    onHide: stopCamera,
    onShow: () => {
      if (loaded) return;
      loaded = true;
      ensureModel();
    },
  });
  window.addEventListener('pagehide', stopCamera);
}
