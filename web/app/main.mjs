// The page: every number drawn here comes from the engine (web/lib); each tab (web/app/tabs/*.mjs) lays out its
// own part. This file only wires them together: the tab strip, the model list, and the one model cache they share.
import { loadModel } from '/lib/index.mjs';
import { byId, statusLine, createModelCache } from '/app/ui.mjs';
import { available, loadOptionsFor, modelUrl, readManifest } from '/app/manifest.mjs';
import { setupTabs } from '/app/widgets/tablist.mjs';
import { setupTranslate } from '/app/tabs/translate.mjs';
import { setupExplain } from '/app/tabs/explain.mjs';
import { setupExplainHead } from '/app/tabs/explain_head.mjs';
import { setupCompare } from '/app/tabs/compare.mjs';
import { setupSideBySide } from '/app/tabs/side_by_side.mjs';
import { setupSelfAttention } from '/app/tabs/selfattention.mjs';
import { setupCaption } from '/app/tabs/caption.mjs';
import { setupSpeech } from '/app/tabs/speech.mjs';
import { setupEngine } from '/app/tabs/engine.mjs';
import { setupTranslateSteps } from '/app/tabs/translate_steps.mjs';
import { openRequestedTab } from '/app/widgets/tablist.mjs';
import { registerOfflineCopy } from '/app/offline.mjs';

// One download and one Model per id for the whole page: every tab shares them (see createModelCache).
// A translator whose entry names a shortlist decodes with it (docs/decoding.md): the page's translations are the
// engine's fastest.
const { getModel, loaded } = createModelCache((entry, options) =>
  loadModel(modelUrl(entry), { ...loadOptionsFor(entry), ...options }));

// The Translate tab's beam width (the Score functions tab has its own).
const beam = () => Number(byId('beam-select').value);

async function start() {
  const explain = setupExplain();
  const explainHead = setupExplainHead();
  const engine = setupEngine({ loaded });
  registerOfflineCopy();
  setupTabs({ onShow: { explain: () => { explain.render(); explainHead.render(); }, engine: engine.show } });

  let manifest;
  try {
    manifest = await readManifest();
  } catch (error) {
    statusLine('model')(error.message, { error: true });
    return;
  }
  engine.setManifest(manifest);
  const translators = manifest.filter((entry) => entry.task === 'translate');
  const shared = { getModel, available };
  setupCaption({ entries: manifest.filter((entry) => entry.task === 'caption'), ...shared });
  setupSpeech({ entries: manifest.filter((entry) => entry.task === 'transcribe'), ...shared });
  setupCompare({ entries: translators, ...shared });
  setupSideBySide({ entries: translators, ...shared });
  setupSelfAttention({ entries: translators.filter((entry) => entry.arch === 'transformer'), ...shared,
                       onNeuron: explainHead.show });
  openRequestedTab();  // a shared link's tab, once the tabs its models enable are enabled
  const steps = setupTranslateSteps({ beam });
  await setupTranslate({
    entries: translators, beam, ...shared,
    onTranslation: (translation, entry) => {
      explain.show(translation, entry);
      steps.show(translation, entry);
    },
    onShare: explain.setShared,
    onExplain: (row) => {
      explain.select(row);
      byId('tab-btn-explain').click();  // shows the tab, which renders the word
    },
  });
}

start();
