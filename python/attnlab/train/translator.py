"""What the two translator trainers (attnlab.train.rnn, attnlab.train.transformer) share: their flags, the data,
the checkpoint's "meta" and "state", and the family that feeds attnlab.train.loop.run: token-bucketed batches,
label-smoothed cross-entropy, greedy validation BLEU, and either a per-step schedule (the Transformer's warm-up) or
a decay on plateaus (the RNN's).
"""
import os
import time

import torch
import torch.nn.functional as F

from attnlab.data.batching import make_batches, pad_batch
from attnlab.data.mix import check_mix, epoch_pairs, multi30k_flags
from attnlab.data.pairs import PAIRS, encode_training_pairs, load_tokenizers, pair_paths, read_split
from attnlab.gguf.common import TRAINING_CORPUS_KEY, is_gguf
from attnlab.gguf.reader import read_gguf
from attnlab.nn.decoding import PAD_ID
from attnlab.paths import ROOT
from attnlab.train.loop import (Family, Logger, WallClock, atomic_save, capture_rng, keep_last_epochs,
                                load_if_exists, run)


def add_training_options(p, max_tokens, max_len, epochs, patience, log_every):
    """--label-smoothing .. --limit-train, the flags both translator trainers share (with their own defaults)."""
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--max-tokens", type=int, default=max_tokens, help="padded tokens per batch (src or tgt side)")
    p.add_argument("--max-len", type=int, default=max_len, help="drop training pairs longer than this (subwords)")
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--patience", type=int, default=patience, help="stop after this many epochs without val gain")
    p.add_argument("--max-hours", type=float, default=12.0, help="total wall-clock budget across resumes")
    p.add_argument("--ckpt-minutes", type=float, default=10.0)
    p.add_argument("--log-every", type=int, default=log_every)
    p.add_argument("--val-subset", type=int, default=0, help="greedy-validate on the first N lines (0 = all)")
    p.add_argument("--limit-train", type=int, default=0, help="use only the first N training pairs (smoke test)")
    p.add_argument("--corpus", default=None, help="training corpus and tokenizers (default: the pair's own, e.g. "
                   "multi30k; broad = Tatoeba + Multi30k)")
    p.add_argument("--keep-epochs", type=int, default=5,
                   help="keep the model of the last N epochs as OUT/epoch-<n>.pt (attnlab.train.average)")
    p.add_argument("--init", help="fine-tune: start from this checkpoint's weights (its configuration, a fresh "
                   "optimizer and schedule), or from a translator GGUF file's (its configuration with --dropout); "
                   "ignored once OUT/last.pt exists, which resumes as always")
    p.add_argument("--multi30k-repeat", type=int, default=1,
                   help="--corpus broad: train each Multi30k pair this many times per epoch (attnlab.data.mix)")
    p.add_argument("--broad-share", type=float, default=1.0,
                   help="--corpus broad: train this share of the other pairs per epoch, a new sample each epoch")


def add_run_options(p):
    """--threads, --seed, --data-root (last in both trainers' --help)."""
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--data-root", default=ROOT, help="repository root holding build/data and models/tokenizers")


def uses_mix(args):
    return getattr(args, "multi30k_repeat", 1) != 1 or getattr(args, "broad_share", 1.0) != 1.0


def check_training_options(args):
    """Refuses flag combinations that cannot train, before any data is read."""
    if uses_mix(args):
        if args.corpus != "broad":
            raise SystemExit("--multi30k-repeat and --broad-share mix the broad corpus: they need --corpus broad")
        try:
            check_mix(args.multi30k_repeat, args.broad_share)
        except ValueError as e:
            raise SystemExit(str(e))
    resuming = os.path.exists(os.path.join(args.out, "last.pt"))  # --init is then unused (initial_weights)
    if getattr(args, "init", None) and not resuming and not os.path.exists(args.init):
        raise SystemExit(f"--init {args.init}: no such checkpoint")


def initial_weights(args, paths, log):
    """The checkpoint or GGUF file named by --init (weights, configuration), checked to be a translator of the same pair and
    tokenizers; None without --init. Only a fresh run uses it: a resumed one continues from OUT/last.pt."""
    if not getattr(args, "init", None):
        return None
    ck = checkpoint_from_gguf(args.init, args.dropout) if is_gguf(args.init) else torch.load(args.init, map_location="cpu")
    meta = ck.get("meta", {})
    if (meta.get("pair"), meta.get("corpus")) != (args.pair, paths["corpus"]):
        raise SystemExit(f"--init {args.init} is a {meta.get('pair')} model on {meta.get('corpus')}'s tokenizers, "
                         f"not {args.pair} on {paths['corpus']}'s")
    log(f"weights from {args.init} (epoch {ck.get('state', {}).get('epoch')}); fresh optimizer and schedule")
    return ck


def checkpoint_from_gguf(path, dropout):
    """A translator file written by attnlab.export -> the parts of a checkpoint that --init reads: its weights
    (f16/q8_0 dequantized), its configuration with this run's dropout (files do not record one), its pair and
    training corpus. Checkpoints live outside the repository and may be gone; a committed file carries the
    weights from one machine to the next (the optimizer's moments do not travel: --init starts a fresh one)."""
    from attnlab.gguf import bahdanau, transformer  # noqa: PLC0415  (the GGUF schemas import the models)
    meta = {key: value for key, _, value in read_gguf(path)[1]}
    family = {bahdanau.ARCH: bahdanau, transformer.ARCH: transformer}.get(meta.get("general.architecture"))
    if family is None:
        raise SystemExit(f"--init {path}: a {meta.get('general.architecture')!r} file, not a translator")
    model, pair = family.load(path)
    corpus = meta.get(TRAINING_CORPUS_KEY) or PAIRS[pair][0]
    return {"model": model.state_dict(), "config": dict(model.cfg.to_dict(), dropout=dropout),
            "meta": {"pair": pair, "corpus": corpus}, "state": {"epoch": "unknown (a GGUF file)"}}


def start_training(args):
    """Threads, OUT, OUT/train.log, the data, and OUT/last.pt to resume from (None on a fresh run)
    -> (log, (paths, sp_src, sp_tgt, src_ids, tgt_ids, val_src, val_ref), checkpoint or None)."""
    check_training_options(args)
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    log = Logger(os.path.join(args.out, "train.log"))
    data = load_training_data(args)
    return log, data, load_if_exists(os.path.join(args.out, "last.pt"))


def load_training_data(args):
    """-> (paths, sp_src, sp_tgt, src_ids, tgt_ids, val_src, val_ref) for --pair / --data-root / --limit-train /
    --val-subset / --max-len."""
    paths = pair_paths(args.pair, args.data_root, getattr(args, "corpus", None))
    sp_src, sp_tgt = load_tokenizers(paths)
    train_src, train_tgt = read_split(paths, "train", args.limit_train)
    val_src, val_ref = read_split(paths, "val", args.val_subset)
    src_ids, tgt_ids = encode_training_pairs(sp_src, sp_tgt, train_src, train_tgt, args.max_len)
    return paths, sp_src, sp_tgt, src_ids, tgt_ids, val_src, val_ref


def translation_meta(args, paths, **extra):
    """The checkpoint's "meta": what the exporter and evaluator need besides the weights."""
    meta = {"pair": args.pair, "corpus": paths["corpus"], "src_lang": paths["src_lang"], "tgt_lang": paths["tgt_lang"],
            "src_spm": os.path.relpath(paths["src_spm"], args.data_root),
            "tgt_spm": os.path.relpath(paths["tgt_spm"], args.data_root)}
    meta.update(extra)
    meta["source_add_eos"] = True
    return meta


def new_training_state(**extra):
    """Where training stands (checkpoint key "state"); resumed runs update it from last.pt."""
    state = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best_bleu": -1.0, "bad_epochs": 0}
    state.update(extra)
    state.update({"train_seconds": 0.0, "history": []})
    return state


def log_resumed(log, args, state):
    log(f"resumed from {os.path.join(args.out, 'last.pt')}: epoch {state['epoch']} step {state['step_in_epoch']} "
        f"best BLEU {state['best_bleu']:.2f} trained {state['train_seconds'] / 3600:.2f} h")


def set_learning_rate(optimizer, lr):
    for g in optimizer.param_groups:
        g["lr"] = lr


def keep_epoch_model(args, cfg, model, meta, state):
    """OUT/epoch-<n>.pt (the model only, the layout of best.pt), deleting those older than --keep-epochs: the
    inputs of attnlab.train.average."""
    # best_bleu becomes this epoch's own validation BLEU: attnlab.export writes it as the file's attnlab.val_bleu.
    own = dict(state, best_bleu=state["history"][-1]["val_bleu"] if state["history"] else -1.0)
    keep_last_epochs(args.out, state["epoch"], getattr(args, "keep_epochs", 0), lambda path: atomic_save(
        {"config": cfg.to_dict(), "model": model.state_dict(), "meta": meta, "state": own, "args": vars(args)}, path))


class TranslatorFamily(Family):
    """The translators' part of the loop. data: (src_ids, tgt_ids, val_src, val_ref, metric, sp_src, sp_tgt);
    translate(model, sp_src, sp_tgt, lines) validates greedily; batch_logits(src [B,S], src_len [B], tgt_in [B,T])
    -> logits [B,T,V]. Learning rate: step_learning_rate(step) sets it before every step (warm-up schedules);
    without it the rate in state["lr"] is kept and multiplied by --lr-decay (floor --min-lr) after each epoch
    without a validation gain. --max-hours counts every run of the same OUT (state["train_seconds"])."""

    def __init__(self, args, log, model, optimizer, cfg, meta, data, translate, batch_logits, step_learning_rate,
                 checkpoint_extra):
        self.args, self.log, self.model, self.optimizer, self.cfg, self.meta = args, log, model, optimizer, cfg, meta
        self.src_ids, self.tgt_ids, self.val_src, self.val_ref, self.metric, self.sp_src, self.sp_tgt = data
        self.translate, self.batch_logits, self.step_learning_rate = translate, batch_logits, step_learning_rate
        self.checkpoint_extra = checkpoint_extra or {}
        self.decays_on_plateau = step_learning_rate is None
        self.last_path, self.best_path = os.path.join(args.out, "last.pt"), os.path.join(args.out, "best.pt")
        self.max_steps = getattr(args, "max_steps", 0)
        self.is_multi30k = self.flag_multi30k_pairs() if uses_mix(args) else None
        self.state = None
        self.clock = None

    def flag_multi30k_pairs(self):
        """Which training pairs are Multi30k's, logged with the mix (the --multi30k-repeat / --broad-share runs)."""
        paths = pair_paths(self.args.pair, self.args.data_root, self.args.corpus, data_corpus="multi30k")
        src, tgt = read_split(paths, "train")
        flags = multi30k_flags(self.src_ids, self.tgt_ids,
                               *encode_training_pairs(self.sp_src, self.sp_tgt, src, tgt, self.args.max_len))
        self.log(f"mix: {sum(flags)} Multi30k pairs x {self.args.multi30k_repeat}, "
                 f"{self.args.broad_share:g} of {len(flags) - sum(flags)} others per epoch")
        return flags

    def start(self, state):
        self.state = state
        self.clock = WallClock(state["train_seconds"])

    def save_last(self, reason):
        self.state["train_seconds"] = self.clock.total()
        atomic_save({"config": self.cfg.to_dict(), "model": self.model.state_dict(),
                     "optimizer": self.optimizer.state_dict(), "state": dict(self.state), "args": vars(self.args),
                     **self.checkpoint_extra, "meta": self.meta, "rng": capture_rng()}, self.last_path)
        self.log(f"checkpoint ({reason}) -> {self.last_path}")

    def stop_before_start(self, state):
        if state["bad_epochs"] >= self.args.patience:
            return "early stopping already reached"
        if self.clock.total() > self.args.max_hours * 3600:
            return f"--max-hours {self.args.max_hours} already used"
        return None

    def epoch_batches(self, state):
        self.win_loss = self.win_tokens = 0.0
        self.win_start = time.time()
        seed = self.args.seed + state["epoch"]
        pairs = None
        if self.is_multi30k is not None:
            pairs = epoch_pairs(self.is_multi30k, self.args.multi30k_repeat, self.args.broad_share, f"mix {seed}")
        return make_batches(self.src_ids, self.tgt_ids, self.args.max_tokens, seed, pairs)

    def batch_loss(self, batch, state):
        src, src_len = pad_batch([self.src_ids[i] for i in batch])
        tgt, _ = pad_batch([self.tgt_ids[i] for i in batch])
        if self.decays_on_plateau:
            self.lr = state["lr"]
        else:
            self.lr = self.step_learning_rate(state["global_step"] + 1)
            set_learning_rate(self.optimizer, self.lr)
        logits = self.batch_logits(src, src_len, tgt[:, :-1])                        # [B,T,V]
        gold = tgt[:, 1:]
        loss_sum = F.cross_entropy(logits.reshape(-1, logits.size(-1)), gold.reshape(-1), ignore_index=PAD_ID,
                                   label_smoothing=self.args.label_smoothing, reduction="sum")
        n_tok = int((gold != PAD_ID).sum())
        self.win_loss += float(loss_sum)
        self.win_tokens += n_tok
        return loss_sum / n_tok

    def after_step(self, state, n_batches):
        state["global_step"] += 1
        args = self.args
        if state["global_step"] % args.log_every == 0:
            dt = time.time() - self.win_start
            self.log(f"epoch {state['epoch'] + 1} step {state['step_in_epoch']}/{n_batches} "
                     f"loss {self.win_loss / self.win_tokens:.4f} lr {self.lr:.2e} tok/s {self.win_tokens / dt:.0f} "
                     f"epoch ETA {(n_batches - state['step_in_epoch']) * dt / args.log_every / 60:.1f} min")
            self.win_loss = self.win_tokens = 0.0
            self.win_start = time.time()

    def stop_during_epoch(self, state):
        if self.clock.total() > self.args.max_hours * 3600:
            return f"--max-hours {self.args.max_hours} reached"
        if self.max_steps and state["global_step"] >= self.max_steps:
            return f"--max-steps {self.max_steps} reached"
        return None

    def end_epoch(self, state):
        args, log = self.args, self.log
        t0 = time.time()
        hyps = self.translate(self.model, self.sp_src, self.sp_tgt, self.val_src)
        val_bleu = self.metric(hyps, self.val_ref)
        improved = val_bleu > state["best_bleu"]
        state["epoch"] += 1
        state["step_in_epoch"] = 0
        state["train_seconds"] = self.clock.total()
        entry = {"epoch": state["epoch"], "val_bleu": val_bleu}
        if self.decays_on_plateau:
            entry["lr"] = state["lr"]
        entry["hours"] = state["train_seconds"] / 3600
        state["history"].append(entry)
        log(f"epoch {state['epoch']} val BLEU {val_bleu:.2f} (greedy, {len(self.val_src)} lines, "
            f"{time.time() - t0:.0f} s) best {max(val_bleu, state['best_bleu']):.2f} e.g. {hyps[0]!r}")
        if improved:
            state["best_bleu"] = val_bleu
            state["bad_epochs"] = 0
            atomic_save({"config": self.cfg.to_dict(), "model": self.model.state_dict(), "meta": self.meta,
                         "state": dict(state), "args": vars(args)}, self.best_path)
            log(f"new best -> {self.best_path}")
            return None
        state["bad_epochs"] += 1
        if self.decays_on_plateau:
            state["lr"] = max(args.min_lr, state["lr"] * args.lr_decay)
            set_learning_rate(self.optimizer, state["lr"])
            log(f"no gain for {state['bad_epochs']} epoch(s): lr -> {state['lr']:.2e}")
        else:
            log(f"no gain for {state['bad_epochs']} epoch(s)")
        if state["bad_epochs"] >= args.patience:
            return f"early stopping after {args.patience} epochs without gain"
        return None

    def keep_epoch(self, state):
        keep_epoch_model(self.args, self.cfg, self.model, self.meta, state)

    def finish(self, state, stop_reason):
        self.save_last("end")
        self.log(f"done: {stop_reason or 'all epochs'}; best val BLEU {state['best_bleu']:.2f}; "
                 f"trained {state['train_seconds'] / 3600:.2f} h in total")


def train_translator(args, log, model, optimizer, cfg, state, meta, data, translate, batch_logits,
                     step_learning_rate=None, checkpoint_extra=None):
    """Train with attnlab.train.loop.run (TranslatorFamily has the arguments). Stops after --epochs, --patience
    epochs without gain, --max-hours across resumes, or --max-steps (when the trainer has it). OUT/last.pt is
    resumable (atomic, every --ckpt-minutes and each epoch); OUT/best.pt holds the best epoch's model."""
    family = TranslatorFamily(args, log, model, optimizer, cfg, meta, data, translate, batch_logits,
                              step_learning_rate, checkpoint_extra)
    family.start(state)
    run(family, model, optimizer, state, args.epochs, args.clip, args.ckpt_minutes)
