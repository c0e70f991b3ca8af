// Browser end to end for the Speech tab: web/server.mjs serves a manifest whose only model is the shipped interim
// speech recognizer, headless Chromium (playwright-core, /usr/bin/chromium) with a fake microphone playing a
// sample clip. An uploaded file's transcript equals the native CLI's on that file, with one attention row per
// character drawn under the spectrogram; recording from the fake microphone moves the level meter and transcribes
// when stopped (the microphone is released); without the permission the tab says so; no request leaves the origin.
// At 1280×800 and 390×844 the search tree under the stepper is the Node module's beamTree (every node, the
// winner's path spelling the transcript, the joint score in the caption and the tooltips), inside the phone's width,
// and the clip's own words beside the transcript with their character edit distance (none for an uploaded file);
// the attention figure has its legends, a cell's numbers on hover, tap or the keyboard, and its PNG / SVG / JSON export; the URL
// reopens model, beam, sample clip and character, and a new beam runs the clip again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { repoRoot } from '../js/fixture_model.mjs';
import { CHROMIUM_ARGS, offsiteRequests } from '../support/chromium.mjs';
import { startSite } from '../support/site.mjs';
import { WIDTHS, close, copiedJson, downloadOf, isPhone, newPage, pageFits, row, tap } from './page_helpers.mjs';

// A real touch tap at a point of the page (client pixels).
async function tapAt(page, point) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Emulation.setTouchEmulationEnabled', { enabled: true, maxTouchPoints: 1 });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [point] });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await cdp.detach();
}

const cli = process.env.ATTNLAB_CLI ?? join(repoRoot, 'build/native/attnlab');
const manifest = JSON.parse(readFileSync(join(repoRoot, 'models/manifest.json'), 'utf8'));
const entry = manifest.models.find((m) => m.task === 'transcribe' && m.dtype === 'q8_0');
const MODEL = join(repoRoot, entry.file);
const SAMPLES = join(repoRoot, 'web/app/samples/speech');
const MICROPHONE_CLIP = join(SAMPLES, 'digits.wav');

let site;
let page;

before(async () => {
  site = await startSite({
    prefix: 'attnlab-e2e-speech-',
    models: [{ from: MODEL, name: 'speech.gguf', id: 'speech-test', label: 'Speech (test)', task: 'transcribe',
               arch: 'las', src: 'audio', tgt: 'en', dtype: 'q8_0' }],
    args: [...CHROMIUM_ARGS, '--use-fake-device-for-media-stream', '--autoplay-policy=no-user-gesture-required',
           `--use-file-for-fake-audio-capture=${MICROPHONE_CLIP}`],
    viewport: { width: 1100, height: 900 },
  });
  page = await site.context.newPage();
  await openSpeechTab(page);
});

after(async () => {
  await site?.close();
});

async function openSpeechTab(p) {
  await p.goto(`${site.origin}/`);
  await p.waitForFunction(() => !document.getElementById('tab-btn-speech').disabled);
  await p.locator('#tab-btn-speech').click();
  await p.waitForFunction(() => /ready/.test(document.getElementById('sp-status-text').textContent), null, { timeout: 60_000 });
}

function cliTranscript(file, beam) {
  const r = spawnSync(cli, ['transcribe', '--model', MODEL, '--beam', String(beam), '--json', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

// Waits for a transcript different from `previous` (or for the error box), and returns it.
async function waitForTranscript(p, previous) {
  await p.waitForFunction((before) => {
    const error = document.getElementById('sp-error');
    const result = document.getElementById('sp-result');
    if (!error || !result) return false;  // a page opened on a link may not have built the tab yet
    return !error.hidden || (!result.hidden && document.getElementById('sp-timing').textContent !== before);
  }, previous, { timeout: 60_000 });
  assert.equal(await p.locator('#sp-error').isHidden(), true, `the page reported: ${await p.locator('#sp-error').textContent()}`);
  return { text: await p.locator('#sp-output').textContent(), timing: await p.locator('#sp-timing').textContent() };
}

test('an uploaded WAV and FLAC give the CLI\'s transcript, a character row each under the spectrogram', async () => {
  let timing = '';
  for (const [file, beam] of [[join(SAMPLES, 'woodchuck.wav'), '1'], [join(repoRoot, 'tests/fixtures/audio/flac/stereo_44k.flac'), '4']]) {
    await page.locator('#sp-beam').selectOption(beam);
    await page.locator('#sp-file').setInputFiles(file);
    const got = await waitForTranscript(page, timing);
    timing = got.timing;
    const expected = cliTranscript(file, Number(beam));
    assert.equal(got.text, expected.text || '(nothing: the model wrote no characters)', file);
    assert.match(got.timing, /s of audio transcribed in \d+ ms \(beam \d\)/);
    assert.equal(await page.locator('#sp-chars button').count(), expected.characters.length);
    assert.equal(await page.getByTestId('sp-reference').isHidden(), true, 'a visitor\'s file has no known words');
    const sizes = await page.evaluate(() => ['sp-spectrogram', 'sp-attention'].map((id) => {
      const c = document.getElementById(id);
      return { width: c.getBoundingClientRect().width, height: c.getBoundingClientRect().height };
    }));
    assert.equal(sizes[0].width, sizes[1].width, 'the spectrogram and the attention share one time axis');
    assert.ok(sizes[1].height >= expected.characters.length * 14);
  }
  // Hovering a character reads out its frames.
  await page.locator('#sp-chars button').nth(1).hover();
  assert.match(await page.locator('#sp-readout').textContent(), /\(character 2 of \d+\): peak weight \d\.\d\d on the frame at \d+\.\d\d s/);
  assert.deepEqual(offsiteRequests(site.requests, site.origin), []);
});

test('the fake microphone records (the level meter moves), transcribes when stopped and is released', async () => {
  await site.context.grantPermissions(['microphone'], { origin: site.origin });
  const previous = await page.locator('#sp-timing').textContent();
  await page.locator('#sp-record').click();
  await page.waitForFunction(() => !document.getElementById('sp-stop').hidden);
  await page.waitForFunction(() => Number(document.getElementById('sp-level').value) > 0.01, null, { timeout: 10_000 });
  await page.waitForTimeout(2500);
  await page.locator('#sp-stop').click();
  const got = await waitForTranscript(page, previous);
  assert.ok(got.text.length > 0);
  assert.match(got.timing, /^[2-9]\.\d s of audio transcribed/);
  assert.equal(await page.locator('#sp-chars button').count(), [...got.text].length);
  assert.equal(await page.locator('#sp-record').isVisible(), true);
  assert.equal(await page.locator('#sp-level').isHidden(), true);
});

test('without the microphone permission the tab says so', async () => {
  await site.context.clearPermissions();
  const denied = await site.context.newPage();
  try {
    await openSpeechTab(denied);
    await denied.locator('#sp-record').click();
    await denied.waitForFunction(() => !document.getElementById('sp-error').hidden, null, { timeout: 10_000 });
    assert.match(await denied.locator('#sp-error').textContent(), /Microphone permission was denied/);
    assert.equal(await denied.locator('#sp-record').isVisible(), true);
  } finally {
    await denied.close();
  }
});

for (const viewport of WIDTHS) {
  test(`the search tree at ${viewport.width}×${viewport.height}: the module's beamTree, its winner spells the transcript`, async () => {
    const clip = join(SAMPLES, 'command.wav');
    const recognizer = await loadModel(MODEL);
    let expected;
    try {
      expected = await recognizer.transcribe(readFileSync(clip), { beam: 4, beamTree: true });  // the tab's default beam
    } finally {
      await recognizer.dispose();
    }
    const { page: p, errors } = await newPage(site.context, viewport);
    try {
      await openSpeechTab(p);
      await p.locator('#sp-samples [data-sample="command.wav"]').click();
      await waitForTranscript(p, '');
      assert.equal(await p.locator('#sp-output').textContent(), expected.text);
      const spoken = 'erase k seven two';   // web/app/samples/speech/speech.json
      const edits = levenshtein([...expected.text], [...spoken]);
      assert.equal(await p.getByTestId('sp-reference').textContent(),
                   `The clip says “${spoken}”: the transcript is ${edits} character edit${edits === 1 ? '' : 's'} away ` +
                   `(${Math.round((100 * edits) / spoken.length)}% of its characters).`);
      const tree = expected.beamTree;
      const nodes = p.locator('#sp-beam-tree .beam-node');
      assert.equal(await nodes.count(), tree.nodes.length);
      assert.equal(await p.locator('#sp-beam-tree .beam-node[data-answer="true"]').getAttribute('data-node'), String(tree.winner));
      // The highlighted path, first step first, spells the transcript (then its end).
      const path = [];
      for (let n = tree.winner; n >= 0; n = tree.nodes[n].parent) path.unshift(n);
      const highlighted = await p.locator('#sp-beam-tree .beam-node[data-winner="true"]').evaluateAll(
        (gs) => gs.map((g) => Number(g.dataset.node)));
      assert.deepEqual(highlighted, path);
      const labels = await Promise.all(path.map((n) => nodes.nth(n).locator('text').first().textContent()));
      const spelled = expected.characters.map((c) => (c === ' ' ? '␣' : c));
      assert.deepEqual(labels, expected.finished ? [...spelled, '⟨end⟩'] : spelled);
      // What the numbers are: Σ log p drawn, the joint score ranked by, both said.
      assert.ok(expected.ctcWeight > 0, 'the shipped model decodes with its CTC head');
      const hint = await p.getByTestId('sp-tree-hint').textContent();
      assert.match(hint, /λ = 0\.30 .*the search ranked by the joint score/);
      // The shipped file's language model takes part too, and the hint says with which weight.
      if (expected.lmWeight > 0) assert.match(hint, new RegExp(`β = ${expected.lmWeight.toFixed(2)} the search .* \\+ β Σ log p_lm`));
      assert.match(await p.locator('#sp-beam-tree [data-testid="beam-tree-summary"]').textContent(),
                   new RegExp(`^Beam 4: ${tree.nodes.length} hypotheses kept .*highest joint score ÷ length`));
      const answer = p.locator('#sp-beam-tree .beam-node[data-answer="true"]');
      if (isPhone(viewport)) await tap(p, answer);
      else await answer.hover();
      await p.getByTestId('figure-tip').waitFor({ state: 'visible' });
      const tip = await p.getByTestId('figure-tip').textContent();
      assert.match(tip, /the answer/);
      const winner = tree.nodes[tree.winner];
      const minus = (x) => (x < 0 ? `−${(-x).toFixed(3)}` : x.toFixed(3));
      assert.ok(tip.includes(`Σ log p ${minus(winner.cumulative)}`) && tip.includes(`joint score ÷ length ${winner.step + 1} ${minus(winner.score)}`), tip);
      // Drawn: the answer's node has a size on the page; a wide tree scrolls in its own box, not the page.
      const box = await answer.boundingBox();
      assert.ok(box && box.width > 0 && box.height > 0);
      if (isPhone(viewport)) assert.ok(await pageFits(p), 'the page is wider than the phone');

      // The attention figure: a legend for each colour scale, a cell's numbers under the pointer (a tap on a
      // phone) from the module's weights and raw scores, and its export: the JSON is the module's numbers, the SVG
      // and PNG files are written.
      assert.equal(await p.locator('#sp-tools [data-testid="legend"]').count(), 2);
      const i = 1;
      const weights = row(expected.attention, i);
      const j = weights.indexOf(Math.max(...weights));
      const point = await p.evaluate(([r, c]) => {
        const canvas = document.getElementById('sp-attention');
        const x = 28 + (c + 0.5) * 12;  // LABEL_PX + frame × 4 spectrogram frames × 3 px
        document.getElementById('sp-figure').scrollLeft = Math.max(0, x - 100);
        canvas.scrollIntoView({ block: 'center' });
        const rect = canvas.getBoundingClientRect();
        return { x: rect.left + x, y: rect.top + (r + 0.5) * 14 };
      }, [i, j]);
      if (isPhone(viewport)) await tapAt(p, point);
      else await p.mouse.move(point.x, point.y);
      await p.getByTestId('figure-tip').waitFor({ state: 'visible' });
      const cellTip = await p.getByTestId('figure-tip').textContent();
      const score = expected.scores.data[i * expected.scores.cols + j];
      assert.ok(cellTip.startsWith(`“${expected.characters[i] === ' ' ? '␣' : expected.characters[i]}” (character 2) → frame ${j + 1}`), cellTip);
      assert.ok(cellTip.includes(`weight ${weights[j].toFixed(3)}`) && cellTip.includes('rank 1 of') &&
                cellTip.includes(`raw score ${score.toFixed(3)}`), cellTip);
      await p.keyboard.press('Escape');
      // The keyboard reaches the cells: focus starts on the selected character's strongest frame, ArrowDown moves
      // to the next character in the same frame, ArrowRight to the next frame.
      const label = (k) => (expected.characters[k] === ' ' ? '␣' : expected.characters[k]);
      await p.locator('#sp-chars button').nth(0).focus();
      await p.getByTestId('sp-attention').focus();
      const first = row(expected.attention, 0);
      const peak = first.indexOf(Math.max(...first));
      const tipNow = () => p.getByTestId('figure-tip').textContent();
      await p.getByTestId('figure-tip').waitFor({ state: 'visible' });
      assert.ok((await tipNow()).startsWith(`“${label(0)}” (character 1) → frame ${peak + 1},`), await tipNow());
      await p.keyboard.press('ArrowDown');
      await p.keyboard.press('ArrowRight');
      const moved = await tipNow();
      assert.ok(moved.startsWith(`“${label(1)}” (character 2) → frame ${peak + 2},`), moved);
      assert.ok(moved.includes(`weight ${row(expected.attention, 1)[peak + 1].toFixed(3)}`), moved);
      assert.equal(await p.locator('#sp-chars button').nth(1).getAttribute('aria-pressed'), 'true');
      await p.keyboard.press('Escape');
      await site.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: site.origin });
      const json = await copiedJson(p, '#sp-tools');
      assert.equal(json.text, expected.text);
      assert.equal(json.attention.length, expected.attention.rows);
      json.attention.forEach((r, k) => r.forEach((w, c) => close(w, expected.attention.data[k * expected.attention.cols + c], `attention [${k}][${c}]`)));
      close(json.scores[i][j], score, 'raw score', 1e-3);
      const svg = await downloadOf(p, p.locator('#sp-tools [data-testid="export-svg"]'));
      assert.match(svg.name, /speech-attention\.svg$/);
      assert.match(svg.bytes.toString('utf8'), /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      const png = await downloadOf(p, p.locator('#sp-tools [data-testid="export-png"]'));
      assert.match(png.name, /\.png$/);
      assert.deepEqual([...png.bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);

      // The URL names the model, beam, sample and character; a new page on it transcribes the same clip and
      // selects that character; a new beam there runs the clip again at that beam.
      await p.locator('#sp-chars button').nth(2).focus();
      const hash = new URLSearchParams(new URL(p.url()).hash.slice(1));
      assert.deepEqual([hash.get('tab'), hash.get('model'), hash.get('beam'), hash.get('sample'), hash.get('char')],
                       ['speech', 'speech-test', '4', 'command.wav', '3']);
      const { page: again, errors: againErrors } = await newPage(site.context, viewport);
      try {
        await again.goto(p.url());
        await waitForTranscript(again, '');
        assert.equal(await again.locator('#sp-output').textContent(), expected.text);
        assert.equal(await again.locator('#sp-chars button').nth(2).getAttribute('aria-pressed'), 'true');
        await again.locator('#sp-beam').selectOption('1');
        await again.waitForFunction(() => /\(beam 1\)$/.test(document.getElementById('sp-timing').textContent) &&
                                          !document.getElementById('sp-result').hidden, null, { timeout: 60_000 });
        assert.equal(new URLSearchParams(new URL(again.url()).hash.slice(1)).get('beam'), '1');
        assert.deepEqual(againErrors, []);
      } finally {
        await again.close();
      }
      assert.deepEqual(errors, []);
    } finally {
      await p.close();
    }
  });
}

// The edit distance the tab reports, computed here independently (full matrix).
function levenshtein(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; ++i) {
    for (let j = 1; j <= b.length; ++j) d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
  }
  return d[a.length][b.length];
}
