#!/usr/bin/python3
"""Golden fixtures for the C++ RNN translation model: tiny Seq2SeqRNN models (one per score function) with
tiny tokenizers, briefly trained so their outputs are varied and end with EOS, exported through
attnlab.gguf.bahdanau, plus PyTorch's outputs for fixed sentences.

    python3 -m attnlab.data.prepare      # first: build/data/multi30k/train.{en,de}
    python3 -m attnlab.golden.rnn [--out tests/fixtures/rnn] [--steps 400]

Deterministic: seeded, one thread, tokenizers trained on the data in file order; a second run writes
byte-identical files. Checked by tests/cpp/test_rnn_seq2seq.cpp and tests/js/cli.test.mjs.

Files (<s> = additive, dot, general, cosine):
  <s>.gguf            the model as bahdanau.write(..., "f32") writes it (tokenizers included)
  additive.q8_0.gguf  the same additive model exported as Q8_0 (loads and translates; tokens may differ)
  <s>.expected.gguf   architecture "attnlab.fixture", what PyTorch computes for it:
      expected.sentences (uint32 N), expected.beam (uint32 5), expected.alpha (float32 1.0)
      sentence.<i>.text            the English input (fixed sentences below, not from any test set)
      sentence.<i>.source_ids      int32 array, sentencepiece ids + EOS (what the encoder sees)
      sentence.<i>.greedy_ids      int32 array, greedy_decode's tokens (no BOS/EOS)
      sentence.<i>.greedy_text     the target tokenizer's decoding of them
      sentence.<i>.greedy_attention / .greedy_scores   tensors [T, S]: the weights and raw scores of the
                                   step that produced each greedy token
      sentence.<i>.beam_ids / .beam_text   beam_search(beam=5, alpha=1.0)
      probe.memory [S, 2E], probe.s0 [H]    encoder results for sentence 0
      probe.tokens  int32 array: the tokens fed to the first steps (BOS, then greedy tokens)
      probe.logits [P, V], probe.states [P, H], probe.weights [P, S]: decode_step after each probe token
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

from attnlab.data.tokenizer import train_bpe
from attnlab.gguf import bahdanau
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn.seq2seq_rnn import BOS_ID, EOS_ID, PAD_ID, Config, Seq2SeqRNN, beam_search, greedy_decode
from attnlab.paths import BUILD_DATA, FIXTURES

SCORES = ("additive", "dot", "general", "cosine")
# Multiples of 32 so that a Q8_0 export quantizes every matrix; dot needs dec_hidden == 2 * enc_hidden.
SIZES = dict(emb=32, enc_hidden=32, dec_hidden=64, attn_dim=32)
# 320 = 4 specials + 256 bytes + the characters that cover 99.95% of the text + a few merges: the embedding
# tables dominate the file size, so the vocabulary stays this small.
VOCAB = 320
BEAM = 5
PROBE_STEPS = 4
SENTENCES = [
    "A dog runs in the park.",
    "Two men are playing soccer.",
    "A woman is reading a book.",
    "The children are eating ice cream.",
    "A man in a red shirt rides a bike.",
    "People walk on the street.",
    "A little girl is smiling.",
    "A black cat sleeps on a chair.",
]


def train_tokenizer(text_path, prefix):
    """The shipped tokenizers' recipe with a tiny vocabulary (rare characters fall back to bytes)."""
    return train_bpe(text_path, prefix, VOCAB, character_coverage=0.9995)


def training_pairs(sp_src, sp_tgt, max_source_tokens=40, limit=6000):
    """Short Multi30k train pairs (source ids end with EOS, as in attnlab.train.rnn)."""
    data = os.path.join(BUILD_DATA, "multi30k")
    with open(os.path.join(data, "train.en"), encoding="utf-8") as f:
        en = [line.rstrip("\n") for line in f]
    with open(os.path.join(data, "train.de"), encoding="utf-8") as f:
        de = [line.rstrip("\n") for line in f]
    pairs = []
    for s, t in zip(en, de):
        src = sp_src.encode(s) + [EOS_ID]
        tgt = sp_tgt.encode(t)
        if len(src) <= max_source_tokens and len(tgt) <= max_source_tokens:
            pairs.append((src, tgt))
        if len(pairs) == limit:
            break
    return pairs


def pad(seqs):
    out = torch.full((len(seqs), max(len(s) for s in seqs)), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def train_model(score, pairs, steps, seed):
    """A few hundred teacher-forced Adam steps: enough for varied outputs that stop with EOS."""
    torch.manual_seed(seed)
    cfg = Config(src_vocab=VOCAB, tgt_vocab=VOCAB, score=score, dropout=0.1, **SIZES)
    model = Seq2SeqRNN(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(steps):
        batch = [pairs[i] for i in rng.choice(len(pairs), size=48, replace=False)]
        src = pad([s for s, _ in batch])
        src_len = torch.tensor([len(s) for s, _ in batch])
        tgt_in = pad([[BOS_ID] + t for _, t in batch])
        tgt_out = pad([t + [EOS_ID] for _, t in batch])
        logits = model(src, src_len, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt_out.reshape(-1), ignore_index=PAD_ID)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    return model, float(loss)


def np32(t):
    return t.detach().cpu().numpy().astype(np.float32)


@torch.no_grad()
def greedy_with_attention(model, src_ids):
    """greedy_decode for one sentence, also keeping each step's weights and raw scores."""
    src = torch.tensor([src_ids])
    enc = model.encode(src, torch.tensor([len(src_ids)]))
    max_len = int(1.5 * len(src_ids) + 10)
    prev, s = torch.tensor([BOS_ID]), enc.s0
    tokens, weights, scores = [], [], []
    for _ in range(max_len):
        logits, s, w, e = model.decode_step(prev, s, enc)
        prev = logits.argmax(-1)
        if int(prev) == EOS_ID:
            break
        tokens.append(int(prev))
        weights.append(np32(w[0]))
        scores.append(np32(e[0]))
    return tokens, weights, scores


@torch.no_grad()
def add_probe(writer, model, src_ids, greedy_ids):
    src = torch.tensor([src_ids])
    enc = model.encode(src, torch.tensor([len(src_ids)]))
    writer.add_tensor("probe.memory", np32(enc.memory[0]))
    writer.add_tensor("probe.s0", np32(enc.s0[0]))
    fed = ([BOS_ID] + greedy_ids)[:PROBE_STEPS]
    s = enc.s0
    logits_rows, states, weights = [], [], []
    for token in fed:
        logits, s, w, _ = model.decode_step(torch.tensor([token]), s, enc)
        logits_rows.append(np32(logits[0]))
        states.append(np32(s[0]))
        weights.append(np32(w[0]))
    writer.add_array("probe.tokens", fed, "int32")
    writer.add_tensor("probe.logits", np.stack(logits_rows))
    writer.add_tensor("probe.states", np.stack(states))
    writer.add_tensor("probe.weights", np.stack(weights))


def write_expected(path, model, sp_src, sp_tgt):
    w = GGUFWriter(path, architecture="attnlab.fixture")
    w.add_uint32("expected.sentences", len(SENTENCES))
    w.add_uint32("expected.beam", BEAM)
    w.add_float32("expected.alpha", 1.0)
    summary = []
    for i, text in enumerate(SENTENCES):
        src_ids = sp_src.encode(text) + [EOS_ID]
        tokens, weights, scores = greedy_with_attention(model, src_ids)
        src, src_len = torch.tensor([src_ids]), torch.tensor([len(src_ids)])
        # The batched reference search must agree with the loop above.
        assert greedy_decode(model, src, src_len)[0] == tokens, "greedy loop disagrees with greedy_decode"
        if not tokens:
            raise SystemExit(f"{path}: sentence {i} translates to nothing; train longer (--steps)")
        beam = beam_search(model, src, src_len, beam=BEAM, alpha=1.0)[0]
        p = f"sentence.{i}."
        w.add_string(p + "text", text)
        w.add_array(p + "source_ids", src_ids, "int32")
        w.add_array(p + "greedy_ids", tokens, "int32")
        w.add_string(p + "greedy_text", sp_tgt.decode(tokens))
        w.add_tensor(p + "greedy_attention", np.stack(weights))
        w.add_tensor(p + "greedy_scores", np.stack(scores))
        w.add_array(p + "beam_ids", beam, "int32")
        w.add_string(p + "beam_text", sp_tgt.decode(beam))
        if i == 0:
            add_probe(w, model, src_ids, tokens)
        summary.append((sp_tgt.decode(tokens), len(tokens) < int(1.5 * len(src_ids) + 10)))
    w.write()
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(FIXTURES, "rnn"))
    ap.add_argument("--steps", type=int, default=400, help="training steps per model")
    ap.add_argument("--scores", nargs="*", default=list(SCORES), choices=SCORES)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    data = os.path.join(BUILD_DATA, "multi30k")
    if not os.path.exists(os.path.join(data, "train.en")):
        sys.exit(f"{data}/train.en is missing: run python3 -m attnlab.data.prepare first")
    work = tempfile.mkdtemp(prefix="golden_rnn_")
    try:
        src_model = train_tokenizer(os.path.join(data, "train.en"), os.path.join(work, "tiny.en"))
        tgt_model = train_tokenizer(os.path.join(data, "train.de"), os.path.join(work, "tiny.de"))
        sp_src = spm.SentencePieceProcessor(model_file=src_model)
        sp_tgt = spm.SentencePieceProcessor(model_file=tgt_model)
        pairs = training_pairs(sp_src, sp_tgt)
        meta = {"pair": "en-de", "src_lang": "en", "tgt_lang": "de", "src_spm": src_model, "tgt_spm": tgt_model,
                "source_add_eos": True}
        for score in args.scores:
            model, loss = train_model(score, pairs, args.steps, seed=1000 + SCORES.index(score))
            checkpoint = os.path.join(work, score + ".pt")
            torch.save({"config": model.cfg.to_dict(), "meta": meta, "model": model.state_dict()}, checkpoint)
            out = os.path.join(args.out, score + ".gguf")
            bahdanau.write(checkpoint, "f32", out)
            if score == "additive":
                bahdanau.write(checkpoint, "q8_0", os.path.join(args.out, score + ".q8_0.gguf"))
            expected = os.path.join(args.out, score + ".expected.gguf")
            summary = write_expected(expected, model, sp_src, sp_tgt)
            print(f"{score}: loss {loss:.3f}, {os.path.getsize(out) / 1e3:.0f} KB model, "
                  f"{os.path.getsize(expected) / 1e3:.0f} KB expected")
            for text, ended in summary:
                print(f"    {'EOS' if ended else 'MAX'} {text}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
