#!/usr/bin/env bash
# Exports the speech recognizer's checkpoint (attnlab.train.speech) to the two shipped files, checks their size and
# their parity with PyTorch, and scores both through the engine on every dev set (the numbers of models/speech-las.md):
#   bash models/ship_speech.sh [CHECKPOINT] [BEAM]   default $ATTNLAB_CKPT/speech-las/best.pt (ATTNLAB_CKPT: /work/ckpt, as in train_queue.sh), beam 4
# The files keep the CTC head, with the joint search's weight ATTNLAB_CTC_WEIGHT (default: the training loss's, 0.3).
# With ATTNLAB_LM=CHECKPOINT (attnlab.train.char_lm's best.pt, or a speech GGUF file: its LM, such as a copy of the
# shipped f16 file's) they also hold that character language model, which
# the search adds with weight ATTNLAB_LM_WEIGHT (default attnlab.gguf.speech.DEFAULT_LM_WEIGHT); the q8_0 file is then
# also scored without it (--lm-weight 0).
# writes models/weights/speech-las.{f16,q8_0}.gguf and appends attnlab.eval.speech's JSON lines (each file at its own
# CTC weight; the q8_0 file also with --ctc-weight 0, attention alone, and at beam 1) to
# build/eval/speech-las.jsonl and refreshes the manifest entries speech-las (q8_0) and speech-las-f16. Needs the
# native CLI (npm run build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD/python"   # the attnlab package
export OPENBLAS_NUM_THREADS=1
ckpt=${ATTNLAB_CKPT:-/work/ckpt}
checkpoint=${1:-$ckpt/speech-las/best.pt}
beam=${2:-4}
python=/usr/bin/python3
max_bytes=$((25 * 1000 * 1000))
mkdir -p build/eval
for dtype in f16 q8_0; do
  out=models/weights/speech-las.$dtype.gguf
  $python -m attnlab.export speech --checkpoint "$checkpoint" --dtype $dtype --out "$out" \
    ${ATTNLAB_CTC_WEIGHT:+--ctc-weight "$ATTNLAB_CTC_WEIGHT"} ${ATTNLAB_LM:+--lm "$ATTNLAB_LM"} \
    ${ATTNLAB_LM_WEIGHT:+--lm-weight "$ATTNLAB_LM_WEIGHT"}
  size=$(stat -c %s "$out")
  [ "$size" -le "$max_bytes" ] || { echo "ship_speech: $out is $size bytes, over the 25 MB limit" >&2; exit 1; }
done
node scripts/make_manifest.mjs
# The shipped files against PyTorch (dequantized weights) on the sample clips.
$python -m unittest tests.python.test_shipped_speech -q
synth=${ATTNLAB_SYNTH:-$ckpt/speech/synth}
for dtype in f16 q8_0; do
  $python -m attnlab.eval.speech --model "models/weights/speech-las.$dtype.gguf" --beam "$beam" \
    --synth "$synth" | tee -a build/eval/speech-las.jsonl
done
q8=models/weights/speech-las.q8_0.gguf
$python -m attnlab.eval.speech --model $q8 --beam "$beam" --ctc-weight 0 --synth "$synth" | tee -a build/eval/speech-las.jsonl
$python -m attnlab.eval.speech --model $q8 --beam 1 --synth "$synth" | tee -a build/eval/speech-las.jsonl
if [ -n "${ATTNLAB_LM:-}" ]; then
  $python -m attnlab.eval.speech --model $q8 --beam "$beam" --lm-weight 0 --synth "$synth" | tee -a build/eval/speech-las.jsonl
fi
