// The site under test, as the browser tests and the caption benchmark start it: a temporary models folder with copies of test models and a manifest
// listing them, web/server.mjs on a free port, and headless Chromium with its own profile in the same folder (so
// no Cache API state is carried between files), recording every URL it requests so that a test can check that
// nothing left the origin.
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { createAppServer } from '../../web/server.mjs';
import { CHROMIUM_ARGS, launchChromiumProfile } from './chromium.mjs';

/**
 * Starts the site for one test file.
 *   prefix: the name prefix of the temporary folder.
 *   models: [{ from, name, id, label, task, arch, src, tgt, dtype, group, selfAttention, shortlist }]: `from` is copied
 *     to models/weights/<name> (<id>.gguf when name is left out) and listed in the manifest with the copy's size and
 *     SHA-256; a translator's `shortlist` (a path, or a manifest entry's { file } in this repository) likewise, to
 *     models/weights/<id>.shortlist.gguf.
 *   unlisted: { name: path }: files copied to models/weights/<name> that the manifest does not list.
 *   args: Chromium's flags (CHROMIUM_ARGS unless given); viewport, deviceScaleFactor: Playwright's defaults unless
 *     given.
 * Resolves to { origin, context, requests, workDir, modelsDir, close }.
 */
export async function startSite({ prefix = 'attnlab-e2e-', models = [], unlisted = {}, args = CHROMIUM_ARGS,
                                  viewport, deviceScaleFactor } = {}) {
  const workDir = await mkdtemp(join(tmpdir(), prefix));
  const modelsDir = join(workDir, 'models');
  const requests = [];
  let server;
  let context;
  const close = async () => {
    await context?.close();
    if (server) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await rm(workDir, { recursive: true, force: true });
  };

  try {
    await mkdir(join(modelsDir, 'weights'), { recursive: true });
    const manifest = [];
    const listed = async (from, file) => {
      await copyFile(from, join(workDir, file));
      const bytes = await readFile(join(workDir, file));
      return { file, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
    };
    for (const { from, name, id, label, task, arch, src, tgt, dtype, group, selfAttention, shortlist } of models) {
      const entry = { id, label, task, arch, src, tgt, dtype, group, selfAttention,
                      ...await listed(from, `models/weights/${name ?? `${id}.gguf`}`) };
      if (shortlist) {
        const source = typeof shortlist === 'string' ? shortlist : fileURLToPath(new URL(`../../${shortlist.file}`, import.meta.url));
        entry.shortlist = await listed(source, `models/weights/${id}.shortlist.gguf`);
      }
      manifest.push(entry);
    }
    for (const [name, from] of Object.entries(unlisted)) await copyFile(from, join(modelsDir, 'weights', name));
    await writeFile(join(modelsDir, 'manifest.json'), JSON.stringify({ models: manifest }));

    server = createAppServer({ modelsDir });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://localhost:${server.address().port}`;
    context = await launchChromiumProfile(join(workDir, 'profile'), {
      args, ...(viewport && { viewport }), ...(deviceScaleFactor && { deviceScaleFactor }),
    });
    context.on('request', (request) => requests.push(request.url()));
    return { origin, context, requests, workDir, modelsDir, close };
  } catch (error) {
    // The caller gets no close() when this throws: do not leave a server, a browser or the folder behind.
    await close().catch(() => {});
    throw error;
  }
}

/** The security headers the app server sends with its pages (CSP, COOP, COEP, CORP), for pages a test routes itself. */
export async function securityHeadersOf(site) {
  const appHeaders = Object.fromEntries((await fetch(`${site.origin}/`)).headers);
  return Object.fromEntries(Object.entries(appHeaders).filter(([name]) =>
    /^(content-security-policy|cross-origin-(opener|embedder|resource)-policy)$/.test(name)));
}
