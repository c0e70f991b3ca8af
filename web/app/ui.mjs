// What the page's tabs share: DOM helpers (text only: nothing from a model or a user goes through innerHTML),
// token labels, status lines, the page-wide model cache and the per-tab model loader. No DOM is touched at import
// time, and the cache takes its load function as a parameter, so this file also imports in Node.

export const byId = (id) => document.getElementById(id);

export function el(tag, { className, text, attrs } = {}, children = []) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  for (const [key, value] of Object.entries(attrs ?? {})) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}

export function formatBytes(n) {
  if (!n) return '0 B';
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(0)} kB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

// An error's message in an error box, or the box hidden when error is null.
export function showError(node, error) {
  node.textContent = error ? (error.message ?? String(error)) : '';
  node.hidden = !error;
}

// ---------------------------------------------------------------- tokens

// SentencePiece marks a word start with "▁"; any other piece continues the previous word.
export const startsWord = (piece) => piece.startsWith('▁');
export const continuesWord = (piece) => !startsWord(piece) && piece !== '</s>' && piece !== '<s>';
// SentencePiece's rule, as the detokenizer joins: a piece without "▁" is written onto the word before it, unless
// either is a special token.
export const attachesToPrevious = (piece, previous) =>
  continuesWord(piece) && (startsWord(previous) || continuesWord(previous));

// A piece as a word: without the "▁", the special tokens spelled out. continuation: '' shows a continuing piece
// as it is (for layouts that join it to the previous one, see continuesWord); '·' marks it where nothing can
// join it (a canvas).
export function tokenLabel(piece, { continuation = '' } = {}) {
  if (piece === '</s>') return '⟨end⟩';
  if (piece === '<s>') return '⟨s⟩';
  if (startsWord(piece)) return piece.slice(1) || '␣';
  return `${continuation}${piece}`;
}

/**
 * Pieces as the text the detokenizer writes: a piece starting with "▁" starts a word (a space before it), any
 * other piece attaches to the one before ("Strand" "." reads "Strand."). The special tokens stay spelled out as
 * words of their own (a source's ⟨end⟩ is a position the figures draw).
 */
export function joinPieces(pieces) {
  let text = '';
  for (const [i, piece] of pieces.entries()) {
    const attach = i > 0 && attachesToPrevious(piece, pieces[i - 1]);
    // A bare "▁" is the space alone (its word's letters follow as continuing pieces): no "␣" in running text.
    text += `${i === 0 || attach ? '' : ' '}${piece === '▁' ? '' : tokenLabel(piece)}`;
  }
  return text;
}

/**
 * Fills select with one option per index 0..count-1, reading "<name> k of count" (the layer and head pickers of
 * the Transformer views), and selects value.
 */
export function fillCountOptions(select, count, name, value) {
  select.replaceChildren(...Array.from({ length: count }, (_, k) => el('option', { text: `${name} ${k + 1} of ${count}`, attrs: { value: k } })));
  select.value = String(value);
}

// ---------------------------------------------------------------- status lines

// A status line made of #PREFIX-status (the box: .error, data-source "cache" | "network"), #PREFIX-status-text and
// the <progress> #PREFIX-progress, shown only while there is a fraction to show. retry: a function to offer as a
// "Retry" button after the text (a failed download must not be a dead end).
export function statusLine(prefix) {
  return (text, { progress = null, source = null, error = false, retry = null } = {}) => {
    byId(`${prefix}-status-text`).textContent = text;
    const status = byId(`${prefix}-status`);
    let again = byId(`${prefix}-retry`);
    if (retry) {
      if (!again) {
        again = el('button', { className: 'chip retry', text: 'Retry', attrs: { type: 'button', id: `${prefix}-retry`,
                                                                                 'data-testid': `${prefix}-retry` } });
        status.append(again);
      }
      again.onclick = () => retry();
    } else {
      again?.remove();
    }
    const bar = byId(`${prefix}-progress`);
    bar.hidden = progress === null;
    if (progress !== null) bar.value = progress;
    status.classList.toggle('error', error);
    if (source) status.dataset.source = source;
    else delete status.dataset.source;
  };
}

// ---------------------------------------------------------------- the page-wide model cache

/**
 * One download and one Model per manifest id, shared by every tab. load(entry, { onProgress, signal }) starts
 * it (the signal is the cache's own, never a tab's). getModel(entry, { onProgress, signal } = {}) joins it:
 * onProgress sees the latest progress at once and every later update, whoever started the download; a caller's
 * signal only stops that caller waiting (its promise rejects), and the download itself is aborted when no caller
 * is left waiting for it. A failed or aborted load leaves the cache, so the next getModel() tries again.
 */
export function createModelCache(load) {
  const records = new Map();  // id -> { promise, controller, listeners, waiting, last, settled }

  function start(entry) {
    const record = { controller: new AbortController(), listeners: new Set(), waiting: 0, last: null, settled: false };
    const onProgress = (progress) => {
      record.last = progress;
      for (const listener of record.listeners) {
        try {
          listener(progress);
        } catch (error) {
          queueMicrotask(() => { throw error; });  // one tab's bug must not stop the download or the others
        }
      }
    };
    record.promise = Promise.resolve()
      .then(() => load(entry, { onProgress, signal: record.controller.signal }))
      .then((model) => {
        record.settled = true;
        // Abandoned while the engine was starting (the abort came too late to stop it): nobody can reach it.
        if (records.get(entry.id) !== record) model?.terminate?.();
        return model;
      }, (error) => {
        record.settled = true;
        if (records.get(entry.id) === record) records.delete(entry.id);
        throw error;
      });
    record.promise.catch(() => {});  // a rejection nobody waits for is not an unhandled one
    records.set(entry.id, record);
    return record;
  }

  function abandon(record, id) {
    if (record.settled || record.waiting > 0) return;
    if (records.get(id) === record) records.delete(id);  // at once, so a new caller starts afresh
    record.controller.abort(new Error(`attnlab: loading ${id} was aborted`));
  }

  function getModel(entry, { onProgress, signal } = {}) {
    if (signal?.aborted) return Promise.reject(new Error(`attnlab: loading ${entry.id} was aborted`));
    const record = records.get(entry.id) ?? start(entry);
    if (record.settled) return record.promise;
    record.waiting += 1;
    if (onProgress) {
      record.listeners.add(onProgress);
      if (record.last) onProgress(record.last);
    }
    return new Promise((resolve, reject) => {
      let done = false;
      const leave = () => {
        if (done) return false;
        done = true;
        record.waiting -= 1;
        if (onProgress) record.listeners.delete(onProgress);
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const onAbort = () => {
        if (!leave()) return;
        // Checked once the code that aborted has run on: a tab that cancels and asks for the same model again
        // at once keeps the download.
        queueMicrotask(() => abandon(record, entry.id));
        reject(signal.reason instanceof Error ? signal.reason : new Error(`attnlab: loading ${entry.id} was aborted`));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      record.promise.then((model) => { if (leave()) resolve(model); },
                          (error) => { if (leave()) reject(error); });
    });
  }

  // loaded(): the ids whose Model is ready, for the Engine tab.
  const loaded = () => [...records].filter(([, record]) => record.settled).map(([id]) => id);
  return { getModel, has: (id) => records.has(id), loaded };
}

// ---------------------------------------------------------------- a tab's model loader

/**
 * Loads the model a tab selected and reports it on the tab's status line. load(entry) -> Promise<Model | null>:
 * null when the entry is missing or not available, when the load failed (the status shows why), or when a later
 * load() or cancel() replaced it (the tab stops waiting; the shared download goes on if another tab needs it).
 * isReady(entry): the last load() was for this entry and it finished. ensure(entry): the entry's model, loaded
 * once: calls for the entry the last ensure() asked for share its load, and a load that gave null (failed,
 * aborted, replaced) is started again by the next call; cancel() forgets it too.
 *
 * getModel, available: the page's shared cache and check; setStatus: a statusLine(); noneText: what to say when
 * there is no entry; isCurrent(entry): whether the tab still shows this entry; retry(): what the status line's
 * Retry button does after a failed load (the tab's own select, which also re-enables its controls).
 */
export function createModelLoader({ getModel, available, setStatus, noneText, isCurrent, retry = null }) {
  let controller = null;
  let ready = null;
  let held = null;  // ensure()'s { entry, promise }

  function cancel() {
    controller?.abort();
    controller = null;
    ready = null;
    held = null;
  }

  async function load(entry) {
    cancel();
    if (!entry || !available(entry)) {
      setStatus(entry ? `${entry.label ?? entry.id} is not available yet.` : noneText);
      return null;
    }
    const mine = new AbortController();
    controller = mine;
    const label = entry.label ?? entry.id;
    setStatus(`Loading ${label}…`, { progress: 0 });
    const started = performance.now();
    try {
      const model = await getModel(entry, {
        signal: mine.signal,
        onProgress: ({ loaded, total }) => {
          if (mine.signal.aborted) return;
          setStatus(`Downloading ${label}: ${formatBytes(loaded)} of ${formatBytes(total)}`,
                    { progress: total ? loaded / total : 0 });
        },
      });
      if (mine.signal.aborted || !isCurrent(entry)) return null;
      setStatus(`${label} ready (${formatBytes(entry.bytes)}, ${model.fromCache ? 'from cache' : 'downloaded'}, ` +
                `${Math.round(performance.now() - started)} ms)`, { source: model.fromCache ? 'cache' : 'network' });
      ready = entry;
      return model;
    } catch (error) {
      if (!mine.signal.aborted) setStatus(error.message, { error: true, retry: retry ?? (() => load(entry)) });
      return null;
    }
  }

  function ensure(entry) {
    if (held?.entry !== entry) {
      const promise = load(entry).then((model) => {  // load() cancels first, so `held` is set after it
        if (!model && held?.promise === promise) held = null;
        return model;
      });
      held = { entry, promise };
    }
    return held.promise;
  }

  return { load, ensure, cancel, isReady: (entry) => !!entry && ready === entry };
}
