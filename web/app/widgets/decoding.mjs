// Step-by-step decoding: the output written one token at a time (play, step, back) while the figure of where that
// token looked follows it, and the search's tree: every hypothesis the beam kept at every step, with its
// log-probabilities, and the one that won. The numbers are the engine's (a result's beamTree, asked for with
// { beamTree: true }, and its attention); this module only draws them.
import { attachesToPrevious, el, tokenLabel } from '/app/ui.mjs';
import { escapeXml, exportBar, hideTip, showTip } from '/app/widgets/figure.mjs';

const PLAY_MS = 700;      // one token per this many milliseconds while playing
const NODE_W = 92;        // a tree node's box, SVG pixels
const NODE_H = 24;
const COLUMN = 118;       // distance between steps
const ROW = 32;           // distance between the hypotheses of one step
const PAD = 10;

const WINNER = '#c2410c';  // --accent
const KEPT = '#868e96';
const TEXT = '#1d2430';

/** The winner's nodes, first step first (their pieces are the output, then "</s>" when it ended so). */
export function winningPath(tree) {
  const path = [];
  for (let n = tree?.winner ?? -1; n >= 0; n = tree.nodes[n].parent) path.unshift(n);
  return path;
}

const pieceText = (piece) => tokenLabel(piece) || piece;  // </s> reads "⟨end⟩", as in the heatmaps
const signed = (x) => (x < 0 ? `−${(-x).toFixed(3)}` : x.toFixed(3));

/**
 * The tooltip lines of tree node n. labelOf(piece): how a piece reads; ranking: { name } when the search ranked by
 * a score of its own (node.score) rather than by Σ log p, e.g. the speech search's joint CTC/attention score,
 * which it divides by the length once a hypothesis has finished, at any beam.
 */
export function nodeLines(tree, n, { beam, labelOf = pieceText, ranking = null }) {
  const node = tree.nodes[n];
  const onPath = winningPath(tree).includes(n);
  const lines = [`step ${node.step + 1}: “${labelOf(node.piece)}”${n === tree.winner ? ' (the answer)' : onPath ? ' (on the answer’s path)' : ''}`,
                 `log p ${signed(node.logProbability)} (p = ${(100 * Math.exp(node.logProbability)).toFixed(1)}%) given its prefix`,
                 `Σ log p ${signed(node.cumulative)} from the first token`];
  if (ranking) lines.push(`${ranking.name}${node.finished ? ` ÷ length ${node.step + 1}` : ''} ${signed(node.score)}: what the search ranked it by`);
  if (node.finished) {
    lines.push(node.piece === '</s>' ? 'finished: the hypothesis ended here' : 'finished: stopped at the maximum length');
    if (beam > 1 && !ranking) lines.push(`ranking score ${signed(node.score)} = Σ log p ÷ length ${node.step + 1}`);
  } else {
    lines.push('kept alive for the next step');
  }
  return lines;
}

// ---------------------------------------------------------------- the stepper

/**
 * Play / step / back controls over a result's output tokens, drawn into box. onStep(i): token i is being written
 * (null: the whole output, nothing singled out); describe(i): a line about step i (its numbers); labelOf(piece):
 * how a piece reads (a token's word by default); unit: what one step writes, for the sentences under the controls;
 * attaches(piece, previous): whether piece is written onto the previous one's word (SentencePiece's rule by default).
 * Returns { go(i), stop() } to move it from outside.
 */
export function drawStepper(box, { pieces, lang, label, onStep, describe = () => '', labelOf = tokenLabel, unit = 'token',
                                    attaches = attachesToPrevious }) {
  let current = null;
  let timer = null;
  const count = pieces.length;
  const button = (text, name, testid) => el('button', { className: 'chip', text, attrs: { type: 'button', 'aria-label': name,
                                                                                         'data-testid': testid } });
  const back = button('◀ Back', 'Back one token', 'step-back');
  const step = button('Step ▶', 'Write the next token', 'step-next');
  const play = button('▶ Play', 'Play the decoding', 'step-play');
  const all = button('Whole output', 'Show the whole output', 'step-all');
  const written = el('p', { className: 'output step-output', attrs: { 'data-testid': 'step-output', lang, 'aria-live': 'polite' } });
  const where = el('p', { className: 'muted small step-where', attrs: { 'data-testid': 'step-where' } });
  const controls = el('div', { className: 'actions step-controls', attrs: { role: 'group', 'aria-label': `${label}: step-by-step controls (arrow keys step)` } },
                      [back, step, play, all]);

  const stop = () => {
    clearInterval(timer);
    timer = null;
    play.textContent = '▶ Play';
    play.setAttribute('aria-label', 'Play the decoding');
  };
  function go(i) {
    current = i === null ? null : Math.max(0, Math.min(count - 1, i));
    const shown = current === null ? count : current + 1;
    // One .step-word per word, as the detokenizer joins pieces: a piece that continues a word sits in its word's
    // span with no gap ("Strand" "." reads "Strand."); the flex gap falls between words only.
    const words = [];
    pieces.slice(0, shown).forEach((piece, k) => {
      // A bare "▁" (a space the next pieces' word starts with) reads "␣" only while it is the step being written.
      const text = piece === '▁' && k !== current && labelOf === tokenLabel ? '' : labelOf(piece);
      const token = el('span', { className: `step-token${k === current ? ' current' : ''}`, text, attrs: { 'data-step': k } });
      if (k > 0 && attaches(piece, pieces[k - 1])) words.at(-1).append(token);
      else words.push(el('span', { className: 'step-word' }, [token]));
    });
    if (current !== null && current < count - 1) words.push(el('span', { className: 'step-caret', text: '▌', attrs: { 'aria-hidden': 'true' } }));
    written.replaceChildren(...words);
    box.dataset.step = current === null ? '' : String(current);
    where.textContent = current === null
      ? `${count} ${unit}${count === 1 ? '' : 's'}: press Step or Play to write them one at a time.`
      : `Step ${current + 1} of ${count}: “${labelOf(pieces[current])}”. ${describe(current)}`;
    back.disabled = current === null || current === 0;
    step.disabled = count === 0 || current === count - 1;
    all.disabled = current === null;
    onStep(current);
  }
  back.addEventListener('click', () => { stop(); go(current - 1); });
  step.addEventListener('click', () => { stop(); go(current === null ? 0 : current + 1); });
  all.addEventListener('click', () => { stop(); go(null); });
  play.addEventListener('click', () => {
    if (timer) {
      stop();
      return;
    }
    if (current === null || current === count - 1) go(0);
    play.textContent = '❚❚ Pause';
    play.setAttribute('aria-label', 'Pause the decoding');
    timer = setInterval(() => {
      if (!box.isConnected || current === null || current >= count - 1) stop();
      else go(current + 1);
    }, PLAY_MS);
  });
  controls.addEventListener('keydown', (event) => {
    if (event.key === 'ArrowRight' && !step.disabled) step.click();
    else if (event.key === 'ArrowLeft' && !back.disabled) back.click();
    else return;
    event.preventDefault();
  });
  box.replaceChildren(controls, written, where);
  go(null);
  return { go, stop };
}

/**
 * A row of attention weights over the source pieces (the step's row of the heatmap), drawn as bars with their
 * numbers; data-weights holds the numbers drawn.
 */
export function drawStepRow(box, { pieces, weights, lang }) {
  if (!weights) {
    box.replaceChildren();
    box.hidden = true;
    return;
  }
  box.hidden = false;
  box.dataset.weights = JSON.stringify(Array.from(weights, (w) => Number(w.toFixed(5))));
  const max = Math.max(1e-12, ...weights);
  box.replaceChildren(...pieces.map((piece, j) => {
    const bar = el('span', { className: 'step-bar', attrs: { 'aria-hidden': 'true' } });
    bar.style.setProperty('--h', (weights[j] / max).toFixed(3));
    return el('span', { className: 'step-cell', attrs: { lang, 'aria-label': `${tokenLabel(piece)}: ${weights[j].toFixed(3)}` } }, [
      bar, el('span', { className: 'step-weight', text: weights[j].toFixed(2) }), el('span', { className: 'step-piece', text: tokenLabel(piece) }),
    ]);
  }));
}

// ---------------------------------------------------------------- the tree

// Node n's place: x by step, y by its order among the step's nodes.
function layout(tree) {
  const perStep = [];
  const place = tree.nodes.map((node) => {
    perStep[node.step] = (perStep[node.step] ?? 0) + 1;
    return { x: PAD + node.step * COLUMN, y: PAD + (perStep[node.step] - 1) * ROW };
  });
  const steps = perStep.length;
  const tallest = Math.max(1, ...perStep);
  return { place, width: PAD * 2 + Math.max(0, steps - 1) * COLUMN + NODE_W, height: PAD * 2 + (tallest - 1) * ROW + NODE_H };
}

/** The tree as a stand-alone SVG string (styles inline, so the exported file looks as drawn). */
export function beamTreeSvg(tree, { title = '', labelOf = pieceText } = {}) {
  const { place, width, height } = layout(tree);
  const top = title ? 24 : 0;
  const path = new Set(winningPath(tree));
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height + top}" viewBox="0 0 ${width} ${height + top}" font-family="system-ui, sans-serif" font-size="12">`,
                 '<rect width="100%" height="100%" fill="#fff"/>'];
  if (title) parts.push(`<text x="${PAD}" y="16" font-weight="600" font-size="13" fill="${TEXT}">${escapeXml(title)}</text>`);
  parts.push(`<g transform="translate(0 ${top})">`);
  tree.nodes.forEach((node, n) => {
    if (node.parent < 0) return;
    const from = place[node.parent];
    const to = place[n];
    const win = path.has(n);
    parts.push(`<path d="M${from.x + NODE_W} ${from.y + NODE_H / 2} C${from.x + NODE_W + 14} ${from.y + NODE_H / 2} ${to.x - 14} ${to.y + NODE_H / 2} ${to.x} ${to.y + NODE_H / 2}" ` +
               `fill="none" stroke="${win ? WINNER : KEPT}" stroke-width="${win ? 2.5 : 1}" stroke-opacity="${win ? 1 : 0.6}"/>`);
  });
  tree.nodes.forEach((node, n) => {
    const { x, y } = place[n];
    const win = path.has(n);
    const label = labelOf(node.piece);
    const short = label.length > 11 ? `${label.slice(0, 10)}…` : label;
    parts.push(`<g class="beam-node" data-node="${n}" data-step="${node.step}"${win ? ' data-winner="true"' : ''}${n === tree.winner ? ' data-answer="true"' : ''} ` +
               `tabindex="-1" role="button" aria-label="${escapeXml(`step ${node.step + 1}: ${label}, log p ${node.logProbability.toFixed(3)}, total ${node.cumulative.toFixed(3)}${node.finished ? ', finished' : ''}${n === tree.winner ? ', the answer' : ''}`)}">` +
               `<rect x="${x}" y="${y}" width="${NODE_W}" height="${NODE_H}" rx="5" fill="${win ? '#fde7da' : '#f5f6f8'}" ` +
               `stroke="${win ? WINNER : KEPT}" stroke-width="${n === tree.winner ? 3 : win ? 2 : 1}"${node.finished ? ' stroke-dasharray="4 2"' : ''}/>` +
               `<text x="${x + 6}" y="${y + 16}" fill="${TEXT}">${escapeXml(short)}</text>` +
               `<text x="${x + NODE_W - 5}" y="${y + 16}" text-anchor="end" fill="#5c6470" font-size="10">${escapeXml(node.cumulative.toFixed(1))}</text>` +
               `<title>${escapeXml(`${label}: log p ${node.logProbability.toFixed(3)}, Σ ${node.cumulative.toFixed(3)}`)}</title></g>`);
  });
  parts.push('</g></svg>');
  return parts.join('');
}

/**
 * Draws a result's beam tree into box: nodes are focusable (arrow keys: left to the parent, right to a child,
 * up/down within the step), and hovering, focusing or tapping one shows its numbers. labelOf and ranking as
 * nodeLines() takes them. Returns { mark(step) }, which outlines the nodes of one step (the stepper's current one;
 * null: none).
 */
export function drawBeamTree(box, tree, { beam, lang, name, label = 'beam search tree', title = '', labelOf = pieceText,
                                          ranking = null }) {
  box.replaceChildren();
  if (!tree || tree.nodes.length === 0) {
    box.append(el('p', { className: 'muted small', text: 'The search kept no hypotheses (an empty output).' }));
    return { mark() {} };
  }
  const steps = 1 + Math.max(...tree.nodes.map((node) => node.step));
  const kept = tree.nodes.length;
  const rankedBy = ranking ? `${ranking.name} ÷ length` : 'Σ log p ÷ length';
  const summary = beam === 1
    ? (ranking ? `Beam 1, ranked by the ${ranking.name}: one live hypothesis a step, ${steps} steps.`
               : `Greedy search (beam 1): one hypothesis a step, ${steps} steps.`)
    : `Beam ${beam}: ${kept} hypotheses kept over ${steps} steps; the highlighted path won (highest ${rankedBy} among the finished ones).`;
  const scroll = el('div', { className: 'beam-tree-scroll' });
  scroll.innerHTML = beamTreeSvg(tree, { labelOf });
  const svg = scroll.firstChild;
  svg.setAttribute('role', 'group');
  svg.setAttribute('aria-label', `${label}: ${summary} Arrow keys move between hypotheses.`);
  svg.setAttribute('lang', lang);
  svg.dataset.testid = 'beam-tree-svg';
  const nodes = [...svg.querySelectorAll('.beam-node')];
  const answer = nodes[tree.winner] ?? nodes[0];
  answer.tabIndex = 0;
  const children = tree.nodes.map(() => []);
  tree.nodes.forEach((node, n) => { if (node.parent >= 0) children[node.parent].push(n); });
  const path = new Set(winningPath(tree));
  const show = (n, options) => showTip(nodes[n], nodeLines(tree, n, { beam, labelOf, ranking }), options);
  const nodeOf = (target) => {
    const g = target?.closest?.('.beam-node');
    return g && svg.contains(g) ? Number(g.dataset.node) : null;
  };
  svg.addEventListener('focusin', (event) => {
    const n = nodeOf(event.target);
    if (n === null) return;
    nodes.forEach((g, k) => { g.tabIndex = k === n ? 0 : -1; });
    show(n);
  });
  svg.addEventListener('focusout', (event) => { const n = nodeOf(event.target); if (n !== null) hideTip(nodes[n]); });
  svg.addEventListener('pointerover', (event) => { const n = nodeOf(event.target); if (n !== null && event.pointerType === 'mouse') show(n); });
  svg.addEventListener('pointerout', (event) => { const n = nodeOf(event.target); if (n !== null && event.pointerType === 'mouse') hideTip(nodes[n]); });
  svg.addEventListener('click', (event) => {
    const n = nodeOf(event.target);
    if (n === null) return;
    nodes[n].focus({ preventScroll: true });
    show(n, { pin: true });
  });
  svg.addEventListener('keydown', (event) => {
    const n = nodeOf(event.target);
    if (n === null) return;
    const node = tree.nodes[n];
    const sameStep = tree.nodes.map((other, k) => (other.step === node.step ? k : -1)).filter((k) => k >= 0);
    const at = sameStep.indexOf(n);
    const moves = {
      ArrowLeft: node.parent,
      ArrowRight: children[n].find((k) => path.has(k)) ?? children[n][0],
      ArrowUp: sameStep[at - 1], ArrowDown: sameStep[at + 1],
      Home: winningPath(tree)[0], End: tree.winner,
    };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = moves[event.key];
    if (next !== undefined && next >= 0) nodes[next].focus();
  });
  box.append(
    el('p', { className: 'muted small', text: summary, attrs: { 'data-testid': 'beam-tree-summary' } }),
    scroll,
    el('div', { className: 'legend', attrs: { role: 'note', 'data-testid': 'legend' } }, [
      el('span', { className: 'legend-swatch winner', attrs: { 'aria-hidden': 'true' } }), el('span', { className: 'legend-meaning', text: 'the answer’s path' }),
      el('span', { className: 'legend-swatch kept', attrs: { 'aria-hidden': 'true' } }), el('span', { className: 'legend-meaning', text: 'kept, then dropped' }),
      el('span', { className: 'legend-swatch finished', attrs: { 'aria-hidden': 'true' } }), el('span', { className: 'legend-meaning', text: 'dashed: finished · number: Σ log p' }),
    ]),
    exportBar({ name, label, svg: () => beamTreeSvg(tree, { title, labelOf }),
                json: () => ({ beam, winner: tree.winner, nodes: tree.nodes }) }),
  );
  return {
    mark(step) {
      nodes.forEach((g, n) => g.classList.toggle('current-step', step !== null && tree.nodes[n].step === step));
    },
  };
}
