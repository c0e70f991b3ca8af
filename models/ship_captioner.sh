#!/usr/bin/env bash
# Exports a captioner checkpoint (attnlab.train.caption's best.pt, or an attnlab.train.average mean) to the two shipped
# files and measures both: Flickr8k test BLEU-1..4 with beam 3 from PyTorch on the stored grids and from the engine
# (CLI: JPEG decoding, resize, MobileNetV2 and decoder in C++), then where the attention goes when a caption
# names a dog (attnlab.eval.grounding through the engine, all 1000 test images).
#   bash models/ship_captioner.sh NAME CHECKPOINT [MEMBER...]
#   e.g. bash models/ship_captioner.sh captioner-flickr8k /work/ckpt/captioner-7e/shipped.pt
# MEMBER checkpoints join CHECKPOINT's decoder as an ensemble in the same file (attnlab.export caption --member).
# Writes models/weights/NAME.{f16,q8_0}.gguf (with the ImageNet classifier where it fits in 25 MB) and the printed results to build/eval/NAME.txt.
# Needs the native CLI (npm run build) and the grids of attnlab.data.features (FEATURES in the environment,
# default /work/ckpt/features). EXPORT_OPTIONS in the environment go to attnlab.export caption as they are
# (e.g. "--no-repeat-ngram 3"). Then list the files in models/manifest.json and run node scripts/make_manifest.mjs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD/python"   # the attnlab package
name=$1
checkpoint=$2
shift 2
members=()
for member in "$@"; do members+=(--member "$member"); done
features=${FEATURES:-/work/ckpt/features}
python=/usr/bin/python3
mkdir -p build/eval
log=build/eval/$name.txt
max_bytes=$((25 * 1000 * 1000))
for dtype in f16 q8_0; do
  out=models/weights/$name.$dtype.gguf
  # With MobileNetV2's ImageNet classifier (what the encoder recognises, shown beside the caption) wherever the
  # file stays within the 25 MB limit; the two-decoder f16 file does not (24.4 MB + 2.6 MB).
  for classifier in --classifier ""; do
    # shellcheck disable=SC2086  # EXPORT_OPTIONS is a list of flags
    $python -m attnlab.export caption --checkpoint "$checkpoint" "${members[@]}" ${EXPORT_OPTIONS:-} $classifier \
      --dtype $dtype --out "$out"
    [ "$(stat -c %s "$out")" -le "$max_bytes" ] && break
    [ -n "$classifier" ] || { echo "ship_captioner: $out is over the 25 MB limit" >&2; exit 1; }
    echo "ship_captioner: $out is over 25 MB with the classifier; exported without it"
  done
done
for dtype in f16 q8_0; do
  file=models/weights/$name.$dtype.gguf
  { echo "== $file, PyTorch decoder on the stored grids"
    $python -m attnlab.eval.caption --gguf "$file" --features "$features" --beam 3 | tail -n 1
    echo "== $file, engine"
    $python -m attnlab.eval.caption --engine "$file" --beam 3 | tail -n 1
    echo "== $file, attention grounding (engine)"
    $python -m attnlab.eval.grounding --engine "$file" --features "$features" | tail -n 6
  } | tee -a "$log"
done
