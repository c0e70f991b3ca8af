"""BiGRU encoder + attention + GRU decoder with a deep output layer (Bahdanau et al. 2015).

This module is the reference the C++ engine mirrors, so the equations are spelled out.

Notation: x_1..x_S source ids, y_0 = BOS, y_1..y_T target ids, E_src / E_tgt embedding
tables [V, emb], sigma = logistic, "." = matrix-vector product, [a; b] = concatenation.

GRU cell (PyTorch gate order r, z, n; W_ih = [W_ir; W_iz; W_in], W_hh likewise, same for biases):
    r  = sigma(W_ir.x + b_ir + W_hr.h + b_hr)
    z  = sigma(W_iz.x + b_iz + W_hz.h + b_hz)
    n  = tanh (W_in.x + b_in + r * (W_hn.h + b_hn))
    h' = (1 - z) * n + z * h

Encoder (tensors `encoder.*_l0` forward, `encoder.*_l0_reverse` backward, h_0 = 0):
    ->h_j = GRU_fwd(E_src[x_j], ->h_{j-1})          j = 1..S
    <-h_j = GRU_bwd(E_src[x_j], <-h_{j+1})          j = S..1
    h_j   = [->h_j ; <-h_j]                          [2*enc_hidden]   ("memory")

Initial decoder state (tensors `init.weight`, `init.bias`):
    s_0 = tanh(W_init.[->h_S ; <-h_1] + b_init)      [dec_hidden]

Decoder step i = 1..T (Bahdanau ordering: attend with the PREVIOUS state):
    e_ij = score(s_{i-1}, h_j)                       raw scores, masked to -inf on padding
    a_ij = softmax_j(e_ij)
    c_i  = sum_j a_ij h_j                            [2*enc_hidden]
    s_i  = GRU_dec([E_tgt[y_{i-1}] ; c_i], s_{i-1})   (tensors `decoder.weight_ih` [3H, emb+2*enc_hidden] ...)
    t_i  = tanh(W_t.[s_i ; c_i ; E_tgt[y_{i-1}]] + b_t)   (tensors `deep_out.weight`, `deep_out.bias`) [emb]
    logits_i = E_tgt.t_i + b_out                     (output projection tied to `tgt_embed.weight`,
                                                      bias `out_bias`) [V_tgt]

Score functions (tensors under `attn.`; K = keys precomputed once per sentence):
    additive: e_ij = v . tanh(W_q.s + W_k.h_j + b_k)    attn.W_q.weight [A, H], attn.W_k.weight [A, 2E],
                                                        attn.W_k.bias [A], attn.v.weight [1, A]
    dot:      e_ij = s . h_j                            (needs dec_hidden == 2*enc_hidden; no tensors)
    general:  e_ij = s . (W_k.h_j)                      attn.W_k.weight [H, 2E]
    cosine:   e_ij = g * s.h_j / (max(|s|,1e-8) max(|h_j|,1e-8))   attn.gain [1] (learned, init 10)
The score modules are attnlab.nn.attention's (shared with the C++ `attnlab::nn` attention layer).
Dropout (training only) is applied to both embeddings, the memory h_j and t_i; it is the identity
at inference and never changes the equations above.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, asdict
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnlab.nn import decoding
from attnlab.nn.attention import SCORES, Attention  # noqa: F401  (SCORES: the trainer's --score choices)
from attnlab.nn.decoding import BOS_ID, EOS_ID, PAD_ID, UNK_ID  # noqa: F401  (one definition for all models)


@dataclass
class Config:
    src_vocab: int
    tgt_vocab: int
    emb: int = 256
    enc_hidden: int = 256       # per direction; memory is 2*enc_hidden wide
    dec_hidden: int = 512
    attn_dim: int = 512         # additive attention's hidden size
    score: str = "additive"
    dropout: float = 0.3

    def to_dict(self):
        return asdict(self)


@dataclass
class Encoded:
    """Per-sentence encoder results the decoder attends over (batch may be beam-expanded)."""
    memory: torch.Tensor   # [B,S,2E]
    keys: torch.Tensor     # [B,S,*]
    mask: torch.Tensor     # [B,S] bool, True on real tokens
    s0: torch.Tensor       # [B,H]

    def index_select(self, idx):
        return Encoded(self.memory.index_select(0, idx), self.keys.index_select(0, idx),
                       self.mask.index_select(0, idx), self.s0.index_select(0, idx))


class Seq2SeqRNN(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        mem = 2 * cfg.enc_hidden
        self.src_embed = nn.Embedding(cfg.src_vocab, cfg.emb, padding_idx=PAD_ID)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab, cfg.emb, padding_idx=PAD_ID)
        self.encoder = nn.GRU(cfg.emb, cfg.enc_hidden, batch_first=True, bidirectional=True)
        self.init = nn.Linear(mem, cfg.dec_hidden)
        self.attn = Attention(cfg.score, cfg.dec_hidden, mem, cfg.attn_dim)
        self.decoder = nn.GRUCell(cfg.emb + mem, cfg.dec_hidden)
        self.deep_out = nn.Linear(cfg.dec_hidden + mem + cfg.emb, cfg.emb)
        self.out_bias = nn.Parameter(torch.zeros(cfg.tgt_vocab))
        self.drop = nn.Dropout(cfg.dropout)
        self.reset_parameters()

    def reset_parameters(self):
        for name, p in self.named_parameters():
            if name.endswith("gain"):
                continue
            if "bias" in name:
                nn.init.zeros_(p)
            elif name.endswith("embed.weight"):
                nn.init.normal_(p, 0.0, self.cfg.emb ** -0.5)
            elif "weight_hh" in name:
                for chunk in p.data.chunk(3, 0):   # orthogonal per gate keeps recurrences stable
                    nn.init.orthogonal_(chunk)
            else:
                nn.init.xavier_uniform_(p)
        with torch.no_grad():
            self.src_embed.weight[PAD_ID].zero_()
            self.tgt_embed.weight[PAD_ID].zero_()

    # ---- encoder ------------------------------------------------------------------------
    def encode(self, src, src_len) -> Encoded:
        """src [B,S] long (PAD-padded), src_len [B] long -> Encoded."""
        x = self.drop(self.src_embed(src))                                       # [B,S,emb]
        packed = pack_padded_sequence(x, src_len.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)                                          # h_n [2,B,E]
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))  # [B,S,2E]
        s0 = torch.tanh(self.init(torch.cat([h_n[0], h_n[1]], dim=-1)))          # [B,H]
        memory = self.drop(memory)
        mask = src != PAD_ID
        return Encoded(memory, self.attn.precompute_keys(memory), mask, s0)

    # ---- one decoder step (greedy / beam search) -----------------------------------------
    def attend(self, s_prev, enc: Encoded):
        """s_prev [B,H] -> context [B,2E], weights [B,S], raw scores [B,S]."""
        scores = self.attn.scores(s_prev, enc.keys, enc.mask)                    # [B,S], -inf on padding
        weights = self.attn.weights(scores, enc.mask)
        context = self.attn.context(weights, enc.memory)                         # [B,2E]
        return context, weights, scores

    def output_logits(self, s, context, y_emb):
        """s [..,H], context [..,2E], y_emb [..,emb] -> logits [..,V]."""
        t = torch.tanh(self.deep_out(torch.cat([s, context, y_emb], dim=-1)))
        return F.linear(self.drop(t), self.tgt_embed.weight, self.out_bias)

    def decode_step(self, prev_tokens, s_prev, enc: Encoded):
        """prev_tokens [B] (y_{i-1}), s_prev [B,H] -> (logits [B,V], s_i [B,H], weights [B,S], scores [B,S])."""
        y_emb = self.drop(self.tgt_embed(prev_tokens))                           # [B,emb]
        context, weights, scores = self.attend(s_prev, enc)
        s = self.decoder(torch.cat([y_emb, context], dim=-1), s_prev)
        return self.output_logits(s, context, y_emb), s, weights, scores

    # ---- teacher-forced training ----------------------------------------------------------
    def forward(self, src, src_len, tgt_in):
        """src [B,S], src_len [B], tgt_in [B,T] (BOS y_1..y_{T-1}) -> logits [B,T,V]."""
        enc = self.encode(src, src_len)
        y_emb = self.drop(self.tgt_embed(tgt_in))                                # [B,T,emb]
        emb = self.cfg.emb
        # The y part of the GRU input projection does not depend on the recurrence: do it once.
        w_ih = self.decoder.weight_ih
        gx_y = F.linear(y_emb, w_ih[:, :emb], self.decoder.bias_ih)              # [B,T,3H]
        w_ic = w_ih[:, emb:]
        w_hh, b_hh = self.decoder.weight_hh, self.decoder.bias_hh
        s = enc.s0
        states, contexts = [], []
        for i in range(tgt_in.size(1)):
            context, _, _ = self.attend(s, enc)
            gx = gx_y[:, i] + F.linear(context, w_ic)                            # [B,3H]
            gh = F.linear(s, w_hh, b_hh)                                         # [B,3H]
            xr, xz, xn = gx.chunk(3, -1)
            hr, hz, hn = gh.chunk(3, -1)
            r = torch.sigmoid(xr + hr)
            z = torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            s = n + z * (s - n)                                                  # (1-z)*n + z*s
            states.append(s)
            contexts.append(context)
        return self.output_logits(torch.stack(states, 1), torch.stack(contexts, 1), y_emb)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ---- search (the shared bookkeeping is attnlab.nn.decoding's; the C++ engine mirrors it) ------------------
@torch.no_grad()
def greedy_decode(model: Seq2SeqRNN, src, src_len, max_len_a=1.5, max_len_b=10,
                  no_repeat_ngram=0) -> List[List[int]]:
    """src [B,S] -> list of B token-id lists (no BOS/EOS)."""
    model.eval()
    enc = model.encode(src, src_len)
    return decoding.greedy_search(lambda prev, s: model.decode_step(prev, s, enc), enc.s0, src_len,
                                  max_len_a, max_len_b, no_repeat_ngram=no_repeat_ngram)


@torch.no_grad()
def beam_search(model: Seq2SeqRNN, src, src_len, beam=5, alpha=1.0,
                max_len_a=1.5, max_len_b=10, no_repeat_ngram=0, allowed=None) -> List[List[int]]:
    """Batched beam search. Hypotheses are ranked by sum(log p) / len^alpha (len counts EOS); allowed: a
    vocabulary shortlist, as attnlab.nn.decoding.beam_search takes it.

    A sentence stops once it has `beam` finished hypotheses or reaches max_len_a*|src|+max_len_b
    tokens; then unfinished beams compete too.
    """
    model.eval()
    B = src_len.size(0)   # src may be a pair (the captioner with a global feature)
    enc = model.encode(src, src_len)
    enc = enc.index_select(torch.arange(B).repeat_interleave(beam))   # fixed per row: only s is reordered
    return decoding.beam_search(lambda prev, s: model.decode_step(prev, s, enc), enc.s0,
                                lambda s, rows: s.index_select(0, rows), src_len, beam=beam, alpha=alpha,
                                max_len_a=max_len_a, max_len_b=max_len_b, no_repeat_ngram=no_repeat_ngram,
                                allowed=allowed)
