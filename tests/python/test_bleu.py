"""attnlab.eval.bleu against hand-worked examples and values published by sacreBLEU / its users.

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_bleu.py'
"""
import math
import os
import unittest


from attnlab.eval import bleu


class Tokenize13a(unittest.TestCase):
    def test_punctuation_is_split(self):
        self.assertEqual(bleu.tokenize_13a("Hello, world!"), "Hello , world !")

    def test_numbers_keep_their_separators(self):
        # period/comma stay inside numbers; a dash after a digit is split; '$' and '(' are symbols
        self.assertEqual(bleu.tokenize_13a("costs $5 (1,000.50 total)"), "costs $ 5 ( 1,000.50 total )")
        self.assertEqual(bleu.tokenize_13a("pages 5-6"), "pages 5 - 6")

    def test_apostrophe_and_inner_hyphen_are_kept(self):
        # ' (0x27) and - (0x2d) are outside mteval's symbol ranges
        self.assertEqual(bleu.tokenize_13a("It's a well-known fact."), "It's a well-known fact .")

    def test_abbreviation_periods(self):
        self.assertEqual(bleu.tokenize_13a("at 5 p.m."), "at 5 p . m .")

    def test_html_entities_and_whitespace(self):
        self.assertEqual(bleu.tokenize_13a("  a &amp; b &quot;c&quot;  "), 'a & b " c "')

    def test_lowercased_variant(self):
        self.assertEqual(bleu.tokenize_lc_13a("Ein Mann, der läuft."), "ein mann , der läuft .")

    def test_chars(self):
        self.assertEqual(bleu.tokenize_chars("我 爱你。"), "我 爱 你 。")


class CorpusBleu(unittest.TestCase):
    def test_identical_is_100(self):
        lines = ["A man is riding a bike down the street.", "Two dogs play in the snow."]
        self.assertAlmostEqual(bleu.bleu_13a(lines, lines), 100.0, places=9)

    def test_no_match_is_0(self):
        self.assertEqual(bleu.bleu_13a(["x y z w"], ["a b c d"]), 0.0)

    def test_empty_hypothesis_is_0(self):
        self.assertEqual(bleu.bleu_13a([""], ["a b c d"]), 0.0)

    def test_brevity_penalty_only(self):
        # every hypothesis n-gram matches; 5 tokens against 8: BP = exp(1 - 8/5)
        score = bleu.bleu_13a(["a b c d e"], ["a b c d e f g h"])
        self.assertAlmostEqual(score, 100.0 * math.exp(1 - 8 / 5), places=9)

    def test_longer_hypothesis_has_no_penalty(self):
        # 1-grams 5/6, 2-grams 4/5, 3-grams 3/4, 4-grams 2/3, no brevity penalty
        score = bleu.bleu_13a(["a b c d e x"], ["a b c d e"])
        expected = 100 * math.exp((math.log(5 / 6) + math.log(4 / 5) + math.log(3 / 4) + math.log(2 / 3)) / 4)
        self.assertAlmostEqual(score, expected, places=9)

    def test_exp_smoothing_of_a_zero_precision(self):
        # "the cat sat down" vs "the cat sat on the mat": p1 3/4, p2 2/3, p3 1/2, p4 0/1 -> 1/(2*1)
        score = bleu.bleu_13a(["the cat sat down"], ["the cat sat on the mat"])
        logs = math.log(75) + math.log(200 / 3) + math.log(50) + math.log(50)
        self.assertAlmostEqual(score, math.exp(1 - 6 / 4) * math.exp(logs / 4), places=9)

    def test_statistics_are_summed_over_the_corpus(self):
        hyps = ["the cat sat down", "a dog runs"]
        refs = ["the cat sat on the mat", "a dog runs"]
        self.assertEqual(bleu.bleu_stats(hyps, refs, bleu.tokenize_13a), ([6, 4, 2, 0], [7, 5, 3, 1], 7, 9))
        logs = math.log(600 / 7) + math.log(80) + math.log(200 / 3) + math.log(50)
        self.assertAlmostEqual(bleu.bleu_13a(hyps, refs), math.exp(1 - 9 / 7) * math.exp(logs / 4), places=9)

    def test_short_sentence_needs_effective_order(self):
        # corpus BLEU of a 2-token segment is 0 (no 3-grams); sentence BLEU's effective order gives 100
        self.assertLess(bleu.bleu_13a(["The cat"], ["The cat"]), 1e-6)
        self.assertAlmostEqual(bleu.sentence_bleu("The cat", ["The cat"]), 100.0, places=9)

    def test_case_matters_for_13a_not_for_lc(self):
        hyps, refs = ["A Man Runs In The Park ."], ["a man runs in the park ."]
        # cased: only "." matches: p1 1/7, then exp smoothing 1/(2*6), 1/(4*5), 1/(8*4)
        logs = math.log(100 / 7) + math.log(100 / 12) + math.log(100 / 20) + math.log(100 / 32)
        self.assertAlmostEqual(bleu.bleu_13a(hyps, refs), math.exp(logs / 4), places=9)
        self.assertAlmostEqual(bleu.bleu_lc_tok(hyps, refs), 100.0, places=9)

    def test_sacrebleu_readme_example(self):
        # sacreBLEU's README: BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 hyp_len = 17 ref_len = 18),
        # chrF2 = 59.73
        refs = [["The dog bit the man.", "It was not unexpected.", "The man bit him first."],
                ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."]]
        hyps = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
        self.assertEqual(bleu.bleu_stats(hyps, refs, bleu.tokenize_13a), ([14, 7, 5, 3], [17, 14, 11, 8], 17, 18))
        self.assertAlmostEqual(bleu.bleu_13a(hyps, refs), 48.53, places=2)
        self.assertAlmostEqual(bleu.chrf(hyps, refs), 59.73, places=2)

    def test_char_bleu_for_chinese(self):
        # characters, spaces dropped: identical up to spacing -> 100
        self.assertAlmostEqual(bleu.bleu_char(["我 爱 你 们 。"], ["我爱你们。"]), 100.0, places=9)
        # 4 of 5 characters: p1 4/5, p2 3/4, p3 2/3, p4 1/2, BP = 1
        score = bleu.bleu_char(["我爱你们吗"], ["我爱你们。"])
        expected = 100 * math.exp((math.log(4 / 5) + math.log(3 / 4) + math.log(2 / 3) + math.log(1 / 2)) / 4)
        self.assertAlmostEqual(score, expected, places=9)

    def test_mismatched_lengths_are_rejected(self):
        with self.assertRaises(ValueError):
            bleu.bleu_13a(["a", "b"], ["a"])


class ChrF(unittest.TestCase):
    def test_identical_is_100(self):
        self.assertAlmostEqual(bleu.chrf(["Ein Hund läuft."], ["Ein Hund läuft."]), 100.0, places=9)

    def test_hand_worked(self):
        # "ab" vs "abc": P = (1 + 1)/2, R = (2/3 + 1/2)/2 over the 2 orders both sides have;
        # chrF2 = 5PR / (4P + R) = 100 * 35/55
        self.assertAlmostEqual(bleu.chrf(["ab"], ["abc"]), 100 * 35 / 55, places=9)

    def test_whitespace_is_ignored(self):
        self.assertAlmostEqual(bleu.chrf(["a b c"], ["abc"]), 100.0, places=9)

    def test_published_values(self):
        # values printed by the HuggingFace chrF metric card, which calls sacreBLEU's CHRF
        self.assertAlmostEqual(bleu.chrf(["The relationship between Obama and Netanyahu is not exactly friendly."],
                                         ["The ties between Obama and Netanyahu are not particularly friendly."]),
                               61.576379378113785, places=9)
        hyps = ["The relationship between cats and dogs is not exactly friendly.",
                "a good bookshop is just a genteel black hole that knows how to read."]
        refs = ["The relationship between dogs and cats is not exactly friendly.",
                "A good bookshop is just a genteel Black Hole that knows how to read."]
        self.assertAlmostEqual(bleu.chrf(hyps, refs), 84.64214891738334, places=9)


if __name__ == "__main__":
    unittest.main()
