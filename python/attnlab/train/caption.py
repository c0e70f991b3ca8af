#!/usr/bin/python3
"""Train the Show-Attend-Tell decoder (attnlab.nn.show_attend_tell) on Flickr8k grids stored by
attnlab.data.features.

    nohup nice -n 19 python3 -m attnlab.train.caption --out /work/ckpt/captioner --max-hours 10 \
        > /work/ckpt/captioner.log 2>&1 &

Rerunning the same command resumes from OUT/last.pt (model, optimizer, RNG, the epoch's batch order and position).
Checkpoints are written atomically (tmp file + rename) every --save-minutes and at the end of every epoch;
OUT/best.pt is the best dev BLEU-4 (greedy, on --dev-subset dev images, 5 references); OUT/epoch-<n>.pt the last
--keep-epochs epochs, for attnlab.train.average. Early stopping after
--patience epochs without improvement; the learning rate is multiplied by --lr-decay after each such epoch.
The checkpoint holds {"config", "model", "meta", "state"}: attnlab.export caption and attnlab.eval.caption read
it. --max-hours counts this run only (state["train_seconds"], the training time of every run, is for the card).
Only images whose grids are stored are used: without --limit-train or --allow-partial the script refuses to start
until every train and dev grid is stored, so a queued run cannot silently train on part of the data.
"""
import argparse
import math
import os
import random
import sys
import time

import numpy as np  # noqa: F401  (numpy loads OpenBLAS first, as in every captioner run so far: same kernels)
from attnlab import cpu_blas  # noqa: F401  (before torch: OpenBLAS's AVX kernels, see attnlab/cpu_blas.py)
import torch

from attnlab.data import flickr8k
from attnlab.data.captions import GRIDS, SPM_PATH, Data, bucketed_order, make_batch
from attnlab.eval.bleu import bleu_1_to_4
from attnlab.eval.search import caption_split
from attnlab.nn import show_attend_tell as sat
from attnlab.paths import FEATURE_DIR
from attnlab.train.loop import (Family, Logger, WallClock, atomic_save, capture_rng, keep_last_epochs,
                                resume, run)

log = Logger(time_format="%H:%M:%S")    # stdout only: the queue redirects it to OUT.out


def dev_bleu(model, data, subset, max_len):
    hyps, imgs = caption_split(model, data, "dev", subset, 1, max_len)
    if not imgs:
        return 0.0, []
    return bleu_1_to_4(hyps, flickr8k.references(imgs, data.captions))[3], hyps


class CaptionFamily(Family):
    """The captioner's part of the loop: caption batches in a bucketed order kept in the state (so a resumed epoch
    continues it), the decoder's own loss (cross-entropy, doubly stochastic attention term, entropy penalty), greedy
    dev BLEU-4, the learning rate times --lr-decay after each epoch without a gain, and the full checkpoint
    (optimizer included) as last.pt, best.pt and epoch-<n>.pt."""
    position_key = "position"

    def __init__(self, args, model, optimizer, cfg, meta, data):
        self.args, self.model, self.optimizer, self.cfg, self.meta, self.data = args, model, optimizer, cfg, meta, data
        self.last_path, self.best_path = os.path.join(args.out, "last.pt"), os.path.join(args.out, "best.pt")
        self.session = WallClock()
        self.deadline = args.max_hours * 3600 if args.max_hours else math.inf
        self.state = None

    def checkpoint(self, path):
        atomic_save({"config": self.cfg.to_dict(), "model": self.model.state_dict(),
                     "optimizer": self.optimizer.state_dict(), "meta": self.meta, "state": self.state,
                     "rng": capture_rng(with_numpy=False)}, path)

    def save_last(self, reason):
        self.checkpoint(self.last_path)

    def stop_before_start(self, state):
        self.state = state
        return "early stopping already reached" if state["bad_epochs"] >= self.args.patience else None

    def epoch_batches(self, state):
        batch = self.args.batch
        if state["order"] is None:
            state["order"], state["position"] = bucketed_order(self.data.pairs, batch), 0
        order = state["order"]
        self.tokens_done, self.t0, self.loss_sum, self.ce_sum = 0, time.time(), 0.0, 0.0
        return [order[b * batch:(b + 1) * batch] for b in range(math.ceil(len(order) / batch))]

    def batch_loss(self, batch, state):
        feats, tgt_in, tgt_out = make_batch(self.data, [self.data.pairs[i] for i in batch])
        loss, ce, tokens = self.model.loss(feats, tgt_in, tgt_out, self.args.label_smoothing)
        self.tokens_done += int(tokens)
        self.loss_sum += float(loss)
        self.ce_sum += float(ce)
        return loss

    def after_step(self, state, n_batches):
        args = self.args
        if state["position"] % args.log_every == 0:
            dt = time.time() - self.t0
            rate = self.tokens_done / dt
            log(f"epoch {state['epoch'] + 1} batch {state['position']}/{n_batches} "
                f"loss {self.loss_sum / args.log_every:.3f} "
                f"ppl {math.exp(min(self.ce_sum / max(self.tokens_done, 1), 50)):.1f} {rate:.0f} tokens/s "
                f"(epoch ~{n_batches * args.batch * 12.5 / rate / 60:.0f} min)")
            state["train_seconds"] += dt
            self.tokens_done, self.t0, self.loss_sum, self.ce_sum = 0, time.time(), 0.0, 0.0

    def stop_during_epoch(self, state):
        return "--max-hours" if self.session.session() > self.deadline else None

    def end_epoch(self, state):
        args = self.args
        state["train_seconds"] += time.time() - self.t0
        bleu4, hyps = dev_bleu(self.model, self.data, args.dev_subset, args.max_len)
        state["epoch"] += 1
        state["order"], state["position"] = None, 0
        state["history"].append({"epoch": state["epoch"], "dev_bleu4": bleu4, "lr": self.optimizer.param_groups[0]["lr"]})
        if bleu4 > state["best_bleu"]:
            state["best_bleu"], state["bad_epochs"] = bleu4, 0
            self.checkpoint(self.best_path)
        else:
            state["bad_epochs"] += 1
            for group in self.optimizer.param_groups:
                group["lr"] *= args.lr_decay
        log(f"epoch {state['epoch']} dev BLEU-4 {bleu4:.2f} (best {state['best_bleu']:.2f}, "
            f"{state['bad_epochs']} bad) e.g. {hyps[:2]}")
        return "early stopping" if state["bad_epochs"] >= args.patience else None

    def keep_epoch(self, state):
        keep_last_epochs(self.args.out, state["epoch"], self.args.keep_epochs, self.checkpoint)

    def finish(self, state, stop_reason):
        if stop_reason == "--max-hours":
            self.checkpoint(self.last_path)
            log("--max-hours reached; rerun the same command to resume")
        else:
            log(f"done: best dev BLEU-4 {state['best_bleu']:.2f}; {self.best_path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--features", default=FEATURE_DIR)
    ap.add_argument("--layer", type=int, default=7, choices=sorted(GRIDS))
    ap.add_argument("--emb", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--attn-dim", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--alpha-c", type=float, default=1.0)
    ap.add_argument("--attention-reg", default="mean", choices=["mean", "sum"],
                    help="reduce the doubly stochastic term over grid cells by mean (default) or sum (the first run)")
    ap.add_argument("--init-state", default="learned", choices=["learned", "image"],
                    help="h_0, c_0 as learned constants (default: the image reaches the decoder only through "
                         "attention) or from the mean annotation (the paper; the first runs, whose gate closed)")
    ap.add_argument("--global-feature", action="store_true",
                    help="also feed the LSTM the image's global feature (MobileNetV2's last layer averaged; "
                         "needs the 7x7 store too)")
    ap.add_argument("--center-grid", action="store_true",
                    help="attend over the annotations minus their mean (attnlab.nn.show_attend_tell)")
    ap.add_argument("--attention-entropy", type=float, default=0.0,
                    help="gamma of the penalty on the attention's normalized entropy (attnlab.nn.show_attend_tell)")
    ap.add_argument("--label-smoothing", type=float, default=0.0,
                    help="epsilon of the cross-entropy's label smoothing (training only; the model is unchanged)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=4e-4)
    ap.add_argument("--lr-decay", type=float, default=0.8)
    ap.add_argument("--clip", type=float, default=5.0)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--patience", type=int, default=6)
    ap.add_argument("--max-len", type=int, default=30)
    ap.add_argument("--dev-subset", type=int, default=0, help="dev images for BLEU (0 = all stored)")
    ap.add_argument("--limit-train", type=int, default=0, help="only the first N train images (smoke tests)")
    ap.add_argument("--allow-partial", action="store_true", help="train even if some grids are not extracted yet")
    ap.add_argument("--keep-epochs", type=int, default=5,
                    help="keep the last N epochs' models as OUT/epoch-<n>.pt (attnlab.train.average)")
    ap.add_argument("--init-from", metavar="CKPT",
                    help="start from this checkpoint's weights (same configuration) with a fresh optimizer at --lr: "
                         "a low-learning-rate phase after attnlab.train.average")
    ap.add_argument("--max-hours", type=float, default=0.0)
    ap.add_argument("--save-minutes", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=50)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    last_path = os.path.join(args.out, "last.pt")

    data = Data(args.layer, args.features, args.max_len, args.limit_train, with_global=args.global_feature)
    missing = {s: len(flickr8k.load_split(s)) - len(data.images[s]) for s in ("train", "dev")}
    if any(missing.values()) and not (args.allow_partial or args.limit_train):
        sys.exit(f"grids missing for {missing} images: finish python3 -m attnlab.data.features first "
                 "(or pass --allow-partial)")
    G, C = data.features["train"].shape[1:]
    cfg = sat.Config(vocab=data.sp.get_piece_size(), feature_dim=int(C), grid=int(G), emb=args.emb,
                     hidden=args.hidden, attn_dim=args.attn_dim, dropout=args.dropout, alpha_c=args.alpha_c,
                     attention_reg=args.attention_reg, init_from_image=args.init_state == "image",
                     global_dim=int(data.globals["train"].shape[1]) if args.global_feature else 0,
                     center_grid=args.center_grid, attention_entropy=args.attention_entropy)
    meta = {"spm": SPM_PATH, "grid_h": GRIDS[args.layer][0], "grid_w": GRIDS[args.layer][1],
            "feature_layer": "last" if args.layer == 7 else "block13_expand", "max_len": args.max_len,
            "global_feature": "last, mean over 7x7" if args.global_feature else None,
            "name": f"show-attend-tell-flickr8k-mobilenet{args.layer}", "args": vars(args)}
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    model = sat.ShowAttendTell(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    state = {"epoch": 0, "position": 0, "order": None, "best_bleu": -1.0, "bad_epochs": 0, "train_seconds": 0.0,
             "history": []}
    if args.init_from and not os.path.exists(last_path):
        ck = torch.load(args.init_from, map_location="cpu")
        if sat.Config(**ck["config"]).to_dict() != cfg.to_dict():
            sys.exit(f"{args.init_from} has another configuration {ck['config']}")
        model.load_state_dict(ck["model"])
        log(f"weights from {args.init_from}; fresh optimizer at lr {args.lr}")
    if os.path.exists(last_path):
        state = resume(last_path, model, opt, sat.Config, cfg, state)
        log(f"resumed from {last_path}: epoch {state['epoch']} batch {state['position']}, best dev BLEU-4 "
            f"{state['best_bleu']:.2f}")
    log(f"{len(data.images['train'])} train images, {len(data.pairs)} captions, dev {len(data.images['dev'])}; "
        f"config {cfg.to_dict()}; {sat.count_parameters(model):,} parameters")

    family = CaptionFamily(args, model, opt, cfg, meta, data)
    run(family, model, opt, state, args.epochs, args.clip, args.save_minutes)


if __name__ == "__main__":
    main()
