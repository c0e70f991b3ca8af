#!/usr/bin/env bash
# Runs every training job (translators, Transformers, feature extraction, captioner) one after another on this 2-core machine, each resuming from its last checkpoint, so the
# same command continues the whole queue after an interruption (a session's processes end when it stops).
# Finished jobs exit at once (their scripts detect early stopping / epoch limits in the checkpoint).
#
#   nohup bash models/train_queue.sh > /work/ckpt/queue.out 2>&1 &
#
# Checkpoints go to $ATTNLAB_CKPT (default /work/ckpt), outside the repository.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ckpt=${ATTNLAB_CKPT:-/work/ckpt}
mkdir -p "$ckpt"
python=/usr/bin/python3

features=$ckpt/features
jobs=(
  "bahdanau-en-de|models/train_rnn.py --pair en-de"
  "features|models/extract_features.py --out $features"
  "bahdanau-de-en|models/train_rnn.py --pair de-en"
  "transformer-de-en|models/train_transformer.py --pair de-en"
  "captioner|models/train_caption.py --features $features --max-hours 12"
  "bahdanau-en-zh|models/train_rnn.py --pair en-zh"
  "transformer-en-de|models/train_transformer.py --pair en-de"
  "luong-dot-en-de|models/train_rnn.py --pair en-de --score dot"
  "luong-general-en-de|models/train_rnn.py --pair en-de --score general"
  "cosine-en-de|models/train_rnn.py --pair en-de --score cosine"
)

for job in "${jobs[@]}"; do
  name=${job%%|*}
  command=${job#*|}
  # Another copy of the same training (started by hand) must finish first: two writers would fight over last.pt.
  while pgrep -f -- "--out $ckpt/$name( |\$)" >/dev/null; do sleep 60; done
  echo "$(date '+%F %T') queue: $name: $command"
  case "$name" in
    features) nice -n 19 $python $command >> "$ckpt/$name.out" 2>&1 ;;
    *) nice -n 19 $python $command --out "$ckpt/$name" >> "$ckpt/$name.out" 2>&1 ;;
  esac
  echo "$(date '+%F %T') queue: $name exited with $?"
done
