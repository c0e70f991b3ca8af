// The Translate tab's step-by-step view, under its heatmap: play / step / back through the output while the
// heatmap lights the row of the token being written and the bars under the controls draw that row's weights;
// then the beam search's tree of the same translation. Fed each result the tab shows (main.mjs wires it).
import { matrixRow } from '/lib/index.mjs';
import { byId } from '/app/ui.mjs';
import { clearHeatmap, lightHeatmap } from '/app/widgets/heatmap.mjs';
import { drawBeamTree, drawStepRow, drawStepper, winningPath } from '/app/widgets/decoding.mjs';

const signed = (x) => (x < 0 ? `−${(-x).toFixed(3)}` : x.toFixed(3));

/** beam(): the beam width the translation was made with. Returns { show(translation | null, entry) }. */
export function setupTranslateSteps({ beam }) {
  const box = byId('translate-steps');
  let stepper = null;
  function show(t, entry) {
    stepper?.stop();
    stepper = null;
    if (!t || !entry) {
      box.hidden = true;
      return;
    }
    box.hidden = false;
    const heatmap = byId('translate-heatmap');
    const tree = t.beamTree;
    const path = tree ? winningPath(tree) : [];
    const width = beam();
    const drawn = drawBeamTree(byId('translate-beam-tree'), tree, {
      beam: width, lang: entry.tgt, name: `attnlab-${entry.id}-beam-tree`, title: `${t.text} (beam ${width})`,
    });
    stepper = drawStepper(byId('translate-stepper'), {
      pieces: t.targetTokens, lang: entry.tgt, label: 'Translation',
      describe: (i) => {
        const node = tree?.nodes[path[i]];
        if (!node) return '';
        const others = tree.nodes.filter((n) => n.step === i).length - 1;
        return `log p ${signed(node.logProbability)}, Σ log p ${signed(node.cumulative)}` +
               (others > 0 ? `; ${others} other hypothes${others === 1 ? 'is' : 'es'} kept at this step.` : '.');
      },
      onStep: (i) => {
        drawStepRow(byId('translate-step-row'), { pieces: t.sourceTokens, weights: i === null ? null : matrixRow(t.attention, i), lang: entry.src });
        drawn.mark(i);
        if (i === null) clearHeatmap(heatmap);
        else lightHeatmap(heatmap, i, null);
      },
    });
  }
  return { show };
}
