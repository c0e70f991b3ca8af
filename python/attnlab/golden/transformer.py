#!/usr/bin/python3
"""Golden fixture for the C++ Transformer (tests/cpp/test_transformer.cpp): a tiny pre-LN Transformer
(d 32, 4 heads, 2+2 layers, FF 64) with tiny BPE tokenizers (200 pieces, no byte fallback), trained
for a few hundred steps on the first Multi30k EN->DE pairs so that its outputs are not degenerate, then
exported with attnlab.gguf.transformer (f32) plus PyTorch's results for a few fixed sentences.

    python3 -m attnlab.data.prepare && python3 -m attnlab.golden.transformer

Writes tests/fixtures/transformer/tiny.gguf. Besides the model's own keys and tensors it holds:
    test.case_count, test.beam (beam width of the beam results)
    test.<i>.text (string), test.<i>.source_ids, .greedy_ids, .beam_ids (int32 arrays; no BOS/EOS in
        the outputs, source ids end with EOS)
    tensors test.<i>.encoder_self [L, H, S, S], test.<i>.decoder_self [L, H, T, T] (T = greedy tokens,
        rows = decoder inputs BOS, y_1..y_{T-1}), test.<i>.cross [L, H, T, S], test.<i>.logits
        [T+1, V] (greedy step logits, the last one predicts EOS when the output finished)
"""
import argparse
import os
import random
import tempfile
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

from attnlab.data.tokenizer import train_bpe
from attnlab.gguf.transformer import build_writer
from attnlab.nn.transformer import (BOS_ID, EOS_ID, PAD_ID, Config, Transformer, beam_search, count_parameters,
                                    greedy_decode)
from attnlab.paths import BUILD_DATA, FIXTURES

SENTENCES = [  # our own sentences, not from the test data
    "A man is riding a red bike.",
    "Two dogs play in the snow.",
    "A woman sings on a stage.",
    "The children are eating.",
]
TRAIN_LINES = 3000
VOCAB = 200
BEAM = 3


def train_tokenizer(text_path, lines, prefix):
    with open(text_path, encoding="utf-8") as f:
        head = [next(f) for _ in range(lines)]
    tmp = prefix + ".txt"
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(head)
    return train_bpe(tmp, prefix, VOCAB, byte_fallback=False), [line.rstrip("\n") for line in head]


def pad(seqs):
    out = torch.full((len(seqs), max(len(s) for s in seqs)), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s)
    return out


def train(model, pairs, steps, seed):
    rng = random.Random(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    model.train()
    for step in range(steps):
        batch = rng.sample(pairs, 64)
        src, tgt = pad([s for s, _ in batch]), pad([t for _, t in batch])
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=PAD_ID,
                               label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == steps - 1:
            print(f"step {step} loss {float(loss):.3f}", flush=True)
    model.eval()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(FIXTURES, "transformer", "tiny.gguf"))
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--data", default=os.path.join(BUILD_DATA, "multi30k"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        src_model, src_lines = train_tokenizer(os.path.join(args.data, "train.en"), TRAIN_LINES, os.path.join(tmp, "en"))
        tgt_model, tgt_lines = train_tokenizer(os.path.join(args.data, "train.de"), TRAIN_LINES, os.path.join(tmp, "de"))
        sp_src = spm.SentencePieceProcessor(model_file=src_model)
        sp_tgt = spm.SentencePieceProcessor(model_file=tgt_model)
        pairs = [(sp_src.encode(s) + [EOS_ID], [BOS_ID] + sp_tgt.encode(t) + [EOS_ID])
                 for s, t in zip(src_lines, tgt_lines)]
        pairs = [p for p in pairs if len(p[0]) <= 60 and len(p[1]) <= 60]
        cfg = Config(src_vocab=VOCAB, tgt_vocab=VOCAB, d_model=32, heads=4, enc_layers=2, dec_layers=2, ff=64,
                     dropout=0.0, max_positions=256)
        model = Transformer(cfg)
        train(model, pairs, args.steps, seed=1)
        print(f"params {count_parameters(model)}, trained in {time.time() - t0:.0f} s")

        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        meta = {"pair": "en-de", "src_lang": "en", "tgt_lang": "de", "source_add_eos": True}
        w, _ = build_writer(args.out, cfg, model.state_dict(), meta, "f32", src_model, tgt_model,
                            name="transformer-tiny-fixture")
        w.add_uint32("test.case_count", len(SENTENCES))
        w.add_uint32("test.beam", BEAM)
        for i, text in enumerate(SENTENCES):
            ids = sp_src.encode(text) + [EOS_ID]
            src = torch.tensor([ids])
            lens = torch.tensor([len(ids)])
            with torch.no_grad():
                (greedy,), (enc_self, dec_self, cross) = greedy_decode(model, src, lens, return_attention=True)
                (beam,) = beam_search(model, src, lens, beam=BEAM)
                # Teacher-forced logits over the greedy output (+ the step after it).
                memory, mem_pad, _ = model.encode(src)
                logits = model.decode(torch.tensor([[BOS_ID] + greedy]), memory, mem_pad)[0][0]
            if not greedy:
                raise RuntimeError(f"degenerate fixture: empty greedy output for {text!r}")
            print(f"{text!r}: greedy {sp_tgt.decode(greedy)!r} beam {sp_tgt.decode(beam)!r} "
                  f"(S {len(ids)}, T {len(greedy)})")
            p = f"test.{i}."
            w.add_string(p + "text", text)
            w.add_array(p + "source_ids", ids, "int32")
            w.add_array(p + "greedy_ids", greedy, "int32")
            w.add_array(p + "beam_ids", beam, "int32")
            w.add_tensor(p + "encoder_self", enc_self.numpy())
            w.add_tensor(p + "decoder_self", dec_self.numpy())
            w.add_tensor(p + "cross", cross.numpy())
            w.add_tensor(p + "logits", logits.numpy())
        w.write()
    print(f"wrote {args.out}: {os.path.getsize(args.out) / 1e3:.0f} KB in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
