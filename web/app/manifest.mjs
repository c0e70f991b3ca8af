// The model list (models/manifest.json, served at /models/): which models exist, which are published, and where
// their weights are.
const MANIFEST_URL = '/models/manifest.json';

// Manifest entries of the score-function comparison: same data, size and epochs, only the score differs.
export const COMPARE_GROUP = 'score-functions';

export async function readManifest() {
  const response = await fetch(MANIFEST_URL, { cache: 'no-cache' });
  if (!response.ok) throw new Error(`could not read the model list (HTTP ${response.status})`);
  const { models } = await response.json();
  return Array.isArray(models) ? models : [];
}

/** An entry whose weights are published (a size and a checksum to check them against). */
export const available = (entry) => entry.bytes > 0 && !!entry.sha256;

// Manifest paths are repo-relative (models/weights/...), and the server maps /models/ to the models folder.
export const modelUrl = (entry) => `/${entry.file}`;

/** loadModel's options for an entry's file: its size and checksum, and the translation shortlist it names. */
export const loadOptionsFor = (entry) => ({
  sha256: entry.sha256, bytes: entry.bytes,
  ...(entry.shortlist?.sha256 ? { shortlist: `/${entry.shortlist.file}`, shortlistSha256: entry.shortlist.sha256 } : {}),
});
