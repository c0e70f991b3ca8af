// A photo larger than the encoder's 224 × 224, at full size: the npm module in Node and the native CLI on a PNG of
// the same pixels give the same caption (text, tokens, ids, attention to 1e-5), since both hand the pixels as
// they are to the engine's one resize (src/attnlab/image/preprocess.cpp, antialiased where it shrinks).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadModel } from '../../web/lib/index.mjs';
import { CAPTION_MODEL, assertSameCaption, cliCaption, encodePng, patternPixels } from './caption_fixture.mjs';

let workDir;
let model;
before(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'attnlab-large-'));
  model = await loadModel(CAPTION_MODEL);
});
after(async () => {
  await model?.dispose();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

test('large photos: the module and the CLI caption the same pixels alike', async () => {
  // A 4:3 phone-sized frame, a panorama whose height grows while its width shrinks, and a portrait.
  for (const [width, height, seed] of [[1600, 1200, 5], [3000, 160, 6], [700, 1400, 7]]) {
    const image = patternPixels(width, height, seed);
    const png = join(workDir, `${width}x${height}.png`);
    await writeFile(png, encodePng(image));
    for (const beam of [1, 3]) {
      const label = `${width} × ${height}, beam ${beam}`;
      const got = await model.caption(image, { beam });
      assert.ok(got.tokens.length > 0, `${label}: a caption`);
      assertSameCaption(got, cliCaption(png, { beam }), label);
    }
  }
});
