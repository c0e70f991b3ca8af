"""What the two translator families (Bahdanau RNN: train_rnn.py / evaluate_rnn.py; Transformer:
train_transformer.py / evaluate_transformer.py) share: the language pairs and their files, tokenization, batched
translation with either search, BLEU reporting, loading a checkpoint or a GGUF back into PyTorch, the resumable
training loop and the evaluation command.

A model family plugs in as its module (seq2seq_rnn or transformer): `greedy_decode(model, src, src_len, a, b)` and
`beam_search(model, src, src_len, beam=, alpha=, max_len_a=, max_len_b=)`.
"""
import argparse
import json
import os
import sys
import time

import sentencepiece as spm
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import bleu  # noqa: E402
from batching import make_batches, pad_batch  # noqa: E402
from decoding import BOS_ID, EOS_ID, PAD_ID  # noqa: E402
from export_common import check_architecture, is_gguf, load_gguf_weights, read_gguf_tensors  # noqa: E402
from training import (Every, Logger, WallClock, atomic_save, capture_rng, keep_freed_memory,  # noqa: E402
                      load_if_exists)

# Each pair: data dir, split names, tokenizer prefix.
PAIRS = {
    "en-de": ("multi30k", "en", "de"),
    "de-en": ("multi30k", "de", "en"),
    "en-zh": ("cmn", "en", "zh"),
}
SPLITS = {"multi30k": ("train", "val", "test2016"), "cmn": ("train", "val", "test")}


# ---- data -------------------------------------------------------------------------------------------------
def pair_paths(pair, root=ROOT):
    """-> dict with data files per split and the two tokenizer models."""
    if pair not in PAIRS:
        raise ValueError(f"unknown pair {pair!r}; expected one of {sorted(PAIRS)}")
    corpus, src, tgt = PAIRS[pair]
    data = os.path.join(root, "build", "data", corpus)
    train, val, test = SPLITS[corpus]
    return {
        "corpus": corpus, "src_lang": src, "tgt_lang": tgt,
        "train": (os.path.join(data, f"{train}.{src}"), os.path.join(data, f"{train}.{tgt}")),
        "val": (os.path.join(data, f"{val}.{src}"), os.path.join(data, f"{val}.{tgt}")),
        "test": (os.path.join(data, f"{test}.{src}"), os.path.join(data, f"{test}.{tgt}")),
        "src_spm": os.path.join(root, "models", "tokenizers", f"{corpus}.{src}.model"),
        "tgt_spm": os.path.join(root, "models", "tokenizers", f"{corpus}.{tgt}.model"),
    }


def read_lines(path):
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: run models/prepare_data.py first")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_split(paths, split, limit=0):
    """-> (source lines, reference lines) of one split, the first `limit` only when limit > 0."""
    src, ref = (read_lines(p) for p in paths[split])
    if len(src) != len(ref):
        raise ValueError(f"{split} files differ in length: {len(src)} vs {len(ref)}")
    if limit:
        src, ref = src[:limit], ref[:limit]
    return src, ref


def load_tokenizers(paths):
    return (spm.SentencePieceProcessor(model_file=paths["src_spm"]),
            spm.SentencePieceProcessor(model_file=paths["tgt_spm"]))


def encode_source(sp, line):
    """Source ids end with EOS so the encoder sees where the sentence stops (C++ does the same)."""
    return sp.encode(line) + [EOS_ID]


def encode_training_pairs(sp_src, sp_tgt, src_lines, tgt_lines, max_len):
    """-> (source id lists, BOS + target + EOS id lists), dropping empty pairs and those over max_len subwords."""
    src_ids, tgt_ids = [], []
    for s, t in zip(src_lines, tgt_lines):
        a, b = encode_source(sp_src, s), [BOS_ID] + sp_tgt.encode(t) + [EOS_ID]
        if 1 < len(a) <= max_len and 2 < len(b) <= max_len + 1:
            src_ids.append(a)
            tgt_ids.append(b)
    return src_ids, tgt_ids


def metric_for(tgt_lang):
    return bleu.bleu_char if tgt_lang == "zh" else bleu.bleu_13a


def scores_for(tgt_lang, hyps, refs):
    """Word BLEU (13a, lower-cased tokenized), or for Chinese, which has no spaces to split words at (word BLEU
    would count each sentence as a few "words"), character BLEU and chrF."""
    if tgt_lang == "zh":
        out = {"bleu_char": bleu.bleu_char(hyps, refs), "chrf": bleu.chrf(hyps, refs)}
    else:
        out = {"bleu_13a": bleu.bleu_13a(hyps, refs), "bleu_lc_tok": bleu.bleu_lc_tok(hyps, refs)}
    return {k: round(v, 2) for k, v in out.items()}


# ---- search over many lines -------------------------------------------------------------------------------
def translate_lines(family, model, sp_src, sp_tgt, lines, batch_size=64, beam=1, alpha=1.0, max_len_a=1.5,
                    max_len_b=10):
    """Detokenized translations of `lines` (greedy when beam == 1), in input order. Lines are batched by length
    so little padding is decoded."""
    ids = [encode_source(sp_src, line) for line in lines]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = [None] * len(ids)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        src, lens = pad_batch([ids[i] for i in idx])
        if beam == 1:
            hyps = family.greedy_decode(model, src, lens, max_len_a, max_len_b)
        else:
            hyps = family.beam_search(model, src, lens, beam=beam, alpha=alpha, max_len_a=max_len_a,
                                      max_len_b=max_len_b)
        for i, h in zip(idx, hyps):
            out[i] = sp_tgt.decode(h)
    return out


# ---- loading a trained model ------------------------------------------------------------------------------
def load_translator(path, family, model_class, architecture, config_from_metadata):
    """A checkpoint (.pt) or GGUF file -> (model, pair). A GGUF's f16/q8_0 weights are dequantized, so every dtype
    is evaluated with the same search code. config_from_metadata(meta, prefix) -> the family's Config."""
    if is_gguf(path):
        meta, tensors = read_gguf_tensors(path)
        check_architecture(meta, architecture, path)
        model = model_class(config_from_metadata(meta, architecture + "."))
        load_gguf_weights(model, tensors, path)
        return model, f"{meta['attnlab.source_language']}-{meta['attnlab.target_language']}"
    ck = torch.load(path, map_location="cpu")
    model = model_class(family.Config(**ck["config"]))
    model.load_state_dict(ck["model"])
    return model, ck["meta"]["pair"]


# ---- training ---------------------------------------------------------------------------------------------
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
    p.add_argument("--keep-epochs", type=int, default=5,
                   help="keep the model of the last N epochs as OUT/epoch-<n>.pt (models/average_checkpoints.py)")


def add_run_options(p):
    """--threads, --seed, --data-root (last in both trainers' --help)."""
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--data-root", default=ROOT, help="repository root holding build/data and models/tokenizers")


def start_training(args):
    """Threads, OUT, OUT/train.log, the data, and OUT/last.pt to resume from (None on a fresh run)
    -> (log, (paths, sp_src, sp_tgt, src_ids, tgt_ids, val_src, val_ref), checkpoint or None)."""
    torch.set_num_threads(args.threads)
    keep_freed_memory()
    os.makedirs(args.out, exist_ok=True)
    log = Logger(os.path.join(args.out, "train.log"))
    data = load_training_data(args)
    return log, data, load_if_exists(os.path.join(args.out, "last.pt"))


def load_training_data(args):
    """-> (paths, sp_src, sp_tgt, src_ids, tgt_ids, val_src, val_ref) for --pair / --data-root / --limit-train /
    --val-subset / --max-len."""
    paths = pair_paths(args.pair, args.data_root)
    sp_src, sp_tgt = load_tokenizers(paths)
    train_src, train_tgt = read_split(paths, "train", args.limit_train)
    val_src, val_ref = read_split(paths, "val", args.val_subset)
    src_ids, tgt_ids = encode_training_pairs(sp_src, sp_tgt, train_src, train_tgt, args.max_len)
    return paths, sp_src, sp_tgt, src_ids, tgt_ids, val_src, val_ref


def translation_meta(args, paths, **extra):
    """The checkpoint's "meta": what the exporter and evaluator need besides the weights."""
    meta = {"pair": args.pair, "src_lang": paths["src_lang"], "tgt_lang": paths["tgt_lang"],
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
    inputs of models/average_checkpoints.py."""
    keep = getattr(args, "keep_epochs", 0)
    if keep <= 0:
        return
    epoch = state["epoch"]
    # best_bleu becomes this epoch's own validation BLEU: export_*.py writes it as the file's attnlab.val_bleu.
    own = dict(state, best_bleu=state["history"][-1]["val_bleu"] if state["history"] else -1.0)
    atomic_save({"config": cfg.to_dict(), "model": model.state_dict(), "meta": meta, "state": own,
                 "args": vars(args)}, os.path.join(args.out, f"epoch-{epoch}.pt"))
    old = os.path.join(args.out, f"epoch-{epoch - keep}.pt")
    if os.path.exists(old):
        os.remove(old)


def train_translator(args, log, model, optimizer, cfg, state, meta, data, translate, batch_logits,
                     step_learning_rate=None, checkpoint_extra=None):
    """The resumable epoch loop of train_rnn.py and train_transformer.py.

    data: (src_ids, tgt_ids, val_src, val_ref, metric, sp_src, sp_tgt); translate(model, sp_src, sp_tgt, lines)
    validates greedily; batch_logits(src [B,S], src_len [B], tgt_in [B,T]) -> logits [B,T,V].
    Learning rate: step_learning_rate(step) sets it before every step (warm-up schedules); without it the rate in
    state["lr"] is kept and multiplied by --lr-decay (floor --min-lr) after each epoch without a validation gain.
    Stops after --epochs, --patience epochs without gain, --max-hours across resumes, or --max-steps (when the
    script has it). OUT/last.pt is resumable (atomic, every --ckpt-minutes and each epoch); OUT/best.pt holds the
    best epoch's model.
    """
    src_ids, tgt_ids, val_src, val_ref, metric, sp_src, sp_tgt = data
    last_path, best_path = os.path.join(args.out, "last.pt"), os.path.join(args.out, "best.pt")
    max_steps = getattr(args, "max_steps", 0)
    decays_on_plateau = step_learning_rate is None

    def checkpoint(reason):
        atomic_save({"config": cfg.to_dict(), "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                     "state": dict(state), "args": vars(args), **(checkpoint_extra or {}), "meta": meta,
                     "rng": capture_rng()}, last_path)
        log(f"checkpoint ({reason}) -> {last_path}")

    clock = WallClock(state["train_seconds"])
    timer = Every(args.ckpt_minutes)
    stop_reason = None
    if state["bad_epochs"] >= args.patience:
        stop_reason = "early stopping already reached"
    elif clock.total() > args.max_hours * 3600:
        stop_reason = f"--max-hours {args.max_hours} already used"
    while state["epoch"] < args.epochs and stop_reason is None:
        epoch = state["epoch"]
        batches = make_batches(src_ids, tgt_ids, args.max_tokens, args.seed + epoch)
        model.train()
        win_loss = win_tokens = 0.0
        win_start = time.time()
        while state["step_in_epoch"] < len(batches):
            idx = batches[state["step_in_epoch"]]
            src, src_len = pad_batch([src_ids[i] for i in idx])
            tgt, _ = pad_batch([tgt_ids[i] for i in idx])
            if decays_on_plateau:
                lr = state["lr"]
            else:
                lr = step_learning_rate(state["global_step"] + 1)
                set_learning_rate(optimizer, lr)
            logits = batch_logits(src, src_len, tgt[:, :-1])                         # [B,T,V]
            gold = tgt[:, 1:]
            loss_sum = F.cross_entropy(logits.reshape(-1, logits.size(-1)), gold.reshape(-1),
                                       ignore_index=PAD_ID, label_smoothing=args.label_smoothing,
                                       reduction="sum")
            n_tok = int((gold != PAD_ID).sum())
            optimizer.zero_grad(set_to_none=True)
            (loss_sum / n_tok).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            state["step_in_epoch"] += 1
            state["global_step"] += 1
            win_loss += float(loss_sum)
            win_tokens += n_tok
            if state["global_step"] % args.log_every == 0:
                dt = time.time() - win_start
                log(f"epoch {epoch + 1} step {state['step_in_epoch']}/{len(batches)} "
                    f"loss {win_loss / win_tokens:.4f} lr {lr:.2e} tok/s {win_tokens / dt:.0f} "
                    f"epoch ETA {(len(batches) - state['step_in_epoch']) * dt / args.log_every / 60:.1f} min")
                win_loss = win_tokens = 0.0
                win_start = time.time()
            if timer.due():
                state["train_seconds"] = clock.total()
                checkpoint("timer")
                timer.reset()
            if clock.total() > args.max_hours * 3600:
                stop_reason = f"--max-hours {args.max_hours} reached"
            elif max_steps and state["global_step"] >= max_steps:
                stop_reason = f"--max-steps {max_steps} reached"
            if stop_reason:
                break
        # A stop on the epoch's last batch still validates it: the epoch is complete.
        if stop_reason is not None and state["step_in_epoch"] < len(batches):
            break

        # ---- end of epoch: validate, keep the best, adapt the learning rate ----
        t0 = time.time()
        hyps = translate(model, sp_src, sp_tgt, val_src)
        val_bleu = metric(hyps, val_ref)
        improved = val_bleu > state["best_bleu"]
        state["epoch"] += 1
        state["step_in_epoch"] = 0
        state["train_seconds"] = clock.total()
        entry = {"epoch": state["epoch"], "val_bleu": val_bleu}
        if decays_on_plateau:
            entry["lr"] = state["lr"]
        entry["hours"] = state["train_seconds"] / 3600
        state["history"].append(entry)
        log(f"epoch {state['epoch']} val BLEU {val_bleu:.2f} (greedy, {len(val_src)} lines, "
            f"{time.time() - t0:.0f} s) best {max(val_bleu, state['best_bleu']):.2f} e.g. {hyps[0]!r}")
        if improved:
            state["best_bleu"] = val_bleu
            state["bad_epochs"] = 0
            atomic_save({"config": cfg.to_dict(), "model": model.state_dict(), "meta": meta,
                         "state": dict(state), "args": vars(args)}, best_path)
            log(f"new best -> {best_path}")
        else:
            state["bad_epochs"] += 1
            if decays_on_plateau:
                state["lr"] = max(args.min_lr, state["lr"] * args.lr_decay)
                set_learning_rate(optimizer, state["lr"])
                log(f"no gain for {state['bad_epochs']} epoch(s): lr -> {state['lr']:.2e}")
            else:
                log(f"no gain for {state['bad_epochs']} epoch(s)")
            if state["bad_epochs"] >= args.patience:
                stop_reason = f"early stopping after {args.patience} epochs without gain"
        keep_epoch_model(args, cfg, model, meta, state)
        checkpoint(f"epoch {state['epoch']}")
        timer.reset()
    state["train_seconds"] = clock.total()
    checkpoint("end")
    log(f"done: {stop_reason or 'all epochs'}; best val BLEU {state['best_bleu']:.2f}; "
        f"trained {state['train_seconds'] / 3600:.2f} h in total")


# ---- evaluation -------------------------------------------------------------------------------------------
def evaluate_translator(argv, description, load_model, translate):
    """The evaluate_*.py command: one JSON line of test (or val) BLEU for a checkpoint or GGUF file.
    load_model(path) -> (model, pair)."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint (.pt) or GGUF file")
    ap.add_argument("--split", default="test", choices=["val", "test"])
    ap.add_argument("--beam", type=int, default=5, help="1 = greedy")
    ap.add_argument("--alpha", type=float, default=1.0, help="length normalization: score / len^alpha")
    ap.add_argument("--max-len-a", type=float, default=1.5)
    ap.add_argument("--max-len-b", type=float, default=10)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--limit", type=int, default=0, help="evaluate only the first N lines")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hyps", help="write the translations here, one per line")
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, pair = load_model(args.model)
    model.eval()
    paths = pair_paths(pair, args.root)
    sp_src, sp_tgt = load_tokenizers(paths)
    src, ref = read_split(paths, args.split, args.limit)
    t0 = time.time()
    hyps = translate(model, sp_src, sp_tgt, src, batch_size=args.batch_size, beam=args.beam, alpha=args.alpha,
                     max_len_a=args.max_len_a, max_len_b=args.max_len_b)
    seconds = time.time() - t0
    if args.hyps:
        with open(args.hyps, "w", encoding="utf-8") as f:
            f.write("".join(h + "\n" for h in hyps))
    result = {"model": args.model, "pair": pair, "split": args.split, "beam": args.beam, "alpha": args.alpha,
              "lines": len(src)}
    result.update(scores_for(paths["tgt_lang"], hyps, ref))
    result["seconds"] = round(seconds, 1)
    print(json.dumps(result))
    return result
