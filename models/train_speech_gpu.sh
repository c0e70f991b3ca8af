#!/usr/bin/env bash
# The speech recognizer on a CUDA GPU machine that has PyTorch but neither the TTS engines nor ../shared/data:
# the MFCC stores travel compact (attnlab.data.speech_features_compact), two model sizes train side by side on
# the one GPU for a fixed wall-clock budget, and each run's best weights (by the trainer's pooled greedy dev CER)
# come back as float32 chunks under 15 MiB, with the logs. models/speech-las.md says how the shipped file was made.
#
#   here:  python3 -m attnlab.data.speech_features_compact pack FEATURES .device/speech-compact
#   there: bash models/train_speech_gpu.sh .device/speech-compact OUT MINUTES
#          bash models/train_speech_gpu.sh .device/speech-compact OUT MINUTES NAME:PREFIX   (goes on from a run's
#          chunks, NAME's best weights, at a lower rate: the second call of a lease; PREFIX may instead be a speech
#          GGUF file, e.g. a copy of the shipped models/weights/speech-las.f16.gguf carried in .device)
#   here:  python3 -m attnlab.train.checkpoint_chunks join OUT/NAME CHECKPOINT.pt    (then models/ship_speech.sh)
# ATTNLAB_SPEECH_SIZES replaces the two fresh runs: entries "NAME:TRAINER FLAGS" separated by ";", e.g. the same size
# with two and with three listener layers, side by side on one budget:
#   ATTNLAB_SPEECH_SIZES="las-320:--enc-hidden 320 --dec-hidden 512 --emb 128 --attn-dim 256 --dropout 0.25;
#   las-320-l3:--enc-hidden 320 --dec-hidden 512 --emb 128 --attn-dim 256 --dropout 0.25 --listener-layers 3"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
compact=$1 out=$2 minutes=$3 continue=${4:-}
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
work=${ATTNLAB_GPU_WORK:-/tmp/attnlab-speech}
mkdir -p "$out" "$work"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
python3 -m attnlab.data.speech_features_compact unpack "$compact" "$work/features"

train=(python3 -m attnlab.train.speech --features "$work/features" --device cuda --threads 2)
hours=$(python3 -c "print($minutes / 60)")
if [ -n "$continue" ]; then
  name=${continue%%:*}-continued
  init=${continue#*:}
  if [[ $init != *.gguf ]]; then
    python3 -m attnlab.train.checkpoint_chunks join "$init" "$work/init.pt"
    init=$work/init.pt
  fi
  timeout $((minutes * 60 + 60)) "${train[@]}" --out "$work/$name" --init "$init" --max-hours "$hours" \
    --real-repeat 2 --max-frames 40000 --lr 3e-4 --warmup 100 --epoch-decay 0.8 --patience 6 --epochs 200 \
    --dev-limit 800 --log-every 25 --save-minutes 100 > "$out/$name.log" 2>&1 || echo "the run exited with $?"
  grep "dev CER" "$out/$name.log" | cut -c1-200 || true
  python3 -m attnlab.train.checkpoint_chunks split "$work/$name/best.pt" "$out/$name"
  exit
fi
# A few batches and one dev pass first: a failure costs seconds, not the budget.
if ! "${train[@]}" --out "$work/smoke" --limit-train 256 --epochs 1 --dev-limit 32 --max-frames 40000 > "$out/smoke.log" 2>&1; then
  tail -30 "$out/smoke.log"
  exit 1
fi
tail -3 "$out/smoke.log"

recipe=(--real-repeat 2 --max-frames 40000 --lr 1e-3 --warmup 400 --epoch-decay 0.85 --patience 6 --epochs 200
        --dev-limit 800 --log-every 25 --save-minutes 100)
sizes=("las-256:--enc-hidden 256 --dec-hidden 512 --emb 128 --attn-dim 256 --dropout 0.2"
       "las-320:--enc-hidden 320 --dec-hidden 512 --emb 128 --attn-dim 256 --dropout 0.25")
if [ -n "${ATTNLAB_SPEECH_SIZES:-}" ]; then
  IFS=';' read -r -a sizes <<< "${ATTNLAB_SPEECH_SIZES//$'\n'/}"
fi
for i in "${!sizes[@]}"; do
  sizes[i]=$(echo "${sizes[i]}" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
  [[ ${sizes[i]} =~ ^[A-Za-z0-9._-]+:.+ ]] || { echo "ATTNLAB_SPEECH_SIZES: '${sizes[i]}' is not NAME:FLAGS" >&2; exit 2; }
done
pids=()
for size in "${sizes[@]}"; do
  name=${size%%:*}
  # shellcheck disable=SC2086  (the flags split into words)
  timeout $((minutes * 60 + 90)) "${train[@]}" --out "$work/$name" --max-hours "$hours" "${recipe[@]}" ${size#*:} \
    > "$out/$name.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || echo "a run exited with $?"; done
for size in "${sizes[@]}"; do
  name=${size%%:*}
  grep "dev CER" "$out/$name.log" | tail -4 || true
  [ -f "$work/$name/best.pt" ] && python3 -m attnlab.train.checkpoint_chunks split "$work/$name/best.pt" "$out/$name"
done
ls -la "$out"
