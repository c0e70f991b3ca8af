#!/usr/bin/python3
"""Golden fixture for the C++ caption decoder (src/attnlab/models/captioner.hpp): a tiny f32 ShowAttendTell
(attnlab.nn.show_attend_tell), briefly trained on random "grids" to emit random captions so that greedy and beam
search produce non-trivial sequences, written with the real export's tensor names and `attnlab.captioner.*` keys
(attnlab.gguf.captioner) but without the encoder: the test feeds the grids directly (caption_from_features).

    python3 -m attnlab.golden.caption [--out tests/fixtures/caption/decoder.gguf]

Fixture contents (checked by tests/cpp/test_captioner.cpp):
    decoder tensors and metadata as in the export; tokenizer.target.bos_token_id / eos_token_id
    fixture.count                           number of images N
    fixture.<n>.features        [G, C]      the annotation grid of image n (n < N; the last one is unseen in training)
    fixture.<n>.greedy_tokens   int32 array greedy tokens of every step, EOS included when produced
    fixture.<n>.greedy_weights  [T, G]      attention weights of each greedy step
    fixture.<n>.greedy_scores   [T, G]      raw attention scores of each greedy step
    fixture.<n>.greedy_logits   [T, V]      logits of each greedy step
    fixture.<n>.beam<K>_tokens  int32 array beam search result (K = 2, 3, 5; no BOS/EOS)
    fixture.<n>.norepeat2_greedy_tokens, fixture.<n>.norepeat2_beam3_tokens   greedy and beam 3 when no token
                                bigram may repeat (no BOS/EOS); the file's attnlab.captioner.no_repeat_ngram is 0
                                (off), and the test patches it to 2 for these

tests/fixtures/caption/decoder_centered.gguf is the same with a decoder that attends over the centered grid and reads
the grid's mean as its global feature (Config.center_grid, Config.global_dim = C); decoder_ensemble.gguf holds two
decoders that decode as one (attnlab.captioner.ensemble_size 2, the second under "member1."; its greedy_logits are
the log of the members' mean distribution, its weights and scores their means).

Another file, tests/fixtures/caption/tiny_model.gguf, is a complete loadable model for the engine API
(attnlab::Model) without the encoder: an untrained tiny decoder with the real vocabulary (4000), F16 weights, the
flickr8k.en tokenizer (role "target"), and the expected outputs of PyTorch running the F16-rounded weights:
    fixture.features [G, C];  fixture.greedy_ids / fixture.beam3_ids  int32 arrays;
    fixture.greedy_text / fixture.beam3_text  sentencepiece's decoding of them
"""
import argparse
import os

import numpy as np
import sentencepiece as spm
import torch

from attnlab.data.flickr8k import TOKENIZER_PATH
from attnlab.gguf import captioner
from attnlab.gguf.captioner import add_decoder
from attnlab.gguf.tokenizer import add_tokenizer
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn import show_attend_tell as sat
from attnlab.paths import FIXTURES, ROOT

GRID_H, GRID_W = 2, 3
MAX_LEN = 12
STEPS = 25


def add_expected(writer, expected):
    """PyTorch's expected outputs as metadata: strings as strings, id lists as int32 arrays."""
    for key, value in (expected or {}).items():
        if isinstance(value, str):
            writer.add_string(key, value)
        else:
            writer.add_array(key, value, "int32")


def np32(t):
    return t.detach().cpu().numpy().astype(np.float32)


def with_global(feats, cfg):
    """The model input of grids [N, G, C]: the grids, or (grids, their means) for a decoder with a global feature."""
    return (feats, feats.mean(1)) if cfg.global_dim else feats


def train_tiny(model, feats, tgt_in, tgt_out):
    """Fits a tiny decoder for STEPS Adam steps to the random captions -> it, in eval mode."""
    cfg = model.cfg
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.train()
    for _ in range(STEPS):
        loss, _, _ = model.loss(with_global(feats, cfg), tgt_in, tgt_out)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def make(out, variant="raw"):
    """variant "raw"; "centered": the decoder attends over the centered grid and reads the grid's mean as a global
    feature; "ensemble": two members (hidden 24 with h_0, c_0 from the grid, hidden 20 with learned constants, whose
    zero W_h0, W_c0 the export leaves out) decoding as one (show_attend_tell.Ensemble)."""
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    centered = variant == "centered"
    cfg = sat.Config(vocab=40, feature_dim=48, grid=GRID_H * GRID_W, emb=16, hidden=24, attn_dim=20, dropout=0.0,
                     center_grid=centered, global_dim=48 if centered else 0)
    first = sat.ShowAttendTell(cfg)   # before the data, as the fixtures were first made: they stay byte-identical
    # Four random grids, each with a random caption; the 5th grid is never trained on.
    n_train = 4
    feats = torch.rand(n_train + 1, cfg.grid, cfg.feature_dim) * 3.0
    captions = [torch.randint(4, cfg.vocab, (int(n),)).tolist() for n in torch.randint(3, 8, (n_train,))]
    T = max(len(c) for c in captions) + 1
    tgt_in = torch.zeros(n_train, T, dtype=torch.long)
    tgt_out = torch.zeros(n_train, T, dtype=torch.long)
    for i, cap in enumerate(captions):
        tgt_in[i, :len(cap) + 1] = torch.tensor([sat.BOS_ID] + cap)
        tgt_out[i, :len(cap) + 1] = torch.tensor(cap + [sat.EOS_ID])
    members = [train_tiny(first, feats[:n_train], tgt_in, tgt_out)]
    if variant == "ensemble":
        second = sat.Config(**dict(cfg.to_dict(), hidden=20, attn_dim=12, init_from_image=False))
        members.append(train_tiny(sat.ShowAttendTell(second), feats[:n_train], tgt_in, tgt_out))
    model = members[0] if len(members) == 1 else sat.Ensemble(members).eval()

    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    w = GGUFWriter(out, architecture=captioner.ARCH)
    w.add_string("general.name", "captioner-decoder-fixture")
    w.add_string("attnlab.task", "caption")
    for k, member in enumerate(members):
        add_decoder(w, member, member.cfg, GRID_H, GRID_W, MAX_LEN, dtype="f32", global_is_grid_mean=True, member=k)
    if len(members) > 1:
        w.add_uint32("attnlab.captioner.ensemble_size", len(members))
    # Off (what an export without --no-repeat-ngram means); the C++ test patches the value to 2 for norepeat2_*.
    w.add_uint32("attnlab.captioner.no_repeat_ngram", 0)
    w.add_uint32("tokenizer.target.bos_token_id", sat.BOS_ID)
    w.add_uint32("tokenizer.target.eos_token_id", sat.EOS_ID)
    w.add_uint32("fixture.count", n_train + 1)
    for n in range(n_train + 1):
        grid = feats[n:n + 1]
        f = with_global(grid, cfg)
        tokens, weights, scores, logits = sat.greedy_with_attention(model, f, MAX_LEN)
        p = f"fixture.{n}."
        w.add_tensor(p + "features", np32(grid[0]))
        w.add_array(p + "greedy_tokens", tokens, "int32")
        w.add_tensor(p + "greedy_weights", np32(weights))
        w.add_tensor(p + "greedy_scores", np32(scores))
        w.add_tensor(p + "greedy_logits", np32(logits))
        for k in (2, 3, 5):
            w.add_array(p + f"beam{k}_tokens", sat.beam_search(model, f, beam=k, max_len=MAX_LEN)[0], "int32")
        w.add_array(p + "norepeat2_greedy_tokens", sat.greedy_decode(model, f, MAX_LEN, no_repeat_ngram=2)[0], "int32")
        w.add_array(p + "norepeat2_beam3_tokens",
                    sat.beam_search(model, f, beam=3, max_len=MAX_LEN, no_repeat_ngram=2)[0], "int32")
        print(variant, n, "trained" if n < n_train else "unseen", "caption", captions[n] if n < n_train else "-",
              "greedy", tokens, "beam3", sat.beam_search(model, f, beam=3, max_len=MAX_LEN)[0])
    w.write()


def make_model(out):
    torch.manual_seed(99)
    spm_path = os.path.join(ROOT, TOKENIZER_PATH)
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    cfg = sat.Config(vocab=sp.get_piece_size(), feature_dim=48, grid=GRID_H * GRID_W, emb=32, hidden=32, attn_dim=32,
                     dropout=0.0)
    model = sat.ShowAttendTell(cfg).eval()
    with torch.no_grad():   # make the untrained output depend on the grid and favour real words over byte pieces
        model.out_bias[:] = torch.randn(cfg.vocab) * 2.0
        model.out_bias[sat.EOS_ID] = -2.0
    feats = torch.rand(1, cfg.grid, cfg.feature_dim) * 3.0

    def write(path, expected=None):
        w = GGUFWriter(path, architecture=captioner.ARCH)
        w.add_string("general.name", "captioner-tiny-fixture")
        w.add_string("attnlab.task", "caption")
        add_decoder(w, model, cfg, GRID_H, GRID_W, MAX_LEN, dtype="f16")
        add_tokenizer(w, spm_path, "target")
        w.add_tensor("fixture.features", np32(feats[0]))
        add_expected(w, expected)
        w.write()

    write(out)                                  # first pass: F16 weights; PyTorch then runs exactly those
    rounded, _ = captioner.load(out)
    greedy = sat.greedy_decode(rounded, feats, MAX_LEN)[0]
    beam3 = sat.beam_search(rounded, feats, beam=3, max_len=MAX_LEN)[0]
    write(out, {"fixture.greedy_ids": greedy, "fixture.beam3_ids": beam3,
                "fixture.greedy_text": sp.decode(greedy), "fixture.beam3_text": sp.decode(beam3)})
    print("tiny model greedy", repr(sp.decode(greedy)), "beam3", repr(sp.decode(beam3)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(FIXTURES, "caption", "decoder.gguf"))
    out = ap.parse_args().out
    make(out)
    make(os.path.join(os.path.dirname(os.path.abspath(out)), "decoder_centered.gguf"), "centered")
    make(os.path.join(os.path.dirname(os.path.abspath(out)), "decoder_ensemble.gguf"), "ensemble")
    make_model(os.path.join(os.path.dirname(os.path.abspath(out)), "tiny_model.gguf"))


if __name__ == "__main__":
    main()
