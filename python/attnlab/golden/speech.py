#!/usr/bin/python3
"""Golden fixtures for the C++ speech recognizer: a tiny Listen, Attend and Spell model (attnlab.nn.listen_attend_spell)
briefly trained to spell fixed transcripts from random MFCC-like features, so its greedy outputs are varied and end
with EOS, exported through attnlab.gguf.speech, plus PyTorch's outputs for those inputs and two it never saw.

    PYTHONPATH=python python3 -m attnlab.golden.speech [--out tests/fixtures/speech] [--steps 300]

Needs no data: the features are drawn by the script (seeded) and stored in the expected file. Deterministic:
seeded, one thread; a second run writes byte-identical files. Checked by tests/cpp/test_speech_recognizer.cpp.

Files:
  las.gguf            the model as speech.write(..., "f32") writes it, with its CTC head (ctc_weight 0.3)
  las.q8_0.gguf       the same model as q8_0 without the CTC head (loads and transcribes with attention alone;
                      characters may differ on near ties)
  las.expected.gguf   architecture "attnlab.fixture", what PyTorch computes for las.gguf:
      expected.utterances (uint32 N), expected.beam (uint32 3), expected.alpha (float32 1.0),
      expected.max_length_ratio (float32 2.0), expected.max_length_extra (uint32 10): ListenAttendSpell.greedy's limit
      expected.ctc_weight (float32 0.3): the file's joint-search weight
      utterance.<i>.features [T, 13]      raw features (before CMN) fed to listen()
      utterance.<i>.transcript           what it was trained to spell ("" for the unseen inputs)
      utterance.<i>.greedy_ids           int32 array, greedy characters (no BOS/EOS; pad/unk/bos never written)
      utterance.<i>.greedy_text          decode_ids of them
      utterance.<i>.greedy_attention / .greedy_scores   [L, S]: the weights and raw scores of the step that wrote
                                         each greedy character
      utterance.<i>.beam_ids / .beam_text   attnlab.nn.decoding.beam_search(beam=3, alpha=1.0), same limit and bans
      utterance.<i>.joint_greedy_ids / .joint_beam_ids / .joint_beam_attention [L, S]   attnlab.nn.joint_decoding.
                                         joint_search at beam 1 and 3 with ctc_weight 0.3
      utterance.<i>.ctc_beam_ids        joint_search at beam 3 with ctc_weight 1 (CTC prefix scores alone)
      probe.normalized [T, 13], probe.listener0 [T/2, 2E], probe.annotations [S, 2E], probe.keys [S, A] (W_k h + b_k),
      probe.s0 [H]                       the listener for utterance 0, layer by layer
      probe.tokens  int32 array          the tokens fed to the first speller steps (BOS, then greedy characters)
      probe.logits [P, V], probe.states [P, H], probe.weights [P, S], probe.scores [P, S], probe.context [P, 2E],
      probe.location_features [P, S, K]  each step from a_0 = one-hot on frame 0 (raw logits: nothing banned)
      probe.ctc_log_probs [S, V]         log_softmax of the CTC head over the annotations
  las-lm.gguf         the same model (f32, CTC head, ctc_weight 0.3) with a tiny character language model
                      (attnlab.nn.char_lm, trained on LM_TEXTS: other sentences than the transcripts) and lm_weight
  las-lm.expected.gguf   architecture "attnlab.fixture":
      expected.lm_weight (float32), expected.utterances, expected.beam as above
      lm.tokens int32 array, lm.log_probs [P, V], lm.states [P, H_lm]   CharLM.step fed <s> then lm.tokens[1:]
      utterance.<i>.lm_joint_greedy_ids / .lm_joint_beam_ids   joint_search at beam 1 and 3, ctc_weight 0.3 and
                                         the LM at lm_weight
      utterance.<i>.lm_only_beam_ids     joint_search at beam 3 with ctc_weight 0 and the LM at lm_weight
  las-3.gguf          a model of the same sizes with three listener layers (one annotation per 8 frames), trained the
                      same way (f32, CTC head, ctc_weight 0.3)
  las-3.expected.gguf what PyTorch computes for las-3.gguf, as las.expected.gguf holds for las.gguf
"""
import argparse
import os

import numpy as np
import torch

from attnlab.gguf import speech
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn.char_lm import CharLM, LMConfig, text_batch
from attnlab.nn.decoding import BOS_ID, EOS_ID, beam_search
from attnlab.nn.joint_decoding import ctc_log_probs, joint_search
from attnlab.nn.listen_attend_spell import (AN4_FEATURE_STD, NEVER_WRITTEN, Config, ListenAttendSpell, decode_ids,
                                            encode_transcript, loss)
from attnlab.paths import FIXTURES

# The smallest sizes that still give every matrix kind the engine reads: 2E = 32 and the speller's rows are
# multiples of 32 (q8_0 quantizes them), the first listener layer's 26-wide input and the location filters are not
# (they stay f16 in the q8_0 file). A file of about 120 KB.
SIZES = dict(enc_hidden=16, dec_hidden=32, emb=32, attn_dim=32, loc_filters=4, loc_width=7)
# (frames, transcript): odd frame counts and halves, so both listener layers drop a frame somewhere.
TRAINED = [(45, "yes"), (62, "no"), (51, "stop"), (70, "go left"), (87, "one two three"), (96, "hello world")]
UNSEEN = [59, 77]
BEAM = 3
ALPHA = 1.0
MAX_LEN_A, MAX_LEN_B = 2.0, 10    # ListenAttendSpell.greedy: 2 * S + 10
PROBE_STEPS = 4
CTC_WEIGHT = 0.3
# The language model's fixture: small (not multiples of 32: its matrices stay f32 in this file anyway), trained on
# sentences near the transcripts so that fusion changes some outputs.
LM_SIZES = dict(emb=16, hidden=24)
LM_TEXTS = ["yes", "no", "stop", "go", "go right", "go left", "one two", "three four", "hello", "hello there",
            "world", "say yes", "stop now"]
LM_WEIGHT = 0.8
LM_PROBE = "go left"


def random_features(rng, frames):
    """MFCC-like frames: each coefficient at AN4's scale around a random per-utterance offset (which CMN removes)."""
    scale = np.array(AN4_FEATURE_STD, dtype=np.float64)
    offset = rng.normal(size=13) * 3 * scale
    return (offset + rng.normal(size=(frames, 13)) * scale).astype(np.float32)


def batch(features):
    lengths = torch.tensor([len(f) for f in features])
    x = torch.zeros(len(features), int(lengths.max()), 13)
    for i, f in enumerate(features):
        x[i, :len(f)] = torch.from_numpy(f)
    return x, lengths


def train_model(features, transcripts, steps, seed, listener_layers=2):
    """Full-batch Adam on the joint loss, no label smoothing: the transcripts are memorized with clear margins."""
    torch.manual_seed(seed)
    model = ListenAttendSpell(Config(dropout=0.1, listener_layers=listener_layers, **SIZES))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, lengths = batch(features)
    targets = [encode_transcript(t) for t in transcripts]
    model.train()
    for _ in range(steps):
        total, _, _ = loss(model, x, lengths, targets, label_smoothing=0.0)
        opt.zero_grad()
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    return model, float(total)


def np32(t):
    return t.detach().cpu().numpy().astype(np.float32)


class Listened:
    """One utterance through the listener, with what every speller step needs."""

    def __init__(self, model, features):
        x, lengths = batch([features])
        self.h, self.lengths, self.s0 = model.listen(x, lengths)
        self.mask = torch.arange(self.h.size(1))[None, :] < self.lengths[:, None]
        self.keys = model.attn.W_k(self.h)
        self.a0 = model.first_weights(self.mask)
        self.S = int(self.lengths[0])


def banned(logits):
    logits = logits.clone()
    logits[:, list(NEVER_WRITTEN)] = float("-inf")
    return logits


@torch.no_grad()
def greedy_with_attention(model, features):
    """ListenAttendSpell.greedy for one utterance, also keeping each written character's weights and raw scores."""
    enc = Listened(model, features)
    s, a, prev = enc.s0, enc.a0, torch.tensor([BOS_ID])
    tokens, weights, scores = [], [], []
    for _ in range(int(MAX_LEN_A * enc.S + MAX_LEN_B)):
        logits, s, a, e = model.step(enc.h, enc.keys, enc.mask, s, a, prev)
        prev = banned(logits).argmax(-1)
        if int(prev) == EOS_ID:
            break
        tokens.append(int(prev))
        weights.append(np32(a[0]))
        scores.append(np32(e[0]))
    ids, _ = model.greedy(*batch([features]))
    assert ids[0] == tokens, "the greedy loop disagrees with ListenAttendSpell.greedy"
    return tokens, weights, scores


@torch.no_grad()
def beam(model, features):
    enc = Listened(model, features)
    K = BEAM
    h, keys, mask = enc.h.expand(K, -1, -1), enc.keys.expand(K, -1, -1), enc.mask.expand(K, -1)

    def step(prev, state):
        s, a = state
        logits, s, a, _ = model.step(h, keys, mask, s, a, prev)
        return banned(logits), (s, a)

    def reorder(state, rows):
        return state[0].index_select(0, rows), state[1].index_select(0, rows)

    state = (enc.s0.expand(K, -1).contiguous(), enc.a0.expand(K, -1).contiguous())
    return beam_search(step, state, reorder, enc.lengths, beam=K, alpha=ALPHA, max_len_a=MAX_LEN_A,
                       max_len_b=MAX_LEN_B)[0]


@torch.no_grad()
def add_probe(w, model, features, greedy_ids):
    x, lengths = batch([features])
    normalized = model.normalize(x, lengths)
    w.add_tensor("probe.normalized", np32(normalized[0]))
    pairs = normalized[:, :2 * (len(features) // 2)].reshape(1, len(features) // 2, 26)
    w.add_tensor("probe.listener0", np32(model.listener[0](pairs)[0][0]))
    enc = Listened(model, features)
    w.add_tensor("probe.annotations", np32(enc.h[0]))
    w.add_tensor("probe.keys", np32(enc.keys[0]))
    w.add_tensor("probe.s0", np32(enc.s0[0]))
    w.add_tensor("probe.ctc_log_probs", np32(ctc_log_probs(model, enc.h[0, :enc.S])))
    fed = ([BOS_ID] + greedy_ids)[:PROBE_STEPS]
    s, a = enc.s0, enc.a0
    rows = {k: [] for k in ("logits", "states", "weights", "scores", "context", "location_features")}
    for token in fed:
        rows["location_features"].append(np32(model.attn.F(a.unsqueeze(1)).transpose(1, 2)[0]))   # [S, K]
        logits, s, a, e = model.step(enc.h, enc.keys, enc.mask, s, a, torch.tensor([token]))
        rows["logits"].append(np32(logits[0]))
        rows["states"].append(np32(s[0]))
        rows["weights"].append(np32(a[0]))
        rows["scores"].append(np32(e[0]))
        rows["context"].append(np32(torch.bmm(a.unsqueeze(1), enc.h)[0, 0]))
    w.add_array("probe.tokens", fed, "int32")
    for name, values in rows.items():
        w.add_tensor("probe." + name, np.stack(values))


def write_expected(path, model, inputs):
    """inputs: [(features, transcript or "")] -> [(greedy text, ended with EOS)]"""
    w = GGUFWriter(path, architecture="attnlab.fixture")
    w.add_uint32("expected.utterances", len(inputs))
    w.add_uint32("expected.beam", BEAM)
    w.add_float32("expected.alpha", ALPHA)
    w.add_float32("expected.max_length_ratio", MAX_LEN_A)
    w.add_uint32("expected.max_length_extra", MAX_LEN_B)
    w.add_float32("expected.ctc_weight", CTC_WEIGHT)
    summary = []
    for i, (features, transcript) in enumerate(inputs):
        tokens, weights, scores = greedy_with_attention(model, features)
        if not tokens:
            raise SystemExit(f"{path}: utterance {i} spells nothing; train longer (--steps)")
        best = beam(model, features)
        # The joint search with no CTC weight is the plain search: the twin's bookkeeping is decoding's.
        search = dict(alpha=ALPHA, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B)
        assert joint_search(model, features, beam=1, ctc_weight=0.0, **search)[0] == tokens, "joint greedy, no CTC"
        assert joint_search(model, features, beam=BEAM, ctc_weight=0.0, **search)[0] == best, "joint beam, no CTC"
        joint_greedy = joint_search(model, features, beam=1, ctc_weight=CTC_WEIGHT, **search)[0]
        joint_best, joint_rows, _ = joint_search(model, features, beam=BEAM, ctc_weight=CTC_WEIGHT, **search)
        ctc_best = joint_search(model, features, beam=BEAM, ctc_weight=1.0, **search)[0]
        p = f"utterance.{i}."
        w.add_tensor(p + "features", features)
        w.add_string(p + "transcript", transcript)
        w.add_array(p + "greedy_ids", tokens, "int32")
        w.add_string(p + "greedy_text", decode_ids(tokens))
        w.add_tensor(p + "greedy_attention", np.stack(weights))
        w.add_tensor(p + "greedy_scores", np.stack(scores))
        w.add_array(p + "beam_ids", best, "int32")
        w.add_string(p + "beam_text", decode_ids(best))
        w.add_array(p + "joint_greedy_ids", joint_greedy, "int32")
        w.add_array(p + "joint_beam_ids", joint_best, "int32")
        if joint_rows:
            w.add_tensor(p + "joint_beam_attention", np.stack([np32(r) for r in joint_rows]))
        w.add_array(p + "ctc_beam_ids", ctc_best, "int32")
        if i == 0:
            add_probe(w, model, features, tokens)
        S = len(features) // model.cfg.time_reduction
        summary.append((transcript, decode_ids(tokens), decode_ids(best), decode_ids(joint_best), decode_ids(ctc_best),
                        len(tokens) < int(MAX_LEN_A * S + MAX_LEN_B)))
    w.write()
    return summary


def train_lm(steps, seed):
    torch.manual_seed(seed)
    lm = CharLM(LMConfig(dropout=0.0, **LM_SIZES))
    opt = torch.optim.Adam(lm.parameters(), lr=1e-2)
    inputs, targets = text_batch(LM_TEXTS)
    for _ in range(steps):
        opt.zero_grad()
        loss = lm.loss(inputs, targets)
        loss.backward()
        opt.step()
    return lm.eval(), float(loss)


def write_lm_expected(path, model, lm, inputs):
    """The LM's steps and the fused searches -> [(joint beam text, fused beam text, LM-only beam text)]."""
    w = GGUFWriter(path, architecture="attnlab.fixture")
    w.add_float32("expected.lm_weight", LM_WEIGHT)
    w.add_uint32("expected.utterances", len(inputs))
    w.add_uint32("expected.beam", BEAM)
    fed = [BOS_ID] + encode_transcript(LM_PROBE)
    h, log_probs, states = lm.initial(), [], []
    for token in fed:
        log_p, h = lm.step(h, token)
        log_probs.append(np32(log_p))
        states.append(np32(h[0]))
    w.add_array("lm.tokens", fed, "int32")
    w.add_tensor("lm.log_probs", np.stack(log_probs))
    w.add_tensor("lm.states", np.stack(states))
    search = dict(alpha=ALPHA, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B, lm=lm, lm_weight=LM_WEIGHT)
    summary = []
    for i, (features, _) in enumerate(inputs):
        p = f"utterance.{i}."
        fused_greedy = joint_search(model, features, beam=1, ctc_weight=CTC_WEIGHT, **search)[0]
        fused = joint_search(model, features, beam=BEAM, ctc_weight=CTC_WEIGHT, **search)[0]
        lm_only = joint_search(model, features, beam=BEAM, ctc_weight=0.0, **search)[0]
        w.add_array(p + "lm_joint_greedy_ids", fused_greedy, "int32")
        w.add_array(p + "lm_joint_beam_ids", fused, "int32")
        w.add_array(p + "lm_only_beam_ids", lm_only, "int32")
        summary.append((decode_ids(fused), decode_ids(lm_only)))
    w.write()
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(FIXTURES, "speech"))
    ap.add_argument("--steps", type=int, default=300, help="training steps")
    ap.add_argument("--lm-steps", type=int, default=150, help="the language model's training steps")
    ap.add_argument("--seed", type=int, default=2100)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    trained = [(random_features(rng, frames), text) for frames, text in TRAINED]
    unseen = [(random_features(rng, frames), "") for frames in UNSEEN]
    model, final_loss = train_model([f for f, _ in trained], [t for _, t in trained], args.steps, args.seed)
    checkpoint = {"config": model.cfg.to_dict(), "model": model.state_dict()}
    out = os.path.join(args.out, "las.gguf")
    counts = speech.write(checkpoint, "f32", out, name="speech-las-fixture", ctc_weight=CTC_WEIGHT)
    q8_path = os.path.join(args.out, "las.q8_0.gguf")
    q8_counts = speech.write(checkpoint, "q8_0", q8_path, name="speech-las-fixture", ctc=False)
    # The schema's loader gives back the very model that was written, CTC head included.
    reloaded = speech.load(out)
    assert abs(reloaded.ctc_weight - CTC_WEIGHT) < 1e-6 and speech.load(q8_path).ctc_weight == 0.0, "ctc_weight not stored"
    for features, _ in trained + unseen:
        assert reloaded.greedy(*batch([features]))[0] == model.greedy(*batch([features]))[0], "speech.load disagrees"
        assert (joint_search(reloaded, features, beam=BEAM, ctc_weight=CTC_WEIGHT)[0] ==
                joint_search(model, features, beam=BEAM, ctc_weight=CTC_WEIGHT)[0]), "speech.load's CTC head disagrees"
    expected = os.path.join(args.out, "las.expected.gguf")
    summary = write_expected(expected, model, trained + unseen)
    lm, lm_loss = train_lm(args.lm_steps, args.seed)
    lm_path = os.path.join(args.out, "las-lm.gguf")
    speech.write(checkpoint, "f32", lm_path, name="speech-las-lm-fixture", ctc_weight=CTC_WEIGHT, lm=lm,
                 lm_weight=LM_WEIGHT)
    with_lm = speech.load(lm_path)
    assert with_lm.lm is not None and abs(with_lm.lm_weight - LM_WEIGHT) < 1e-6, "the LM not stored"
    lm_summary = write_lm_expected(os.path.join(args.out, "las-lm.expected.gguf"), model, with_lm.lm, trained + unseen)
    deeper, deeper_loss = train_model([f for f, _ in trained], [t for _, t in trained], args.steps, args.seed,
                                      listener_layers=3)
    deeper_path = os.path.join(args.out, "las-3.gguf")
    speech.write({"config": deeper.cfg.to_dict(), "model": deeper.state_dict()}, "f32", deeper_path,
                 name="speech-las-3-fixture", ctc_weight=CTC_WEIGHT)
    assert speech.load(deeper_path).cfg.listener_layers == 3, "the listener's depth not stored"
    deeper_summary = write_expected(os.path.join(args.out, "las-3.expected.gguf"), deeper, trained + unseen)
    sizes = {name: os.path.getsize(os.path.join(args.out, name)) for name in sorted(os.listdir(args.out))}
    print(f"loss {final_loss:.3f}, LM loss {lm_loss:.3f}, three listener layers {deeper_loss:.3f}; "
          f"tensors f32 {counts}, q8_0 {q8_counts}; "
          + ", ".join(f"{name} {size / 1e3:.0f} KB" for name, size in sizes.items()))
    for (transcript, greedy, best, joint, ctc, ended), (fused, lm_only) in zip(summary, lm_summary):
        print(f"    {'EOS' if ended else 'MAX'} {transcript!r:18} greedy {greedy!r:18} beam {best!r:18} "
              f"joint {joint!r:18} ctc {ctc!r:18} +LM {fused!r:18} LM, no CTC {lm_only!r}")
    for transcript, greedy, best, joint, ctc, ended in deeper_summary:
        print(f"  3 {'EOS' if ended else 'MAX'} {transcript!r:18} greedy {greedy!r:18} beam {best!r:18} "
              f"joint {joint!r:18} ctc {ctc!r}")


if __name__ == "__main__":
    main()
