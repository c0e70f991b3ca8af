"""The speech recognizer's character language model (attnlab.nn.char_lm): its step-by-step scores against the
batched forward, its place in the speech GGUF file (attnlab.gguf.speech: `lm.*`, lm_weight), shallow fusion in the
joint search's twin (attnlab.nn.joint_decoding), and its text (attnlab.data.lm_text) keeping every dev transcript
out."""
import math
import os
import tempfile
import unittest
from unittest import mock

import numpy as np
import torch

from attnlab.data import lm_text
from attnlab.gguf import speech
from attnlab.gguf.reader import read_gguf
from attnlab.nn.char_lm import CharLM, LMConfig, text_batch, text_log_prob
from attnlab.nn.decoding import BOS_ID, EOS_ID, PAD_ID
from attnlab.nn.joint_decoding import joint_search
from attnlab.nn.listen_attend_spell import Config, ListenAttendSpell, encode_transcript

SMALL_LAS = dict(enc_hidden=16, dec_hidden=32, emb=32, attn_dim=32, loc_filters=4, loc_width=7, dropout=0.0)
SMALL_LM = dict(emb=8, hidden=16, dropout=0.0)


class CharLMTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.lm = CharLM(LMConfig(**SMALL_LM)).eval()

    def test_batch_layout(self):
        inputs, targets = text_batch(["ab", "c"])
        self.assertEqual(inputs.tolist()[0], [BOS_ID] + encode_transcript("ab"))
        self.assertEqual(targets.tolist()[0], encode_transcript("ab") + [EOS_ID])
        self.assertEqual(inputs.tolist()[1], [BOS_ID] + encode_transcript("c") + [PAD_ID])
        self.assertEqual(targets.tolist()[1], encode_transcript("c") + [EOS_ID, PAD_ID])
        with self.assertRaises(ValueError):
            text_batch(["Not normalized!"])

    def test_steps_score_as_the_batched_forward(self):
        text = "go left"
        inputs, targets = text_batch([text])
        with torch.no_grad():
            log_p = torch.log_softmax(self.lm(inputs)[0], dim=-1)
        batched = float(log_p.gather(1, targets[0][:, None]).sum())
        self.assertAlmostEqual(text_log_prob(self.lm, text), batched, places=4)
        with torch.no_grad():
            loss = float(self.lm.loss(inputs, targets))
        self.assertAlmostEqual(loss, -batched / len(targets[0]), places=5)


class LMInSpeechFileTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.model = ListenAttendSpell(Config(**SMALL_LAS)).eval()
        self.lm = CharLM(LMConfig(**SMALL_LM)).eval()
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "las-lm.gguf")

    def tearDown(self):
        self.dir.cleanup()

    def test_written_and_read_back(self):
        speech.write(self.model, "f32", self.path, lm=self.lm, lm_weight=0.5)
        _, kvs, tensors, _, _ = read_gguf(self.path)
        meta = {k: v for k, _, v in kvs}
        p = speech.ARCH + "."
        self.assertEqual((meta[p + "lm_embedding_size"], meta[p + "lm_hidden_size"]), (8, 16))
        self.assertAlmostEqual(meta[p + "lm_weight"], 0.5)
        names = {t[0] for t in tensors}
        self.assertTrue({"lm.embed.weight", "lm.gru.weight_ih_l0", "lm.gru.weight_hh_l0", "lm.out.weight",
                         "lm.out.bias"} <= names)
        loaded = speech.load(self.path)
        self.assertEqual(loaded.lm_weight, 0.5)
        for key, value in self.lm.state_dict().items():
            self.assertTrue(torch.equal(loaded.lm.state_dict()[key], value), key)
        # The LM is not part of the recognizer's own state.
        self.assertFalse(any(k.startswith("lm.") for k in loaded.state_dict()))

    def test_taken_from_a_speech_file(self):
        speech.write(self.model, "f32", self.path, lm=self.lm, lm_weight=0.5)
        again = os.path.join(self.dir.name, "again.gguf")
        speech.write(self.model, "f32", again, lm=self.path, lm_weight=0.25)
        loaded = speech.load(again)
        self.assertEqual(loaded.lm_weight, 0.25)
        for key, value in self.lm.state_dict().items():
            self.assertTrue(torch.equal(loaded.lm.state_dict()[key], value), key)
        speech.write(self.model, "f32", again)
        with self.assertRaisesRegex(ValueError, "holds no language model"):
            speech.write(self.model, "f32", self.path, lm=again)

    def test_a_file_without_it(self):
        speech.write(self.model, "f32", self.path)
        loaded = speech.load(self.path)
        self.assertIsNone(loaded.lm)
        self.assertEqual(loaded.lm_weight, 0.0)

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "lm_weight needs an lm"):
            speech.write(self.model, "f32", self.path, lm_weight=0.5)
        for bad in (-0.1, speech.MAX_LM_WEIGHT + 0.5):
            with self.assertRaisesRegex(ValueError, "lm_weight must be in"):
                speech.write(self.model, "f32", self.path, lm=self.lm, lm_weight=bad)

    def test_fusion_in_the_joint_search(self):
        feats = np.random.default_rng(0).normal(size=(60, 13)).astype(np.float32)
        plain = joint_search(self.model, feats, beam=3, ctc_weight=0.3)[0]
        self.assertEqual(joint_search(self.model, feats, beam=3, ctc_weight=0.3, lm=self.lm, lm_weight=0.0)[0], plain)
        with self.assertRaisesRegex(ValueError, "needs an lm"):
            joint_search(self.model, feats, beam=3, ctc_weight=0.3, lm_weight=0.5)
        # A weight so large that the LM writes alone: the greedy search then spells the LM's own best string, up to
        # its </s> or the search's length limit (2 characters per annotation + 10).
        ids = joint_search(self.model, feats, beam=1, ctc_weight=0.0, lm=self.lm, lm_weight=1e6)[0]
        limit = int(2.0 * (len(feats) // 4) + 10)
        h, last, expected = self.lm.initial(), BOS_ID, []
        while len(expected) < limit:
            log_p, h = self.lm.step(h, last)
            log_p[[PAD_ID, 1, BOS_ID]] = -math.inf
            last = int(log_p.argmax())
            if last == EOS_ID:
                break
            expected.append(last)
        self.assertTrue(expected, "the untrained LM writes something before </s>")
        self.assertEqual(ids, expected)


class LMTextTest(unittest.TestCase):
    def test_dev_transcripts_are_kept_out(self):
        dev = {"source": "an4", "split": "dev", "transcript": "go left"}
        train = {"source": "an4", "split": "train", "transcript": "stop now"}
        synth_dev = {"source": "synth", "split": "dev", "transcript": "tom is tired"}
        patches = {
            "an4_utterances": lambda *a: [dev, train],
            "fsdd_utterances": lambda *a: [{"split": "dev", "transcript": "six"}],
            "synthetic_utterances": lambda *a: [synth_dev],
            "ljspeech_utterances": lambda *a: [{"split": "dev", "transcript": "the roman type"}],
            "pocketsphinx_utterances": lambda *a: [{"split": "dev", "transcript": "hello pocket"}],
            "ljspeech_text_pool": lambda *a: ["The roman type.", "Printing is an art.", "Tom is tired."],
            "tatoeba_english": lambda *a: ["How are you?", "Six!", "A woodchuck chucks wood."],
        }
        with mock.patch.multiple(lm_text, **patches):
            train_lines, dev_lines = lm_text.lm_texts(seed=1, generated=3)
        texts = set(train_lines) | set(dev_lines)
        for kept_out in ("go left", "six", "tom is tired", "the roman type", "hello pocket",
                         "a woodchuck chucks wood"):
            self.assertNotIn(kept_out, texts)
        for kept in ("stop now", "printing is an art", "how are you"):
            self.assertIn(kept, texts)
        # LJ Speech's sentences count twice in training (lj_repeat 2), not at all if they are the LM's dev lines.
        lj_line = "printing is an art"
        self.assertEqual(train_lines.count(lj_line), 0 if lj_line in dev_lines else 2)

    def test_no_synthetic_store_is_refused(self):
        with mock.patch.object(lm_text, "synthetic_utterances", lambda *a: []):
            with self.assertRaises(SystemExit):
                lm_text.held_out_transcripts("/nonexistent")


if __name__ == "__main__":
    unittest.main()
