#!/usr/bin/python3
"""Train the Bahdanau RNN translator (attnlab.nn.seq2seq_rnn) on CPU, resumably.

    python3 -m attnlab.train.rnn --pair en-de --out /work/ckpt/bahdanau-en-de

Re-running the same command resumes from OUT/last.pt (model, optimizer, epoch, step, RNG states,
best BLEU, patience, accumulated wall-clock time). OUT/best.pt holds the best model by greedy
validation BLEU (13a; character BLEU for Chinese). Logs go to OUT/train.log and stdout.
"""
import argparse
import json

from attnlab import cpu_blas  # noqa: F401  (before torch: OpenBLAS's AVX kernels, see attnlab/cpu_blas.py)
import torch

from attnlab.data.pairs import PAIRS
from attnlab.eval.bleu import metric_for
from attnlab.eval.search import translate_lines
from attnlab.nn import seq2seq_rnn
from attnlab.nn.seq2seq_rnn import SCORES, Config, Seq2SeqRNN, count_parameters
from attnlab.train.loop import restore_training
from attnlab.train.translator import (add_run_options, add_training_options, initial_weights, log_resumed,
                                      new_training_state, set_learning_rate, start_training, train_translator,
                                      translation_meta)


def translate(model, sp_src, sp_tgt, lines, **options):
    """Detokenized translations of `lines` (greedy when beam == 1), in input order."""
    return translate_lines(seq2seq_rnn, model, sp_src, sp_tgt, lines, **options)


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
    add_training_options(p, max_tokens=3000, max_len=80, epochs=25, patience=4, log_every=100)
    add_run_options(p)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    log, (paths, sp_src, sp_tgt, src_ids, tgt_ids, val_src, val_ref), ck = start_training(args)
    n_tgt_tokens = sum(len(t) - 1 for t in tgt_ids)

    init = initial_weights(args, paths, log) if ck is None else None
    if ck is not None or init is not None:
        cfg = Config(**(ck if ck is not None else init)["config"])
    else:
        cfg = Config(src_vocab=sp_src.vocab_size(), tgt_vocab=sp_tgt.vocab_size(), emb=args.emb,
                     enc_hidden=args.enc_hidden, dec_hidden=args.dec_hidden, attn_dim=args.attn_dim,
                     score=args.score, dropout=args.dropout)
    torch.manual_seed(args.seed)
    model = Seq2SeqRNN(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    state = new_training_state(lr=args.lr)
    if init is not None:
        model.load_state_dict(init["model"])
    if ck is not None:
        restore_training(ck, model, opt)
        state.update(ck["state"])
        if ck["score"] != args.score and args.score != "additive":
            log(f"warning: --score {args.score} ignored, checkpoint was trained with {ck['score']}")
        log_resumed(log, args, state)
    set_learning_rate(opt, state["lr"])
    log(f"pair {args.pair} score {cfg.score} params {count_parameters(model)} config {json.dumps(cfg.to_dict())}")
    log(f"train pairs {len(src_ids)} ({n_tgt_tokens} target tokens) val {len(val_src)} threads {args.threads}")

    meta = translation_meta(args, paths, score=cfg.score)
    data = (src_ids, tgt_ids, val_src, val_ref, metric_for(paths["tgt_lang"]), sp_src, sp_tgt)
    train_translator(args, log, model, opt, cfg, state, meta, data, translate,
                     batch_logits=lambda src, src_len, tgt_in: model(src, src_len, tgt_in),
                     checkpoint_extra={"score": cfg.score})


if __name__ == "__main__":
    main()
