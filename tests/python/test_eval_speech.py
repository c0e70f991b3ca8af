"""attnlab.eval.speech's --confusions report (the digit errors models/speech-las.md quotes): each reference with a
wrong hypothesis, most often wrong first, with its count of utterances and what it was heard as.

    PYTHONPATH=python /usr/bin/python3 -m unittest tests.python.test_eval_speech
"""
import contextlib
import io
import unittest

from attnlab.eval import speech


class ConfusionsTest(unittest.TestCase):
    def test_print_confusions(self):
        pairs = [("eight", "six"), ("eight", "six"), ("six", "six"), ("one", "one"), ("tw", "two"), ("two", "two")]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            speech.print_confusions(pairs)
        self.assertEqual(err.getvalue().splitlines(),
                         ["  six: 2 of 3 wrong; heard as 'eight' 2", "  two: 1 of 2 wrong; heard as 'tw' 1"])


if __name__ == "__main__":
    unittest.main()
