"""attnlab.data.shortlist and the beam search's `allowed` shortlist (attnlab.eval.shortlist's): the table ranks a source piece's co-occurring target pieces by
the Dice coefficient, a batch's union holds the frequent pieces, its sources' rows and EOS, and decoding inside a
shortlist that allows every piece is decoding without one, while a shortlist without a sentence's best token
changes its output.

    PYTHONPATH=python /usr/bin/python3 -m unittest tests.python.test_shortlist
"""
import os
import tempfile
import unittest

import numpy as np
import torch

from attnlab.data import shortlist as sl
from attnlab.gguf import transformer as transformer_gguf
from attnlab.nn import transformer
from attnlab.nn.decoding import EOS_ID

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TINY = os.path.join(ROOT, "tests", "fixtures", "transformer", "tiny.gguf")


class BuildTest(unittest.TestCase):
    def setUp(self):
        # Source 5 always comes with target 7; source 6 with 8 mostly, once with 9; target 4 is everywhere.
        self.src = [[5, 3], [5, 3], [6, 3], [6, 3], [6, 3], [5, 6, 3]]
        self.tgt = [[2, 7, 4, 3], [2, 7, 4, 3], [2, 8, 4, 3], [2, 8, 4, 3], [2, 9, 4, 3], [2, 7, 8, 4, 3]]

    def test_dice_ranking_and_padding(self):
        table = sl.build(self.src, self.tgt, 10, 12, per_source=3, frequent=2).table
        self.assertEqual(table.shape, (10, 3))
        self.assertEqual(table[5, 0], 7)        # Dice 2*3/(3+3) = 1
        self.assertEqual(table[6, 0], 8)        # 2*3/(4+3) against 9's 2*1/(4+1) and 4's 2*4/(4+6)
        self.assertEqual(list(table[0]), [-1, -1, -1])   # never seen
        self.assertNotIn(9, table[5])           # 9 never co-occurs with 5

    def test_union(self):
        shortlist = sl.build(self.src, self.tgt, 10, 12, per_source=1, frequent=2)
        self.assertEqual(list(shortlist.frequent), [3, 4])   # EOS and 4 occur in every target (ties: lower id)
        union = shortlist.union([[5, 3]])
        self.assertTrue({EOS_ID, 4, 7} <= set(union.tolist()))
        self.assertNotIn(8, union)
        self.assertEqual(list(union), sorted(set(union.tolist())))
        self.assertIn(EOS_ID, shortlist.union([]))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s.npz")
            shortlist.save(path)
            back = sl.Shortlist.load(path)
            np.testing.assert_array_equal(back.table, shortlist.table)
            np.testing.assert_array_equal(back.frequent, shortlist.frequent)

    def test_gguf_file(self):
        """The engine's file: the table and frequent ids as i32 tensors, the vocabularies' FNV-1a fingerprints."""
        from attnlab.gguf.reader import read_gguf, read_gguf_tensors
        shortlist = sl.build(self.src, self.tgt, 10, 12, per_source=2, frequent=2)
        source_pieces = [f"s{i}" for i in range(10)]
        target_pieces = [f"t{i}" for i in range(12)]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s.gguf")
            shortlist.save_gguf(path, source_pieces, target_pieces)
            values, tensors = read_gguf_tensors(path)
            np.testing.assert_array_equal(tensors["shortlist.table"], shortlist.table)
            np.testing.assert_array_equal(tensors["shortlist.frequent"], shortlist.frequent)
            self.assertEqual(tensors["shortlist.table"].dtype, np.int32)
            _, kvs, _, _, _ = read_gguf(path)
            meta = {key: value for key, _, value in kvs}
            self.assertEqual(meta["general.architecture"], "attnlab.shortlist")
            self.assertEqual(meta["attnlab.shortlist.per_source"], 2)
            self.assertEqual(meta["attnlab.shortlist.source_vocab_fnv1a"], sl.vocab_fingerprint(source_pieces))
            self.assertEqual(meta["attnlab.shortlist.target_vocab_fnv1a"], sl.vocab_fingerprint(target_pieces))
            with self.assertRaises(ValueError):   # a table for another source vocabulary
                shortlist.save_gguf(path, source_pieces[:5], target_pieces)
        # The engine's test (tests/cpp/test_shortlist.cpp) holds the same two values.
        self.assertEqual(sl.vocab_fingerprint(["<unk>", "\u2581the", "\u00df", ""]), 0x8efad73f7a0f074d)
        self.assertEqual(sl.vocab_fingerprint([]), 0xcbf29ce484222325)

    def test_mismatched_pairs_refused(self):
        with self.assertRaises(ValueError):
            sl.build(self.src, self.tgt[:-1], 10, 12)


class DecodeInsideTest(unittest.TestCase):
    def test_allow_all_is_no_shortlist_and_a_missing_token_changes_the_output(self):
        torch.manual_seed(0)
        model, _ = transformer_gguf.load(TINY)
        model.eval()
        vocab = model.cfg.tgt_vocab
        src = torch.tensor([[4, 5, 6, 7, EOS_ID], [8, 9, 10, EOS_ID, 0]])
        lens = torch.tensor([5, 4])
        with torch.no_grad():
            full = transformer.beam_search(model, src, lens, beam=3)
            same = transformer.beam_search(model, src, lens, beam=3, allowed=torch.ones(vocab, dtype=torch.bool))
            self.assertEqual(full, same)
            first = full[0][0] if full[0] else EOS_ID
            allowed = torch.ones(vocab, dtype=torch.bool)
            allowed[first] = False
            without = transformer.beam_search(model, src, lens, beam=3, allowed=allowed)
        self.assertNotEqual(without[0], full[0])
        self.assertTrue(all(t != first for t in without[0]))


if __name__ == "__main__":
    unittest.main()
