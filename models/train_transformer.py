#!/usr/bin/python3
"""Train the pre-LN Transformer translator (models/transformer.py) on CPU, resumably.

    /usr/bin/python3 models/train_transformer.py --pair de-en --out /work/ckpt/transformer-de-en

Re-running the same command resumes from OUT/last.pt (model, optimizer, schedule step, epoch, position in
the epoch, RNG states, best BLEU, patience, accumulated wall-clock time); last.pt is written atomically
every --ckpt-minutes and after every epoch. OUT/best.pt holds the best model by greedy validation BLEU
(13a). Training stops after --patience epochs without a validation gain, after --epochs, or when
--max-hours of training (across resumes) are used. Logs (with target tokens/s) go to OUT/train.log.

Recipe: label smoothing 0.1; Adam(0.9, 0.98, eps 1e-9); learning rate warm-up then inverse square root,
    lr(step) = peak_lr * min(step / warmup, sqrt(warmup / step));
token-bucketed batches (similar lengths together, at most --max-tokens padded tokens per side); gradient
clipping at 1.0; dropout 0.3 (the data set is small: 29k pairs).
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import math
import random
import sys
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from train_rnn import (Logger, atomic_save, encode_source, keep_freed_memory, make_batches,  # noqa: E402
                       metric_for, pad_batch, pair_paths, read_lines)
from transformer import (BOS_ID, EOS_ID, PAD_ID, Config, Transformer, beam_search,  # noqa: E402
                         count_parameters, greedy_decode)

PAIRS = ("en-de", "de-en")


def translate(model, sp_src, sp_tgt, lines, batch_size=64, beam=1, alpha=1.0, max_len_a=1.5, max_len_b=10):
    """Detokenized translations of `lines` (greedy when beam == 1), in input order."""
    ids = [encode_source(sp_src, line) for line in lines]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = [None] * len(ids)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        src, lens = pad_batch([ids[i] for i in idx])
        if beam == 1:
            hyps = greedy_decode(model, src, lens, max_len_a, max_len_b)
        else:
            hyps = beam_search(model, src, lens, beam=beam, alpha=alpha, max_len_a=max_len_a, max_len_b=max_len_b)
        for i, h in zip(idx, hyps):
            out[i] = sp_tgt.decode(h)
    return out


def learning_rate(step, peak, warmup):
    step = max(step, 1)
    return peak * min(step / warmup, math.sqrt(warmup / step))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pair", required=True, choices=PAIRS)
    p.add_argument("--out", required=True, help="checkpoint directory (last.pt, best.pt, train.log)")
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--enc-layers", type=int, default=3)
    p.add_argument("--dec-layers", type=int, default=3)
    p.add_argument("--ff", type=int, default=1024)
    p.add_argument("--dropout", type=float, default=0.3)
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (reached after --warmup steps)")
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--max-tokens", type=int, default=4096, help="padded tokens per batch (src or tgt side)")
    p.add_argument("--max-len", type=int, default=100, help="drop training pairs longer than this (subwords)")
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--patience", type=int, default=6, help="stop after this many epochs without val gain")
    p.add_argument("--max-hours", type=float, default=12.0, help="total wall-clock budget across resumes")
    p.add_argument("--ckpt-minutes", type=float, default=10.0)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--val-subset", type=int, default=0, help="greedy-validate on the first N lines (0 = all)")
    p.add_argument("--limit-train", type=int, default=0, help="use only the first N training pairs (smoke test)")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps in total (smoke test)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--data-root", default=ROOT, help="repository root holding build/data and models/tokenizers")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    keep_freed_memory()
    os.makedirs(args.out, exist_ok=True)
    log = Logger(os.path.join(args.out, "train.log"))
    paths = pair_paths(args.pair, args.data_root)
    sp_src = spm.SentencePieceProcessor(model_file=paths["src_spm"])
    sp_tgt = spm.SentencePieceProcessor(model_file=paths["tgt_spm"])

    train_src, train_tgt = (read_lines(p) for p in paths["train"])
    if len(train_src) != len(train_tgt):
        raise ValueError(f"training files differ in length: {len(train_src)} vs {len(train_tgt)}")
    if args.limit_train:
        train_src, train_tgt = train_src[:args.limit_train], train_tgt[:args.limit_train]
    val_src, val_ref = (read_lines(p) for p in paths["val"])
    if args.val_subset:
        val_src, val_ref = val_src[:args.val_subset], val_ref[:args.val_subset]
    src_ids, tgt_ids = [], []
    for s, t in zip(train_src, train_tgt):
        a, b = encode_source(sp_src, s), [BOS_ID] + sp_tgt.encode(t) + [EOS_ID]
        if 1 < len(a) <= args.max_len and 2 < len(b) <= args.max_len + 1:
            src_ids.append(a)
            tgt_ids.append(b)
    metric = metric_for(paths["tgt_lang"])

    last_path = os.path.join(args.out, "last.pt")
    ck = torch.load(last_path, map_location="cpu") if os.path.exists(last_path) else None
    if ck is not None:
        cfg = Config(**ck["config"])
    else:
        cfg = Config(src_vocab=sp_src.vocab_size(), tgt_vocab=sp_tgt.vocab_size(), d_model=args.d_model,
                     heads=args.heads, enc_layers=args.enc_layers, dec_layers=args.dec_layers, ff=args.ff,
                     dropout=args.dropout)
    torch.manual_seed(args.seed)
    model = Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    state = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best_bleu": -1.0, "bad_epochs": 0,
             "train_seconds": 0.0, "history": []}
    if ck is not None:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        state.update(ck["state"])
        torch.set_rng_state(ck["rng"]["torch"])
        random.setstate(ck["rng"]["python"])
        np.random.set_state(ck["rng"]["numpy"])
        log(f"resumed from {last_path}: epoch {state['epoch']} step {state['step_in_epoch']} "
            f"best BLEU {state['best_bleu']:.2f} trained {state['train_seconds'] / 3600:.2f} h")
    log(f"pair {args.pair} params {count_parameters(model)} config {json.dumps(cfg.to_dict())}")
    log(f"train pairs {len(src_ids)} val {len(val_src)} threads {args.threads} args {json.dumps(vars(args))}")

    meta = {"pair": args.pair, "src_lang": paths["src_lang"], "tgt_lang": paths["tgt_lang"],
            "src_spm": os.path.relpath(paths["src_spm"], args.data_root),
            "tgt_spm": os.path.relpath(paths["tgt_spm"], args.data_root), "source_add_eos": True}

    def checkpoint(reason):
        atomic_save({"config": cfg.to_dict(), "model": model.state_dict(), "optimizer": opt.state_dict(),
                     "state": dict(state), "args": vars(args), "meta": meta,
                     "rng": {"torch": torch.get_rng_state(), "python": random.getstate(),
                             "numpy": np.random.get_state()}}, last_path)
        log(f"checkpoint ({reason}) -> {last_path}")

    session_start = time.time()
    seconds_at_start = state["train_seconds"]

    def elapsed_total():
        return seconds_at_start + time.time() - session_start

    last_ckpt = time.time()
    stop_reason = None
    if state["bad_epochs"] >= args.patience:
        stop_reason = "early stopping already reached"
    elif elapsed_total() > args.max_hours * 3600:
        stop_reason = f"--max-hours {args.max_hours} already used"
    while state["epoch"] < args.epochs and stop_reason is None:
        epoch = state["epoch"]
        batches = make_batches(src_ids, tgt_ids, args.max_tokens, args.seed + epoch)
        model.train()
        win_loss = win_tokens = 0.0
        win_start = time.time()
        while state["step_in_epoch"] < len(batches):
            idx = batches[state["step_in_epoch"]]
            src, _ = pad_batch([src_ids[i] for i in idx])
            tgt, _ = pad_batch([tgt_ids[i] for i in idx])
            lr = learning_rate(state["global_step"] + 1, args.lr, args.warmup)
            for g in opt.param_groups:
                g["lr"] = lr
            logits = model(src, tgt[:, :-1])                                          # [B,T,V]
            gold = tgt[:, 1:]
            loss_sum = F.cross_entropy(logits.reshape(-1, logits.size(-1)), gold.reshape(-1), ignore_index=PAD_ID,
                                       label_smoothing=args.label_smoothing, reduction="sum")
            n_tok = int((gold != PAD_ID).sum())
            opt.zero_grad(set_to_none=True)
            (loss_sum / n_tok).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
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
            if time.time() - last_ckpt > args.ckpt_minutes * 60:
                state["train_seconds"] = elapsed_total()
                checkpoint("timer")
                last_ckpt = time.time()
            if elapsed_total() > args.max_hours * 3600:
                stop_reason = f"--max-hours {args.max_hours} reached"
            elif args.max_steps and state["global_step"] >= args.max_steps:
                stop_reason = f"--max-steps {args.max_steps} reached"
            if stop_reason:
                break
        if stop_reason is not None and state["step_in_epoch"] < len(batches):
            break

        # ---- end of epoch: validate and keep the best ----
        t0 = time.time()
        hyps = translate(model, sp_src, sp_tgt, val_src)
        val_bleu = metric(hyps, val_ref)
        improved = val_bleu > state["best_bleu"]
        state["epoch"] += 1
        state["step_in_epoch"] = 0
        state["train_seconds"] = elapsed_total()
        state["history"].append({"epoch": state["epoch"], "val_bleu": val_bleu, "hours": state["train_seconds"] / 3600})
        log(f"epoch {state['epoch']} val BLEU {val_bleu:.2f} (greedy, {len(val_src)} lines, "
            f"{time.time() - t0:.0f} s) best {max(val_bleu, state['best_bleu']):.2f} e.g. {hyps[0]!r}")
        if improved:
            state["best_bleu"] = val_bleu
            state["bad_epochs"] = 0
            atomic_save({"config": cfg.to_dict(), "model": model.state_dict(), "meta": meta,
                         "state": dict(state), "args": vars(args)}, os.path.join(args.out, "best.pt"))
            log(f"new best -> {os.path.join(args.out, 'best.pt')}")
        else:
            state["bad_epochs"] += 1
            log(f"no gain for {state['bad_epochs']} epoch(s)")
            if state["bad_epochs"] >= args.patience:
                stop_reason = f"early stopping after {args.patience} epochs without gain"
        checkpoint(f"epoch {state['epoch']}")
        last_ckpt = time.time()
    state["train_seconds"] = elapsed_total()
    checkpoint("end")
    log(f"done: {stop_reason or 'all epochs'}; best val BLEU {state['best_bleu']:.2f}; "
        f"trained {state['train_seconds'] / 3600:.2f} h in total")


if __name__ == "__main__":
    main()
