"""attnlab.nn.decoding's no-repeat n-gram ban on hand-worked cases (the C++ side: tests/cpp/test_search.cpp).

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_decoding.py'
"""
import math
import os
import unittest

import torch


from attnlab.nn import decoding

A, B = 4, 5
VOCAB = 6


def endless(prev, state):
    """A toy step: p(A) = .7, p(B) = .3 after any prefix, never EOS."""
    logits = torch.full((prev.size(0), VOCAB), float("-inf"))
    logits[:, A], logits[:, B] = math.log(0.7), math.log(0.3)
    return logits, state


class RepeatedNgrams(unittest.TestCase):
    def test_banned_tokens(self):
        self.assertEqual(decoding.repeated_ngram_tokens([A, B, A], 2), [B])
        self.assertEqual(decoding.repeated_ngram_tokens([A, B, A, B], 3), [A])
        self.assertEqual(decoding.repeated_ngram_tokens([A, B, A, B], 2), [A])
        self.assertEqual(decoding.repeated_ngram_tokens([A], 2), [])
        self.assertEqual(decoding.repeated_ngram_tokens([A, A, A], 1), [])
        self.assertEqual(decoding.repeated_ngram_tokens([A, A, A], 0), [])

    def test_greedy_steers_away_from_repeats(self):
        src_len = torch.tensor([1])   # limit: 0 * 1 + 4 tokens
        self.assertEqual(decoding.greedy_search(endless, None, src_len, 0, 4), [[A, A, A, A]])
        self.assertEqual(decoding.greedy_search(endless, None, src_len, 0, 4, no_repeat_ngram=2), [[A, A, B, A]])
        self.assertEqual(decoding.greedy_search(endless, None, src_len, 0, 5, no_repeat_ngram=3), [[A, A, A, B, A]])

    def test_beam_never_repeats_a_bigram(self):
        src_len = torch.tensor([1, 1])
        state = torch.zeros(2 * 3, 1)
        for seq in decoding.beam_search(endless, state, lambda s, rows: s.index_select(0, rows), src_len, beam=3,
                                        max_len_a=0, max_len_b=4, no_repeat_ngram=2):
            bigrams = list(zip(seq, seq[1:]))
            self.assertEqual(len(bigrams), len(set(bigrams)), seq)
            self.assertEqual(sorted(seq), [A, A, A, B])   # the best allowed: three A and one B


if __name__ == "__main__":
    unittest.main()
