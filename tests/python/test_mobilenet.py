"""MobileNetV2 conversion (attnlab.nn.tflite_mobilenet, attnlab.nn.mobilenet_v2, attnlab.gguf.mobilenet).

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_mobilenet.py'

The padding and resize tests need nothing but torch; the conversion tests read ../shared/data/mobilenet and the
Flickr8k photos and captions, and are skipped without them (they fail instead where CI=true: tests/python/needs.py).
"""
import json
import os
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

from attnlab.gguf import mobilenet
from attnlab.gguf.reader import read_gguf
from attnlab.nn import mobilenet_v2 as mnv2
from tests.python.needs import needs

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "mobilenet", "dog_check.json")
DATA = os.path.join(ROOT, "..", "shared", "data")
HAVE_DATA = os.path.exists(os.path.join(DATA, "mobilenet", "mobilenet_v2_1.0_224_quant.tflite")) and \
    os.path.isdir(os.path.join(DATA, "flickr8k", "images"))

torch.set_num_threads(1)
_model = None


def model():
    global _model
    if _model is None:
        _model = mnv2.load_mobilenet_v2()
    return _model


class Padding(unittest.TestCase):
    def test_tf_same(self):
        self.assertEqual(mnv2.same_padding(224, 3, 2), (0, 1))  # the extra pixel goes bottom/right
        self.assertEqual(mnv2.same_padding(7, 3, 2), (1, 1))
        self.assertEqual(mnv2.same_padding(14, 3, 1), (1, 1))
        self.assertEqual(mnv2.same_padding(7, 1, 1), (0, 0))

    def test_stride2_conv_matches_tf_same_by_hand(self):
        # 4x4 ramp, 3x3 ones, stride 2: windows start at 0 and 2 (no top/left padding)
        spec = {"kind": "conv", "kernel": 3, "stride": 2, "padding": "same", "activation": "none", "residual": -1,
                "in_channels": 1, "out_channels": 1, "weight": np.ones((1, 3, 3, 1), np.float32),
                "bias": np.zeros(1, np.float32)}
        layer = mnv2.ConvLayer(spec)
        x = torch.arange(1, 17, dtype=torch.float32).reshape(1, 1, 4, 4)
        y = layer(x)[0, 0]
        self.assertEqual(y.tolist(), [[54.0, 45.0], [72.0, 54.0]])
        np.testing.assert_array_equal(layer.tflite_weight(), spec["weight"])


class Resize(unittest.TestCase):
    def test_matches_torch_antialiased_bilinear_half_pixel(self):
        rng = np.random.default_rng(0)
        # Shrinking (both axes, one axis, 1600x1200 -> 224), growing, mixed, and the identity.
        for h, w in [(300, 451), (37, 23), (500, 224), (224, 224), (100, 100), (1200, 1600), (100, 500)]:
            image = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
            ours = mnv2.resize_bilinear(image)
            theirs = F.interpolate(torch.from_numpy(image.astype(np.float32)).permute(2, 0, 1)[None], size=(224, 224),
                                   mode="bilinear", align_corners=False, antialias=True)[0].permute(1, 2, 0).numpy()
            # Same method (torch's antialiased bilinear is plain half-pixel bilinear where an axis grows); torch
            # rounds coordinates and weights differently in float32, which moves a value by ~1e-4 of a pixel
            # level. A different method (no antialias, align corners, pixel centres) would differ by whole levels.
            np.testing.assert_allclose(ours, theirs, atol=1e-2, err_msg=f"{h}x{w}")
            if max(h, w) > 224 and (h, w) != (500, 224):
                plain = F.interpolate(torch.from_numpy(image.astype(np.float32)).permute(2, 0, 1)[None], size=(224, 224),
                                      mode="bilinear", align_corners=False, antialias=False)[0].permute(1, 2, 0).numpy()
                self.assertGreater(float(np.abs(ours - plain).max()), 1.0, f"{h}x{w}: antialiasing changes a shrink")

    def test_identity_at_224_and_no_aliasing(self):
        image = np.random.default_rng(1).integers(0, 256, size=(224, 224, 3), dtype=np.uint8)
        np.testing.assert_array_equal(mnv2.resize_bilinear(image), image.astype(np.float32))
        y, x = np.mgrid[0:480, 0:640]
        board = np.repeat((((x + y) % 2) * 255).astype(np.uint8)[:, :, None], 3, axis=2)
        resized = mnv2.resize_bilinear(board)
        self.assertLess(float(np.abs(resized - 127.5).max()), 2.0, "a one-pixel checkerboard shrinks to grey")

    def test_normalization_and_alpha(self):
        image = np.zeros((224, 224, 4), np.uint8)
        image[..., 0], image[..., 1], image[..., 2], image[..., 3] = 0, 255, 128, 7
        x = mnv2.preprocess(image)
        self.assertEqual(x.shape, (224, 224, 3))
        np.testing.assert_allclose(x[0, 0], [-1.0, 1.0, 128 / 127.5 - 1], rtol=0, atol=1e-7)


@needs(HAVE_DATA, "../shared/data (MobileNetV2 TFLite file, Flickr8k photos) is not available")
class Conversion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(FIXTURE, encoding="utf-8") as f:
            cls.fixture = json.load(f)

    def _run(self, ids):
        x = mnv2.to_tensor([mnv2.preprocess(mnv2.load_image(os.path.join(DATA, "flickr8k", "images", i))) for i in ids])
        with torch.no_grad():
            return model().logits(x)

    def test_dog_images_get_dog_classes(self):
        sample = self.fixture["sample"]
        lo, hi = self.fixture["dog_labels"]
        logits = torch.cat([self._run([s["id"] for s in sample[i:i + 20]]) for i in range(0, len(sample), 20)])
        top5 = torch.topk(logits, 5, dim=1).indices.tolist()
        dogs = sum(any(lo <= c <= hi for c in t) for t in top5)
        self.assertGreaterEqual(dogs / len(sample), 0.8, f"{dogs}/{len(sample)} dog images have a dog class in the top 5")
        for s, t in zip(sample, top5):  # same classes as when the fixture was made (order may swap on near-ties)
            self.assertGreaterEqual(len(set(s["top5"]) & set(t)), 4, s["id"])

    def test_dog_share_on_images_the_captions_choose(self):
        """The fixture's full-run percentage, measured again: the reference is the human captions (every 20th image
        whose five captions all name a dog, listed from Flickr8k.token.txt, not from the fixture), the claim that
        MobileNetV2 puts a dog class in the top 5 for at least 80% of them, and the stored figure within sampling
        error (~2.7 points for ~80 images) of what is measured."""
        from attnlab.golden.mobilenet_check import dog_image_ids
        ids = dog_image_ids()[::20]
        self.assertGreaterEqual(len(ids), 60)
        logits = torch.cat([self._run(ids[i:i + 20]) for i in range(0, len(ids), 20)])
        lo, hi = self.fixture["dog_labels"]
        share = 100.0 * sum(any(lo <= c <= hi for c in t) for t in torch.topk(logits, 5, dim=1).indices.tolist()) / len(ids)
        self.assertGreaterEqual(share, 80.0)
        self.assertLess(abs(share - self.fixture["full_run"]["percent"]), 10.0, share)

    def test_float_logits(self):
        rows = self.fixture["logits"]
        logits = self._run([r["id"] for r in rows]).numpy()
        for row, ours in zip(rows, logits):
            np.testing.assert_allclose(ours, np.asarray(row["logits"], np.float32), atol=2e-4, err_msg=row["id"])

    def test_gguf_roundtrip(self):
        from skimage import data
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.gguf")
            mobilenet.write(path, dtype="f16", model=model())
            loaded = mobilenet.load(path)
        x = mnv2.to_tensor([mnv2.preprocess(data.chelsea())])
        with torch.no_grad():
            a, b = model().logits(x), loaded.logits(x)
        self.assertLess(float((a - b).abs().max()), 0.05)  # f16 weights
        self.assertEqual(int(a.argmax()), int(b.argmax()))
        self.assertEqual(int(a.argmax()), 286)  # Egyptian cat

    def test_i8_gguf_holds_the_tflite_weights_exactly(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.gguf")
            mobilenet.write(path, dtype="i8")
            types = {name: t for name, t, _, _ in read_gguf(path)[2]}
            loaded = mobilenet.load(path)
            with self.assertRaisesRegex(ValueError, "TFLite model's own weights"):
                mobilenet.write(os.path.join(tmp, "x.gguf"), dtype="i8", model=model())
        self.assertEqual({types[f"encoder.layers.{i}.weight"] for i in range(52)}, {"i8"})
        self.assertEqual(types["encoder.classifier.weight"], "f16")
        for (name, ours), (_, source) in zip(loaded.layers.state_dict().items(), model().layers.state_dict().items()):
            self.assertTrue(torch.equal(ours, source), name)


if __name__ == "__main__":
    unittest.main()


@needs(HAVE_DATA, "needs ../shared/data/mobilenet")
class CaptionerClassifier(unittest.TestCase):
    """attnlab.gguf.captioner.add_classifier_to: the shipped captioner plus MobileNetV2's classifier, everything
    else copied byte for byte."""

    def test_copy_keeps_every_value_and_tensor_and_adds_the_classifier(self):
        from attnlab.gguf import captioner
        from attnlab.gguf.reader import read_gguf_raw, read_gguf_tensors
        from attnlab.gguf.writer import GGUFWriter
        source = os.path.join(ROOT, "models", "weights", "captioner-flickr8k-14x14.q8_0.gguf")
        kvs, tensors = read_gguf_raw(source)
        with tempfile.TemporaryDirectory() as tmp:
            # A file like the shipped one before it had the classifier: the same values and tensors, no classifier.
            bare = os.path.join(tmp, "bare.gguf")
            w = GGUFWriter(bare)
            for key, type_name, element, value, payload in kvs:
                if key == mobilenet.KEY + "labels":
                    continue
                if key == mobilenet.KEY + "has_classifier":
                    w.add_bool(key, False)
                else:
                    w.copy_value(key, type_name, element, value, payload)
            for tensor in tensors:
                if ".classifier." not in tensor[0]:
                    w.copy_tensor(*tensor)
            w.write()
            out = os.path.join(tmp, "with.gguf")
            added = captioner.add_classifier_to(bare, out, "q8_0")
            self.assertGreater(added, 1_000_000)
            kvs_bare, tensors_bare = read_gguf_raw(bare)
            kvs_out, tensors_out = read_gguf_raw(out)
            copied = {t[0]: t for t in tensors_out}
            for tensor in tensors_bare:
                self.assertEqual(copied[tensor[0]], tensor)
            values = {k: payload for k, _, _, _, payload in kvs_out}
            for key, _, _, _, payload in kvs_bare:
                if key != mobilenet.KEY + "has_classifier":
                    self.assertEqual(values[key], payload, key)
            meta, weights = read_gguf_tensors(out)
            self.assertTrue(meta[mobilenet.KEY + "has_classifier"])
            self.assertEqual(len(meta[mobilenet.KEY + "labels"]), 1001)
            w_model = model().classifier.weight.detach().numpy()
            stored = weights[meta[mobilenet.KEY + "tensor_prefix"] + "classifier.weight"]
            self.assertEqual(stored.shape, w_model.shape)
            self.assertLess(float(np.abs(stored - w_model).max()), float(np.abs(w_model).max()) / 127)
            # The shipped file is exactly this copy of its bare self.
            with open(out, "rb") as a, open(source, "rb") as b:
                self.assertEqual(a.read(), b.read())
            with self.assertRaises(SystemExit):
                captioner.add_classifier_to(out, os.path.join(tmp, "again.gguf"), "q8_0")
