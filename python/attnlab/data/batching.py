"""Padding and length-bucketed batching of token-id sequences (the translators' training and search)."""
import random

import torch

from attnlab.nn.decoding import PAD_ID


def pad_batch(seqs):
    """list of id lists -> (LongTensor [B, max_len] PAD-padded, lengths [B])."""
    lens = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    out = torch.full((len(seqs), int(lens.max())), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out, lens


def make_batches(src_ids, tgt_ids, max_tokens, seed, pairs=None):
    """Length-bucketed batches of the indices `pairs` (default: every pair once; an index listed twice is trained
    twice): sort by (noisy) length so padding is small, then shuffle the batches.
    Deterministic in `seed`, so a resumed epoch can skip the batches it already did."""
    rng = random.Random(seed)
    order = sorted(range(len(src_ids)) if pairs is None else pairs,
                   key=lambda i: (len(src_ids[i]) + rng.random() * 2, len(tgt_ids[i]) + rng.random() * 2))
    batches, cur, cur_max = [], [], 0
    for i in order:
        need = max(len(src_ids[i]), len(tgt_ids[i]) - 1)   # decoder input drops the last token
        new_max = max(cur_max, need)
        if cur and new_max * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, new_max = [], need
        cur.append(i)
        cur_max = new_max
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches
