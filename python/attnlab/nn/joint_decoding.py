"""Joint CTC/attention decoding for Listen, Attend and Spell (Watanabe et al. 2017, "Hybrid CTC/Attention
Architecture for End-to-End Speech Recognition"; Kim et al. 2017): the reference the engine's speech search
(src/attnlab/models/speech_recognizer.cpp, joint_search) mirrors step for step.

A hypothesis g (a character prefix) is scored
    score(g) = (1 - lam) * log p_att(g) + lam * log p_ctc(g...)
where log p_ctc(g...) is the CTC prefix probability: the probability that the CTC head's frames x_1..x_S
(log_softmax of `ctc(h)`, blank = PAD_ID) spell a label sequence that starts with g. It is carried per hypothesis
as two forward variables over the frames, r^n_t(g) (g's alignments up to frame t ending in g's last character) and
r^b_t(g) (ending in blank), and extended by one character c in O(S):
    phi_t   = r^b_t(g) if c == last(g) else logaddexp(r^n_t(g), r^b_t(g))   (a repeat needs a blank between)
    r^n_1(gc) = x_1(c) if g is empty else -inf;   r^b_1(gc) = -inf
    r^n_t(gc) = logaddexp(r^n_{t-1}(gc), phi_{t-1}) + x_t(c)
    r^b_t(gc) = logaddexp(r^b_{t-1}(gc), r^n_{t-1}(gc)) + x_t(blank)
    log p_ctc(gc...) = logaddexp(x_1(c) [g empty], logaddexp_{t=2..S} phi_{t-1} + x_t(c))
with r^n_t(empty) = -inf, r^b_t(empty) = sum_{u<=t} x_u(blank). EOS closes g: its CTC score is the full-sequence
probability logaddexp(r^n_S(g), r^b_S(g)). A step's joint increment for c is
(1 - lam) * log p_att(c | g) + lam * (log p_ctc(gc...) - log p_ctc(g...)). The CTC term punishes what attention
alone gets wrong on long clips: a repeated word or a loop needs frames CTC does not have, and an early EOS leaves
frames unexplained.

The search is attnlab.nn.decoding.beam_search's for one utterance (top 2K candidates per step; EOS or the length
limit finishes a hypothesis with score / len^alpha, len counting EOS; stop at K finished or at the limit; the best
finished wins) with the joint score in place of sum log p_att; K = 1 is the CTC-aware greedy search (each step's
best joint candidate). Scores are float64 here and double in the engine.

Shallow fusion: with a character language model (attnlab.nn.char_lm) and weight beta > 0, each step's increment
also gains beta * log p_lm(c | g) (EOS: the LM's </s>), the LM carried per hypothesis like the CTC variables.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from attnlab.nn.decoding import BOS_ID, EOS_ID
from attnlab.nn.listen_attend_spell import CTC_BLANK, NEVER_WRITTEN

NEG_INF = -math.inf


class CTCPrefixScorer:
    """The CTC prefix scores of one utterance: log_probs [S, V] (the CTC head's log_softmax over its frames)."""

    def __init__(self, log_probs, blank=CTC_BLANK):
        self.x = np.asarray(log_probs, dtype=np.float64)
        self.S, self.V = self.x.shape
        self.blank = blank

    def initial(self):
        """The empty prefix: (r_n [S], r_b [S], log p_ctc = 0)."""
        return np.full(self.S, NEG_INF), np.cumsum(self.x[:, self.blank]), 0.0

    def extend(self, r_n, r_b, last, empty):
        """Every one-character extension of the prefix whose forward variables are r_n, r_b [S] (last: its last
        character; empty: it has none) -> (prefix scores [V], r_n [V, S], r_b [V, S], full-sequence score)."""
        x, S, V = self.x, self.S, self.V
        both = np.logaddexp(r_n, r_b)
        phi = np.tile(both, (V, 1))                       # [V, S]
        if not empty:
            phi[last] = r_b
        new_n = np.full((V, S), NEG_INF)
        new_b = np.full((V, S), NEG_INF)
        if empty:
            new_n[:, 0] = x[0]
        psi = new_n[:, 0].copy()
        for t in range(1, S):
            new_n[:, t] = np.logaddexp(new_n[:, t - 1], phi[:, t - 1]) + x[t]
            new_b[:, t] = np.logaddexp(new_b[:, t - 1], new_n[:, t - 1]) + x[t, self.blank]
            psi = np.logaddexp(psi, phi[:, t - 1] + x[t])
        return psi, new_n, new_b, float(both[S - 1])


def ctc_log_probs(model, h):
    """The CTC head over one utterance's annotations h [S, 2E] -> log-probabilities [S, V] (float32)."""
    return torch.log_softmax(model.ctc(h), dim=-1)


@torch.no_grad()
def joint_search(model, feats, beam=4, ctc_weight=0.3, alpha=1.0, max_len_a=2.0, max_len_b=10, lm=None,
                 lm_weight=0.0):
    """One utterance: raw MFCCs feats [T, 13] -> (ids without BOS/EOS, attention rows [L][S], finished).
    ctc_weight 0 and lm_weight 0 is plain attention scoring (the same search as attnlab.nn.decoding.beam_search);
    lm_weight > 0 needs lm (a CharLM)."""
    if not 0.0 <= ctc_weight <= 1.0:
        raise ValueError(f"ctc_weight must be in [0, 1], got {ctc_weight}")
    if lm_weight < 0 or (lm_weight > 0 and lm is None):
        raise ValueError(f"lm_weight must be >= 0 (> 0 needs an lm), got {lm_weight}")
    beta = float(lm_weight)
    x = torch.as_tensor(feats, dtype=torch.float32)[None]
    lengths = torch.tensor([x.size(1)])
    h, S_len, s0 = model.listen(x, lengths)
    S = int(S_len[0])
    mask = torch.arange(h.size(1))[None, :] < S_len[:, None]
    keys = model.attn.W_k(h)
    ctc = CTCPrefixScorer(ctc_log_probs(model, h[0, :S]).numpy()) if ctc_weight > 0 else None
    lam = float(ctc_weight)
    max_len = int(max_len_a * S + max_len_b)
    K = beam

    # A live hypothesis: (joint score, s, a, last token, ids, attention rows, ctc state (r_n, r_b, psi) or None,
    # lm state (log p_lm(next) [V], h) or None)
    live = [(0.0, s0, model.first_weights(mask), BOS_ID, [], [], ctc.initial() if ctc else None,
             lm.step(lm.initial(), BOS_ID) if beta > 0 else None)]
    finished = []
    for step in range(max_len):
        candidates, expanded = [], []
        for b, (joint, s, a, last, ids, rows, ctc_state, lm_here) in enumerate(live):
            logits, s_next, a_next, _ = model.step(h, keys, mask, s, a, torch.tensor([last]))
            logits[:, list(NEVER_WRITTEN)] = float("-inf")
            att = torch.log_softmax(logits[0], dim=-1).double().numpy()
            if ctc:
                r_n, r_b, psi = ctc_state
                prefix, new_n, new_b, full = ctc.extend(r_n, r_b, ids[-1] if ids else None, not ids)
                prefix[EOS_ID] = full
                with np.errstate(invalid="ignore"):   # 0 * -inf at lam = 1: those tokens are banned below
                    gain = (1 - lam) * att + lam * (prefix - psi)
                gain[np.isneginf(att)] = NEG_INF
            else:
                prefix = new_n = new_b = None
                gain = att.copy()
            if lm_here:
                gain = gain + beta * lm_here[0].double().numpy()
                gain[np.isneginf(att)] = NEG_INF
            expanded.append((s_next, a_next, prefix, new_n, new_b))
            for v in range(len(gain)):
                candidates.append((joint + float(gain[v]), b, v))
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        last_step = step + 1 >= max_len
        next_live = []
        for score, b, v in candidates[:2 * K]:
            if score == NEG_INF:
                break
            _, _, _, _, ids, rows, _, lm_here = live[b]
            s_next, a_next, prefix, new_n, new_b = expanded[b]
            if v == EOS_ID or last_step:
                if len(finished) < K:
                    out_ids, out_rows = list(ids), list(rows)
                    if v != EOS_ID:
                        out_ids.append(v)
                        out_rows.append(a_next[0, :S].clone())
                    finished.append((score / float(step + 1) ** alpha, out_ids, out_rows, v == EOS_ID))
            else:
                ctc_state = (new_n[v], new_b[v], float(prefix[v])) if ctc else None
                lm_next = lm.step(lm_here[1], v) if lm_here else None
                next_live.append((score, s_next, a_next, v, ids + [v], rows + [a_next[0, :S].clone()], ctc_state,
                                  lm_next))
            if len(next_live) == K:
                break
        if len(finished) >= K or last_step or not next_live:
            break
        live = next_live
    if not finished:
        return [], [], False
    best = max(finished, key=lambda f: f[0])   # the first of equal scores, as the engine's max_element
    return best[1], best[2], best[3]
