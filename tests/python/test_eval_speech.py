"""attnlab.eval.speech's --confusions report (the digit errors models/speech-las.md quotes): each reference with a
wrong hypothesis, most often wrong first, with its count of utterances and what it was heard as; and the
woodchuck-voices set: the test sentence spoken afresh by each voice, reported voice by voice.

    PYTHONPATH=python /usr/bin/python3 -m unittest tests.python.test_eval_speech
"""
import contextlib
import io
import shutil
import tempfile
import unittest
import wave

from attnlab.data import synthesize_speech as synthetic
from attnlab.eval import speech
from tests.python.needs import needs

TTS_TOOLS = ("espeak-ng", "flite", "text2wave", "sox")


class ConfusionsTest(unittest.TestCase):
    def test_print_confusions(self):
        pairs = [("eight", "six"), ("eight", "six"), ("six", "six"), ("one", "one"), ("tw", "two"), ("two", "two")]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            speech.print_confusions(pairs)
        self.assertEqual(err.getvalue().splitlines(),
                         ["  six: 2 of 3 wrong; heard as 'eight' 2", "  two: 1 of 2 wrong; heard as 'tw' 1"])


class WoodchuckVoicesTest(unittest.TestCase):
    def test_voices_cover_each_engine_and_the_test_voice(self):
        voices = speech.WOODCHUCK_VOICES
        self.assertEqual(len(voices), len(set(voices)))
        self.assertEqual({v.split(":")[0] for v in voices}, {"espeak", "flite", "festival"})
        self.assertEqual(voices[-1], synthetic.TEST_VOICE)
        # Voices heard in training, held-out dev voices and the test voice: the comparison the card draws.
        self.assertEqual({synthetic.VOICE_SPLITS.get(v, "test") for v in voices}, {"train", "dev", "test"})

    def test_print_by_voice(self):
        text = speech.WOODCHUCK_TEXT
        pairs = [(text, text), ("how much", text)]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            speech.print_by_voice(pairs, ["flite:rms", synthetic.TEST_VOICE])
        self.assertEqual(err.getvalue().splitlines(),
                         [f"  flite:rms (dev): CER 0.0%: {text}",
                          f"  {synthetic.TEST_VOICE} (test): CER 88.4%: how much"])

    @needs(all(shutil.which(t) for t in TTS_TOOLS), "the TTS engines and sox (scripts/setup.sh installs them)")
    def test_woodchuck_in_voices_writes_one_clip_per_voice(self):
        with tempfile.TemporaryDirectory() as folder:
            clips = speech.woodchuck_in_voices(folder)
            self.assertEqual([voice for _, _, voice in clips], list(speech.WOODCHUCK_VOICES))
            for path, text, voice in clips:
                self.assertEqual(text, speech.WOODCHUCK_TEXT)
                with wave.open(path, "rb") as w:
                    seconds = w.getnframes() / w.getframerate()
                    self.assertEqual((w.getframerate(), w.getnchannels(), w.getsampwidth()), (16000, 1, 2), voice)
                self.assertTrue(2.0 < seconds < 8.0, f"{voice}: {seconds:.2f} s")


if __name__ == "__main__":
    unittest.main()
