"""Show, Attend and Tell (Xu et al. 2015), soft attention: the caption decoder the C++ engine mirrors.

The encoder (MobileNetV2, attnlab.nn.mobilenet_v2) turns a 224x224 image into a grid of G = 7x7 annotation
vectors a_1..a_G [C = 1280]; this module is the decoder over that grid. Notation: E the embedding table [V, emb],
sigma = logistic, "." = matrix-vector product, [a; b] = concatenation, y_0 = BOS.

Initial state (tensors `init_h.*`, `init_c.*`):
    abar = (1/G) sum_i a_i                                   mean annotation [C]
    h_0  = tanh(W_h0.abar + b_h0)        c_0 = tanh(W_c0.abar + b_c0)        [H]
With Config.init_from_image False, W_h0 and W_c0 stay zero (frozen), so h_0 and c_0 are learned constants and the
image reaches the decoder only through attention. Initialized from abar, the first runs learned to close the gate
(beta ~0.015) and write captions from h_0 alone, leaving the attention uniform and meaningless; the file layout
and the engine are the same either way.

Optional global context (Config.global_dim > 0; `global_proj.*`), after "Knowing when to look" (Lu et al. 2017):
    g   = the image's global feature [global_dim] (MobileNetV2's last layer averaged over its 7x7 grid: what
          its classifier reads), given next to the grid: the model input is then the pair (grid, g)
    g_e = relu(W_g.g + b_g)                                  [emb], fed to the LSTM at every step
The 7x7 grid's attention stayed uniform because its mean already told the decoder what the image shows; the
14x14 grid's attention lands on objects but its captions are worse. With g the decoder gets what the 7x7 mean
gave, and the attention is left to do the looking. g_e is constant, so it rides in the state: s = [h ; c ; g_e].

Centered annotations (Config.center_grid): attention reads a_i - abar instead of a_i, for keys and values alike.
Uniform attention then yields a zero context, so the attention carries information only where it departs from
uniform; with the global feature g = abar the decoder still gets what the plain 7x7 mean gave it. Tried on the 7x7
grid, it backfired: the attention sharpened but moved AWAY from the object it named (dog word: 0.09 of the attention
on the dog region, uniform 0.25), because a_i - abar is signed and the background cells' deviations carry the
object's evidence negated. Kept for the record and the engine; not used by the shipped models.

Step t = 1..T (attend with the PREVIOUS state, as the paper):
    e_ti = v . tanh(W_q.h_{t-1} + W_k.a_i + b_k)             additive attention, attnlab.nn.attention's
                                                             Attention("additive") under `attn.`
    alpha_t = softmax_i(e_t)                                 [G]
    beta_t  = sigma(w_beta . h_{t-1} + b_beta)               gating scalar (`f_beta.weight` [1, H], `f_beta.bias` [1])
    z_t     = beta_t * sum_i alpha_ti a_i                    gated context [C]
    (h_t, c_t) = LSTMCell([E[y_{t-1}] ; z_t (; g_e)], (h_{t-1}, c_{t-1}))   (`decoder.*`, gate order i, f, g, o)
    logits_t = L_o.(E[y_{t-1}] + L_h.h_t + L_z.z_t) + b_o    deep output, Eq. 7 (linear, no activation);
                                                             L_h = `L_h.weight` [emb, H], L_z = `L_z.weight` [emb, C]
                                                             (no biases), L_o tied to E (`embed.weight`), b_o = `out_bias`

Training loss per caption: sum_t CE(logits_t, y_t) + lambda * sum_i (1 - sum_t alpha_ti)^2 (doubly stochastic
regularization; the sum over t runs over the caption's real steps, EOS included), averaged over the batch's tokens
(CE) and captions (regularizer); plus gamma * H(alpha_t) / log G averaged over the real steps (Config.attention_entropy,
0 by default): a penalty on spread-out attention. On the 7x7 grid nothing else stops the decoder from reading the
grid's mean through uniform attention, and a map that is an even tint shows nothing. With gamma = 0.5 and h_0, c_0
learned constants (no global feature), the attention lands on the object it names (models/captioner-flickr8k.md);
with the global feature g as well, it sharpened just as much but settled AWAY from the object (after one epoch:
0.10 of the dog word's attention on the dog region, uniform 0.25): with the gist already in g, the decoder looks
at the rest of the scene. Dropout (training only) on the deep-output sum before L_o and on the embeddings; the
identity at inference.

Search: `greedy_decode` / `beam_search` reuse attnlab.nn.seq2seq_rnn's implementations unchanged (top-2K candidates,
ranked by sum log p / len^alpha with EOS counted, finished at EOS or the length limit): `encode` returns its
`Encoded` with the whole grid unmasked, and the state s = [h ; c] [B, 2H] is one tensor so the beam can reorder it.
The length limit is fixed (max_len tokens), expressed as src_len = 0, max_len_a = 0, max_len_b = max_len.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, asdict
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.nn import seq2seq_rnn
from attnlab.nn.attention import Attention
from attnlab.nn.seq2seq_rnn import BOS_ID, EOS_ID, PAD_ID, Encoded  # noqa: F401


@dataclass
class Config:
    vocab: int
    feature_dim: int = 1280      # C
    grid: int = 49               # G (7x7)
    emb: int = 256
    hidden: int = 384            # H; 384 keeps the q8_0 file (decoder + encoder) under 10 MB
    attn_dim: int = 256          # A
    dropout: float = 0.5
    alpha_c: float = 1.0         # lambda of the doubly stochastic regularization
    # How the regularization's per-cell terms (1 - sum_t alpha_ti)^2 are reduced: "sum" over the G cells (the first
    # run: next to a per-token cross-entropy it outweighed it ~10x, and since a caption has fewer words than cells
    # its optimum is uniform attention, which is what that run learned) or "mean" over them (new runs).
    attention_reg: str = "sum"
    init_from_image: bool = True  # h_0, c_0 from the mean annotation (the paper, the first runs) or learned constants
    global_dim: int = 0           # size of the global feature g fed to the LSTM at every step (0: none)
    center_grid: bool = False     # attend over a_i - abar instead of a_i (see "Centered annotations" above)
    attention_entropy: float = 0.0  # gamma of the attention entropy penalty (training only; see the loss below)

    def to_dict(self):
        return asdict(self)


class ShowAttendTell(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        C, H, emb = cfg.feature_dim, cfg.hidden, cfg.emb
        self.embed = nn.Embedding(cfg.vocab, emb, padding_idx=PAD_ID)
        self.init_h = nn.Linear(C, H)
        self.init_c = nn.Linear(C, H)
        self.attn = Attention("additive", H, C, cfg.attn_dim)
        self.f_beta = nn.Linear(H, 1)
        self.global_proj = nn.Linear(cfg.global_dim, emb) if cfg.global_dim else None
        self.decoder = nn.LSTMCell(emb + C + (emb if cfg.global_dim else 0), H)
        self.L_h = nn.Linear(H, emb, bias=False)
        self.L_z = nn.Linear(C, emb, bias=False)
        self.out_bias = nn.Parameter(torch.zeros(cfg.vocab))
        self.drop = nn.Dropout(cfg.dropout)
        self.reset_parameters()

    def reset_parameters(self):
        for name, p in self.named_parameters():
            if "bias" in name:
                nn.init.zeros_(p)
            elif name == "embed.weight":
                nn.init.normal_(p, 0.0, self.cfg.emb ** -0.5)
            elif "weight_hh" in name:
                for chunk in p.data.chunk(4, 0):
                    nn.init.orthogonal_(chunk)
            else:
                nn.init.xavier_uniform_(p)
        with torch.no_grad():
            self.embed.weight[PAD_ID].zero_()
            self.decoder.bias_ih[self.cfg.hidden:2 * self.cfg.hidden].fill_(1.0)   # forget gate starts open
            if not self.cfg.init_from_image:
                for layer in (self.init_h, self.init_c):
                    layer.weight.zero_()
                    layer.weight.requires_grad_(False)

    # ---- encoder side ---------------------------------------------------------------------
    def encode(self, features, src_len=None) -> Encoded:
        """features: grid [B, G, C], or (grid, g [B, global_dim]) with a global context
        -> Encoded(memory, keys, mask, s0 = [h_0 ; c_0 (; g_e)] [B, 2H (+ emb)])."""
        grid, g = split_input(features, self.cfg)
        mean = grid.mean(1)                                                       # [B, C]
        state = [torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))]
        if g is not None:
            state.append(torch.relu(self.global_proj(g)))                         # g_e [B, emb]
        if self.cfg.center_grid:
            grid = grid - mean.unsqueeze(1)                                       # [B, G, C]
        mask = torch.ones(grid.shape[:2], dtype=torch.bool)
        return Encoded(grid, self.attn.precompute_keys(grid), mask, torch.cat(state, -1))

    # ---- one step ------------------------------------------------------------------------------
    def _step(self, y_emb, h, c, g_e, enc: Encoded):
        """y_emb [B, emb], h/c [B, H], g_e [B, emb] or None -> logits [B, V], h, c, weights [B, G], scores [B, G]."""
        scores = self.attn.scores(h, enc.keys)                                    # [B, G]
        weights = torch.softmax(scores, -1)
        context = self.attn.context(weights, enc.memory)                          # [B, C]
        z = torch.sigmoid(self.f_beta(h)) * context                               # [B, C]
        h, c = self.decoder(torch.cat([y_emb, z] if g_e is None else [y_emb, z, g_e], -1), (h, c))
        deep = y_emb + self.L_h(h) + self.L_z(z)                                  # [B, emb]
        logits = F.linear(self.drop(deep), self.embed.weight, self.out_bias)
        return logits, h, c, weights, scores

    def split_state(self, s):
        """s [B, 2H (+ emb)] -> h, c [B, H], g_e [B, emb] or None."""
        H = self.cfg.hidden
        return s[:, :H], s[:, H:2 * H], (s[:, 2 * H:] if self.cfg.global_dim else None)

    def decode_step(self, prev_tokens, s_prev, enc: Encoded):
        """prev_tokens [B], s_prev [B, 2H (+ emb)] -> (logits [B, V], s, weights [B, G], scores [B, G])."""
        h, c, g_e = self.split_state(s_prev)
        logits, h, c, weights, scores = self._step(self.embed(prev_tokens), h, c, g_e, enc)
        return logits, torch.cat([h, c] if g_e is None else [h, c, g_e], -1), weights, scores

    # ---- teacher forcing -------------------------------------------------------------------------
    def forward(self, features, tgt_in):
        """features (see encode), tgt_in [B, T] (BOS y_1..y_{T-1}) -> logits [B, T, V], alphas [B, T, G]."""
        enc = self.encode(features)
        h, c, g_e = self.split_state(enc.s0)
        y_emb = self.drop(self.embed(tgt_in))                                     # [B, T, emb]
        logits, alphas = [], []
        for t in range(tgt_in.size(1)):
            lg, h, c, a, _ = self._step(y_emb[:, t], h, c, g_e, enc)
            logits.append(lg)
            alphas.append(a)
        return torch.stack(logits, 1), torch.stack(alphas, 1)

    def loss(self, features, tgt_in, tgt_out, label_smoothing: float = 0.0):
        """-> (total loss, CE summed, tokens) for tgt_out [B, T] PAD-padded (y_1..y_T, EOS). With label_smoothing
        the total uses the smoothed cross-entropy; the CE returned (for perplexity) stays the plain one."""
        logits, alphas = self(features, tgt_in)
        mask = (tgt_out != PAD_ID).float()                                        # [B, T]
        flat_logits, flat_targets = logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1)
        ce = F.cross_entropy(flat_logits, flat_targets, ignore_index=PAD_ID, reduction="sum")
        trained_ce = ce if not label_smoothing else F.cross_entropy(
            flat_logits, flat_targets, ignore_index=PAD_ID, reduction="sum", label_smoothing=label_smoothing)
        tokens = mask.sum()
        attention_total = (alphas * mask.unsqueeze(-1)).sum(1)                   # [B, G] sum over t
        per_cell = (1.0 - attention_total) ** 2                                   # [B, G]
        reg = per_cell.mean() if self.cfg.attention_reg == "mean" else per_cell.sum(1).mean()
        loss = trained_ce / tokens + self.cfg.alpha_c * reg
        if self.cfg.attention_entropy:
            entropy = -(alphas * torch.log(alphas.clamp_min(1e-12))).sum(-1) / math.log(alphas.size(-1))   # [B, T]
            loss = loss + self.cfg.attention_entropy * (entropy * mask).sum() / tokens
        return loss, ce, tokens


def split_input(features, cfg: Config):
    """The model input -> (grid [B, G, C] float, g [B, global_dim] float or None); checks it fits the config."""
    grid, g = features if isinstance(features, (tuple, list)) else (features, None)
    if (g is not None) != bool(cfg.global_dim):
        raise ValueError(f"this decoder expects {'(grid, global feature)' if cfg.global_dim else 'a grid alone'}")
    return grid.float(), (None if g is None else g.float())


def batch_size(features) -> int:
    return (features[0] if isinstance(features, (tuple, list)) else features).size(0)


def load_checkpoint(path) -> ShowAttendTell:
    """An attnlab.train.caption checkpoint (last.pt / best.pt) -> its decoder, in eval mode."""
    ck = torch.load(path, map_location="cpu")
    model = ShowAttendTell(Config(**ck["config"]))
    model.load_state_dict(ck["model"])
    return model.eval()


class EnsembleEncoded:
    """The members' Encoded side by side; s0 is their states concatenated (one tensor, so the beam can reorder it)."""

    def __init__(self, parts: List[Encoded]):
        self.parts = parts
        self.s0 = torch.cat([e.s0 for e in parts], -1)
        self.widths = [e.s0.size(-1) for e in parts]

    def index_select(self, idx):
        return EnsembleEncoded([e.index_select(idx) for e in self.parts])


class Ensemble(nn.Module):
    """Captioners over the same grid and vocabulary that decode as one: each step's next-word distribution is the
    mean of the members' (returned as its log, which log_softmax leaves unchanged, so the searches take it as
    logits), and the attention shown is the mean of the members' weights (scores likewise). Every member keeps its
    own state; the ensemble's state is the members' states concatenated. The engine's CaptionDecoder does the same
    for a file with attnlab.captioner.ensemble_size > 1 (attnlab.gguf.captioner)."""

    def __init__(self, members: List[ShowAttendTell]):
        super().__init__()
        first = members[0].cfg
        for m in members[1:]:
            if (m.cfg.vocab, m.cfg.grid, m.cfg.feature_dim, m.cfg.global_dim) != \
                    (first.vocab, first.grid, first.feature_dim, first.global_dim):
                raise ValueError("ensemble members must share the vocabulary, the grid and the global feature")
        self.members = nn.ModuleList(members)

    @property
    def cfg(self) -> Config:
        return self.members[0].cfg

    def encode(self, features, src_len=None) -> EnsembleEncoded:
        return EnsembleEncoded([m.encode(features, src_len) for m in self.members])

    def decode_step(self, prev_tokens, s_prev, enc: EnsembleEncoded):
        probs, states, weights, scores = 0.0, [], 0.0, 0.0
        n = len(self.members)
        for member, part, s in zip(self.members, enc.parts, torch.split(s_prev, enc.widths, -1)):
            logits, s_next, w, sc = member.decode_step(prev_tokens, s, part)
            probs = probs + torch.softmax(logits, -1) / n
            states.append(s_next)
            weights, scores = weights + w / n, scores + sc / n
        return torch.log(probs), torch.cat(states, -1), weights, scores


def load_checkpoints(paths: List[str]):
    """One checkpoint -> its decoder; several -> their Ensemble (in eval mode)."""
    models = [load_checkpoint(p) for p in paths]
    return models[0] if len(models) == 1 else Ensemble(models).eval()


def grid_side(model: ShowAttendTell) -> int:
    """7 or 14: which stored grid (attnlab.data.features --layer) the decoder reads."""
    return 7 if model.cfg.grid == 49 else 14


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _lengths(features, max_len):
    return torch.zeros(batch_size(features), dtype=torch.long), 0.0, max_len


@torch.no_grad()
def greedy_decode(model: ShowAttendTell, features, max_len: int = 30, no_repeat_ngram: int = 0) -> List[List[int]]:
    """features [B, G, C] -> B token-id lists (no BOS/EOS)."""
    src_len, a, b = _lengths(features, max_len)
    return seq2seq_rnn.greedy_decode(model, features, src_len, max_len_a=a, max_len_b=b,
                                     no_repeat_ngram=no_repeat_ngram)


@torch.no_grad()
def beam_search(model: ShowAttendTell, features, beam: int = 3, alpha: float = 1.0,
                max_len: int = 30, no_repeat_ngram: int = 0) -> List[List[int]]:
    src_len, a, b = _lengths(features, max_len)
    return seq2seq_rnn.beam_search(model, features, src_len, beam=beam, alpha=alpha, max_len_a=a, max_len_b=b,
                                   no_repeat_ngram=no_repeat_ngram)


@torch.no_grad()
def greedy_with_attention(model: ShowAttendTell, features, max_len: int = 30):
    """One image: features [1, G, C] -> (tokens, weights [len, G], scores [len, G], logits [len, V]) of every step
    up to and including EOS (for fixtures: the C++ compares each step)."""
    model.eval()
    enc = model.encode(features)
    s = enc.s0
    prev = torch.full((1,), BOS_ID, dtype=torch.long)
    tokens, weights, scores, logits = [], [], [], []
    for _ in range(max_len):
        lg, s, w, sc = model.decode_step(prev, s, enc)
        prev = lg.argmax(-1)
        tokens.append(int(prev))
        weights.append(w[0]); scores.append(sc[0]); logits.append(lg[0])
        if int(prev) == EOS_ID:
            break
    return tokens, torch.stack(weights), torch.stack(scores), torch.stack(logits)
