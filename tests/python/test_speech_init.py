"""attnlab.train.speech --init: a fresh run starts from a speech GGUF file's (or a checkpoint's) weights and
configuration, exactly as the file holds them, trains from there and resumes from OUT/last.pt afterwards; a file of
another model is refused. The shipped f16 file loads into the trainer's model with the very weights (and so the
outputs) that tests/python/test_shipped_speech.py holds the engine to.

    PYTHONPATH=python /usr/bin/python3 -m unittest tests.python.test_speech_init

Needs no data: the features are a tiny random store in attnlab.data.speech_features' layout.
"""
import contextlib
import io
import os
import tempfile
import unittest

import numpy as np
import torch

from attnlab.gguf import speech as speech_gguf
from attnlab.gguf.reader import read_gguf_tensors
from attnlab.nn import listen_attend_spell as las
from attnlab.train import speech as trainer

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SHIPPED = os.path.join(ROOT, "models", "weights", "speech-las.f16.gguf")
TRANSLATOR = os.path.join(ROOT, "fuzz", "corpus", "fuzz_gguf", "translator.dot.f16.gguf")
SAMPLES = os.path.join(ROOT, "web", "app", "samples", "speech")
TINY = dict(enc_hidden=8, dec_hidden=16, emb=8, attn_dim=8, loc_filters=2, loc_width=5)


def write_features(root):
    """An an4.npz in speech_features' layout: 4 training and 2 dev utterances of random frames."""
    rng = np.random.default_rng(0)
    texts = ["yes", "no", "two", "go", "stop", "one"]
    splits = ["train"] * 4 + ["dev"] * 2
    frames = [rng.standard_normal((int(rng.integers(24, 48)), 13)).astype(np.float32) for _ in texts]
    offsets = np.cumsum([0] + [len(f) for f in frames]).astype(np.int64)
    np.savez(os.path.join(root, "an4.npz"), ids=np.array([f"u{i}" for i in range(len(texts))]),
             transcripts=np.array(texts), splits=np.array(splits), speakers=np.array(["s"] * len(texts)),
             offsets=offsets, frames=np.concatenate(frames))


def train(argv):
    """trainer.main(argv), its log captured -> the log."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        trainer.main(argv)
    return out.getvalue()


class SpeechInitTest(unittest.TestCase):
    def setUp(self):
        torch.set_num_threads(1)
        self.dir = tempfile.TemporaryDirectory()
        self.features = os.path.join(self.dir.name, "features")
        os.makedirs(self.features)
        write_features(self.features)
        torch.manual_seed(7)
        self.model = las.ListenAttendSpell(las.Config(dropout=0.0, **TINY)).eval()
        self.gguf = os.path.join(self.dir.name, "tiny.f16.gguf")
        speech_gguf.write(self.model, "f16", self.gguf)

    def tearDown(self):
        self.dir.cleanup()

    def flags(self, out, *extra):
        return ["--features", self.features, "--out", out, "--limit-train", "2", "--dev-limit", "2",
                "--max-frames", "200", "--log-every", "1", "--save-minutes", "60", *extra]

    def test_gguf_weights_load_exactly(self):
        init = trainer.initial_weights(self.gguf, 0.25)
        _, tensors = read_gguf_tensors(self.gguf)
        self.assertEqual(set(init["model"]), set(tensors))
        for name, value in init["model"].items():
            self.assertTrue(torch.equal(value, torch.from_numpy(tensors[name])), name)
        # f16 keeps the random tiny model's weights to its rounding, not bit for bit.
        for name, value in self.model.state_dict().items():
            torch.testing.assert_close(init["model"][name], value, atol=1e-3, rtol=1e-3)
        self.assertEqual(init["config"], las.Config(dropout=0.25, **TINY).to_dict())
        self.assertEqual(init["train_seconds"], 0.0)   # a model written without a training state

    def test_init_trains_from_the_file_then_resumes(self):
        out = os.path.join(self.dir.name, "run")
        log = train(self.flags(out, "--init", self.gguf, "--epochs", "1", "--lr", "1e-2", "--warmup", "1"))
        self.assertIn(f"weights from {self.gguf}", log)
        with open(os.path.join(out, "train.log"), encoding="utf-8") as f:
            self.assertIn(f"weights from {self.gguf}", f.read())   # what models/train_queue.sh looks for
        ck = torch.load(os.path.join(out, "last.pt"), map_location="cpu")
        self.assertEqual(ck["config"], las.Config(**TINY).to_dict())   # the file's shape, this run's dropout 0.2
        self.assertEqual(ck["state"]["epoch"], 1)
        self.assertGreaterEqual(ck["state"]["global_step"], 1)
        self.assertAlmostEqual(ck["optimizer"]["param_groups"][0]["lr"], 1e-2)   # --lr after --warmup 1
        _, tensors = read_gguf_tensors(self.gguf)
        moved = [name for name, value in ck["model"].items()
                 if name != "feature_scale" and not torch.equal(value, torch.from_numpy(tensors[name]))]
        self.assertTrue(moved, "the run trained a step from the file's weights")
        # ...from them, not from a random start: Adam moves a weight by about lr per step at most.
        steps = ck["state"]["global_step"]
        for name, value in ck["model"].items():
            drift = float((value - torch.from_numpy(tensors[name])).abs().max())
            self.assertLessEqual(drift, 1.5e-2 * steps, name)
        # A rerun resumes from OUT/last.pt: the file's configuration, though the model flags say otherwise.
        log = train(self.flags(out, "--init", self.gguf, "--epochs", "2"))
        self.assertIn("resumed from", log)
        self.assertNotIn("weights from", log)
        ck = torch.load(os.path.join(out, "last.pt"), map_location="cpu")
        self.assertEqual(ck["state"]["epoch"], 2)

    def test_listener_depth(self):
        out = os.path.join(self.dir.name, "deeper")
        sizes = ["--enc-hidden", "8", "--dec-hidden", "16", "--emb", "8", "--attn-dim", "8", "--loc-filters", "2",
                 "--loc-width", "5"]
        train(self.flags(out, *sizes, "--listener-layers", "3", "--epochs", "1"))
        ck = torch.load(os.path.join(out, "last.pt"), map_location="cpu")
        self.assertEqual(ck["config"]["listener_layers"], 3)
        self.assertIn("listener.2.weight_ih_l0", ck["model"])
        # --init keeps the file's model: a depth that disagrees is refused before anything is written.
        refused = os.path.join(self.dir.name, "refused-depth")
        with self.assertRaises(SystemExit) as e:
            train(self.flags(refused, "--init", self.gguf, "--listener-layers", "3", "--epochs", "1"))
        self.assertIn("has 2 listener layers", str(e.exception))
        with self.assertRaises(SystemExit) as e:
            train(self.flags(refused, "--listener-layers", "4", "--epochs", "1"))
        self.assertIn("1 to 3", str(e.exception))
        self.assertFalse(os.path.exists(os.path.join(refused, "last.pt")))

    def test_checkpoint_keeps_its_own_configuration(self):
        path = os.path.join(self.dir.name, "tiny.pt")
        cfg = las.Config(dropout=0.1, **TINY)
        torch.save({"config": cfg.to_dict(), "model": self.model.state_dict(),
                    "state": {"epoch": 3, "train_seconds": 90.0}}, path)
        init = trainer.initial_weights(path, 0.25)
        self.assertEqual(init["config"], cfg.to_dict())
        self.assertEqual((init["epoch"], init["train_seconds"]), (3, 90.0))
        # The continued run counts its hours on top of the checkpoint's (its exports' attnlab.training_seconds).
        out = os.path.join(self.dir.name, "from-pt")
        train(self.flags(out, "--init", path, "--epochs", "1"))
        ck = torch.load(os.path.join(out, "last.pt"), map_location="cpu")
        self.assertEqual(ck["config"], cfg.to_dict())
        self.assertGreater(ck["state"]["train_seconds"], 90.0)
        self.assertLess(ck["state"]["train_seconds"], 90.0 + 600)
        for name, value in self.model.state_dict().items():
            self.assertTrue(torch.equal(init["model"][name], value), name)

    def test_other_models_are_refused(self):
        with self.assertRaises(SystemExit) as e:
            trainer.initial_weights(TRANSLATOR, 0.2)
        self.assertIn("not a speech recognizer", str(e.exception))
        self.assertIn("attnlab.bahdanau", str(e.exception))
        translator_checkpoint = os.path.join(self.dir.name, "translator.pt")
        torch.save({"config": {"src_vocab": 8, "tgt_vocab": 8, "score": "dot"}, "model": {},
                    "meta": {"pair": "en-de"}}, translator_checkpoint)
        with self.assertRaises(SystemExit) as e:
            trainer.initial_weights(translator_checkpoint, 0.2)
        self.assertIn("a checkpoint of en-de, not of attnlab.nn.listen_attend_spell", str(e.exception))
        # A recognizer checkpoint whose weights do not fit its configuration is refused too.
        wrong = os.path.join(self.dir.name, "wrong.pt")
        torch.save({"config": las.Config(**dict(TINY, enc_hidden=12)).to_dict(), "model": self.model.state_dict()},
                   wrong)
        with self.assertRaises(SystemExit):
            trainer.initial_weights(wrong, 0.2)
        with self.assertRaises(SystemExit) as e:
            trainer.initial_weights(os.path.join(self.dir.name, "missing.gguf"), 0.2)
        self.assertIn("no such file", str(e.exception))
        # The trainer refuses before it trains: no checkpoint is written.
        out = os.path.join(self.dir.name, "refused")
        with self.assertRaises(SystemExit):
            train(self.flags(out, "--init", TRANSLATOR, "--epochs", "1"))
        self.assertFalse(os.path.exists(os.path.join(out, "last.pt")))

    @unittest.skipUnless(os.path.exists(SHIPPED), "no shipped speech model")
    def test_shipped_file_round_trips(self):
        init = trainer.initial_weights(SHIPPED, 0.2)
        reference = speech_gguf.load(SHIPPED)   # what test_shipped_speech.py holds the engine to
        _, tensors = read_gguf_tensors(SHIPPED)
        self.assertEqual(set(init["model"]), set(reference.state_dict()))
        for name, value in reference.state_dict().items():
            self.assertTrue(torch.equal(init["model"][name], value), name)
            self.assertTrue(torch.equal(init["model"][name], torch.from_numpy(tensors[name])), name)
        self.assertEqual(init["config"], dict(reference.cfg.to_dict(), dropout=0.2))
        self.assertGreater(init["train_seconds"], 360)   # the card's 7 minutes, kept in attnlab.training_seconds
        # The trainer's model (dropout 0.2, in eval mode) decodes as the reference does: the same characters and
        # attention, bit for bit, on a committed sample clip.
        from tests.python.test_shipped_speech import clip_features  # noqa: PLC0415  (the parity test's features)
        model = las.ListenAttendSpell(las.Config(**init["config"]))
        model.load_state_dict(init["model"])
        model.eval()
        clip = sorted(n for n in os.listdir(SAMPLES) if n.endswith(".wav"))[0]
        x = torch.from_numpy(clip_features(os.path.join(SAMPLES, clip)))[None]
        with torch.no_grad():
            ids, attention = model.greedy(x, torch.tensor([x.shape[1]]))
            ref_ids, ref_attention = reference.greedy(x, torch.tensor([x.shape[1]]))
        self.assertEqual(ids, ref_ids)
        self.assertGreater(len(ids[0]), 0)
        self.assertTrue(torch.equal(attention[0], ref_attention[0]))


class SynthShareTest(unittest.TestCase):
    """--synth-share: every recorded utterance each epoch, a fresh seeded share of the synthetic ones."""

    def test_epoch_items(self):
        items = [("an4", i, 10, [1]) for i in range(5)] + [("synth", i, 10, [1]) for i in range(100)]
        first = trainer.epoch_items(items, 0.25, 1234)
        self.assertEqual([item for item in first if item[0] == "an4"], items[:5])
        self.assertEqual(sum(item[0] == "synth" for item in first), 25)
        self.assertEqual(first, trainer.epoch_items(items, 0.25, 1234))   # a resumed epoch: the same list
        self.assertNotEqual(first, trainer.epoch_items(items, 0.25, 1235))
        self.assertEqual(trainer.epoch_items(items, 1.0, 1234), items)

    def test_a_share_outside_0_1_is_refused(self):
        with tempfile.TemporaryDirectory() as out:
            for share in ("0", "1.5", "-0.2"):
                with self.assertRaisesRegex(SystemExit, "--synth-share"):
                    trainer.main(["--out", out, "--synth-share", share])


if __name__ == "__main__":
    unittest.main()
