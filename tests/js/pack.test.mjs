// Packaging: `npm pack` makes a tarball that installs into an empty folder and works from Node there:
// import { loadModel } from 'attnlab', load a model file's bytes, translate; the text equals the CLI's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SENTENCES, cliTranslate, repoRoot, requireModel } from './fixture_model.mjs';

const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

test('npm pack installs into an empty folder and translates from Node', async () => {
  const model = requireModel();
  const dir = await mkdtemp(join(tmpdir(), 'attnlab-pack-'));
  try {
    const packDir = join(dir, 'pack');
    const appDir = join(dir, 'app');
    execFileSync('mkdir', ['-p', packDir, appDir]);
    npm(['pack', '--silent', '--pack-destination', packDir], repoRoot);
    const [tarball] = (await readdir(packDir)).filter((name) => name.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack made no tarball');
    const listing = execFileSync('tar', ['-tzf', join(packDir, tarball)], { encoding: 'utf8' });
    for (const file of ['index.mjs', 'index.d.ts', 'worker.mjs', 'download.mjs', 'attnlab.wasm']) {
      assert.match(listing, new RegExp(`${file.replace('.', '\\.')}\\n`), `the tarball lacks ${file}`);
    }
    assert.doesNotMatch(listing, /\.gguf|tests\/|src\//, 'the tarball holds files it should not');

    await writeFile(join(appDir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    npm(['install', '--no-audit', '--no-fund', '--offline', join(packDir, tarball)], appDir);
    await writeFile(join(appDir, 'main.mjs'), `
      import { readFile } from 'node:fs/promises';
      import { loadModel } from 'attnlab';
      const model = await loadModel(await readFile(process.argv[2]));
      const t = await model.translate(process.argv[3], { beam: 4 });
      console.log(JSON.stringify({ text: t.text, rows: t.attention.rows, cols: t.attention.cols }));
      await model.dispose();
    `);
    const text = SENTENCES[1];
    const out = JSON.parse(execFileSync(process.execPath, ['main.mjs', model, text], { cwd: appDir, encoding: 'utf8' }));
    const cli = cliTranslate(text, { beam: 4 });
    assert.equal(out.text, cli.text);
    assert.equal(out.rows, cli.target_tokens.length);
    assert.equal(out.cols, cli.source_tokens.length);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
