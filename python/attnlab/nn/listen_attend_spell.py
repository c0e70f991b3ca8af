"""Listen, Attend and Spell (Chan et al. 2016) with location-aware attention (Chorowski et al. 2015): the PyTorch
reference for the engine's speech recognizer.

Input: Sphinx-style MFCCs x_1..x_T [T, 13] at 100 frames/s (attnlab.audio.features), each utterance mean-
normalized (CMN) and divided by the fixed per-coefficient `feature_scale` (buffer, stored in the file).

Listener (pyramidal: every layer halves the frame rate by stacking neighbouring frames):
    u_t   = [x_{2t-1} ; x_{2t}]                           [2*13]          50 frames/s
    g     = BiGRU_0(u)                                    [2*enc_hidden]  (tensors `listener.0.*`)
    u'_t  = [g_{2t-1} ; g_{2t}]                           [4*enc_hidden]  25 frames/s
    h     = BiGRU_1(u')                                   [2*enc_hidden]  (tensors `listener.1.*`): annotations
with Config.listener_layers = 2 (the default); each further layer stacks pairs of the previous one's outputs again
(`listener.2.*`, ...), so L layers give one annotation per 2^L input frames.
An odd frame count drops the last frame before stacking (the engine does the same).
Initial decoder state: s_0 = tanh(W_init.[->h_S ; <-h_1] + b_init)  (`init.*`).

Speller step i (Bahdanau ordering, as attnlab.nn.seq2seq_rnn), with the previous weights a_{i-1} (a_0 = one-hot
on the first frame):
    f_i  = conv1d(a_{i-1}, F)                              F [K, 1, width], zero padding width//2, no bias
    e_ij = v . tanh(W_q.s_{i-1} + W_k.h_j + b_k + W_f.f_ij)   location-aware score (`attn.*`)
    a_ij = softmax_j(e_ij)                                 masked to the utterance's frames
    c_i  = sum_j a_ij h_j
    s_i  = GRU([E[y_{i-1}] ; c_i], s_{i-1})                (`speller.*`)
    t_i  = tanh(W_t.[s_i ; c_i ; E[y_{i-1}]] + b_t)         (`deep_out.*`)
    logits_i = W_o.t_i + b_o                               (`out.*`) over VOCAB
Training adds a CTC head on h (`ctc.*`, Kim et al. 2017's joint CTC-attention): it pushes the listener toward
monotonic, frame-accurate annotations, and the joint search (attnlab.nn.joint_decoding, the engine's twin) scores
hypotheses with it as well.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.data.speech_text import ALPHABET
from attnlab.nn.decoding import BOS_ID, EOS_ID, PAD_ID

SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
VOCAB = SPECIALS + tuple(ALPHABET)
CHAR_IDS = {c: i for i, c in enumerate(VOCAB) if i >= len(SPECIALS)}
CTC_BLANK = PAD_ID
NEVER_WRITTEN = (PAD_ID, 1, BOS_ID)   # the speller may end (EOS) but never writes these
# The engine's kMaxSpeechListenerLayers: one annotation per 8 frames (80 ms) at the most, where greedy's output limit
# of 2 characters per annotation still allows 25 characters a second (a fourth halving would cut fast speech short).
MAX_LISTENER_LAYERS = 3
# AN4's per-coefficient std after CMN (../shared/data/README.md): features reach the listener at unit scale.
AN4_FEATURE_STD = (2.90, 0.85, 0.42, 0.48, 0.31, 0.24, 0.22, 0.19, 0.18, 0.18, 0.14, 0.14, 0.15)


def encode_transcript(text):
    """'hi there' -> ids (no BOS/EOS); characters outside the alphabet are an error (normalize first)."""
    try:
        return [CHAR_IDS[c] for c in text]
    except KeyError as e:
        raise ValueError(f"character {e.args[0]!r} is not in the speech alphabet; normalize the transcript") from None


def decode_ids(ids):
    return "".join(VOCAB[i] for i in ids if i >= len(SPECIALS))


@dataclass
class Config:
    feat_dim: int = 13
    enc_hidden: int = 128
    dec_hidden: int = 256
    emb: int = 64
    attn_dim: int = 128
    loc_filters: int = 10
    loc_width: int = 31
    vocab: int = len(VOCAB)
    dropout: float = 0.2
    listener_layers: int = 2   # pyramidal BiGRU layers, each halving the frame rate (MAX_LISTENER_LAYERS at most)

    def __post_init__(self):
        if not 1 <= self.listener_layers <= MAX_LISTENER_LAYERS:
            raise ValueError(f"listener_layers must be 1..{MAX_LISTENER_LAYERS}, got {self.listener_layers}")

    @property
    def time_reduction(self):
        """Input frames per annotation."""
        return 2 ** self.listener_layers

    def to_dict(self):
        return asdict(self)


def stack_pairs(x, lengths):
    """[B, T, D], lengths [B] -> [B, T//2, 2D], lengths // 2 (frames 2t and 2t+1 side by side)."""
    B, T, D = x.shape
    T2 = T // 2
    return x[:, :2 * T2].reshape(B, T2, 2 * D), lengths // 2


class LocationAttention(nn.Module):
    def __init__(self, query_dim, key_dim, attn_dim, filters, width):
        super().__init__()
        if width % 2 != 1:
            raise ValueError(f"loc_width must be odd (a centred filter), got {width}")
        self.W_q = nn.Linear(query_dim, attn_dim, bias=False)
        self.W_k = nn.Linear(key_dim, attn_dim)
        self.F = nn.Conv1d(1, filters, width, padding=width // 2, bias=False)
        self.W_f = nn.Linear(filters, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def scores(self, query, keys, previous, mask):
        """query [B, dq], keys = W_k.h [B, S, A], previous a_{i-1} [B, S], mask [B, S] -> e [B, S]."""
        location = self.W_f(self.F(previous.unsqueeze(1)).transpose(1, 2))            # [B, S, A]
        e = self.v(torch.tanh(keys + self.W_q(query).unsqueeze(1) + location)).squeeze(-1)
        return e.masked_fill(~mask, float("-inf"))


class ListenAttendSpell(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        E, H = cfg.enc_hidden, cfg.dec_hidden
        self.register_buffer("feature_scale", torch.tensor(AN4_FEATURE_STD[:cfg.feat_dim], dtype=torch.float32))
        self.listener = nn.ModuleList([nn.GRU(2 * cfg.feat_dim if i == 0 else 4 * E, E, batch_first=True,
                                              bidirectional=True) for i in range(cfg.listener_layers)])
        self.init = nn.Linear(2 * E, H)
        self.embed = nn.Embedding(cfg.vocab, cfg.emb, padding_idx=PAD_ID)
        self.attn = LocationAttention(H, 2 * E, cfg.attn_dim, cfg.loc_filters, cfg.loc_width)
        self.speller = nn.GRUCell(cfg.emb + 2 * E, H)
        self.deep_out = nn.Linear(H + 2 * E + cfg.emb, cfg.emb)
        self.out = nn.Linear(cfg.emb, cfg.vocab)
        self.ctc = nn.Linear(2 * E, cfg.vocab)
        self.drop = nn.Dropout(cfg.dropout)

    # ---- listener ------------------------------------------------------------------------------------------
    def normalize(self, feats, lengths):
        """CMN over each utterance's real frames, then the fixed scale. feats [B, T, 13]."""
        lengths = lengths.to(feats.device)
        mask = (torch.arange(feats.size(1), device=feats.device)[None, :] < lengths[:, None]).unsqueeze(-1)
        mean = (feats * mask).sum(1, keepdim=True) / lengths.clamp(min=1)[:, None, None]
        return (feats - mean) / self.feature_scale * mask

    def listen(self, feats, lengths):
        """feats [B, T, 13] raw MFCCs, lengths [B] (on the CPU: packing reads them) -> (h [B, S, 2E],
        S lengths [B] on h's device, s_0 [B, H])."""
        lengths = lengths.cpu()
        x = self.normalize(feats, lengths)
        for layer in self.listener:
            x, lengths = stack_pairs(x, lengths)
            if int(lengths.min()) < 1:
                frames = self.cfg.time_reduction
                raise ValueError(f"an utterance is too short for the listener (needs {frames} frames, {10 * frames} ms)")
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            x, _ = layer(packed)
            x, _ = nn.utils.rnn.pad_packed_sequence(x, batch_first=True, total_length=int(lengths.max()))
            x = self.drop(x)
        E = self.cfg.enc_hidden
        lengths = lengths.to(x.device)
        last_forward = x[torch.arange(x.size(0), device=x.device), lengths - 1, :E]
        first_backward = x[:, 0, E:]
        s0 = torch.tanh(self.init(torch.cat([last_forward, first_backward], -1)))
        return x, lengths, s0

    # ---- speller -------------------------------------------------------------------------------------------
    def first_weights(self, mask):
        a = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
        a[:, 0] = 1.0
        return a

    def step(self, h, keys, mask, s, previous, y_prev):
        """One speller step -> (logits [B, V], s_i, a_i [B, S], e_i [B, S])."""
        e = self.attn.scores(s, keys, previous, mask)
        a = torch.softmax(e, dim=-1).masked_fill(~mask, 0.0)
        c = torch.bmm(a.unsqueeze(1), h).squeeze(1)
        emb = self.drop(self.embed(y_prev))
        s = self.speller(torch.cat([emb, c], -1), s)
        t = self.drop(torch.tanh(self.deep_out(torch.cat([s, c, emb], -1))))
        return self.out(t), s, a, e

    def forward(self, feats, lengths, targets_in):
        """Teacher forcing. targets_in [B, L] (BOS + chars) -> (logits [B, L, V], ctc log-probs [S, B, V],
        S lengths, attention [B, L, S])."""
        h, S_len, s = self.listen(feats, lengths)
        mask = torch.arange(h.size(1), device=h.device)[None, :] < S_len[:, None]
        keys = self.attn.W_k(h)
        a = self.first_weights(mask)
        logits, weights = [], []
        for i in range(targets_in.size(1)):
            out, s, a, _ = self.step(h, keys, mask, s, a, targets_in[:, i])
            logits.append(out)
            weights.append(a)
        ctc = F.log_softmax(self.ctc(h), dim=-1).transpose(0, 1)
        return torch.stack(logits, 1), ctc, S_len, torch.stack(weights, 1)

    @torch.no_grad()
    def greedy(self, feats, lengths, max_len=None):
        """-> (list of id lists, list of attention [L_i, S_i] tensors) for a batch, in input order."""
        h, S_len, s = self.listen(feats, lengths)
        mask = torch.arange(h.size(1), device=h.device)[None, :] < S_len[:, None]
        keys = self.attn.W_k(h)
        a = self.first_weights(mask)
        B = feats.size(0)
        y = torch.full((B,), BOS_ID, dtype=torch.long, device=h.device)
        S_list = S_len.tolist()
        limit = max_len or max(S_list) * 2 + 10
        done = [False] * B
        ids, weights = [[] for _ in range(B)], [[] for _ in range(B)]
        for _ in range(limit):
            logits, s, a, _ = self.step(h, keys, mask, s, a, y)
            logits[:, list(NEVER_WRITTEN)] = float("-inf")
            y = logits.argmax(-1)
            for b, token in enumerate(y.tolist()):
                if not done[b]:
                    weights[b].append(a[b, :S_list[b]])
                    if token == EOS_ID:
                        done[b] = True
                    else:
                        ids[b].append(token)
            if all(done):
                break
        return ids, [torch.stack(w) for w in weights]


def loss(model, feats, lengths, targets, ctc_weight=0.3, label_smoothing=0.1):
    """Joint loss on a batch. targets: list of id lists (no BOS/EOS) -> (loss, attention-CE sum, tokens)."""
    B = len(targets)
    L = max(len(t) for t in targets) + 1
    inp = torch.full((B, L), PAD_ID, dtype=torch.long)
    gold = torch.full((B, L), PAD_ID, dtype=torch.long)
    for b, t in enumerate(targets):
        inp[b, :len(t) + 1] = torch.tensor([BOS_ID] + t)
        gold[b, :len(t) + 1] = torch.tensor(t + [EOS_ID])
    logits, ctc_logp, S_len, _ = model(feats, lengths, inp.to(feats.device))
    gold = gold.to(feats.device)
    ce_sum = F.cross_entropy(logits.reshape(-1, logits.size(-1)), gold.reshape(-1), ignore_index=PAD_ID,
                             label_smoothing=label_smoothing, reduction="sum")
    tokens = int((gold != PAD_ID).sum())
    flat = torch.tensor([c for t in targets for c in t], dtype=torch.long, device=feats.device)
    ctc = F.ctc_loss(ctc_logp, flat, S_len, torch.tensor([len(t) for t in targets]), blank=CTC_BLANK,
                     reduction="sum", zero_infinity=True)
    total = (1 - ctc_weight) * ce_sum / tokens + ctc_weight * ctc / tokens
    return total, float(ce_sum), tokens
