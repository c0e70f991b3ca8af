#!/usr/bin/env bash
# Exports a translator checkpoint (an RNN's from attnlab.train.rnn or a Transformer's from attnlab.train.transformer) to
# the two shipped files and scores both through the engine (greedy and beam 5):
#   bash models/ship_translator.sh NAME CHECKPOINT   e.g. bash models/ship_translator.sh bahdanau-de-en /work/ckpt/bahdanau-de-en/best.pt
# writes models/weights/NAME.{f16,q8_0}.gguf and appends attnlab.eval.engine's JSON lines to build/eval/NAME.jsonl.
# A model trained on the broad corpus (Tatoeba + Multi30k) is scored with beam 5 on the Tatoeba test split and on
# Multi30k's test2016 (both files), and on newstest2013 (q8_0), instead of greedy and beam 5 on its own test split.
# Needs the native CLI (npm run build). Then list the files in models/manifest.json and run node scripts/make_manifest.mjs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD/python"   # the attnlab package
name=$1
checkpoint=$2
python=/usr/bin/python3
mkdir -p build/eval
# "translator": the export reads the family from the checkpoint (a Transformer's config has d_model, an RNN's not).
for dtype in f16 q8_0; do
  $python -m attnlab.export translator --checkpoint "$checkpoint" --dtype $dtype --out "models/weights/$name.$dtype.gguf"
done
corpus=$($python -c "import sys; from attnlab.eval.translate import training_corpus; print(training_corpus(sys.argv[1]) or '')" \
  "models/weights/$name.f16.gguf")
score() { $python -m attnlab.eval.engine --model "models/weights/$name.$1.gguf" "${@:2}" | tee -a "build/eval/$name.jsonl"; }
if [ "$corpus" = broad ]; then
  for dtype in f16 q8_0; do
    score $dtype --beam 5
    score $dtype --beam 5 --corpus multi30k
  done
  score q8_0 --beam 5 --split newstest2013
else
  for dtype in f16 q8_0; do
    for beam in 1 5; do score $dtype --beam $beam; done
  done
fi
