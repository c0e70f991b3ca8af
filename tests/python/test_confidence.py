"""attnlab.eval.confidence: its summary on hand-made engine results, and the engine's LOW_CONFIDENCE through the
CLI on the Multi30k-only RNN ("Hi" is flagged, an image description is not).

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_confidence.py'
"""
import os
import unittest

from attnlab.eval import confidence
from attnlab.paths import CLI, ROOT
from tests.python.needs import needs

RNN = os.path.join(ROOT, "models", "weights", "bahdanau-en-de.q8_0.gguf")


def result(text, log_probability, tokens, flagged):
    return {"text": text, "log_probability": log_probability, "target_ids": list(range(tokens)), "stop_reason": "eos",
            "warnings": [{"code": "LOW_CONFIDENCE"}] if flagged else []}


class Summary(unittest.TestCase):
    def test_shares_chrf_and_quantiles(self):
        results = [result("ein Hund", -0.6, 2, False), result("xyz", -9.0, 2, True),
                   result("zwei Männer", -0.3, 2, False), result("ein Hund läuft", -6.0, 3, True)]
        refs = ["ein Hund", "eine Katze", "zwei Männer", "ein Hund läuft"]
        s = confidence.summary(results, refs)
        self.assertEqual(s["lines"], 4)
        self.assertEqual(s["flagged_share"], 0.5)
        self.assertEqual(s["chrf_unflagged"], 100.0)           # both exact
        self.assertEqual(s["flagged_chrf_below_30"], 0.5)      # "xyz" against "eine Katze"; the other is exact
        self.assertAlmostEqual(confidence.per_token(results[1]), -3.0)   # the end token counts
        self.assertEqual(s["log_p_per_token_quantiles"][50], -0.85)   # per token -3, -1.5, -0.2, -0.1

    def test_a_cut_output_has_no_end_token_to_count(self):
        cut = dict(result("a a a", -6.0, 3, True), stop_reason="max_length")
        self.assertAlmostEqual(confidence.per_token(cut), -2.0)

    def test_no_flagged_sentence(self):
        s = confidence.summary([result("a", -0.1, 1, False)], ["a"])
        self.assertIsNone(s["chrf_flagged"])
        self.assertIsNone(s["flagged_chrf_below_30"])


@needs(os.path.exists(CLI), f"{CLI} is missing: build the native CLI")
class ThroughTheEngine(unittest.TestCase):
    def test_finance_news_is_flagged_and_an_image_description_is_not(self):
        # The RNN learned image descriptions and everyday sentences; every piece of the news is in its vocabulary.
        news, dog = confidence.engine_results(
            CLI, RNN, ["The quarterly earnings exceeded the analysts forecasts by a wide margin.",
                       "A dog runs on the beach."], beam=4)
        self.assertEqual([w["code"] for w in news["warnings"]], ["LOW_CONFIDENCE"])
        self.assertLess(confidence.per_token(news), -1.2)
        self.assertAlmostEqual(news["warnings"][0]["log_probability_per_token"], confidence.per_token(news), places=4)
        self.assertEqual(dog["warnings"], [])


if __name__ == "__main__":
    unittest.main()
