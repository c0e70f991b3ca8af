#!/usr/bin/python3
"""Train the Listen, Attend and Spell recognizer (attnlab.nn.listen_attend_spell) on the stored MFCCs of
attnlab.data.speech_features (AN4, FSDD, LJ Speech, synthetic speech), resumably.

    OPENBLAS_NUM_THREADS=1 nohup nice -n 19 python3 -m attnlab.train.speech --features DIR --out /work/ckpt/speech-las \
        > /work/ckpt/speech-las.out 2>&1 &

Rerunning the same command resumes from OUT/last.pt (model, optimizer, RNG, the epoch's batch order and position).
A fresh run can start from trained weights instead of random ones: --init FILE, a speech GGUF file as
`attnlab.export speech` writes it (f16 is enough: the trainer gets the weights the engine reads; its configuration,
--dropout from the command line, since files keep none) or a checkpoint .pt (its own configuration), with a fresh
optimizer and schedule (--lr, --warmup). Checkpoints do not survive a move to another machine; a committed file
does, so models/train_queue.sh continues the recognizer from the shipped models/weights/speech-las.f16.gguf
(models/README.md, "Speech recognizer"). OUT/train.log keeps the log ("weights from FILE" names the start).
OUT/best.pt is the lowest greedy dev CER (AN4's dev speakers, LJ Speech's dev clips, pocketsphinx-testdata and the
synthetic dev voices, pooled); OUT/epoch-<n>.pt the last --keep-epochs epochs. Recipe: Adam, linear warm-up over
--warmup steps to --lr, then the rate times --lr-decay after each epoch without a dev gain; joint loss
(1 - w) CE + w CTC (w = --ctc-weight); label smoothing; dropout; two time masks per utterance (SpecAugment-style)
during training, and with --warp and --freq-masks the mel bands warped and masked, with --narrowband a share of the
16 kHz speech made to sound as through an 8 kHz recording (attnlab.audio.augment); batches
of similar length holding at most --max-frames input frames; --epoch-decay anneals the rate after every epoch as well
(a run with a wall-clock budget); --real-repeat counts the recorded speech (AN4, FSDD, LJ Speech) more than once an
epoch, and --synth-share takes a fresh share of the synthetic speech each epoch
(a continuation that leans to the recorded speech). Small recurrent models train faster with OPENBLAS_NUM_THREADS=1
(2.6x on these machines); --device cuda trains on a GPU (models/train_speech_gpu.sh: two runs sharing one H200 logged
95,000-180,000 frames/s each for the 6.5M-parameter model; on a 2-core AMD EPYC it trained at 2,400-4,400 with
--threads 2, about twice the rate of one thread; the 1.24M-parameter one trained at about 1,400 on two CPU cores).
"""
import argparse
import math
import os
import random
import sys
import time

from attnlab import cpu_blas  # noqa: F401  (before torch: OpenBLAS's AVX kernels)
import numpy as np
import torch

from attnlab.audio.augment import augment
from attnlab.data.speech_features import FEATURES_ROOT, load_all
from attnlab.eval.cer import character_error_rate
from attnlab.gguf import speech as speech_gguf
from attnlab.gguf.common import is_gguf
from attnlab.gguf.reader import read_gguf
from attnlab.nn import listen_attend_spell as las
from attnlab.train.loop import Family, Logger, WallClock, keep_last_epochs, resume, run, save_checkpoint

log = Logger(time_format="%Y-%m-%d %H:%M:%S")
TRAIN_SOURCES = ("an4", "fsdd", "ljspeech", "synth")
DEV_SOURCES = ("an4", "ljspeech", "pocketsphinx", "synth")
NARROWBAND_SOURCES = ("fsdd",)    # recorded at 8 kHz already
MAX_FRAMES_PER_UTTERANCE = 1600   # 16 s: longer clips are left out of training


def collect(stores, split, sources, limit=0):
    """-> [(source, index, frames, ids)] of one split."""
    out = []
    for source in sources:
        store = stores.get(source)
        if store is None:
            continue
        for i in range(len(store)):
            if store.splits[i] != split:
                continue
            T = int(store.offsets[i + 1] - store.offsets[i])
            if split == "train" and not 4 <= T <= MAX_FRAMES_PER_UTTERANCE:
                continue
            out.append((source, i, T, las.encode_transcript(str(store.transcripts[i]))))
    if limit:
        random.Random(0).shuffle(out)
        out = out[:limit]
    return out


def bucketed_batches(items, max_frames, seed):
    """Utterances sorted by length within shuffled buckets, cut into batches of <= max_frames padded frames, then
    shuffled: similar lengths together, a different order every epoch."""
    rng = random.Random(seed)
    order = list(range(len(items)))
    rng.shuffle(order)
    bucket = 2000
    order = [i for b in range(0, len(order), bucket) for i in sorted(order[b:b + bucket], key=lambda i: items[i][2])]
    batches, current, longest = [], [], 0
    for i in order:
        longest_next = max(longest, items[i][2])
        if current and longest_next * (len(current) + 1) > max_frames:
            batches.append(current)
            current, longest_next = [], items[i][2]
        current.append(i)
        longest = longest_next
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def epoch_items(items, synth_share, seed):
    """One epoch's training utterances: every recorded one, and a fresh `synth_share` of the synthetic ones (all of
    them at 1), drawn by the epoch's seed so a resumed epoch gets the same list."""
    if synth_share >= 1:
        return items
    synth = [k for k, item in enumerate(items) if item[0] == "synth"]
    kept = set(random.Random(seed).sample(synth, round(len(synth) * synth_share)))
    return [item for k, item in enumerate(items) if item[0] != "synth" or k in kept]


def pad_features(stores, items, rng=None, masks=0, mask_fraction=0.05, warp=0.0, freq_masks=0, narrowband=0.0):
    """-> (feats [B, T, 13], lengths [B]); with rng, a `narrowband` share of the utterances not recorded at 8 kHz
    given the bands of an 8 kHz recording, each utterance's bands warped by a factor within 1 ± warp and
    `freq_masks` runs of bands masked (attnlab.audio.augment), then `masks` time spans set to its mean frame."""
    lengths = torch.tensor([item[2] for item in items])
    feats = torch.zeros(len(items), int(lengths.max()), 13)
    for b, (source, i, T, _) in enumerate(items):
        frames = np.array(stores[source].features(i))
        if rng is not None:
            frames = augment(frames, rng, warp=warp, freq_masks=freq_masks,
                             narrowband_share=0.0 if source in NARROWBAND_SOURCES else narrowband)
        frames = torch.from_numpy(frames)
        if rng is not None and masks:
            frames = frames.clone()
            mean = frames.mean(0)
            for _ in range(masks):
                width = rng.randint(0, max(1, int(T * mask_fraction)))
                start = rng.randint(0, max(0, T - width))
                frames[start:start + width] = mean
        feats[b, :T] = frames
    return feats, lengths


def transcribe(model, stores, items, batch_frames=30000):
    """Greedy transcripts of items, in order."""
    model.eval()
    device = next(model.parameters()).device
    out = [None] * len(items)
    order = sorted(range(len(items)), key=lambda i: items[i][2])
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and items[order[end]][2] * (end - start + 1) <= batch_frames:
            end += 1
        chunk = order[start:end]
        feats, lengths = pad_features(stores, [items[i] for i in chunk])
        ids, _ = model.greedy(feats.to(device), lengths)
        for i, hyp in zip(chunk, ids):
            out[i] = las.decode_ids(hyp)
        start = end
    model.train()
    return out


def initial_weights(path, dropout):
    """--init: a speech GGUF file or a checkpoint .pt -> {"config", "model", "epoch", "train_seconds"}, the parts a
    fresh run starts from (train_seconds: the training behind those weights, so the hours a continued run reports,
    and writes into its exports' attnlab.training_seconds, are the whole model's). A file of another model (a
    translator's GGUF or checkpoint, a recognizer whose weights do not fit its own configuration) exits with a
    message naming what it is."""
    if not os.path.isfile(path):
        raise SystemExit(f"--init {path}: no such file")
    if is_gguf(path):
        meta = {key: value for key, _, value in read_gguf(path)[1]}
        arch = meta.get("general.architecture")
        if arch != speech_gguf.ARCH:
            raise SystemExit(f"--init {path}: architecture {arch!r}, not a speech recognizer ({speech_gguf.ARCH!r})")
        try:
            model = speech_gguf.load(path)
        except ValueError as e:
            raise SystemExit(f"--init {path}: {e}")
        if model.ctc_weight == 0.0:
            # Its ctc.* weights are zeros, not trained ones; the joint loss would train the head from nothing.
            log(f"--init {path} has no CTC head: the head starts from zeros")
        # The GGUF model is built for inference (dropout 0); training takes this run's dropout.
        return {"config": dict(model.cfg.to_dict(), dropout=dropout), "model": model.state_dict(),
                "epoch": "unknown (a GGUF file)", "train_seconds": float(meta.get("attnlab.training_seconds", 0.0))}
    try:
        ck = torch.load(path, map_location="cpu")
    except Exception as e:  # noqa: BLE001  (pickle, zip and torch errors alike: it is not a checkpoint)
        raise SystemExit(f"--init {path}: neither a GGUF file nor a PyTorch checkpoint ({e})")
    if not isinstance(ck, dict) or "config" not in ck or "model" not in ck:
        raise SystemExit(f"--init {path}: not a training checkpoint (no config and model)")
    try:
        cfg = las.Config(**ck["config"])
        las.ListenAttendSpell(cfg).load_state_dict(ck["model"])
    except (TypeError, RuntimeError) as e:
        name = ck.get("meta", {}).get("name") or ck.get("meta", {}).get("pair") or "another model"
        raise SystemExit(f"--init {path}: a checkpoint of {name}, not of attnlab.nn.listen_attend_spell "
                         f"({str(e).splitlines()[0]})")
    state = ck.get("state") or {}
    return {"config": cfg.to_dict(), "model": ck["model"], "epoch": state.get("epoch"),
            "train_seconds": float(state.get("train_seconds", 0.0))}


class SpeechFamily(Family):
    position_key = "position"

    def __init__(self, args, model, optimizer, cfg, stores, train, dev):
        self.args, self.model, self.optimizer, self.cfg = args, model, optimizer, cfg
        self.stores, self.all_train_items, self.dev_items = stores, train, dev
        self.last_path, self.best_path = os.path.join(args.out, "last.pt"), os.path.join(args.out, "best.pt")
        self.session = WallClock()
        self.deadline = args.max_hours * 3600 if args.max_hours else math.inf
        self.rng = random.Random(args.seed)

    def checkpoint(self, path, with_optimizer=True):
        save_checkpoint(path, self.cfg, self.model, self.state, {"name": "speech-las", "args": vars(self.args)},
                        self.optimizer if with_optimizer else None)

    def save_last(self, reason):
        self.checkpoint(self.last_path)
        log(f"checkpoint ({reason}) -> {self.last_path}")

    def stop_before_start(self, state):
        self.state = state
        return "early stopping already reached" if state["bad_epochs"] >= self.args.patience else None

    def epoch_batches(self, state):
        self.train_items = epoch_items(self.all_train_items, self.args.synth_share, self.args.seed + state["epoch"])
        if state["order"] is None:
            state["order"], state["position"] = bucketed_batches(self.train_items, self.args.max_frames,
                                                                 self.args.seed + state["epoch"]), 0
        self.t0, self.frames_done, self.loss_sum, self.steps = time.time(), 0, 0.0, 0
        return state["order"]

    def batch_loss(self, batch, state):
        args = self.args
        step = state["global_step"] + 1
        if step <= args.warmup:
            for group in self.optimizer.param_groups:
                group["lr"] = args.lr * step / args.warmup
        items = [self.train_items[i] for i in batch]
        feats, lengths = pad_features(self.stores, items, self.rng, masks=args.time_masks, warp=args.warp,
                                      freq_masks=args.freq_masks, narrowband=args.narrowband)
        loss, _, _ = las.loss(self.model, feats.to(args.device), lengths, [item[3] for item in items],
                              args.ctc_weight, args.label_smoothing)
        self.frames_done += int(lengths.sum())
        self.loss_sum += float(loss)
        self.steps += 1
        return loss

    def after_step(self, state, n_batches):
        state["global_step"] += 1
        if state["position"] % self.args.log_every == 0:
            dt = time.time() - self.t0
            rate = self.frames_done / dt
            log(f"epoch {state['epoch'] + 1} batch {state['position']}/{n_batches} loss {self.loss_sum / self.steps:.4f} "
                f"lr {self.optimizer.param_groups[0]['lr']:.2e} {rate:.0f} frames/s")
            state["train_seconds"] += dt
            self.t0, self.frames_done, self.loss_sum, self.steps = time.time(), 0, 0.0, 0

    def stop_during_epoch(self, state):
        return "--max-hours" if self.session.session() > self.deadline else None

    def end_epoch(self, state):
        args = self.args
        state["train_seconds"] += time.time() - self.t0
        t0 = time.time()
        hyps = transcribe(self.model, self.stores, self.dev_items)
        refs = [las.decode_ids(item[3]) for item in self.dev_items]
        cer = character_error_rate(hyps, refs)
        per_source = {}
        for source in DEV_SOURCES:
            idx = [k for k, item in enumerate(self.dev_items) if item[0] == source]
            if idx:
                per_source[source] = round(character_error_rate([hyps[k] for k in idx], [refs[k] for k in idx]), 2)
        state["epoch"] += 1
        state["order"], state["position"] = None, 0
        state["history"].append({"epoch": state["epoch"], "dev_cer": cer, "per_source": per_source,
                                 "lr": self.optimizer.param_groups[0]["lr"], "hours": state["train_seconds"] / 3600})
        if cer < state["best_cer"]:
            state["best_cer"], state["bad_epochs"] = cer, 0
            self.checkpoint(self.best_path, with_optimizer=False)
        else:
            state["bad_epochs"] += 1
            for group in self.optimizer.param_groups:
                group["lr"] = max(args.min_lr, group["lr"] * args.lr_decay)
        for group in self.optimizer.param_groups:
            group["lr"] = max(args.min_lr, group["lr"] * args.epoch_decay)
        log(f"epoch {state['epoch']} dev CER {cer:.2f}% {per_source} (best {state['best_cer']:.2f}, "
            f"{state['bad_epochs']} bad, {time.time() - t0:.0f} s) e.g. {hyps[0]!r} for {refs[0]!r}")
        return "early stopping" if state["bad_epochs"] >= args.patience else None

    def keep_epoch(self, state):
        keep_last_epochs(self.args.out, state["epoch"], self.args.keep_epochs,
                         lambda path: self.checkpoint(path, with_optimizer=False))

    def finish(self, state, stop_reason):
        self.checkpoint(self.last_path)
        log(f"done: {stop_reason or 'all epochs'}; best dev CER {state['best_cer']:.2f}%; "
            f"trained {state['train_seconds'] / 3600:.2f} h")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--features", default=FEATURES_ROOT, help="attnlab.data.speech_features' --out")
    cfg = las.Config()
    ap.add_argument("--enc-hidden", type=int, default=cfg.enc_hidden)
    ap.add_argument("--dec-hidden", type=int, default=cfg.dec_hidden)
    ap.add_argument("--emb", type=int, default=cfg.emb)
    ap.add_argument("--attn-dim", type=int, default=cfg.attn_dim)
    ap.add_argument("--loc-filters", type=int, default=cfg.loc_filters)
    ap.add_argument("--loc-width", type=int, default=cfg.loc_width)
    ap.add_argument("--dropout", type=float, default=cfg.dropout)
    ap.add_argument("--listener-layers", type=int, default=None,
                    help=f"pyramidal BiGRU layers, 1..{las.MAX_LISTENER_LAYERS}: one annotation per 2^L frames "
                         f"(default {cfg.listener_layers}; with --init, the file's)")
    ap.add_argument("--ctc-weight", type=float, default=0.3)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--time-masks", type=int, default=2)
    ap.add_argument("--warp", type=float, default=0.0,
                    help="each training utterance's mel bands warped by a factor drawn within 1 +- this (vocal tract "
                    "length perturbation, attnlab.audio.augment; 0 = none)")
    ap.add_argument("--freq-masks", type=int, default=0, help="runs of 0-5 mel bands masked per training utterance")
    ap.add_argument("--narrowband", type=float, default=0.0,
                    help="the share of training utterances not recorded at 8 kHz given an 8 kHz recording's bands "
                    "(attnlab.audio.augment.narrowband; 0 = none)")
    ap.add_argument("--max-frames", type=int, default=12000, help="padded input frames per batch")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--lr-decay", type=float, default=0.5)
    ap.add_argument("--epoch-decay", type=float, default=1.0,
                    help="the rate times this after every epoch as well (a run on a fixed time budget anneals)")
    ap.add_argument("--min-lr", type=float, default=3e-5)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--patience", type=int, default=4)
    ap.add_argument("--dev-limit", type=int, default=800, help="dev utterances scored each epoch (0 = all)")
    ap.add_argument("--real-repeat", type=int, default=1,
                    help="each epoch holds every recorded (not synthetic) training utterance this many times")
    ap.add_argument("--synth-share", type=float, default=1.0,
                    help="each epoch holds this share of the synthetic training utterances, drawn afresh (a "
                    "fine-tuning run that leans to the recorded speech without forgetting the rest)")
    ap.add_argument("--limit-train", type=int, default=0, help="only N training utterances (smoke tests)")
    ap.add_argument("--init", help="a fresh run starts from this speech GGUF file's weights and configuration "
                    "(--dropout from the command line) or this checkpoint's (its own configuration), with a fresh "
                    "optimizer and schedule; the model flags above are then unused; ignored once OUT/last.pt "
                    "exists, which resumes as always")
    ap.add_argument("--keep-epochs", type=int, default=3)
    ap.add_argument("--max-hours", type=float, default=0.0, help="this run's wall-clock budget (0 = none)")
    ap.add_argument("--save-minutes", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="where the model trains: cpu, or cuda on a machine with a GPU "
                    "(batches are built on the CPU either way; checkpoints load anywhere)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--log-every", type=int, default=50)
    return ap.parse_args(argv)


def main(argv=None):
    global log
    args = parse_args(argv)
    if not 0 < args.synth_share <= 1:
        sys.exit(f"--synth-share {args.synth_share}: a share of the synthetic speech, above 0 and at most 1")
    if args.listener_layers is not None and not 1 <= args.listener_layers <= las.MAX_LISTENER_LAYERS:
        sys.exit(f"--listener-layers {args.listener_layers}: 1 to {las.MAX_LISTENER_LAYERS} pyramidal layers")
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    if log.f is not None:   # an earlier main() in this process (tests) logged elsewhere
        log.f.close()
    log = Logger(os.path.join(args.out, "train.log"), time_format="%Y-%m-%d %H:%M:%S")
    last_path = os.path.join(args.out, "last.pt")
    resuming = os.path.exists(last_path)
    # Checked before the features are read: a wrong file fails at once.
    init = initial_weights(args.init, args.dropout) if args.init and not resuming else None
    if init is not None and args.listener_layers not in (None, init["config"].get("listener_layers", 2)):
        sys.exit(f"--listener-layers {args.listener_layers}: {args.init} has "
                 f"{init['config'].get('listener_layers', 2)} listener layers, and --init keeps the file's model "
                 f"(a deeper listener is a fresh run)")
    stores = load_all(args.features)
    if "an4" not in stores:
        sys.exit(f"no stored features in {args.features}: run python3 -m attnlab.data.speech_features first")
    train = collect(stores, "train", TRAIN_SOURCES, args.limit_train)
    # Recorded speech is a small share of the hours and what the dev targets measure: it can count more per epoch.
    train += [item for item in train if item[0] != "synth"] * (args.real_repeat - 1)
    dev = collect(stores, "dev", DEV_SOURCES, args.dev_limit)
    cfg = las.Config(enc_hidden=args.enc_hidden, dec_hidden=args.dec_hidden, emb=args.emb, attn_dim=args.attn_dim,
                     loc_filters=args.loc_filters, loc_width=args.loc_width, dropout=args.dropout,
                     listener_layers=args.listener_layers or las.Config().listener_layers)
    if init is not None:
        cfg = las.Config(**init["config"])
    elif resuming and args.init:
        # A run started from --init has its file's configuration, not the model flags'.
        cfg = las.Config(**torch.load(last_path, map_location="cpu")["config"])
    torch.manual_seed(args.seed)
    model = las.ListenAttendSpell(cfg)
    if init is not None:
        model.load_state_dict(init["model"])
        log(f"weights from {args.init} (epoch {init['epoch']}, {init['train_seconds'] / 3600:.2f} h of training); "
            f"fresh optimizer and schedule")
    if args.device != "cpu":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    model.to(args.device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    state = {"epoch": 0, "position": 0, "order": None, "global_step": 0, "best_cer": math.inf, "bad_epochs": 0,
             "train_seconds": init["train_seconds"] if init is not None else 0.0, "history": []}
    if resuming:
        state = resume(last_path, model, opt, las.Config, cfg, state)
        log(f"resumed from {last_path}: epoch {state['epoch']} batch {state['position']}, "
            f"best dev CER {state['best_cer']:.2f}")
    hours = sum(item[2] for item in train) / 360000
    log(f"train {len(train)} utterances ({hours:.2f} h), dev {len(dev)}; config {cfg.to_dict()}; "
        f"{sum(p.numel() for p in model.parameters()):,} parameters")
    run(SpeechFamily(args, model, opt, cfg, stores, train, dev), model, opt, state, args.epochs, args.clip,
        args.save_minutes)


if __name__ == "__main__":
    main()
