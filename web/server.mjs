// npm start: serves the page and the engine from this checkout on localhost only.
//   /            web/app/index.html        /app/*   web/app/
//   /lib/*       web/lib/ (the npm module)  /dist/*  web/dist/ (attnlab.mjs, attnlab.wasm)
//   /models/*    models/manifest.json and models/**/*.gguf
// Headers: COOP/COEP (so wasm threads can be enabled later) and a CSP that allows only this origin.
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// modelsDir (or ATTNLAB_MODELS_DIR) serves another folder as /models/, e.g. a test's manifest and fixture model.
function mountsFor(modelsDir = process.env.ATTNLAB_MODELS_DIR || join(root, 'models')) {
  return [
    ['/app/', join(root, 'web/app')],
    ['/lib/', join(root, 'web/lib')],
    ['/dist/', join(root, 'web/dist')],
    ['/models/', modelsDir],
  ];
}
const mimeTypes = {
  '.html': 'text/html; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.gguf': 'application/octet-stream',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.d.ts': 'text/plain; charset=utf-8',
};
const securityHeaders = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' blob: data:; " +
    "connect-src 'self'; worker-src 'self' blob:; media-src 'self' blob:; object-src 'none'; base-uri 'none'; " +
    "frame-ancestors 'none'; form-action 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

// Only what the page needs is served from models/: the manifest and weight files.
function servable(mountPrefix, relative) {
  if (mountPrefix !== '/models/') return true;
  return relative === 'manifest.json' || relative.endsWith('.gguf');
}

function resolvePath(mounts, urlPath) {
  if (urlPath === '/' || urlPath === '/index.html') return join(root, 'web/app/index.html');
  for (const [prefix, dir] of mounts) {
    if (!urlPath.startsWith(prefix)) continue;
    const relative = normalize(decodeURIComponent(urlPath.slice(prefix.length)));
    if (relative.startsWith('..') || relative.includes(`${sep}..`) || relative.startsWith(sep)) return null;
    if (!servable(prefix, relative)) return null;
    return join(dir, relative);
  }
  return null;
}

function contentType(path) {
  if (path.endsWith('.d.ts')) return mimeTypes['.d.ts'];
  return mimeTypes[extname(path)] ?? 'application/octet-stream';
}

export function createAppServer({ modelsDir } = {}) {
  const mounts = mountsFor(modelsDir);
  return createServer(async (request, response) => {
    const send = (status, body, headers = {}) => {
      response.writeHead(status, { ...securityHeaders, 'Content-Type': 'text/plain; charset=utf-8', ...headers });
      response.end(body);
    };
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(405, 'method not allowed\n');
    let path;
    try {
      path = resolvePath(mounts, new URL(request.url, 'http://localhost').pathname);
    } catch {
      return send(400, 'bad request\n');
    }
    if (!path) return send(404, 'not found\n');
    let info;
    try {
      info = await stat(path);
    } catch {
      return send(404, 'not found\n');
    }
    if (!info.isFile()) return send(404, 'not found\n');
    response.writeHead(200, {
      ...securityHeaders,
      'Content-Type': contentType(path),
      'Content-Length': info.size,
      'Cache-Control': 'no-cache',
      // The page's offline copy lives in /app/ but must control the whole site, / included.
      ...(path === join(root, 'web/app/sw.js') && { 'Service-Worker-Allowed': '/' }),
    });
    if (request.method === 'HEAD') return response.end();
    createReadStream(path).pipe(response);
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const port = Number(process.env.PORT ?? 8080);
  const host = process.env.HOST ?? '127.0.0.1';
  createAppServer().listen(port, host, () => {
    console.log(`attnlab: serving http://localhost:${port}/ (Ctrl-C to stop)`);
  });
}
