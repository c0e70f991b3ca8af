"""Attention in three stages, five score functions: the PyTorch reference for src/attnlab/nn/attention.hpp.

    scores   e_s = score(q, k_s)                masked positions -> -inf            [B, S]
    weights  a   = softmax_s(e)                 a fully masked row -> all zeros     [B, S]
    context  c   = sum_s a_s v_s                                                    [B, dv]

Score functions (q [dq] decoder state, k_s [dk] encoder annotation):
    dot         q . k                                      dq == dk, no tensors
    general     q . (W_k k)                                W_k.weight [dq, dk]
    additive    v . tanh(W_q q + W_k k + b_k)              W_q.weight [A, dq], W_k.weight [A, dk],
                                                           W_k.bias [A], v.weight [1, A]
    cosine      g * cosine_similarity(q, k, eps=1e-8)      gain [1] (optional, learned)
                = g * q.k / (max(|q|, eps) * max(|k|, eps))   (torch 1.13's clamping, verified)
    scaled_dot  q . k / sqrt(dk)                           dq == dk, no tensors

The tensor names are the ones models/seq2seq_rnn.py's Attention uses, so its state_dict (prefix `attn.`) and
this module's load into the C++ `attnlab::nn::load_attention(file, "attn", score, dq, dk, A)` unchanged.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SCORES = ("dot", "general", "additive", "cosine", "scaled_dot")


class Attention(nn.Module):
    def __init__(self, score, query_dim, key_dim, attn_dim=None, cosine_gain=True, cosine_eps=1e-8,
                 query_bias=False, key_bias=True):
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"unknown score {score!r}; expected one of {SCORES}")
        if score in ("dot", "cosine", "scaled_dot") and query_dim != key_dim:
            raise ValueError(f"{score} needs query_dim == key_dim, got {query_dim} and {key_dim}")
        self.score, self.query_dim, self.key_dim, self.cosine_eps = score, query_dim, key_dim, cosine_eps
        if score == "additive":
            if not attn_dim:
                raise ValueError("additive attention needs attn_dim")
            self.W_q = nn.Linear(query_dim, attn_dim, bias=query_bias)
            self.W_k = nn.Linear(key_dim, attn_dim, bias=key_bias)
            self.v = nn.Linear(attn_dim, 1, bias=False)
        elif score == "general":
            self.W_k = nn.Linear(key_dim, query_dim, bias=False)
        elif score == "cosine" and cosine_gain:
            # cos lies in [-1, 1]: without a gain the softmax can never become peaked.
            self.gain = nn.Parameter(torch.tensor([10.0]))

    def precompute_keys(self, keys):
        """keys [B, S, dk] -> the query-independent part [B, S, *], computed once per source sentence."""
        if self.score in ("additive", "general"):
            return self.W_k(keys)
        return keys

    def scores(self, query, prepared, mask=None):
        """Stage 1. query [B, dq], prepared [B, S, *], mask [B, S] bool (True = real token) -> [B, S]."""
        if self.score == "additive":
            e = self.v(torch.tanh(prepared + self.W_q(query).unsqueeze(1))).squeeze(-1)
        elif self.score == "cosine":
            e = F.cosine_similarity(query.unsqueeze(1), prepared, dim=-1, eps=self.cosine_eps)
            if hasattr(self, "gain"):
                e = self.gain * e
        else:  # dot, general, scaled_dot
            e = torch.bmm(prepared, query.unsqueeze(-1)).squeeze(-1)
            if self.score == "scaled_dot":
                e = e / math.sqrt(self.key_dim)
        if mask is not None:
            e = e.masked_fill(~mask, float("-inf"))
        return e

    @staticmethod
    def weights(scores, mask=None):
        """Stage 2. scores [B, S] -> softmax [B, S]; a row with every position masked gives zeros, not NaN."""
        a = torch.softmax(scores, dim=-1)
        if mask is not None:
            a = a.masked_fill(~mask, 0.0)
        return a

    @staticmethod
    def context(weights, values):
        """Stage 3. weights [B, S], values [B, S, dv] -> [B, dv]."""
        return torch.bmm(weights.unsqueeze(1), values).squeeze(1)

    def forward(self, query, keys, values, mask=None, prepared=None):
        """query [B, dq], keys [B, S, dk], values [B, S, dv], mask [B, S] bool -> (scores, weights, context)."""
        if prepared is None:
            prepared = self.precompute_keys(keys)
        e = self.scores(query, prepared, mask)
        a = self.weights(e, mask)
        return e, a, self.context(a, values)
