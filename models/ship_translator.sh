#!/usr/bin/env bash
# Exports a translator checkpoint (an RNN's from train_rnn.py or a Transformer's from train_transformer.py) to the two
# shipped files and scores both through the engine (greedy and beam 5):
#   bash models/ship_translator.sh NAME CHECKPOINT   e.g. bash models/ship_translator.sh bahdanau-de-en /work/ckpt/bahdanau-de-en/best.pt
# writes models/weights/NAME.{f16,q8_0}.gguf and appends evaluate_engine.py's JSON lines to build/eval/NAME.jsonl.
# Needs the native CLI (npm run build). Then list the files in models/manifest.json and run node scripts/make_manifest.mjs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
name=$1
checkpoint=$2
python=/usr/bin/python3
mkdir -p build/eval
# A Transformer checkpoint's config has d_model; an RNN's does not.
exporter=$($python -c 'import sys, torch; c = torch.load(sys.argv[1], map_location="cpu")["config"]
print("models/export_transformer.py" if "d_model" in c else "models/export_rnn.py")' "$checkpoint")
for dtype in f16 q8_0; do
  $python $exporter --checkpoint "$checkpoint" --dtype $dtype --out "models/weights/$name.$dtype.gguf"
done
for dtype in f16 q8_0; do
  for beam in 1 5; do
    $python models/evaluate_engine.py --model "models/weights/$name.$dtype.gguf" --beam $beam | tee -a "build/eval/$name.jsonl"
  done
done
