"""What a speech training run on a GPU machine depends on (models/train_speech_gpu.sh): the compact feature store
comes back within half a code step of the float32 store, a checkpoint split into small chunks joins bit for bit,
and the trainer's epoch-level flags (--real-repeat, --epoch-decay) do what they say.

    PYTHONPATH=python /usr/bin/python3 -m unittest tests.python.test_speech_gpu_transfer

Needs no data: tiny random stores in attnlab.data.speech_features' layout.
"""
import contextlib
import io
import os
import tempfile
import unittest

import numpy as np
import torch

from attnlab.data import speech_features_compact as compact
from attnlab.data.speech_features import load_all
from attnlab.nn import listen_attend_spell as las
from attnlab.train import checkpoint_chunks
from attnlab.train import speech as trainer
from tests.python.test_speech_init import TINY, write_features


class CompactStoreTest(unittest.TestCase):
    def test_round_trip_within_half_a_step(self):
        with tempfile.TemporaryDirectory() as tmp:
            src, packed, back = (os.path.join(tmp, d) for d in ("src", "packed", "back"))
            os.makedirs(src)
            write_features(src)
            with contextlib.redirect_stdout(io.StringIO()):
                compact.pack(src, packed)
                compact.unpack(packed, back)
            a, b = load_all(src)["an4"], load_all(back)["an4"]
            self.assertEqual(a.ids, b.ids)
            self.assertEqual(a.transcripts, b.transcripts)
            self.assertEqual(a.splits, b.splits)
            np.testing.assert_array_equal(a.offsets, b.offsets)
            self.assertEqual(b.frames.dtype, np.float32)
            for i in range(len(a)):
                x, y = a.features(i), b.features(i)
                half_step = (x.max(0) - x.min(0)) / compact.LEVELS / 2
                self.assertTrue(np.all(np.abs(x - y) <= half_step * 1.001 + 1e-6), i)
                # Each utterance's extremes are codes 0 and 255: kept to float rounding.
                np.testing.assert_allclose(y.min(0), x.min(0), atol=1e-5)
                np.testing.assert_allclose(y.max(0), x.max(0), atol=1e-4)

    def test_constant_coefficient_and_empty_utterance(self):
        frames = np.zeros((5, 13), np.float32)
        frames[:, 3] = 2.5
        codes, low, step = compact.encode(frames, np.array([0, 0, 5]))
        np.testing.assert_array_equal(compact.decode(codes, low, step, np.array([0, 0, 5])), frames)


class CheckpointChunksTest(unittest.TestCase):
    def test_split_and_join_bit_for_bit(self):
        torch.manual_seed(3)
        model = las.ListenAttendSpell(las.Config(**TINY))
        ck = {"config": model.cfg.to_dict(), "model": model.state_dict(), "state": {"epoch": 4, "history": []},
              "meta": {"name": "speech-las"}, "optimizer": {"dropped": True}}
        with tempfile.TemporaryDirectory() as tmp:
            path, prefix = os.path.join(tmp, "best.pt"), os.path.join(tmp, "run")
            torch.save(ck, path)
            n = checkpoint_chunks.split(path, prefix, limit=2000)
            self.assertGreater(n, 2)
            for i in range(n):
                self.assertTrue(os.path.exists(f"{prefix}.{i}.pt"))
            joined = checkpoint_chunks.join(prefix, os.path.join(tmp, "joined.pt"))
            self.assertEqual(list(joined["model"]), list(ck["model"]))
            for name, value in ck["model"].items():
                self.assertTrue(torch.equal(joined["model"][name], value), name)
            self.assertEqual(joined["config"], ck["config"])
            self.assertEqual(joined["state"], ck["state"])
            self.assertNotIn("optimizer", joined)
            # The joined file starts a run as --init does.
            init = trainer.initial_weights(os.path.join(tmp, "joined.pt"), 0.1)
            self.assertEqual(init["config"], ck["config"])
            os.remove(f"{prefix}.{n - 1}.pt")
            with self.assertRaises(SystemExit):
                checkpoint_chunks.join(prefix, os.path.join(tmp, "partial.pt"))


class EpochFlagsTest(unittest.TestCase):
    def test_real_repeat_and_epoch_decay(self):
        torch.set_num_threads(1)
        with tempfile.TemporaryDirectory() as tmp:
            features = os.path.join(tmp, "features")
            os.makedirs(features)
            write_features(features)
            out = os.path.join(tmp, "run")
            argv = ["--features", features, "--out", out, "--dev-limit", "2", "--max-frames", "200",
                    "--log-every", "1", "--save-minutes", "60", "--epochs", "1", "--warmup", "1", "--lr", "1e-3",
                    "--min-lr", "1e-6", "--real-repeat", "3", "--epoch-decay", "0.5",
                    *[f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()]]
            with contextlib.redirect_stdout(io.StringIO()):
                trainer.main(argv)
            with open(os.path.join(out, "train.log"), encoding="utf-8") as f:
                log = f.read()
            self.assertIn("train 12 utterances", log)   # 4 recorded training utterances, three times
            last = torch.load(os.path.join(out, "last.pt"))
            lr = last["optimizer"]["param_groups"][0]["lr"]
            # One epoch: a first dev result is always a gain, so only --epoch-decay applies.
            self.assertAlmostEqual(lr, 5e-4)


if __name__ == "__main__":
    unittest.main()
