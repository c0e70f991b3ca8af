#!/usr/bin/env bash
# What a lexical shortlist would cost in BLEU and save in output-projection rows (issue 20's untried lever), measured in
# PyTorch on the shipped translators before the engine has one: builds the tables from the broad training pairs
# (attnlab.data.shortlist) and decodes each test set in 8-sentence paragraphs, beam 4, with and without the
# paragraph's union (attnlab.eval.shortlist). One JSON line per model, set and table; docs/performance.md quotes them.
#   bash bench/shortlist_quality.sh [--limit N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD/python"
python=/usr/bin/python3
[ -d build/data/broad ] || $python -m attnlab.data.prepare
mkdir -p build/shortlist
for table in en-de:64:1000 en-de:32:500 de-en:64:1000; do
  IFS=: read -r pair per_source frequent <<< "$table"
  out=build/shortlist/broad.$pair.$per_source-$frequent.npz
  [ -f "$out" ] || $python -m attnlab.data.shortlist --pair "$pair" --corpus broad --per-source "$per_source" \
    --frequent "$frequent" --out "$out"
done
run() { $python -m attnlab.eval.shortlist --threads 1 "$@"; }
for corpus in broad multi30k; do
  for table in 64-1000 32-500; do
    run --model models/weights/transformer-en-de.q8_0.gguf --shortlist build/shortlist/broad.en-de.$table.npz --corpus $corpus "$@"
  done
  run --model models/weights/bahdanau-en-de.q8_0.gguf --shortlist build/shortlist/broad.en-de.64-1000.npz --corpus $corpus "$@"
  run --model models/weights/transformer-de-en.q8_0.gguf --shortlist build/shortlist/broad.de-en.64-1000.npz --corpus $corpus "$@"
done
