"""attnlab.eval.probe on a hand-made engine output (no model needed).

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_attention_probe.py'
"""
import os
import unittest


from attnlab.eval import probe as attention_probe

PIECES = ["\u2581The", "\u2581L", "aw", ",", "\u2581its", "\u2581end", ".", "</s>"]


def translation(weights_by_head):
    """One layer; weights_by_head[h] = the row of piece 4 ("its"); every other row uniform."""
    S = len(PIECES)
    data = []
    for row_of_its in weights_by_head:
        for r in range(S):
            data.extend(row_of_its if r == 4 else [1.0 / S] * S)
    return {"source_tokens": PIECES, "text": "x", "encoder_self_attention":
            {"layers": 1, "heads": len(weights_by_head), "rows": S, "cols": S, "data": data}}


class Probe(unittest.TestCase):
    def test_words_join_pieces_and_keep_punctuation_apart(self):
        word_of, words = attention_probe.words_of(PIECES)
        self.assertEqual(words, ["The", "Law", ",", "its", "end", ".", "</s>"])
        self.assertEqual(word_of, [0, 1, 1, 2, 3, 4, 5, 6])

    def test_weight_on_a_word_sums_its_pieces(self):
        on_law = [0.0, 0.3, 0.4, 0.0, 0.1, 0.1, 0.1, 0.0]
        elsewhere = [0.0, 0.0, 0.0, 0.0, 0.0, 0.9, 0.1, 0.0]
        rows, _, _ = attention_probe.probe(translation([on_law, elsewhere]), "its", "law")
        (l0, h0, w0, uniform, top0), (_, h1, w1, _, top1) = rows
        self.assertEqual((l0, h0, h1), (0, 0, 1))
        self.assertAlmostEqual(w0, 0.7)
        self.assertAlmostEqual(w1, 0.0)
        self.assertAlmostEqual(uniform, 2 / 8)
        self.assertEqual((top0, top1), ("Law", "end"))

    def test_unknown_word_is_a_clear_error(self):
        with self.assertRaises(SystemExit) as e:
            attention_probe.probe(translation([[1.0 / 8] * 8]), "its", "Gesetz")
        self.assertIn("'Gesetz' is not a word of the source", str(e.exception))


if __name__ == "__main__":
    unittest.main()
