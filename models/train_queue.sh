#!/usr/bin/env bash
# Runs every training job (translators, Transformers, feature extraction, captioner) one after another on this 2-core machine, each resuming from its last checkpoint, so the
# same command continues the whole queue after an interruption (a session's processes end when it stops).
# The order puts first what unlocks a page feature (captioner, one Transformer), then finishes the translators.
# Finished jobs exit at once (their scripts detect early stopping / epoch limits in the checkpoint).
#
#   nohup bash models/train_queue.sh > /work/ckpt/queue.out 2>&1 &
#
# Naming jobs runs only those (in the order above); ATTNLAB_THREADS sets each job's torch threads (default 2).
# Two lanes of one thread each train about twice as much per hour as one lane of two threads:
#
#   ATTNLAB_THREADS=1 nohup bash models/train_queue.sh > /work/ckpt/queue.out 2>&1 &
#   ATTNLAB_THREADS=1 nohup bash models/train_queue.sh bahdanau-en-de bahdanau-de-en bahdanau-en-zh > /work/ckpt/queue2.out 2>&1 &
#
# A lane reaching a job the other lane is running waits for it, then reruns it, which exits at once once finished.
# Checkpoints go to $ATTNLAB_CKPT (default /work/ckpt), outside the repository. ATTNLAB_QUEUE_DRY_RUN=1 prints each
# job's command without running it (tests/python/test_train_queue.py).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD/python"   # the attnlab package
ckpt=${ATTNLAB_CKPT:-/work/ckpt}
mkdir -p "$ckpt"
python=/usr/bin/python3
threads=${ATTNLAB_THREADS:-2}
carried_dir=${ATTNLAB_CARRIED_DIR:-models/training}   # another folder only in tests

features=$ckpt/features
# A run carried from another machine (models/training/NAME.f16.gguf, its README) starts from those weights where no
# checkpoint exists, and later resumes of that same run keep its flags (its train.log names the file); a checkpoint
# of the run the file was exported from (the machine that carried it) resumes with that run's own flags.
#   carried NAME LEFT CONTINUE FRESH [DIR]
# DIR: where NAME.f16.gguf is looked for (default: models/training, or ATTNLAB_CARRIED_DIR in tests).
# LEFT: the epochs the carried run has left (models/training/README.md); 0 = it is complete, so the job is skipped.
# CONTINUE: the flags of the continuation besides --init and --epochs (a fresh Adam needs its own short warm-up).
# FRESH: the flags where nothing is carried.
carried() {
  local file=${5:-$carried_dir}/$1.f16.gguf
  if [ -f "$file" ] && { [ ! -f "$ckpt/$1/last.pt" ] || grep -q "weights from $file" "$ckpt/$1/train.log" 2>/dev/null; }; then
    if [ "$2" = 0 ]; then echo "@complete@"; else echo "--init $file $3 --epochs $2"; fi
  else
    echo "$4"
  fi
}
# A job whose weights are shipped (models/weights/SHIPPED.f16.gguf exists) is complete: skipped.
#   shipped SHIPPED FRESH
shipped() {
  if [ -f "${ATTNLAB_SHIPPED_DIR:-models/weights}/$1.f16.gguf" ]; then echo "@complete@"; else echo "$2"; fi
}
# What a fine-tuning run starts from, decided when the job starts (the broad run before it in the queue may have just
# written best.pt): that best.pt, else the weights carried here, with the broad run's dropout (a GGUF init takes
# --dropout from the command line, a checkpoint keeps its own).
#   @best_or_carried:NAME[:DROPOUT]@ in a job (DROPOUT: the broad run's, default the Transformers' 0.2)
best_or_carried() {
  if [ -f "$ckpt/$1/best.pt" ] || [ ! -f "$carried_dir/$1.f16.gguf" ]; then
    echo "$ckpt/$1/best.pt"
  else
    echo "$carried_dir/$1.f16.gguf --dropout ${2:-0.2}"
  fi
}
# The speech recognizer's start, as carried gives it: weights carried in models/training (its README) where there are
# any, else the shipped models/weights/speech-las.f16.gguf, so no machine trains it from scratch again; a checkpoint
# started from the shipped file keeps that run's flags even once a file is carried.
#   speech_las CARRIED_LEFT SHIPPED_LEFT CONTINUE  (LEFT: the epochs to go from that file, 0 = complete)
speech_las() {
  if [ -f "$carried_dir/speech-las.f16.gguf" ] &&
     ! grep -q "weights from models/weights/speech-las.f16.gguf" "$ckpt/speech-las/train.log" 2>/dev/null; then
    carried speech-las "$1" "$3" ""
  else
    carried speech-las "$2" "$3" "" models/weights   # the shipped file takes the carried one's place
  fi
}
# The score-function comparison: four EN->DE models that differ only in the score (additive-small is the control
# at the same size), a third of the shipped translator's compute each, on the same 3-epoch budget.
variant="--emb 128 --enc-hidden 128 --dec-hidden 256 --attn-dim 256 --epochs 3"
finetune="--multi30k-repeat 2 --broad-share 0.3 --lr 3e-4 --warmup 200 --epochs 6"
# A fine-tuning run carried mid-way goes on at about the learning rate it had reached (its schedule's step is lost with
# the optimizer: after three epochs, ~3,000 steps, the schedule was at 7.7e-5; 1e-4 after 400 steps then decays about as
# it would have), the broad runs' dropout (a GGUF init takes it from the command line), and its job passes a seed
# past the epochs it has done (1234 + done), so its epochs draw other Tatoeba samples than those it has seen
# (attnlab.data.mix).
finetune_carried="--dropout 0.2 --lr 1e-4 --warmup 400"
rnn_finetune="--multi30k-repeat 2 --broad-share 0.3 --lr 3e-4 --epochs 6"
jobs=(
  "features|-m attnlab.data.features --out $features"
  "features14|-m attnlab.data.features --layer 14 --out $features"
  "captioner-14|-m attnlab.train.caption --features $features --layer 14 --max-hours 12 --epochs 25 --patience 3"
  "captioner-14i|-m attnlab.train.caption --features $features --layer 14 --init-state image --max-hours 12 --epochs 25 --patience 3"
  "captioner-14g|-m attnlab.train.caption --features $features --layer 14 --global-feature --max-hours 12 --epochs 25 --patience 3"
  "transformer-de-en|-m attnlab.train.transformer --pair de-en"
  "bahdanau-en-de|-m attnlab.train.rnn --pair en-de --epochs 12"
  "bahdanau-de-en|-m attnlab.train.rnn --pair de-en"
  "transformer-en-de|-m attnlab.train.transformer --pair en-de"
  "bahdanau-en-zh|-m attnlab.train.rnn --pair en-zh"
  "luong-dot-en-de|-m attnlab.train.rnn --pair en-de --score dot $variant"
  "luong-general-en-de|-m attnlab.train.rnn --pair en-de --score general $variant"
  "cosine-en-de|-m attnlab.train.rnn --pair en-de --score cosine $variant"
  "additive-small-en-de|-m attnlab.train.rnn --pair en-de --score additive $variant"
  # Everyday language (issue 19): Tatoeba + Multi30k, the broad tokenizers; the same recipe for the four scores.
  # Where their checkpoint is gone, they continue from the weights carried in models/training (its README): two more
  # epochs, a fresh Adam at a peak lr of 6e-4 after 300 steps (the carried run was at 6.5e-4); carried again, the
  # second argument of carried is what is left (0: complete).
  "transformer-en-de-broad|-m attnlab.train.transformer --pair en-de --corpus broad --dropout 0.2 $(carried transformer-en-de-broad 0 "--lr 6e-4 --warmup 300" "--epochs 3")"
  "transformer-de-en-broad|-m attnlab.train.transformer --pair de-en --corpus broad --dropout 0.2 $(carried transformer-de-en-broad 0 "--lr 6e-4 --warmup 300" "--epochs 3")"
  # Then fine-tuning from the broad run's best.pt; on an earlier machine (checkpoints since lost, models/README.md) a run's epoch 3 met the Tatoeba targets
  # (beam 4, engine: EN->DE 35.34, DE->EN 41.10) but
  # not Multi30k's (attnlab.data.mix): Multi30k twice per epoch and a new 30% of the other pairs (~1,070 steps, 65% of
  # the tokens Multi30k), a fresh optimizer, peak lr 3e-4 after 200 steps.
  "transformer-en-de-broad-ft|-m attnlab.train.transformer --pair en-de --corpus broad $finetune $(carried transformer-en-de-broad-ft 3 "$finetune_carried --seed 1237" "--init @best_or_carried:transformer-en-de-broad@")"
  "transformer-de-en-broad-ft|-m attnlab.train.transformer --pair de-en --corpus broad $finetune $(carried transformer-de-en-broad-ft 3 "$finetune_carried --seed 1237" "--init @best_or_carried:transformer-de-en-broad@")"
  # Stage 2 (issue 19): from the shipped fifth fine-tuning epoch (its checkpoint was gone: a fresh Adam as for a
  # carried run), each direction on the mix its lagging target needed: EN->DE Tatoeba-leaning (Multi30k once, 60% of
  # the other pairs, 2 epochs, then their mean: models/transformer-broad.md), DE->EN Multi30k-leaning (Multi30k three
  # times, 20% of the others, 1 epoch); seed 1239, past the five epochs done. Complete and shipped: the files it
  # started from are 7965cab's models/weights/transformer-{en-de,de-en}.f16.gguf; to run it again, restore one
  # (git show 7965cab:PATH > FILE) and train with
  #   --pair en-de --corpus broad --init FILE $finetune_carried --multi30k-repeat 1 --broad-share 0.6 --epochs 2 --seed 1239
  #   --pair de-en --corpus broad --init FILE $finetune_carried --multi30k-repeat 3 --broad-share 0.2 --epochs 1 --seed 1239
  "transformer-en-de-broad-ft2|@complete@"
  "transformer-de-en-broad-ft2|@complete@"
  # The Bahdanau broad runs need more hours than one machine gives: carried in models/training after each machine's
  # last whole epoch, they continue for the epochs left of their 12 (EN->DE: none, its fine-tuning below took over) with a fresh Adam at the learning rate the run
  # had reached and a seed past the epochs done (another shuffle than the epochs already seen).
  "bahdanau-en-de-broad|-m attnlab.train.rnn --pair en-de --corpus broad $(carried bahdanau-en-de-broad 0 "--lr 1e-3 --seed 1237" "--epochs 12")"
  "bahdanau-de-en-broad|-m attnlab.train.rnn --pair de-en --corpus broad $(carried bahdanau-de-en-broad 9 "--lr 1e-3 --seed 1237" "--epochs 12")"
  # Bahdanau EN->DE on broad met Tatoeba's target after 3 epochs but fell 4.5 BLEU short on test2016: the
  # Transformers' Multi30k-heavy fine-tuning (the same mix) from that run's best weights, at a third of its lr (the
  # RNN's plateau schedule halves it from there).
  # Carried mid-way (models/training), it goes on for the epochs left at the lr it had reached (the plateau schedule
  # had not halved it) with a seed past the epochs done.
  "bahdanau-en-de-broad-ft|-m attnlab.train.rnn --pair en-de --corpus broad $rnn_finetune $(carried bahdanau-en-de-broad-ft 2 "--seed 1238" "--init @best_or_carried:bahdanau-en-de-broad:0.3@")"
  # The four score functions on broad, one recipe: a run complete on an earlier machine is carried (its f16 file, to
  # be shipped with the others once all four are done) and skipped.
  "luong-dot-en-de-broad|$(shipped luong-dot-en-de "-m attnlab.train.rnn --pair en-de --corpus broad --score dot $variant")"
  "luong-general-en-de-broad|$(shipped luong-general-en-de "-m attnlab.train.rnn --pair en-de --corpus broad --score general $variant")"
  "cosine-en-de-broad|$(shipped cosine-en-de "-m attnlab.train.rnn --pair en-de --corpus broad --score cosine $variant")"
  "additive-small-en-de-broad|$(shipped additive-small-en-de "-m attnlab.train.rnn --pair en-de --corpus broad --score additive $variant")"
  # Speech (issue 21): synthetic speech, the MFCC store, then the recognizer (one BLAS thread: small GRUs; two torch
  # threads trained the 6.5M-parameter model about twice as fast as one on a 2-core EPYC).
  "speech-synth|-m attnlab.data.synthesize_speech --hours 10 --out $ckpt/speech/synth"
  "speech-features|-m attnlab.data.speech_features --synth $ckpt/speech/synth --out $ckpt/speech/features"
  # Where its checkpoint is gone, the recognizer goes on from its latest weights (speech_las above) as the shipped
  # file's CPU continuation did (models/speech-las.md): 20 more epochs leaning to the recorded speech, a fresh Adam
  # at 1e-4 after 30 steps, dropout 0.25 (the size's), the rate annealed every epoch but not halved on the greedy
  # dev CER (which loops on long clips make noisy), batches of <= 40,000 frames.
  "speech-las|-m attnlab.train.speech --features $ckpt/speech/features $(speech_las 20 20 "--dropout 0.25 --lr 1e-4 --warmup 30 --real-repeat 3 --synth-share 0.2 --max-frames 40000 --epoch-decay 0.85 --lr-decay 1.0 --patience 20")"
  # Its character language model (shallow fusion; models/speech-las.md): text only, about 4 minutes an epoch.
  "speech-lm|-m attnlab.train.char_lm --synth $ckpt/speech/synth --generated 40000 --epochs 5"
)

wanted=("$@")
for job in "${jobs[@]}"; do
  name=${job%%|*}
  command=${job#*|}
  if [[ $command =~ @best_or_carried:([^@:]+):?([^@]*)@ ]]; then
    command=${command/"${BASH_REMATCH[0]}"/$(best_or_carried "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")}
  fi
  [[ ${#wanted[@]} -eq 0 || " ${wanted[*]} " == *" $name "* ]] || continue
  # Another copy of the same training (started by hand) must finish first: two writers would fight over last.pt.
  while pgrep -f -- "--out $ckpt/$name( |\$)" >/dev/null; do sleep 60; done
  if [[ $command == *@complete@* ]]; then
    echo "$(date '+%F %T') queue: $name: complete (its weights are in models/training or models/weights)"
    continue
  fi
  echo "$(date '+%F %T') queue: $name: $command"
  [ "${ATTNLAB_QUEUE_DRY_RUN:-0}" = 1 ] && continue
  case "$name" in
    features*) nice -n 19 $python $command --threads "$threads" >> "$ckpt/$name.out" 2>&1 ;;
    speech-synth|speech-features) nice -n 19 $python $command --jobs "$threads" >> "$ckpt/$name.out" 2>&1 ;;
    speech-las|speech-lm) OPENBLAS_NUM_THREADS=1 nice -n 19 $python $command --threads "$threads" --out "$ckpt/$name" >> "$ckpt/$name.out" 2>&1 ;;
    *) nice -n 19 $python $command --threads "$threads" --out "$ckpt/$name" >> "$ckpt/$name.out" 2>&1 ;;
  esac
  echo "$(date '+%F %T') queue: $name exited with $?"
done
