"""A character language model for the speech recognizer's shallow fusion: the PyTorch reference for the engine's
`lm.*` tensors (src/attnlab/models/speech_recognizer.hpp).

Over the recognizer's characters (attnlab.nn.listen_attend_spell.VOCAB), one GRU layer:
    h_0 = 0
    h_i = GRU(E[y_{i-1}], h_{i-1})          y_0 = <s>        (`lm.embed.weight` [V, emb], `lm.gru.*_l0`)
    log p_lm(y_i | y_<i) = log_softmax(W_o h_i + b_o)      (`lm.out.*`) over VOCAB; </s> ends the text
The joint search (attnlab.nn.joint_decoding) adds beta * log p_lm(c | prefix) to each candidate's score (shallow
fusion, Gulcehre et al. 2015; Kannan et al. 2018): the acoustic model hears "semelar", the language model knows
"similar".
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.nn.decoding import BOS_ID, EOS_ID, PAD_ID
from attnlab.nn.listen_attend_spell import VOCAB, encode_transcript


@dataclass
class LMConfig:
    vocab: int = len(VOCAB)
    emb: int = 64
    hidden: int = 384
    dropout: float = 0.1

    def to_dict(self):
        return asdict(self)


class CharLM(nn.Module):
    def __init__(self, cfg: LMConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.emb)
        self.gru = nn.GRU(cfg.emb, cfg.hidden, batch_first=True)
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(cfg.hidden, cfg.vocab)

    def forward(self, inputs):
        """inputs [B, L] (<s> then characters) -> logits [B, L, V] for the next character at each position."""
        h, _ = self.gru(self.drop(self.embed(inputs)))
        return self.out(self.drop(h))

    def loss(self, inputs, targets):
        """Mean cross-entropy per target character (PAD_ID targets ignored)."""
        logits = self.forward(inputs)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=PAD_ID)

    def initial(self):
        """The state before <s>: h_0 [1, hidden] (zeros)."""
        return torch.zeros(1, self.cfg.hidden)

    @torch.no_grad()
    def step(self, h, token):
        """One character: h [1, hidden], token (an id) -> (log p_lm(next | ...) [V] float32, the new h)."""
        _, h_next = self.gru(self.embed(torch.tensor([[token]])), h[None])
        h_next = h_next[0]
        return torch.log_softmax(self.out(h_next)[0], dim=-1), h_next


def text_batch(texts):
    """Normalized transcripts -> (inputs [B, L], targets [B, L]): <s> + ids -> ids + </s>, padded with PAD_ID."""
    rows = [encode_transcript(t) for t in texts]
    L = max(len(r) for r in rows) + 1
    inputs = torch.full((len(rows), L), PAD_ID, dtype=torch.long)
    targets = torch.full((len(rows), L), PAD_ID, dtype=torch.long)
    for b, ids in enumerate(rows):
        inputs[b, :len(ids) + 1] = torch.tensor([BOS_ID] + ids)
        targets[b, :len(ids) + 1] = torch.tensor(ids + [EOS_ID])
    return inputs, targets


@torch.no_grad()
def text_log_prob(lm, text):
    """log p_lm(text </s>) in float64, step by step as the search scores it."""
    h, total = lm.initial(), 0.0
    last = BOS_ID
    for token in encode_transcript(text) + [EOS_ID]:
        log_p, h = lm.step(h, last)
        total += float(log_p[token])
        last = token
    return total
