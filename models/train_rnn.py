#!/usr/bin/python3
"""Train the Bahdanau RNN translator (models/seq2seq_rnn.py) on CPU, resumably.

    /usr/bin/python3 models/train_rnn.py --pair en-de --out /work/ckpt/bahdanau-en-de

Re-running the same command resumes from OUT/last.pt (model, optimizer, epoch, step, RNG states,
best BLEU, patience, accumulated wall-clock time). OUT/best.pt holds the best model by greedy
validation BLEU (13a; character BLEU for Chinese). Logs go to OUT/train.log and stdout.
"""
import os

# Other engineers compile on the same two cores: spinning OpenMP threads waste what little CPU we get.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import ctypes
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

import bleu  # noqa: E402
from seq2seq_rnn import (BOS_ID, EOS_ID, PAD_ID, SCORES, Config, Seq2SeqRNN,  # noqa: E402
                         count_parameters, greedy_decode)

# Each pair: data dir, split names, tokenizer prefix.
PAIRS = {
    "en-de": ("multi30k", "en", "de"),
    "de-en": ("multi30k", "de", "en"),
    "en-zh": ("cmn", "en", "zh"),
}
SPLITS = {"multi30k": ("train", "val", "test2016"), "cmn": ("train", "val", "test")}


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


def encode_source(sp, line):
    """Source ids end with EOS so the encoder sees where the sentence stops (C++ does the same)."""
    return sp.encode(line) + [EOS_ID]


def metric_for(tgt_lang):
    return bleu.bleu_char if tgt_lang == "zh" else bleu.bleu_13a


def pad_batch(seqs):
    """list of id lists -> (LongTensor [B, max_len] PAD-padded, lengths [B])."""
    lens = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    out = torch.full((len(seqs), int(lens.max())), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out, lens


def make_batches(src_ids, tgt_ids, max_tokens, seed):
    """Length-bucketed batches: sort by (noisy) length so padding is small, then shuffle the batches.
    Deterministic in `seed`, so a resumed epoch can skip the batches it already did."""
    rng = random.Random(seed)
    order = sorted(range(len(src_ids)),
                   key=lambda i: (len(src_ids[i]) + rng.random() * 2, len(tgt_ids[i]) + rng.random() * 2))
    batches, cur, cur_max = [], [], 0
    for i in order:
        need = max(len(src_ids[i]), len(tgt_ids[i]) - 1)   # decoder input drops the last token
        new_max = max(cur_max, need)
        if cur and new_max * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, new_max = [], need
        cur.append(i)
        cur_max = new_max
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def translate(model, sp_src, sp_tgt, lines, batch_size=64, beam=1, alpha=1.0, max_len_a=1.5, max_len_b=10):
    """Detokenized translations of `lines` (greedy when beam == 1), in input order."""
    from seq2seq_rnn import beam_search
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


def atomic_save(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


class Logger:
    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")

    def __call__(self, msg):
        line = time.strftime("%Y-%m-%d %H:%M:%S ") + msg
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()


def keep_freed_memory():
    """glibc returns big freed blocks to the OS and page-faults them back on the next step; the
    autograd graph allocates the same sizes every step, so keeping them roughly halves step time."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 30)        # M_MMAP_THRESHOLD
        libc.mallopt(-1, 2000000000)     # M_TRIM_THRESHOLD
    except OSError:
        pass


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pair", required=True, choices=sorted(PAIRS))
    p.add_argument("--score", default="additive", choices=[s for s in SCORES if s != "scaled_dot"])
    p.add_argument("--out", required=True, help="checkpoint directory (last.pt, best.pt, train.log)")
    p.add_argument("--emb", type=int, default=256)
    p.add_argument("--enc-hidden", type=int, default=256)
    p.add_argument("--dec-hidden", type=int, default=512)
    p.add_argument("--attn-dim", type=int, default=512)
    p.add_argument("--dropout", type=float, default=0.3)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=5e-5)
    p.add_argument("--lr-decay", type=float, default=0.5, help="lr factor after an epoch without val gain")
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--max-tokens", type=int, default=3000, help="padded tokens per batch (src or tgt side)")
    p.add_argument("--max-len", type=int, default=80, help="drop training pairs longer than this (subwords)")
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--patience", type=int, default=4, help="stop after this many epochs without val gain")
    p.add_argument("--max-hours", type=float, default=12.0, help="total wall-clock budget across resumes")
    p.add_argument("--ckpt-minutes", type=float, default=10.0)
    p.add_argument("--log-every", type=int, default=100)
    p.add_argument("--val-subset", type=int, default=0, help="greedy-validate on the first N lines (0 = all)")
    p.add_argument("--limit-train", type=int, default=0, help="use only the first N training pairs (smoke test)")
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
    n_tgt_tokens = sum(len(t) - 1 for t in tgt_ids)
    metric = metric_for(paths["tgt_lang"])

    last_path = os.path.join(args.out, "last.pt")
    resumed = os.path.exists(last_path)
    if resumed:
        ck = torch.load(last_path, map_location="cpu")
        cfg = Config(**ck["config"])
    else:
        ck = None
        cfg = Config(src_vocab=sp_src.vocab_size(), tgt_vocab=sp_tgt.vocab_size(), emb=args.emb,
                     enc_hidden=args.enc_hidden, dec_hidden=args.dec_hidden, attn_dim=args.attn_dim,
                     score=args.score, dropout=args.dropout)
    torch.manual_seed(args.seed)
    model = Seq2SeqRNN(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    state = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best_bleu": -1.0, "bad_epochs": 0,
             "lr": args.lr, "train_seconds": 0.0, "history": []}
    if resumed:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        state.update(ck["state"])
        torch.set_rng_state(ck["rng"]["torch"])
        random.setstate(ck["rng"]["python"])
        np.random.set_state(ck["rng"]["numpy"])
        if ck["score"] != args.score and args.score != "additive":
            log(f"warning: --score {args.score} ignored, checkpoint was trained with {ck['score']}")
        log(f"resumed from {last_path}: epoch {state['epoch']} step {state['step_in_epoch']} "
            f"best BLEU {state['best_bleu']:.2f} trained {state['train_seconds'] / 3600:.2f} h")
    for g in opt.param_groups:
        g["lr"] = state["lr"]
    log(f"pair {args.pair} score {cfg.score} params {count_parameters(model)} config {json.dumps(cfg.to_dict())}")
    log(f"train pairs {len(src_ids)} ({n_tgt_tokens} target tokens) val {len(val_src)} threads {args.threads}")

    meta = {"pair": args.pair, "src_lang": paths["src_lang"], "tgt_lang": paths["tgt_lang"],
            "src_spm": os.path.relpath(paths["src_spm"], args.data_root),
            "tgt_spm": os.path.relpath(paths["tgt_spm"], args.data_root),
            "score": cfg.score, "source_add_eos": True}

    def checkpoint(reason):
        atomic_save({"config": cfg.to_dict(), "model": model.state_dict(), "optimizer": opt.state_dict(),
                     "state": dict(state), "args": vars(args), "score": cfg.score, "meta": meta,
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
            src, src_len = pad_batch([src_ids[i] for i in idx])
            tgt, _ = pad_batch([tgt_ids[i] for i in idx])
            logits = model(src, src_len, tgt[:, :-1])                                 # [B,T,V]
            gold = tgt[:, 1:]
            loss_sum = F.cross_entropy(logits.reshape(-1, logits.size(-1)), gold.reshape(-1),
                                       ignore_index=PAD_ID, label_smoothing=args.label_smoothing,
                                       reduction="sum")
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
                    f"loss {win_loss / win_tokens:.4f} lr {state['lr']:.2e} "
                    f"tok/s {win_tokens / dt:.0f} epoch ETA {(len(batches) - state['step_in_epoch']) * dt / args.log_every / 60:.1f} min")
                win_loss = win_tokens = 0.0
                win_start = time.time()
            if time.time() - last_ckpt > args.ckpt_minutes * 60:
                state["train_seconds"] = elapsed_total()
                checkpoint("timer")
                last_ckpt = time.time()
            if elapsed_total() > args.max_hours * 3600:
                stop_reason = f"--max-hours {args.max_hours} reached"
                break
        if stop_reason is not None:
            break

        # ---- end of epoch: validate, keep the best, adapt the learning rate ----
        t0 = time.time()
        hyps = translate(model, sp_src, sp_tgt, val_src)
        val_bleu = metric(hyps, val_ref)
        improved = val_bleu > state["best_bleu"]
        state["epoch"] += 1
        state["step_in_epoch"] = 0
        state["train_seconds"] = elapsed_total()
        state["history"].append({"epoch": state["epoch"], "val_bleu": val_bleu, "lr": state["lr"],
                                 "hours": state["train_seconds"] / 3600})
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
            state["lr"] = max(args.min_lr, state["lr"] * args.lr_decay)
            for g in opt.param_groups:
                g["lr"] = state["lr"]
            log(f"no gain for {state['bad_epochs']} epoch(s): lr -> {state['lr']:.2e}")
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
