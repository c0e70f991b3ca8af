"""attnlab.nn.joint_decoding's CTC prefix scores against brute force: on a tiny random utterance, every alignment of
the frames is enumerated and collapsed (repeats merged, blanks dropped), so the probability that the labeling starts
with a prefix, or is exactly it, is a plain sum the recursion must reproduce."""
import itertools
import math
import unittest

import numpy as np

from attnlab.nn.joint_decoding import CTCPrefixScorer

FRAMES, SYMBOLS = 5, 4   # blank 0 and three labels: 4^5 alignments


def collapse(path, blank=0):
    out = []
    for previous, symbol in zip((None,) + path, path):
        if symbol != blank and symbol != previous:
            out.append(symbol)
    return tuple(out)


class CTCPrefixScoreTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(21)
        logits = rng.normal(size=(FRAMES, SYMBOLS)) * 2
        self.log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
        self.labelings = {}
        for path in itertools.product(range(SYMBOLS), repeat=FRAMES):
            p = math.exp(sum(self.log_probs[t, s] for t, s in enumerate(path)))
            key = collapse(path)
            self.labelings[key] = self.labelings.get(key, 0.0) + p

    def starting_with(self, prefix):
        return sum(p for labeling, p in self.labelings.items() if labeling[:len(prefix)] == prefix)

    def test_prefix_and_full_scores_equal_the_sums_over_alignments(self):
        scorer = CTCPrefixScorer(self.log_probs, blank=0)
        self.assertAlmostEqual(sum(self.labelings.values()), 1.0, places=12)
        # Depth-first over every prefix of up to 3 labels, repeats (which need a blank between) included.
        pending = [((), scorer.initial())]
        checked = 0
        while pending:
            prefix, (r_n, r_b, score) = pending.pop()
            self.assertAlmostEqual(score, math.log(self.starting_with(prefix)) if prefix else 0.0, places=9)
            prefix_scores, new_n, new_b, full = scorer.extend(r_n, r_b, prefix[-1] if prefix else None, not prefix)
            self.assertAlmostEqual(math.exp(full), self.labelings.get(prefix, 0.0), places=12, msg=str(prefix))
            for c in range(1, SYMBOLS):
                longer = prefix + (c,)
                expected = self.starting_with(longer)
                if expected == 0.0:
                    self.assertEqual(prefix_scores[c], -math.inf, str(longer))
                    continue
                self.assertAlmostEqual(prefix_scores[c], math.log(expected), places=9, msg=str(longer))
                checked += 1
                if len(longer) < 3:
                    pending.append((longer, (new_n[c], new_b[c], float(prefix_scores[c]))))
        self.assertGreater(checked, 30)


if __name__ == "__main__":
    unittest.main()
