// The captioner the JS and browser tests use (tests/fixtures/caption/tiny_encoder_model.gguf: tiny, untrained
// except on the page's sample photos, but complete with an image encoder; scripts/make_caption_fixture.py), the
// fixture's pixel pattern, a minimal PNG encoder (so the native CLI reads exactly the same pixels) and the CLI's
// caption to compare with.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';

import { CLI, repoRoot } from './fixture_model.mjs';

export const CAPTION_MODEL = join(repoRoot, 'tests/fixtures/caption/tiny_encoder_model.gguf');
/** The fixture's deterministic RGBA pattern (scripts/make_caption_fixture.py fixture_pixels). */
export function patternPixels(width, height, seed = 0) {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; ++y) {
    for (let x = 0; x < width; ++x) {
      const p = (y * width + x) * 4;
      for (let c = 0; c < 3; ++c) data[p + c] = (x * 7 + y * 13 + c * 50 + ((x * y) % 17) + seed * (c + 1) * 31) % 256;
      data[p + 3] = 255;
    }
  }
  return { data, width, height };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A minimal PNG (8-bit RGBA, filter 0 on every row) of exactly these pixels, for the CLI. */
export function encodePng({ data, width, height }) {
  const chunk = (type, body) => {
    const out = Buffer.alloc(12 + body.length);
    out.writeUInt32BE(body.length, 0);
    out.write(type, 4, 'latin1');
    body.copy(out, 8);
    out.writeUInt32BE(crc32(out.subarray(4, 8 + body.length)), 8 + body.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8);  // bit depth 8, colour type 6 (RGBA), deflate, filter 0, no interlace
  const raw = Buffer.alloc(height * (width * 4 + 1));
  for (let y = 0; y < height; ++y) raw.set(data.subarray(y * width * 4, (y + 1) * width * 4), y * (width * 4 + 1) + 1);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header),
                        chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** The CLI's caption (parsed --json) of an image file. */
export function cliCaption(path, { beam = 1, maxLength = 0, noRepeatNgram = -1 } = {}, model = CAPTION_MODEL) {
  const args = ['caption', '--model', model, '--json', '--beam', String(beam)];
  if (maxLength > 0) args.push('--max-length', String(maxLength));
  if (noRepeatNgram >= 0) args.push('--no-repeat-ngram', String(noRepeatNgram));
  return JSON.parse(execFileSync(CLI, [...args, path], { encoding: 'utf8' }));
}

/** Asserts that a module caption equals the CLI's: text, tokens and ids exactly, attention to 1e-5. */
export function assertSameCaption(got, cli, label) {
  assert.equal(got.text, cli.text, `${label}: text`);
  assert.deepEqual(got.tokens, cli.tokens, `${label}: tokens`);
  assert.deepEqual(got.ids, cli.ids, `${label}: ids`);
  assert.equal(got.gridWidth, cli.grid_width, `${label}: grid width`);
  assert.equal(got.gridHeight, cli.grid_height, `${label}: grid height`);
  assert.equal(got.attention.rows, cli.attention.length, `${label}: attention rows`);
  assert.equal(got.attention.cols, cli.grid_width * cli.grid_height, `${label}: attention cols`);
  cli.attention.forEach((row, i) => row.forEach((value, j) => {
    const actual = got.attention.data[i * got.attention.cols + j];
    assert.ok(Math.abs(actual - value) <= 1e-5, `${label}: attention[${i}][${j}] = ${actual}, CLI ${value}`);
  }));
}

