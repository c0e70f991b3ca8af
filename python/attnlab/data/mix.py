"""The fine-tuning data mix of the broad corpus: Multi30k pairs repeated, a fresh sample of the other (Tatoeba) pairs
each epoch.

The broad models learn Multi30k's image descriptions as 22% of their tokens and fall 7 BLEU short of the
Multi30k-only models on test2016; fine-tuning on a mix where Multi30k is repeated brings its style back, and the
sampled share of Tatoeba keeps everyday language in every epoch while keeping an epoch short. Each epoch's list is
a function of (seed, epoch) alone, so a resumed epoch rebuilds the same batches.
"""
import random


def multi30k_flags(src_ids, tgt_ids, multi30k_src_ids, multi30k_tgt_ids):
    """-> for each training pair (id lists), whether it is a Multi30k pair: its ids equal one of Multi30k's train
    pairs encoded by the same tokenizers (the broad corpus holds Multi30k's lines unchanged)."""
    multi30k = set(zip(map(tuple, multi30k_src_ids), map(tuple, multi30k_tgt_ids)))
    return [(tuple(s), tuple(t)) in multi30k for s, t in zip(src_ids, tgt_ids)]


def check_mix(multi30k_repeat, other_share):
    if not isinstance(multi30k_repeat, int) or multi30k_repeat < 0:
        raise ValueError(f"--multi30k-repeat must be a whole number >= 0, got {multi30k_repeat!r}")
    if not 0.0 <= other_share <= 1.0:
        raise ValueError(f"--broad-share must be within [0, 1], got {other_share!r}")
    if multi30k_repeat == 0 and other_share == 0.0:
        raise ValueError("--multi30k-repeat 0 with --broad-share 0 leaves no training pairs")


def epoch_pairs(is_multi30k, multi30k_repeat, other_share, seed):
    """-> the indices one epoch trains on: every Multi30k pair multi30k_repeat times, and round(other_share * n) of
    the n other pairs drawn without replacement by random.Random(seed). Order is irrelevant (batching sorts by
    length and shuffles)."""
    check_mix(multi30k_repeat, other_share)
    multi30k = [i for i, flag in enumerate(is_multi30k) if flag]
    others = [i for i, flag in enumerate(is_multi30k) if not flag]
    n_others = round(other_share * len(others))
    sampled = others if n_others == len(others) else sorted(random.Random(seed).sample(others, n_others))
    chosen = multi30k * multi30k_repeat + sampled
    if not chosen:
        raise ValueError("the mix selects no training pairs (no Multi30k pairs to repeat, no others to sample)")
    return chosen
