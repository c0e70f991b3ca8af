"""The speech recognizer's GGUF schema (attnlab.gguf.speech): the keys the engine reads, the tensors it stores and
how (the CTC head and its decoding weight included, or left out on request), the listener's depth, and a file read
back into the same PyTorch model."""
import os
import tempfile
import unittest

import torch

from attnlab.gguf import speech
from attnlab.gguf.reader import read_gguf
from attnlab.nn.listen_attend_spell import VOCAB, Config, ListenAttendSpell

SMALL = dict(enc_hidden=16, dec_hidden=32, emb=32, attn_dim=32, loc_filters=4, loc_width=7, dropout=0.0)


class SpeechSchemaTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.model = ListenAttendSpell(Config(**SMALL)).eval()
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def written(self, dtype, what=None, **options):
        path = os.path.join(self.dir.name, f"las.{dtype}.gguf")
        speech.write(what if what is not None else self.model, dtype, path, **options)
        return path

    def test_metadata_keys(self):
        _, kvs, tensors, _, _ = read_gguf(self.written("f32"))
        meta = {k: v for k, _, v in kvs}
        p = speech.ARCH + "."
        self.assertEqual(meta["general.architecture"], "attnlab.las")
        self.assertEqual(meta["attnlab.task"], "transcribe")
        expected = {"feature_size": 13, "encoder_hidden_size": 16, "decoder_hidden_size": 32, "embedding_size": 32,
                    "attention_size": 32, "location_filters": 4, "location_width": 7, "vocab_size": len(VOCAB),
                    "frame_rate": 100, "time_reduction": 4}
        for key, value in expected.items():
            self.assertEqual(meta[p + key], value, key)
        self.assertEqual(tuple(meta[p + "characters"]), VOCAB)
        names = {name for name, _, _, _ in tensors}
        self.assertIn("feature_scale", names)
        self.assertIn("attn.F.weight", names)
        self.assertEqual(names, set(self.model.state_dict()), "every tensor, the CTC head included")
        self.assertIn("ctc.weight", names)
        self.assertAlmostEqual(meta[p + "ctc_weight"], speech.DEFAULT_CTC_WEIGHT, places=6)

    def test_ctc_head_left_out_or_weighted(self):
        _, kvs, tensors, _, _ = read_gguf(self.written("f32", ctc=False))
        self.assertNotIn(speech.ARCH + ".ctc_weight", {k for k, _, _ in kvs})
        self.assertEqual({name for name, _, _, _ in tensors}, {k for k in self.model.state_dict() if not k.startswith("ctc.")})
        headless = speech.load(os.path.join(self.dir.name, "las.f32.gguf"))
        self.assertEqual(headless.ctc_weight, 0.0)
        self.assertEqual(float(headless.state_dict()["ctc.weight"].abs().sum()), 0.0)
        # A checkpoint's training CTC weight is the file's default; an explicit one wins.
        checkpoint = {"config": self.model.cfg.to_dict(), "model": self.model.state_dict(),
                      "meta": {"args": {"ctc_weight": 0.2}}}
        self.assertAlmostEqual(speech.load(self.written("f16", checkpoint)).ctc_weight, 0.2, places=6)
        self.assertAlmostEqual(speech.load(self.written("f16", checkpoint, ctc_weight=0.45)).ctc_weight, 0.45, places=6)
        for bad in (-0.1, 1.5):
            with self.assertRaises(ValueError):
                self.written("f16", ctc_weight=bad)

    def test_storage_types_under_q8_0(self):
        _, _, tensors, _, _ = read_gguf(self.written("q8_0"))
        types = {name: type_name for name, type_name, _, _ in tensors}
        self.assertEqual(types["feature_scale"], "f32")
        self.assertEqual(types["speller.weight_ih"], "q8_0")
        self.assertEqual(types["attn.F.weight"], "f16")           # a 7-wide row is no Q8_0 block
        self.assertEqual(types["listener.0.weight_ih_l0"], "f16")  # 26 inputs per row
        self.assertEqual(types["out.bias"], "f32")

    def test_round_trip_from_a_checkpoint(self):
        checkpoint = {"config": self.model.cfg.to_dict(), "model": self.model.state_dict(),
                      "state": {"train_seconds": 12.5, "best_cer": 0.25}}
        path = self.written("f32", checkpoint)
        loaded = speech.load(path)
        for name, value in self.model.state_dict().items():
            self.assertTrue(torch.equal(loaded.state_dict()[name], value), name)
        meta = {k: v for k, _, v in read_gguf(path)[1]}
        self.assertAlmostEqual(meta["attnlab.training_seconds"], 12.5)
        self.assertAlmostEqual(meta["attnlab.val_cer"], 0.25)
        feats = torch.randn(1, 37, 13) * 3
        self.assertEqual(loaded.greedy(feats, torch.tensor([37]), max_len=12)[0],
                         self.model.greedy(feats, torch.tensor([37]), max_len=12)[0])

    def test_listener_depth(self):
        deeper = ListenAttendSpell(Config(listener_layers=3, **SMALL)).eval()
        self.assertEqual([name for name in deeper.state_dict() if name.endswith("weight_ih_l0")],
                         ["listener.0.weight_ih_l0", "listener.1.weight_ih_l0", "listener.2.weight_ih_l0"])
        path = self.written("f16", deeper)
        meta = {k: v for k, _, v in read_gguf(path)[1]}
        self.assertEqual(meta[speech.ARCH + ".time_reduction"], 8)
        loaded = speech.load(path)
        self.assertEqual(loaded.cfg.listener_layers, 3)
        h, lengths, _ = loaded.listen(torch.randn(1, 37, 13), torch.tensor([37]))
        self.assertEqual((h.shape[1], int(lengths[0])), (4, 4))   # one annotation per 8 frames
        with self.assertRaisesRegex(ValueError, "needs 8 frames, 80 ms"):
            loaded.listen(torch.randn(1, 7, 13), torch.tensor([7]))
        for layers in (0, 4):
            with self.assertRaises(ValueError):
                Config(listener_layers=layers)

    def test_refusals(self):
        with self.assertRaises(ValueError):
            speech.write(self.model, "q4", os.path.join(self.dir.name, "x.gguf"))
        with self.assertRaises(ValueError):
            speech.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "rnn", "additive.gguf"))


if __name__ == "__main__":
    unittest.main()
