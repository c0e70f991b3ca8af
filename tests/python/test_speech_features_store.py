"""attnlab.data.speech_features keeps a stored source only while it holds the same utterances: synthetic speech
extended with --hours must be stored anew, not trained on as the shorter set."""
import os
import tempfile
import unittest

import numpy as np

from attnlab.data.speech_features import is_current


def utterances(*ids):
    return [{"id": i} for i in ids]


class StoreIsCurrentTest(unittest.TestCase):
    def test_a_store_is_current_only_for_the_same_utterances_in_order(self):
        with tempfile.TemporaryDirectory() as root:
            path = os.path.join(root, "synth.npz")
            self.assertFalse(is_current(path, utterances("a")))
            np.savez(path, ids=np.array(["a", "b"]), offsets=np.array([0, 1, 2]))
            self.assertTrue(is_current(path, utterances("a", "b")))
            self.assertFalse(is_current(path, utterances("a", "b", "c")))   # the set was extended
            self.assertFalse(is_current(path, utterances("b", "a")))


if __name__ == "__main__":
    unittest.main()
