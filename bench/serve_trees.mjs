// The cross-origin isolated server of the benchmarks that run two engine builds in one Chromium page
// (profile_load.mjs --baseline, paragraph_ab.mjs): / is an empty page; /web/lib/ and /web/dist/ come from the
// `current` tree, /baseline/web/lib/ and /baseline/web/dist/ from the `baseline` tree (when there is one), the
// repository folders `fromRoot` as they are, and `files` (URL path -> file) as named; anything else is a 404.
// Both trees' paths are relative to `root` (or absolute). Resolves to the listening server.
import { createServer } from 'node:http';
import { createReadStream, existsSync, statSync } from 'node:fs';
import path from 'node:path';

const ISOLATED = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };
const TYPES = { '.wasm': 'application/wasm', '.mjs': 'text/javascript', '.js': 'text/javascript' };
const ENGINE_FOLDERS = ['web/lib/', 'web/dist/'];

export function serveTrees({ root, current = '.', baseline = null, title, fromRoot = [], files = {} }) {
  const fileFor = (url) => {
    if (files[url]) return files[url];
    const relative = path.normalize(url.slice(1));
    if (ENGINE_FOLDERS.some((folder) => relative.startsWith(folder))) return path.resolve(root, current, relative);
    const inBaseline = relative.slice('baseline/'.length);
    if (baseline && relative.startsWith('baseline/') && ENGINE_FOLDERS.some((folder) => inBaseline.startsWith(folder)))
      return path.resolve(root, baseline, inBaseline);
    return fromRoot.some((folder) => relative.startsWith(folder)) ? path.join(root, relative) : null;
  };
  const server = createServer((request, response) => {
    const url = decodeURIComponent(new URL(request.url, 'http://localhost').pathname);
    if (url === '/') {
      response.writeHead(200, { 'content-type': 'text/html', ...ISOLATED });
      response.end(`<!doctype html><title>${title}</title>`);
      return;
    }
    const file = fileFor(url);
    if (!file || !existsSync(file) || !statSync(file).isFile()) {
      response.writeHead(404);
      response.end();
      return;
    }
    response.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', ...ISOLATED });
    createReadStream(file).pipe(response);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
