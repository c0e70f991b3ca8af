"""Which files and tokenizers a translator reads: its pair's own corpus, another training corpus (broad), and
scoring on a third corpus's test set."""
import os
import unittest

from attnlab.data.pairs import pair_paths, read_split, split_names


class PairPathsTest(unittest.TestCase):
    def test_default_corpus_is_the_pairs_own(self):
        paths = pair_paths("en-de", "/r")
        self.assertEqual(paths["corpus"], "multi30k")
        self.assertEqual(paths["test"], ("/r/build/data/multi30k/test2016.en", "/r/build/data/multi30k/test2016.de"))
        self.assertEqual(paths["src_spm"], "/r/models/tokenizers/multi30k.en.model")

    def test_a_broad_model_keeps_its_tokenizers_on_another_corpus(self):
        paths = pair_paths("de-en", "/r", corpus="broad", data_corpus="multi30k")
        self.assertEqual(paths["src_spm"], "/r/models/tokenizers/broad.de.model")
        self.assertEqual(paths["tgt_spm"], "/r/models/tokenizers/broad.en.model")
        self.assertEqual(paths["test"][0], "/r/build/data/multi30k/test2016.de")
        self.assertNotIn("newstest2013", paths)

    def test_extra_splits(self):
        self.assertEqual(split_names("broad"), ("val", "test", "tatoeba-val", "newstest2013"))
        paths = pair_paths("en-de", "/r", corpus="broad")
        self.assertEqual(paths["newstest2013"][1], "/r/build/data/broad/newstest2013.de")
        with self.assertRaisesRegex(ValueError, "has no split 'test2016'; it has val, test, tatoeba-val"):
            read_split(paths, "test2016")

    def test_unknown_names(self):
        with self.assertRaisesRegex(ValueError, "unknown corpus 'wmt'"):
            pair_paths("en-de", "/r", corpus="wmt")
        with self.assertRaisesRegex(ValueError, "unknown pair"):
            pair_paths("fr-de", "/r")

    def test_every_broad_tokenizer_is_committed(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        paths = pair_paths("en-de", root, corpus="broad")
        for key in ("src_spm", "tgt_spm"):
            self.assertTrue(os.path.exists(paths[key]), paths[key])


if __name__ == "__main__":
    unittest.main()
