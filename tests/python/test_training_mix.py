"""The fine-tuning recipe: attnlab.data.mix (Multi30k repeated, a sampled share of the other broad pairs), batches
over a chosen multiset of pairs, and attnlab.train.transformer --init / --multi30k-repeat / --broad-share end to end
on a tiny corpus (weights taken from --init, a checkpoint or a GGUF file, with a fresh schedule, the logged mix, a resumed run
honouring a larger --epochs)."""
import collections
import contextlib
import gc
import io
import os
import tempfile
import unittest
import warnings

import torch

from attnlab.data.batching import make_batches
from attnlab.data.mix import epoch_pairs, multi30k_flags
from attnlab.gguf import transformer as transformer_gguf
from attnlab.paths import ROOT
from attnlab.train import transformer as train_transformer
from attnlab.train.translator import check_training_options
from tests.python.needs import needs

TOKENIZERS = [os.path.join(ROOT, "models", "tokenizers", f"broad.{lang}.model") for lang in ("en", "de")]


class EpochPairsTest(unittest.TestCase):
    flags = [True, False, False, True, False, False, False, False, False, True]   # Multi30k: 0, 3, 9

    def test_multi30k_repeated_and_others_sampled(self):
        pairs = epoch_pairs(self.flags, 3, 0.5, seed="mix 1")
        counts = collections.Counter(pairs)
        self.assertEqual([counts[i] for i in (0, 3, 9)], [3, 3, 3])
        others = [i for i in counts if not self.flags[i]]
        self.assertEqual(len(others), round(0.5 * 7))
        self.assertTrue(all(counts[i] == 1 for i in others))

    def test_same_seed_same_epoch_other_seed_other_sample(self):
        flags = [i % 5 == 0 for i in range(1000)]
        first = epoch_pairs(flags, 2, 0.3, seed="mix 1")
        self.assertEqual(first, epoch_pairs(flags, 2, 0.3, seed="mix 1"))
        self.assertNotEqual(sorted(first), sorted(epoch_pairs(flags, 2, 0.3, seed="mix 2")))

    def test_whole_share_takes_every_other_pair_once(self):
        self.assertEqual(sorted(epoch_pairs(self.flags, 1, 1.0, seed=0)), list(range(10)))
        self.assertEqual(sorted(epoch_pairs(self.flags, 2, 0.0, seed=0)), [0, 0, 3, 3, 9, 9])
        self.assertEqual(sorted(epoch_pairs(self.flags, 0, 1.0, seed=0)), [1, 2, 4, 5, 6, 7, 8])

    def test_bad_mixes_are_refused(self):
        for repeat, share in ((-1, 0.5), (1.5, 0.5), (1, 1.5), (1, -0.1), (0, 0.0)):
            with self.subTest(repeat=repeat, share=share), self.assertRaises(ValueError):
                epoch_pairs(self.flags, repeat, share, seed=0)
        with self.assertRaisesRegex(ValueError, "no training pairs"):
            epoch_pairs([False, False], 3, 0.0, seed=0)

    def test_flags_match_pairs_by_their_ids(self):
        src = [[5, 6, 2], [7, 2], [5, 6, 2]]
        tgt = [[1, 8, 2], [1, 9, 2], [1, 9, 2]]
        self.assertEqual(multi30k_flags(src, tgt, [[5, 6, 2]], [[1, 8, 2]]), [True, False, False])


class BatchesOverPairsTest(unittest.TestCase):
    src = [[3] * (1 + i % 7) for i in range(60)]
    tgt = [[1] + [4] * (1 + i % 5) + [2] for i in range(60)]

    def test_default_is_every_pair_once_as_before(self):
        self.assertEqual(make_batches(self.src, self.tgt, 40, 7), make_batches(self.src, self.tgt, 40, 7,
                                                                              list(range(60))))

    def test_batches_hold_exactly_the_chosen_multiset(self):
        pairs = [0, 0, 5, 9, 9, 9, 33, 59]
        batches = make_batches(self.src, self.tgt, 40, 7, pairs)
        self.assertEqual(sorted(i for b in batches for i in b), sorted(pairs))
        for b in batches:
            longest = max(max(len(self.src[i]), len(self.tgt[i]) - 1) for i in b)
            self.assertTrue(len(b) == 1 or longest * len(b) <= 40)


def write_lines(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


EVERYDAY = [("Where is the train station?", "Wo ist der Bahnhof?"), ("My brother is a doctor.", "Mein Bruder ist Arzt."),
            ("Can you help me?", "Kannst du mir helfen?"), ("I am tired.", "Ich bin müde."),
            ("The law is just.", "Das Gesetz ist gerecht."), ("It is raining.", "Es regnet.")]
IMAGES = [("A dog runs on the beach.", "Ein Hund läuft am Strand."),
          ("Two men are playing soccer.", "Zwei Männer spielen Fußball."),
          ("A girl in a red dress is jumping.", "Ein Mädchen in einem roten Kleid springt.")]


@needs(all(map(os.path.exists, TOKENIZERS)), "models/tokenizers/broad.{en,de}.model")
class FineTuneRunTest(unittest.TestCase):
    tiny = ["--d-model", "16", "--heads", "2", "--enc-layers", "1", "--dec-layers", "1", "--ff", "32",
            "--max-tokens", "64", "--threads", "1", "--keep-epochs", "0", "--val-subset", "2"]

    def setUp(self):
        # each run's train.log stays open for the life of its process (a trainer's log); here they end with the test
        self.enterContext(warnings.catch_warnings())
        warnings.simplefilter("ignore", ResourceWarning)
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        os.makedirs(os.path.join(root, "models", "tokenizers"))
        for path in TOKENIZERS:
            os.symlink(path, os.path.join(root, "models", "tokenizers", os.path.basename(path)))
        broad = EVERYDAY * 4 + IMAGES
        for lang, column in (("en", 0), ("de", 1)):
            write_lines(os.path.join(root, "build", "data", "broad", f"train.{lang}"), [p[column] for p in broad])
            write_lines(os.path.join(root, "build", "data", "broad", f"val.{lang}"), [p[column] for p in IMAGES])
            write_lines(os.path.join(root, "build", "data", "multi30k", f"train.{lang}"), [p[column] for p in IMAGES])
        self.root = root

    def tearDown(self):
        gc.collect()
        self.tmp.cleanup()

    def train(self, out, *flags):
        with contextlib.redirect_stdout(io.StringIO()):
            train_transformer.main(["--pair", "en-de", "--corpus", "broad", "--out", os.path.join(self.root, out),
                                    "--data-root", self.root, *self.tiny, *flags])
        return torch.load(os.path.join(self.root, out, "last.pt"), map_location="cpu")

    def test_init_weights_fresh_schedule_mix_and_resume(self):
        base = self.train("base", "--epochs", "1")
        init = os.path.join(self.root, "base", "last.pt")
        # lr 0: the weights stay those of --init, so equality shows they were loaded (not a fresh initialization)
        tuned = self.train("ft", "--init", init, "--lr", "0", "--warmup", "5", "--epochs", "1",
                           "--multi30k-repeat", "3", "--broad-share", "0.5")
        for name, tensor in base["model"].items():
            self.assertTrue(torch.equal(tensor, tuned["model"][name]), name)
        self.assertEqual(tuned["config"], base["config"])
        with open(os.path.join(self.root, "ft", "train.log"), encoding="utf-8") as f:
            log = f.read()
        self.assertIn(f"weights from {init}", log)
        self.assertIn("mix: 3 Multi30k pairs x 3, 0.5 of 24 others per epoch", log)
        # a fresh schedule: the fine-tuning run's steps only, one epoch of 3 x 3 + 12 pairs
        pairs = 3 * 3 + 12
        self.assertGreater(tuned["state"]["global_step"], 0)
        self.assertLessEqual(tuned["state"]["global_step"], pairs)
        self.assertEqual(tuned["state"]["epoch"], 1)
        first_steps = tuned["state"]["global_step"]
        # resumed with a larger --epochs: one more epoch on the same run (last.pt wins over --init)
        resumed = self.train("ft", "--init", init, "--lr", "1e-3", "--warmup", "5", "--epochs", "2",
                             "--multi30k-repeat", "3", "--broad-share", "0.5")
        self.assertEqual(resumed["state"]["epoch"], 2)
        self.assertEqual([h["epoch"] for h in resumed["state"]["history"]], [1, 2])
        self.assertGreater(resumed["state"]["global_step"], first_steps)
        changed = any(not torch.equal(t, resumed["model"][n]) for n, t in base["model"].items())
        self.assertTrue(changed, "a second epoch at lr 1e-3 left every weight as it was")
        # resumed with a smaller --epochs (a job stopped early and its queue entry set to where it stopped): no step
        stopped = self.train("ft", "--init", init, "--lr", "1e-3", "--warmup", "5", "--epochs", "1",
                             "--multi30k-repeat", "3", "--broad-share", "0.5")
        self.assertEqual((stopped["state"]["epoch"], stopped["state"]["global_step"]),
                         (2, resumed["state"]["global_step"]))
        for name, tensor in resumed["model"].items():
            self.assertTrue(torch.equal(tensor, stopped["model"][name]), name)

    def test_init_from_a_gguf_file_takes_its_weights_and_this_runs_dropout(self):
        base = self.train("base", "--epochs", "1")
        exported = os.path.join(self.root, "base.f32.gguf")
        transformer_gguf.write(os.path.join(self.root, "base", "last.pt"), "f32", exported, root=self.root)
        tuned = self.train("ft", "--init", exported, "--lr", "0", "--warmup", "5", "--epochs", "1", "--dropout", "0.1")
        for name, tensor in base["model"].items():
            self.assertTrue(torch.equal(tensor, tuned["model"][name]), name)
        self.assertEqual(tuned["config"], dict(base["config"], dropout=0.1))
        self.assertEqual(tuned["meta"]["corpus"], "broad")
        with open(os.path.join(self.root, "ft", "train.log"), encoding="utf-8") as f:
            self.assertIn(f"weights from {exported}", f.read())

    def test_init_from_a_gguf_file_of_another_pair_or_kind_is_refused(self):
        self.train("base", "--epochs", "1")
        exported = os.path.join(self.root, "base.f16.gguf")
        transformer_gguf.write(os.path.join(self.root, "base", "last.pt"), "f16", exported, root=self.root)
        with self.assertRaisesRegex(SystemExit, "en-de model"), contextlib.redirect_stdout(io.StringIO()):
            train_transformer.main(["--pair", "de-en", "--corpus", "broad", "--out", os.path.join(self.root, "x"),
                                    "--data-root", self.root, *self.tiny, "--init", exported])
        speech = os.path.join(ROOT, "models", "weights", "speech-las.q8_0.gguf")
        if os.path.exists(speech):
            with self.assertRaisesRegex(SystemExit, "not a translator"), contextlib.redirect_stdout(io.StringIO()):
                self.train("y", "--init", speech)

    def test_init_of_another_pair_is_refused(self):
        self.train("base", "--epochs", "1")
        with self.assertRaisesRegex(SystemExit, "en-de model"), contextlib.redirect_stdout(io.StringIO()):
            train_transformer.main(["--pair", "de-en", "--corpus", "broad", "--out", os.path.join(self.root, "x"),
                                    "--data-root", self.root, "--init", os.path.join(self.root, "base", "last.pt"),
                                    *self.tiny])


class MixOptionsTest(unittest.TestCase):
    def test_mix_needs_the_broad_corpus_and_a_valid_share(self):
        for flags, message in ((["--multi30k-repeat", "2"], "need --corpus broad"),
                               (["--corpus", "broad", "--broad-share", "1.5"], "within"),
                               (["--corpus", "broad", "--init", "/nonexistent/last.pt"], "no such checkpoint")):
            args = train_transformer.parse_args(["--pair", "en-de", "--out", "/tmp/unused", *flags])
            with self.subTest(flags=flags), self.assertRaisesRegex(SystemExit, message):
                check_training_options(args)

    def test_a_resumed_run_ignores_a_missing_init_checkpoint(self):
        with tempfile.TemporaryDirectory() as out:
            open(os.path.join(out, "last.pt"), "wb").close()
            args = train_transformer.parse_args(["--pair", "en-de", "--out", out, "--corpus", "broad",
                                                 "--init", "/nonexistent/last.pt"])
            check_training_options(args)


if __name__ == "__main__":
    unittest.main()
