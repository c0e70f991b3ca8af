// loadModel(string) in Node: a manifest name (lower-case words and hyphens) is looked up by name, but an existing
// file whose path looks like a name (no dot, no slash) is still loaded as the file it is.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import { loadModel } from '../../web/lib/index.mjs';
import { TEST_MODEL, repoRoot } from './fixture_model.mjs';

test('a dotless file in the working directory loads as a file, an unknown name is refused as a name', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'attnlab-names-'));
  const previous = process.cwd();
  try {
    copyFileSync(join(repoRoot, TEST_MODEL), join(folder, 'mymodel'));
    process.chdir(folder);
    const model = await loadModel('mymodel');
    try {
      assert.equal(model.info.task, 'translate');
    } finally {
      await model.dispose();
    }
    await assert.rejects(loadModel('no-such-model'), (e) => e.code === 'ATTNLAB_LOAD_FAILED' && /no-such-model/.test(e.message));
  } finally {
    process.chdir(previous);
    rmSync(folder, { recursive: true, force: true });
  }
});
