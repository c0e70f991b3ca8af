// Smoke test of the built module in Node: web/dist loads through the npm entry point and reports its build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

import { engineInfo } from '../../web/lib/index.mjs';

test('the wasm engine loads in Node and reports a SIMD128 build', async () => {
  const info = await engineInfo();
  const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(info.version, version);
  assert.equal(info.wasm, true);
  assert.match(info.simd, /simd128/i);
});
