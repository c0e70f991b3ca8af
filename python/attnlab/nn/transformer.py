"""Encoder-decoder Transformer (Vaswani et al. 2017) with pre-LN sublayers, the reference the C++ engine
mirrors (src/attnlab/models/transformer.hpp).

Notation: x_1..x_S source ids (ending with EOS), y_0 = BOS, y_1..y_T target ids, d = d_model,
E_src [V_src, d], E_tgt [V_tgt, d], PE the sinusoidal table, LN layer norm (eps 1e-5),
MHA = torch.nn.MultiheadAttention (state_dict: in_proj_weight [3d, d] = q|k|v, in_proj_bias, out_proj.*).

    PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))   (computed in float64, stored f32)
    encoder input   h = E_src[x] * sqrt(d) + PE[0..S)
    encoder layer   h = h + MHA_self(LN1(h))                    (tensors encoder.layers.<l>.self_attn.*, norm1)
                    h = h + W2 relu(W1 LN2(h) + b1) + b2        (ff1 [ff, d], ff2 [d, ff], norm2)
    memory          m = LN_enc(h)                               (encoder.norm)
    decoder input   g = E_tgt[y_<t] * sqrt(d) + PE[0..t)
    decoder layer   g = g + MHA_self(LN1(g), causal)            (decoder.layers.<l>.self_attn, norm1)
                    g = g + MHA_cross(LN2(g), m)                (cross_attn, norm2)
                    g = g + W2 relu(W1 LN3(g) + b1) + b2        (ff1, ff2, norm3)
    logits          LN_dec(g) . E_tgt^T                         (decoder.norm; output tied to tgt_embed.weight)

Why pre-LN: with the norm inside the residual branch the residual stream is an identity path, gradients
stay well scaled at any depth and training does not diverge early, so a small data set (Multi30k, 29k
pairs) trains robustly with a short warm-up; post-LN needs a careful warm-up and often diverges at
higher learning rates. Dropout (training only) follows the embeddings, every sublayer output, the
attention weights and the FF hidden layer; it is the identity at inference.

Decoding uses a key/value cache: each step projects only the new position's key and value per layer
and attends over the cached ones (O(t) per step); the cross-attention keys/values of the memory are
projected once per sentence. Attention tensors returned: encoder self [L][H][S][S], decoder self
[L][H][T][T] (causal: row i sees decoder inputs 0..i = BOS, y_1..y_i) and cross [L][H][T][S].
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.nn import decoding
from attnlab.nn.decoding import BOS_ID, EOS_ID, PAD_ID, UNK_ID  # noqa: F401  (one definition for all models)


@dataclass
class Config:
    src_vocab: int
    tgt_vocab: int
    d_model: int = 256
    heads: int = 8
    enc_layers: int = 3
    dec_layers: int = 3
    ff: int = 1024
    dropout: float = 0.1
    max_positions: int = 1024
    norm: str = "pre"        # only pre-LN is implemented (see the module docstring)

    def to_dict(self):
        return asdict(self)


def sinusoidal_table(n: int, d: int) -> torch.Tensor:
    """[n, d] float32, computed in float64 so the C++ engine (double math) gets the same float values."""
    pos = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    inv = torch.pow(10000.0, -torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * inv)
    pe[:, 1::2] = torch.cos(pos * inv[: d // 2])
    return pe.float()


class FeedForward(nn.Module):
    def __init__(self, d, ff, dropout):
        super().__init__()
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.ff2(self.drop(F.relu(self.ff1(x))))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        d = cfg.d_model
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = nn.MultiheadAttention(d, cfg.heads, dropout=cfg.dropout, batch_first=True)
        self.ffn = FeedForward(d, cfg.ff, cfg.dropout)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, h, pad_mask, need_weights=False):
        """h [B,S,d], pad_mask [B,S] True on padding -> h [B,S,d], weights [B,H,S,S] or None."""
        x = self.norm1(h)
        a, w = self.self_attn(x, x, x, key_padding_mask=pad_mask, need_weights=need_weights,
                              average_attn_weights=False)
        h = h + self.drop(a)
        h = h + self.drop(self.ffn(self.norm2(h)))
        return h, w


class DecoderLayer(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        d = cfg.d_model
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = nn.MultiheadAttention(d, cfg.heads, dropout=cfg.dropout, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d, cfg.heads, dropout=cfg.dropout, batch_first=True)
        self.ffn = FeedForward(d, cfg.ff, cfg.dropout)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, g, memory, mem_pad_mask, need_weights=False):
        """Teacher-forced: g [B,T,d], memory [B,S,d] -> g, self weights [B,H,T,T], cross weights [B,H,T,S]."""
        T = g.size(1)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=g.device), 1)
        x = self.norm1(g)
        a, ws = self.self_attn(x, x, x, attn_mask=causal, need_weights=need_weights, average_attn_weights=False)
        g = g + self.drop(a)
        x = self.norm2(g)
        a, wc = self.cross_attn(x, memory, memory, key_padding_mask=mem_pad_mask, need_weights=need_weights,
                                average_attn_weights=False)
        g = g + self.drop(a)
        g = g + self.drop(self.ffn(self.norm3(g)))
        return g, ws, wc


# ---- incremental attention over a key/value cache (inference only) --------------------------------
def _split_in_proj(mha: nn.MultiheadAttention):
    d = mha.embed_dim
    w, b = mha.in_proj_weight, mha.in_proj_bias
    return (w[:d], b[:d]), (w[d:2 * d], b[d:2 * d]), (w[2 * d:], b[2 * d:])


def project_kv(mha: nn.MultiheadAttention, x):
    """x [B,N,d] -> keys, values [B,H,N,hd]."""
    _, (wk, bk), (wv, bv) = _split_in_proj(mha)
    B, N, d = x.shape
    H = mha.num_heads
    k = F.linear(x, wk, bk).view(B, N, H, d // H).transpose(1, 2)
    v = F.linear(x, wv, bv).view(B, N, H, d // H).transpose(1, 2)
    return k, v


def attend_cached(mha: nn.MultiheadAttention, x, k, v, key_mask=None):
    """One query position: x [B,d], k/v [B,H,N,hd], key_mask [B,N] True on padding -> y [B,d], weights [B,H,N]."""
    (wq, bq), _, _ = _split_in_proj(mha)
    B, d = x.shape
    H = mha.num_heads
    hd = d // H
    q = F.linear(x, wq, bq).view(B, H, 1, hd)
    scores = (q / math.sqrt(hd)) @ k.transpose(-1, -2)                        # [B,H,1,N]
    if key_mask is not None:
        scores = scores.masked_fill(key_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(-1)
    y = (weights @ v).view(B, d)
    return mha.out_proj(y), weights.squeeze(2)


class Transformer(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        if cfg.norm != "pre":
            raise ValueError("only pre-LN is implemented")
        self.cfg = cfg
        d = cfg.d_model
        self.src_embed = nn.Embedding(cfg.src_vocab, d, padding_idx=PAD_ID)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab, d, padding_idx=PAD_ID)
        self.register_buffer("pe", sinusoidal_table(cfg.max_positions, d), persistent=False)
        self.encoder = nn.Module()
        self.encoder.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.enc_layers))
        self.encoder.norm = nn.LayerNorm(d)
        self.decoder = nn.Module()
        self.decoder.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.dec_layers))
        self.decoder.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(cfg.dropout)
        self.reset_parameters()

    def reset_parameters(self):
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
        d = self.cfg.d_model
        for emb in (self.src_embed, self.tgt_embed):
            nn.init.normal_(emb.weight, 0.0, d ** -0.5)
            with torch.no_grad():
                emb.weight[PAD_ID].zero_()

    def embed(self, table: nn.Embedding, ids, offset=0):
        """ids [B,N] -> [B,N,d] = E[ids] * sqrt(d) + PE[offset..offset+N)."""
        n = ids.size(1)
        if offset + n > self.cfg.max_positions:
            raise ValueError(f"sequence longer than max_positions {self.cfg.max_positions}")
        return self.drop(table(ids) * math.sqrt(self.cfg.d_model) + self.pe[offset:offset + n])

    def encode(self, src, need_weights=False):
        """src [B,S] (PAD-padded) -> memory [B,S,d], pad mask [B,S] (True = padding), weights [L] of [B,H,S,S]."""
        pad = src == PAD_ID
        h = self.embed(self.src_embed, src)
        weights = []
        for layer in self.encoder.layers:
            h, w = layer(h, pad, need_weights)
            weights.append(w)
        return self.encoder.norm(h), pad, weights

    def logits(self, g):
        return F.linear(self.decoder.norm(g), self.tgt_embed.weight)

    def decode(self, tgt_in, memory, mem_pad, need_weights=False):
        """Teacher-forced: tgt_in [B,T] (BOS y_1..y_{T-1}) -> logits [B,T,V], self [L] of [B,H,T,T], cross [L]."""
        g = self.embed(self.tgt_embed, tgt_in)
        self_w, cross_w = [], []
        for layer in self.decoder.layers:
            g, ws, wc = layer(g, memory, mem_pad, need_weights)
            self_w.append(ws)
            cross_w.append(wc)
        return self.logits(g), self_w, cross_w

    def forward(self, src, tgt_in):
        memory, pad, _ = self.encode(src)
        return self.decode(tgt_in, memory, pad)[0]

    # ---- incremental decoding --------------------------------------------------------------
    def start_state(self, memory, mem_pad):
        """-> decoder state: cross K/V per layer (fixed) and empty self K/V caches."""
        cross = [project_kv(layer.cross_attn, memory) for layer in self.decoder.layers]
        B, d = memory.size(0), self.cfg.d_model
        H = self.cfg.heads
        empty = memory.new_zeros(B, H, 0, d // H)
        return {"pos": 0, "cross": cross, "mem_pad": mem_pad, "self": [(empty, empty) for _ in self.decoder.layers]}

    def step(self, prev, state):
        """prev [B] (y_{t-1}) -> logits [B,V], new state, self weights [L] of [B,H,t+1], cross [L] of [B,H,S]."""
        g = self.embed(self.tgt_embed, prev[:, None], state["pos"])[:, 0]        # [B,d]
        new_self, self_w, cross_w = [], [], []
        for layer, (k, v), (ck, cv) in zip(self.decoder.layers, state["self"], state["cross"]):
            x = layer.norm1(g)
            nk, nv = project_kv(layer.self_attn, x[:, None])
            k, v = torch.cat([k, nk], 2), torch.cat([v, nv], 2)
            a, ws = attend_cached(layer.self_attn, x, k, v)
            g = g + a
            a, wc = attend_cached(layer.cross_attn, layer.norm2(g), ck, cv, state["mem_pad"])
            g = g + a
            g = g + layer.ffn(layer.norm3(g))
            new_self.append((k, v))
            self_w.append(ws)
            cross_w.append(wc)
        new_state = dict(state, pos=state["pos"] + 1, self=new_self)
        return self.logits(g), new_state, self_w, cross_w

    @staticmethod
    def select_state(state, idx):
        """Reorders the batch (beam search): every hypothesis gets its parent's caches."""
        return {"pos": state["pos"], "mem_pad": state["mem_pad"].index_select(0, idx),
                "cross": [(k.index_select(0, idx), v.index_select(0, idx)) for k, v in state["cross"]],
                "self": [(k.index_select(0, idx), v.index_select(0, idx)) for k, v in state["self"]]}


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ---- search (attnlab.nn.decoding's bookkeeping, the same as seq2seq_rnn.py's and src/attnlab/decode/search.cpp's) ---
@torch.no_grad()
def greedy_decode(model: Transformer, src, src_len, max_len_a=1.5, max_len_b=10, return_attention=False):
    """src [B,S] (PAD-padded, ids end with EOS), src_len [B] -> B token lists (no BOS/EOS).
    With return_attention (B must be 1): also (encoder self [L,H,S,S], decoder self [L,H,T,T], cross [L,H,T,S])
    for the T returned tokens (the EOS step is not included)."""
    model.eval()
    memory, pad, enc_w = model.encode(src, need_weights=return_attention)
    B = src.size(0)
    self_rows, cross_rows = [], []

    def keep_weights(ws, wc):
        self_rows.append(ws)
        cross_rows.append(wc)

    hyps = decoding.greedy_search(model.step, model.start_state(memory, pad), src_len, max_len_a, max_len_b,
                                  on_step=keep_weights)
    if not return_attention:
        return hyps
    if B != 1:
        raise ValueError("return_attention needs a batch of one")
    T = len(hyps[0])
    L, H = len(model.decoder.layers), model.cfg.heads
    dec_self = torch.zeros(L, H, T, T)
    cross = torch.zeros(L, H, T, src.size(1))
    for i in range(T):
        for l in range(L):
            dec_self[l, :, i, :i + 1] = self_rows[i][l][0]
            cross[l, :, i] = cross_rows[i][l][0]
    return hyps, (torch.stack([w[0] for w in enc_w]), dec_self, cross)


@torch.no_grad()
def beam_search(model: Transformer, src, src_len, beam=5, alpha=1.0, max_len_a=1.5, max_len_b=10, allowed=None):
    """Batched beam search, hypotheses ranked by sum(log p) / len^alpha (len counts EOS); the same
    algorithm as attnlab.nn.seq2seq_rnn's beam_search (top 2K candidates; a sentence stops once it has
    `beam` finished hypotheses or reaches max_len_a*|src|+max_len_b tokens)."""
    model.eval()
    B, K = src.size(0), beam
    memory, pad, _ = model.encode(src)
    expand = torch.arange(B).repeat_interleave(K)
    state = model.start_state(memory.index_select(0, expand), pad.index_select(0, expand))
    return decoding.beam_search(model.step, state, model.select_state, src_len, beam=beam, alpha=alpha,
                                max_len_a=max_len_a, max_len_b=max_len_b, allowed=allowed)
