#!/usr/bin/env bash
# Where the npm API's time goes, by function, in wasm: relinks build/wasm's engine with function names
# (--profiling-funcs, into build/profile/dist), translates the first 48 test2016 sentences greedily through the
# module in Node under --cpu-prof, and prints each function's share of the samples. --paragraphs profiles the
# paragraph benchmark's work instead: 6 paragraphs of 8 sentences, beam 4, through translate(texts[]); --encoder
# the call bench_translate.mjs measures the encoder with: translate(text, { beam: 1, maxLength: 1 }), the encoder and
# one step, 30 times over the 48 sentences; with --shortlist FILE, the model decodes with that translation shortlist;
# --link-only stops after the relink (the named build in build/profile/web, which bench/profile_load.mjs --root
# build/profile serves).
#   bash bench/profile_api.sh [MODEL.gguf] [--paragraphs | --encoder] [--shortlist FILE] [--link-only]
#   (default: the shipped Bahdanau EN->DE f16; needs npm run build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NODE_PATH=/usr/share/nodejs
model=models/weights/bahdanau-en-de.f16.gguf
mode=sentences
shortlist=
while [ $# -gt 0 ]; do
  case "$1" in
    --paragraphs) mode=paragraphs ;;
    --encoder) mode=encoder ;;
    --shortlist) shortlist=$2; shift ;;
    --link-only) mode=none ;;
    *) model=$1 ;;
  esac
  shift
done
out=build/profile
rm -rf "$out" && mkdir -p "$out/web/dist" "$out/cpu"
cp -r web/lib "$out/web/lib"
link=$(sed -e "s#-o [^ ]*attnlab.mjs#-o $PWD/$out/web/dist/attnlab.mjs#" build/wasm/CMakeFiles/attnlab_wasm.dir/link.txt)
(cd build/wasm && eval "${link/em++ /em++ --profiling-funcs }")
[ "$mode" = none ] && exit 0
cat > "$out/run.mjs" <<'JS'
import { readFileSync } from 'node:fs';
const { loadModel } = await import(new URL('./web/lib/index.mjs', import.meta.url));
const lines = readFileSync('build/data/multi30k/test2016.en', 'utf8').split('\n').filter(Boolean).slice(0, 48);
const shortlist = process.argv[4] ? readFileSync(process.argv[4]) : undefined;
const model = await loadModel(readFileSync(process.argv[2]), { useWorker: false, shortlist });
if (process.argv[3] === 'paragraphs') {
  for (let p = 0; p < 6; ++p) await model.translate(lines.slice(p * 8, p * 8 + 8), { beam: 4 });
} else if (process.argv[3] === 'encoder') {
  for (let round = 0; round < 30; ++round) for (const line of lines) await model.translate(line, { beam: 1, maxLength: 1 });
} else {
  for (const line of lines) await model.translate(line, { beam: 1 });
}
JS
node --cpu-prof --cpu-prof-dir="$out/cpu" "$out/run.mjs" "$model" "$mode" $shortlist
lscpu | grep -E 'Model name|L2|L3' | sed 's/  */ /g'
/usr/bin/python3 - "$out/cpu" <<'PY'
import collections, glob, json, sys
profile = json.load(open(glob.glob(sys.argv[1] + "/*.cpuprofile")[0]))
names = {n["id"]: n["callFrame"]["functionName"] or "(anonymous)" for n in profile["nodes"]}
time = collections.Counter()
for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
    time[names[sample]] += delta
total = sum(time.values())
for name, t in time.most_common(20):
    print(f"{100 * t / total:5.1f}%  {name[:120]}")
PY
