#!/usr/bin/python3
"""Train the Show-Attend-Tell decoder (models/show_attend_tell.py) on Flickr8k grids stored by
models/extract_features.py.

    nohup nice -n 19 /usr/bin/python3 models/train_caption.py --out /work/ckpt/captioner --max-hours 10 \
        > /work/ckpt/captioner.log 2>&1 &

Rerunning the same command resumes from OUT/last.pt (model, optimizer, RNG, the epoch's batch order and position).
Checkpoints are written atomically (tmp file + rename) every --save-minutes and at the end of every epoch;
OUT/best.pt is the best dev BLEU-4 (greedy, on --dev-subset dev images, 5 references); OUT/epoch-<n>.pt the last
--keep-epochs epochs, for models/average_checkpoints.py. Early stopping after
--patience epochs without improvement; the learning rate is multiplied by --lr-decay after each such epoch.
The checkpoint holds {"config", "model", "meta", "state"}: models/export_caption.py and
models/evaluate_caption.py read it.
Only images whose grids are stored are used: without --limit-train or --allow-partial the script refuses to start
until every train and dev grid is stored, so a queued run cannot silently train on part of the data.
"""
import argparse
import math
import os
import random
import sys
import time

import numpy as np
import cpu_blas  # noqa: E402,F401  (before torch: OpenBLAS's AVX kernels, see models/cpu_blas.py)
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import flickr8k  # noqa: E402
import show_attend_tell as sat  # noqa: E402
from extract_features import FEATURE_DIR, open_store  # noqa: E402
from training import Every, Logger, WallClock, atomic_save, capture_rng, restore_training  # noqa: E402

SPM_PATH = "models/tokenizers/flickr8k.en.model"
GRIDS = {7: (7, 7), 14: (14, 14)}


log = Logger(time_format="%H:%M:%S")    # stdout only: the queue redirects it to OUT.out


class Data:
    """Grids of the stored images of each split, in RAM as float16, and the tokenized train captions; with
    with_global also each image's global feature (the 7x7 store's grid averaged, float32)."""

    def __init__(self, layer, feature_dir, max_len, limit_train=0, with_global=False):
        import sentencepiece as spm
        self.sp = spm.SentencePieceProcessor(model_file=os.path.join(ROOT, SPM_PATH))
        feats, done, names = open_store(layer, feature_dir)
        index = {name: i for i, name in enumerate(names)}
        stores = [(done, index)]
        if with_global:
            feats7, done7, names7 = open_store(7, feature_dir)
            index7 = {name: i for i, name in enumerate(names7)}
            stores.append((done7, index7))
        self.captions = flickr8k.load_captions()
        self.images, self.features, self.globals = {}, {}, {}
        for split in ("train", "dev", "test"):
            imgs = [img for img in flickr8k.load_split(split)
                    if all(img in ix and dn[ix[img]] for dn, ix in stores)]
            if split == "train" and limit_train:
                imgs = imgs[:limit_train]
            rows = [index[img] for img in imgs]
            self.images[split] = imgs
            self.features[split] = torch.from_numpy(np.ascontiguousarray(feats[rows])) if rows else None
            self.globals[split] = global_features(feats7, [index7[img] for img in imgs]) \
                if with_global and rows else None
        self.pairs = []   # (row in features["train"], token ids without BOS/EOS, at most max_len)
        for r, img in enumerate(self.images["train"]):
            for cap in self.captions[img]:
                self.pairs.append((r, self.sp.encode(cap)[:max_len]))

    @classmethod
    def for_model(cls, model, feature_dir, max_len):
        """The dev and test data a trained decoder reads (its grid, and the global feature if it takes one)."""
        return cls(sat.grid_side(model), feature_dir, max_len, limit_train=1, with_global=model.cfg.global_dim > 0)

    def inputs(self, split, rows):
        """The model input of `rows` (a slice or index tensor) of a split: the grid, or (grid, global feature)."""
        grid = self.features[split][rows].float()
        return grid if self.globals[split] is None else (grid, self.globals[split][rows])


def global_features(feats7, rows, chunk=500):
    """[N] rows of the 7x7 store -> their grids averaged over the 49 cells [N, 1280] float32."""
    return torch.cat([torch.from_numpy(feats7[rows[i:i + chunk]].astype(np.float32).mean(1))
                      for i in range(0, len(rows), chunk)])


def make_batch(data, pairs):
    rows = torch.tensor([r for r, _ in pairs])
    T = max(len(ids) for _, ids in pairs) + 1
    tgt_in = torch.zeros(len(pairs), T, dtype=torch.long)
    tgt_out = torch.zeros(len(pairs), T, dtype=torch.long)
    for i, (_, ids) in enumerate(pairs):
        tgt_in[i, :len(ids) + 1] = torch.tensor([sat.BOS_ID] + ids)
        tgt_out[i, :len(ids) + 1] = torch.tensor(ids + [sat.EOS_ID])
    return data.inputs("train", rows), tgt_in, tgt_out


def bucketed_order(pairs, batch, batches_per_bucket=50):
    """A shuffled order of `pairs` whose consecutive `batch`-sized windows hold captions of similar length:
    random padding would double the decoder's steps (captions run 5 to 30 tokens)."""
    order = list(range(len(pairs)))
    random.shuffle(order)
    span = batch * batches_per_bucket
    batches = []
    for start in range(0, len(order), span):
        bucket = sorted(order[start:start + span], key=lambda i: len(pairs[i][1]))
        batches.extend(bucket[b:b + batch] for b in range(0, len(bucket), batch))
    random.shuffle(batches)
    batches.sort(key=lambda b: len(b) < batch)   # stable: the one short batch goes last, keeping windows aligned
    return [i for b in batches for i in b]


def caption_split(model, data, split, subset=0, beam=1, max_len=30, batch=100, length_penalty=1.0,
                  no_repeat_ngram=0):
    """-> (hypothesis texts, image names) for the split's stored images."""
    imgs = data.images[split][:subset] if subset else data.images[split]
    hyps = []
    for b in range(0, len(imgs), batch):
        f = data.inputs(split, slice(b, min(b + batch, len(imgs))))
        if beam == 1:
            ids = sat.greedy_decode(model, f, max_len, no_repeat_ngram=no_repeat_ngram)
        else:
            ids = sat.beam_search(model, f, beam=beam, alpha=length_penalty, max_len=max_len,
                                  no_repeat_ngram=no_repeat_ngram)
        hyps.extend(data.sp.decode(x) for x in ids)
    return hyps, imgs


def dev_bleu(model, data, subset, max_len):
    hyps, imgs = caption_split(model, data, "dev", subset, 1, max_len)
    if not imgs:
        return 0.0, []
    return flickr8k.bleu_1_to_4(hyps, flickr8k.references(imgs, data.captions))[3], hyps


def keep_epoch(args, state, checkpoint):
    """OUT/epoch-<n>.pt, deleting the one --keep-epochs older: the inputs of models/average_checkpoints.py."""
    if args.keep_epochs <= 0:
        return
    checkpoint(os.path.join(args.out, f"epoch-{state['epoch']}.pt"))
    old = os.path.join(args.out, f"epoch-{state['epoch'] - args.keep_epochs}.pt")
    if os.path.exists(old):
        os.remove(old)


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
                    help="attend over the annotations minus their mean (models/show_attend_tell.py)")
    ap.add_argument("--attention-entropy", type=float, default=0.0,
                    help="gamma of the penalty on the attention's normalized entropy (models/show_attend_tell.py)")
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
                    help="keep the last N epochs' models as OUT/epoch-<n>.pt (models/average_checkpoints.py)")
    ap.add_argument("--init-from", metavar="CKPT",
                    help="start from this checkpoint's weights (same configuration) with a fresh optimizer at --lr: "
                         "a low-learning-rate phase after models/average_checkpoints.py")
    ap.add_argument("--max-hours", type=float, default=0.0)
    ap.add_argument("--save-minutes", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=50)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    last_path, best_path = os.path.join(args.out, "last.pt"), os.path.join(args.out, "best.pt")

    data = Data(args.layer, args.features, args.max_len, args.limit_train, with_global=args.global_feature)
    missing = {s: len(flickr8k.load_split(s)) - len(data.images[s]) for s in ("train", "dev")}
    if any(missing.values()) and not (args.allow_partial or args.limit_train):
        sys.exit(f"grids missing for {missing} images: finish models/extract_features.py first "
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
        ck = torch.load(last_path, map_location="cpu")
        if sat.Config(**ck["config"]).to_dict() != cfg.to_dict():
            sys.exit(f"{last_path} has another configuration {ck['config']}: use another --out")
        restore_training(ck, model, opt)
        state = ck["state"]
        log(f"resumed from {last_path}: epoch {state['epoch']} batch {state['position']}, best dev BLEU-4 "
            f"{state['best_bleu']:.2f}")
    log(f"{len(data.images['train'])} train images, {len(data.pairs)} captions, dev {len(data.images['dev'])}; "
        f"config {cfg.to_dict()}; {sat.count_parameters(model):,} parameters")

    def checkpoint(path):
        atomic_save({"config": cfg.to_dict(), "model": model.state_dict(), "optimizer": opt.state_dict(),
                     "meta": meta, "state": state,
                     "rng": capture_rng(with_numpy=False)}, path)

    session = WallClock()    # --max-hours counts this run only (train_seconds is kept for the model card)
    periodic_save = Every(args.save_minutes)
    deadline = args.max_hours * 3600 if args.max_hours else math.inf
    while state["epoch"] < args.epochs and state["bad_epochs"] < args.patience:
        if state["order"] is None:
            state["order"], state["position"] = bucketed_order(data.pairs, args.batch), 0
        order = state["order"]
        model.train()
        tokens_done, t0, loss_sum, ce_sum = 0, time.time(), 0.0, 0.0
        n_batches = math.ceil(len(order) / args.batch)
        while state["position"] < n_batches:
            b = state["position"]
            feats, tgt_in, tgt_out = make_batch(data, [data.pairs[i] for i in order[b * args.batch:(b + 1) * args.batch]])
            loss, ce, tokens = model.loss(feats, tgt_in, tgt_out, args.label_smoothing)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            state["position"] += 1
            tokens_done += int(tokens)
            loss_sum += float(loss)
            ce_sum += float(ce)
            if state["position"] % args.log_every == 0:
                dt = time.time() - t0
                log(f"epoch {state['epoch'] + 1} batch {state['position']}/{n_batches} loss {loss_sum / args.log_every:.3f} "
                    f"ppl {math.exp(min(ce_sum / max(tokens_done, 1), 50)):.1f} {tokens_done / dt:.0f} tokens/s "
                    f"(epoch ~{n_batches * args.batch * 12.5 / (tokens_done / dt) / 60:.0f} min)")
                state["train_seconds"] += dt
                tokens_done, t0, loss_sum, ce_sum = 0, time.time(), 0.0, 0.0
            if periodic_save.due():
                checkpoint(last_path)
                periodic_save.reset()
            if session.session() > deadline:
                checkpoint(last_path)
                log("--max-hours reached; rerun the same command to resume")
                return
        state["train_seconds"] += time.time() - t0
        bleu4, hyps = dev_bleu(model, data, args.dev_subset, args.max_len)
        state["epoch"] += 1
        state["order"], state["position"] = None, 0
        state["history"].append({"epoch": state["epoch"], "dev_bleu4": bleu4, "lr": opt.param_groups[0]["lr"]})
        if bleu4 > state["best_bleu"]:
            state["best_bleu"], state["bad_epochs"] = bleu4, 0
            checkpoint(best_path)
        else:
            state["bad_epochs"] += 1
            for group in opt.param_groups:
                group["lr"] *= args.lr_decay
        checkpoint(last_path)
        keep_epoch(args, state, checkpoint)
        periodic_save.reset()
        log(f"epoch {state['epoch']} dev BLEU-4 {bleu4:.2f} (best {state['best_bleu']:.2f}, "
            f"{state['bad_epochs']} bad) e.g. {hyps[:2]}")
    log(f"done: best dev BLEU-4 {state['best_bleu']:.2f}; {best_path}")


if __name__ == "__main__":
    main()
