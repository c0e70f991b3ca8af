// Models by name: loadModel('bahdanau-en-de', { dtype: 'q8_0' }) looks the name up in a models/manifest.json and
// loads the file it lists with the listed size and SHA-256, exactly as loading that URL would (progress, the
// SHA-256 check, the Cache API).
//
// Where the manifest is (the "models base": a folder holding models/manifest.json, the `file` paths of its entries
// relative to that folder, as in this repository and in a model package):
//   options.modelsBase, else env.modelsBase: a folder URL or path; "{name}" in it is replaced by the model name, so
//     one setting covers a package per model on a CDN: 'https://cdn.jsdelivr.net/npm/attnlab-model-{name}@0.1.0/'
//   unset, in a browser: the page's own origin (/models/manifest.json, as the demo page serves it)
//   unset, in Node: the installed package attnlab-model-<name> (next to attnlab in node_modules), else the
//     working directory
import { AttnlabError, ERROR_CODES } from './errors.mjs';
import { download } from './download.mjs';
import { env, importNodeBuiltin, isNode } from './engine.mjs';

const MANIFEST = 'models/manifest.json';

/** A model name: lower-case letters and digits in hyphen-separated words; file names and URLs have a dot or a slash. */
export function isModelName(source) {
  return typeof source === 'string' && /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(source);
}

/** The npm package a model is distributed in (scripts/pack_models.mjs makes it). */
export const modelPackageName = (name) => `attnlab-model-${name}`;

const asFolder = (href) => (href.endsWith('/') ? href : `${href}/`);

async function nodeFileUrl(path) {
  const { pathToFileURL } = await importNodeBuiltin('url');
  return pathToFileURL(path);
}

async function exists(url) {
  const { access } = await importNodeBuiltin('fs/promises');
  return access(url).then(() => true, () => false);
}

// The installed model package's folder, found from this module (a sibling in node_modules) or from the working
// directory (the app's own node_modules), or null.
async function installedPackage(name) {
  const { createRequire } = await importNodeBuiltin('module');
  const { dirname, join } = await importNodeBuiltin('path');
  for (const from of [import.meta.url, join(process.cwd(), 'package.json')]) {
    try {
      return dirname(createRequire(from).resolve(`${modelPackageName(name)}/package.json`));
    } catch {
      // not installed where this resolution looks
    }
  }
  return null;
}

/** The folders (URLs) loadModel(name) reads models/manifest.json from, in order. */
export async function modelsBases(name, modelsBase = env.modelsBase) {
  if (modelsBase !== undefined && modelsBase !== null && modelsBase !== '') {
    const href = String(modelsBase).replaceAll('{name}', name);
    if (isNode && !/^[a-z][a-z0-9+.-]*:/i.test(href)) {
      const { resolve } = await importNodeBuiltin('path');
      return [new URL(asFolder((await nodeFileUrl(resolve(href))).href))];
    }
    return [new URL(asFolder(href), globalThis.location?.href)];
  }
  if (globalThis.location?.origin && globalThis.location.origin !== 'null') return [new URL('/', globalThis.location.origin)];
  if (isNode) {
    const bases = [];
    const installed = await installedPackage(name);
    if (installed) bases.push(new URL(asFolder((await nodeFileUrl(installed)).href)));
    bases.push(new URL(asFolder((await nodeFileUrl(process.cwd())).href)));
    return bases;
  }
  throw new Error(`attnlab: loading the model "${name}" by name needs env.modelsBase (the folder holding ${MANIFEST})`);
}

async function readManifest(url, { signal, timeout }) {
  let text;
  if (url.protocol === 'file:') {
    const { readFile } = await importNodeBuiltin('fs/promises');
    try {
      text = await readFile(url, 'utf8');
    } catch (error) {
      throw new Error(`attnlab: could not read ${url.href}: ${error.message}`);
    }
  } else {
    // Not through the Cache API: the manifest is what says which weights are current.
    const { bytes } = await download(url, { signal, timeout, cache: false });
    text = new TextDecoder().decode(bytes);
  }
  let manifest;
  try {
    manifest = JSON.parse(text);
  } catch (error) {
    throw new Error(`attnlab: ${url.href} is not JSON: ${error.message}`);
  }
  if (!Array.isArray(manifest?.models)) throw new Error(`attnlab: ${url.href} has no "models" list`);
  return manifest.models;
}

// The manifest entry of `name` with `dtype`: the entry whose id is the name (its default dtype) or, for another
// dtype, the one whose id is name-dtype (bahdanau-en-de is q8_0, bahdanau-en-de-f16 its f16 twin).
function findEntry(models, name, dtype, where) {
  const family = models.filter((entry) => entry?.id === name ||
                                          (typeof entry?.id === 'string' && entry.id === `${name}-${entry.dtype}`));
  if (family.length === 0) {
    const names = [...new Set(models.filter((entry) => typeof entry?.id === 'string').map((entry) =>
      (entry.id.endsWith(`-${entry.dtype}`) ? entry.id.slice(0, -entry.dtype.length - 1) : entry.id)))];
    throw new Error(`attnlab: ${where} lists no model named "${name}" (it lists ${names.join(', ') || 'none'})`);
  }
  const entry = dtype === undefined ? family.find((candidate) => candidate.id === name) ?? family[0]
    : family.find((candidate) => candidate.dtype === dtype);
  if (!entry) {
    throw new Error(`attnlab: the model "${name}" has no dtype ${dtype} in ${where} (it has ${family.map((e) => e.dtype).join(', ')})`);
  }
  if (typeof entry.file !== 'string' || !/^[0-9a-f]{64}$/i.test(entry.sha256 ?? '') || !(entry.bytes > 0)) {
    throw new Error(`attnlab: the model "${entry.id}" in ${where} is not published (no file, bytes and sha256)`);
  }
  return entry;
}

/**
 * Resolves a model name to { url, sha256, bytes, entry, base }: the weights' URL (a file: URL for a local folder), and
 * the size and SHA-256 the manifest gives for them.
 */
export async function resolveModelName(name, { dtype, modelsBase, signal, timeout = 0 } = {}) {
  if (dtype !== undefined && (typeof dtype !== 'string' || dtype === '')) {
    throw new AttnlabError(ERROR_CODES.BAD_OPTIONS, 'attnlab: dtype must be a string such as "q8_0" or "f16"');
  }
  const bases = await modelsBases(name, modelsBase);
  // Node's own guesses may hold no manifest; a folder the caller named must, and its error says why.
  const guessed = isNode && (modelsBase ?? env.modelsBase ?? '') === '';
  const tried = [];
  for (const base of bases) {
    const manifestUrl = new URL(MANIFEST, base);
    if (manifestUrl.protocol === 'file:' && guessed && !(await exists(manifestUrl))) {
      tried.push(manifestUrl.href);
      continue;
    }
    const models = await readManifest(manifestUrl, { signal, timeout });
    const entry = findEntry(models, name, dtype, manifestUrl.href);
    return { url: new URL(entry.file, base), sha256: entry.sha256.toLowerCase(), bytes: entry.bytes, entry, base };
  }
  throw new Error(`attnlab: the model "${name}" was not found: install ${modelPackageName(name)} or set ` +
                  `env.modelsBase (looked for ${tried.join(', ')})`);
}
