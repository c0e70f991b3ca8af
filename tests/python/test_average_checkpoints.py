"""attnlab.train.average and the trainers' epoch files (attnlab.train.translator keep_epoch_model).

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t . -p 'test_average_checkpoints.py'
"""
import argparse
import os
import tempfile
import unittest

import torch


from attnlab.gguf import transformer as transformer_gguf
from attnlab.nn.transformer import Config, Transformer
from attnlab.paths import ROOT
from attnlab.train import average as average_checkpoints
from attnlab.train.translator import keep_epoch_model

CONFIG = Config(src_vocab=11, tgt_vocab=13, d_model=8, heads=2, enc_layers=1, dec_layers=1, ff=16)


def save_epochs(directory, epochs, keep):
    """Models whose every weight equals the epoch number, saved through the trainers' own keep_epoch_model."""
    args = argparse.Namespace(out=directory, keep_epochs=keep)
    model = Transformer(CONFIG)
    for epoch in epochs:
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float(epoch))
        keep_epoch_model(args, CONFIG, model, {"pair": "en-de"},
                         {"epoch": epoch, "best_bleu": 99.0, "history": [{"epoch": epoch, "val_bleu": float(epoch)}]})


class AverageCheckpoints(unittest.TestCase):
    def test_trainer_keeps_only_the_last_epochs(self):
        with tempfile.TemporaryDirectory() as d:
            save_epochs(d, range(1, 8), keep=3)
            self.assertEqual(sorted(average_checkpoints.epoch_files(d)), [5, 6, 7])

    def test_mean_of_the_last_n_loads_into_the_model(self):
        with tempfile.TemporaryDirectory() as d:
            save_epochs(d, range(1, 6), keep=5)
            out = os.path.join(d, "averaged.pt")
            average_checkpoints.main(["--dir", d, "--last", "3", "--out", out])
            ck = torch.load(out, map_location="cpu")
            self.assertEqual(ck["averaged_from"], ["epoch-3.pt", "epoch-4.pt", "epoch-5.pt"])
            self.assertEqual(ck["state"]["epoch"], 5)
            self.assertEqual(ck["state"]["best_bleu"], -1.0)      # not validated: no val BLEU in an export
            self.assertEqual(torch.load(os.path.join(d, "epoch-4.pt"))["state"]["best_bleu"], 4.0)
            model = Transformer(Config(**ck["config"]))
            model.load_state_dict(ck["model"])
            for name, p in model.named_parameters():
                self.assertTrue(torch.allclose(p, torch.full_like(p, 4.0)), name)

    def test_missing_epoch_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            save_epochs(d, [1, 2], keep=5)
            with self.assertRaises(SystemExit) as e:
                average_checkpoints.main(["--dir", d, "--epochs", "2", "3", "--out", os.path.join(d, "a.pt")])
            self.assertIn("epoch(s) [3]", str(e.exception))

    def test_different_configurations_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            save_epochs(d, [1], keep=5)
            other = Config(src_vocab=11, tgt_vocab=13, d_model=8, heads=2, enc_layers=1, dec_layers=1, ff=32)
            keep_epoch_model(argparse.Namespace(out=d, keep_epochs=5), other, Transformer(other), {},
                             {"epoch": 2, "history": []})
            with self.assertRaises(SystemExit) as e:
                average_checkpoints.main(["--dir", d, "--out", os.path.join(d, "a.pt")])
            self.assertIn("another model configuration", str(e.exception))

    def test_gguf_files_average_into_a_checkpoint_the_exporter_writes(self):
        # Epochs whose checkpoints are gone survive as shipped or carried f16 files (models/training).
        meta = {"pair": "en-de", "corpus": "broad", "src_lang": "en", "tgt_lang": "de"}
        spm = [os.path.join(ROOT, "models", "tokenizers", f"broad.{lang}.model") for lang in ("en", "de")]
        with tempfile.TemporaryDirectory() as d:
            files = []
            for value in (2.0, 4.0):
                model = Transformer(CONFIG)
                with torch.no_grad():
                    for p in model.parameters():
                        p.fill_(value)
                path = os.path.join(d, f"w{value:g}.f16.gguf")
                writer, _ = transformer_gguf.build_writer(path, CONFIG, model.state_dict(), meta, "f16", *spm)
                writer.write()
                files.append(path)
            out = os.path.join(d, "averaged.pt")
            average_checkpoints.main(["--files", *files, "--out", out])
            ck = torch.load(out, map_location="cpu")
            self.assertEqual(ck["averaged_from"], ["w2.f16.gguf", "w4.f16.gguf"])
            self.assertEqual(ck["meta"]["src_spm"], os.path.join("models", "tokenizers", "broad.en.model"))
            self.assertEqual(ck["state"]["best_bleu"], -1.0)
            for name, p in ck["model"].items():
                self.assertTrue(torch.equal(p, torch.full_like(p, 3.0)), name)
            exported = os.path.join(d, "averaged.f16.gguf")
            transformer_gguf.write(out, "f16", exported)
            model, pair = transformer_gguf.load(exported)
            self.assertEqual(pair, "en-de")
            self.assertTrue(all(torch.equal(p, torch.full_like(p, 3.0)) for p in model.parameters()))


if __name__ == "__main__":
    unittest.main()
