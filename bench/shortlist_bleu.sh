#!/usr/bin/env bash
# What the shipped shortlists (models/weights/<pair>.shortlist.gguf) cost in BLEU and gain in time, through the
# engine: the native CLI translates each test set (Tatoeba test, Multi30k test2016, newstest2013) with beam 4 in
# paragraphs of 8 lines (`--batch 8`: stdin lines are decoded 8 at a time, so each paragraph has its own union),
# once over the whole vocabulary and once with `--shortlist`, for each shipped EN<->DE Bahdanau and Transformer
# (q8_0). One JSON line per model and set: BLEU 13a both ways, the share of identical outputs, seconds both ways.
#   bash bench/shortlist_bleu.sh [--limit N] [MODEL...]   (MODEL: bahdanau-en-de, ..., transformer-de-en; default all four;
#   needs npm run build and the prepared data: python -m attnlab.data.prepare)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD/python"
limit=0
[ "${1:-}" = --limit ] && { limit=$2; shift 2; }
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(bahdanau-en-de bahdanau-de-en transformer-en-de transformer-de-en)
cli=build/native/attnlab
out=build/shortlist/bleu
mkdir -p "$out"
lscpu | grep -E 'Model name|L2|L3' | sed 's/  */ /g'
for model in "${models[@]}"; do
  pair=${model#*-}
  src=${pair%-*} tgt=${pair#*-}
  for set in broad/test multi30k/test2016 broad/newstest2013; do
    input=build/data/$set.$src
    [ "$limit" -gt 0 ] && { head -n "$limit" "$input" > "$out/input.txt"; input=$out/input.txt; }
    name=$model.${set//\//-}
    for mode in full shortlist; do
      args=(translate --model "models/weights/$model.q8_0.gguf" --beam 4 --batch 8)
      [ $mode = shortlist ] && args+=(--shortlist "models/weights/$pair.shortlist.gguf")
      start=$(date +%s%N)
      "$cli" "${args[@]}" < "$input" > "$out/$name.$mode.txt"
      echo $(( ($(date +%s%N) - start) / 1000000 )) > "$out/$name.$mode.ms"
    done
    /usr/bin/python3 - "$out/$name" "build/data/$set.$tgt" "$model" "$set" <<'PY'
import json, sys
from attnlab.eval.bleu import bleu_13a
base, ref_path, model, test_set = sys.argv[1:]
full = open(base + ".full.txt", encoding="utf-8").read().splitlines()
short = open(base + ".shortlist.txt", encoding="utf-8").read().splitlines()
refs = open(ref_path, encoding="utf-8").read().splitlines()[:len(full)]
seconds = {m: float(open(f"{base}.{m}.ms").read()) / 1000 for m in ("full", "shortlist")}
print(json.dumps({"model": model + ".q8_0", "set": test_set, "sentences": len(full),
                  "bleu_full": round(bleu_13a(full, refs), 2), "bleu_shortlist": round(bleu_13a(short, refs), 2),
                  "identical": round(sum(a == b for a, b in zip(full, short)) / len(full), 3),
                  "seconds_full": round(seconds["full"], 1), "seconds_shortlist": round(seconds["shortlist"], 1)}))
PY
  done
done
