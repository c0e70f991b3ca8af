#!/usr/bin/python3
"""Train the pre-LN Transformer translator (attnlab.nn.transformer) on CPU, resumably.

    python3 -m attnlab.train.transformer --pair de-en --out /work/ckpt/transformer-de-en

Re-running the same command resumes from OUT/last.pt (model, optimizer, schedule step, epoch, position in
the epoch, RNG states, best BLEU, patience, accumulated wall-clock time); last.pt is written atomically
every --ckpt-minutes and after every epoch. OUT/best.pt holds the best model by greedy validation BLEU
(13a). Training stops after --patience epochs without a validation gain, after --epochs, or when
--max-hours of training (across resumes) are used. Logs (with target tokens/s) go to OUT/train.log.

Recipe: label smoothing 0.1; Adam(0.9, 0.98, eps 1e-9); learning rate warm-up then inverse square root,
    lr(step) = peak_lr * min(step / warmup, sqrt(warmup / step));
token-bucketed batches (similar lengths together, at most --max-tokens padded tokens per side); gradient
clipping at 1.0; dropout 0.3 (the data set is small: 29k pairs).
Fine-tuning: --init CKPT starts from CKPT's weights and configuration (its dropout too) with a fresh optimizer and
schedule; --init FILE.gguf (attnlab.export's output, f16 is enough) does the same from a file, with --dropout, so
training goes on from committed weights on a machine that has no checkpoint (give it a lower --lr and a short --warmup); --multi30k-repeat / --broad-share set the epoch's data mix.
Why 2048-token batches and an 800-step warm-up: on CPU an epoch costs ~7 minutes per core whatever the batch, so
what matters is progress per epoch; ~310 updates per epoch (4096 gives 155) and a warm-up of ~2.5 epochs (1000
steps at 4096 took 6.5 epochs) reach a given loss in fewer epochs.
"""
import argparse
import json
import math

from attnlab import cpu_blas  # noqa: F401  (before torch: OpenBLAS's AVX kernels, see attnlab/cpu_blas.py)
import torch

from attnlab.eval.bleu import metric_for
from attnlab.eval.search import translate_lines
from attnlab.nn import transformer
from attnlab.nn.transformer import Config, Transformer, count_parameters
from attnlab.train.loop import restore_training
from attnlab.train.translator import (add_run_options, add_training_options, initial_weights, log_resumed,
                                      new_training_state, start_training, train_translator, translation_meta)

PAIRS = ("en-de", "de-en")


def translate(model, sp_src, sp_tgt, lines, **options):
    """Detokenized translations of `lines` (greedy when beam == 1), in input order."""
    return translate_lines(transformer, model, sp_src, sp_tgt, lines, **options)


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
    p.add_argument("--warmup", type=int, default=800)
    add_training_options(p, max_tokens=2048, max_len=100, epochs=60, patience=6, log_every=50)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps in total (smoke test)")
    add_run_options(p)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    log, (paths, sp_src, sp_tgt, src_ids, tgt_ids, val_src, val_ref), ck = start_training(args)

    init = initial_weights(args, paths, log) if ck is None else None
    if ck is not None or init is not None:
        cfg = Config(**(ck if ck is not None else init)["config"])
    else:
        cfg = Config(src_vocab=sp_src.vocab_size(), tgt_vocab=sp_tgt.vocab_size(), d_model=args.d_model,
                     heads=args.heads, enc_layers=args.enc_layers, dec_layers=args.dec_layers, ff=args.ff,
                     dropout=args.dropout)
    torch.manual_seed(args.seed)
    model = Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    state = new_training_state()
    if init is not None:
        model.load_state_dict(init["model"])
    if ck is not None:
        restore_training(ck, model, opt)
        state.update(ck["state"])
        log_resumed(log, args, state)
    log(f"pair {args.pair} params {count_parameters(model)} config {json.dumps(cfg.to_dict())}")
    log(f"train pairs {len(src_ids)} val {len(val_src)} threads {args.threads} args {json.dumps(vars(args))}")

    meta = translation_meta(args, paths)
    data = (src_ids, tgt_ids, val_src, val_ref, metric_for(paths["tgt_lang"]), sp_src, sp_tgt)
    train_translator(args, log, model, opt, cfg, state, meta, data, translate,
                     batch_logits=lambda src, src_len, tgt_in: model(src, tgt_in),
                     step_learning_rate=lambda step: learning_rate(step, args.lr, args.warmup))


if __name__ == "__main__":
    main()
