"""The speech front end (python/attnlab/audio) against Debian's sphinx_fe on real speech, AN4's feature statistics,
and the committed golden fixtures; plus the WAV reader, the resampler and the .mfc reader on their own.

    PYTHONPATH=python /usr/bin/python3 -m unittest tests.python.test_audio_features -v

The sphinx_fe tests run on the 10 WAVs of Debian's pocketsphinx-testdata and on LJ Speech FLACs from
../shared/data/speech converted to WAV with sox; they are skipped where those are not installed.
ATTNLAB_AUDIO_REPORT=1 prints the per-coefficient differences (docs/speech.md quotes them).
"""
import contextlib
import glob
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from attnlab.audio import features as F
from attnlab.audio import resample as R
from attnlab.audio import wav as W

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "audio")
POCKETSPHINX = "/usr/share/pocketsphinx/test/data"
SPEECH_DATA = os.path.join(ROOT, "..", "shared", "data", "speech")
LJ_CLIPS = ["LJ001-0001", "LJ001-0002", "LJ002-0100"]
# Per-coefficient std of AN4's training MFCCs after per-utterance CMN (c0..c12; ../shared/data/README.md)
AN4_CMN_STD = np.array([2.90, 0.85, 0.42, 0.48, 0.31, 0.24, 0.22, 0.19, 0.18, 0.18, 0.14, 0.14, 0.15])
SPHINX_FE_ARGS = ["-samprate", "16000", "-lowerf", "130", "-upperf", "6800", "-nfilt", "40", "-transform",
                  "legacy", "-remove_noise", "no", "-remove_silence", "no"]
REPORT = os.environ.get("ATTNLAB_AUDIO_REPORT") == "1"


def sphinx_fe(wav_path, tmp):
    out = os.path.join(tmp, "out.mfc")
    subprocess.run(["sphinx_fe", "-i", wav_path, "-o", out] + SPHINX_FE_ARGS, check=True, capture_output=True)
    return F.read_sphinx_mfc(out)


def reference_wavs(tmp):
    """(label, path) of every real 16 kHz 16-bit WAV sphinx_fe can read: pocketsphinx's and sox-converted LJ."""
    paths = [(os.path.relpath(p, POCKETSPHINX), p)
             for p in sorted(glob.glob(os.path.join(POCKETSPHINX, "cards", "*.wav")) +
                             glob.glob(os.path.join(POCKETSPHINX, "librivox", "*.wav")))]
    if shutil.which("sox"):
        for clip in LJ_CLIPS:
            flac = os.path.join(SPEECH_DATA, "ljspeech", "wavs", clip + ".flac")
            if os.path.exists(flac):
                wav = os.path.join(tmp, clip + ".wav")
                subprocess.run(["sox", flac, "-b", "16", wav], check=True, capture_output=True)
                paths.append(("ljspeech/" + clip, wav))
    return paths


@unittest.skipUnless(shutil.which("sphinx_fe") and os.path.isdir(POCKETSPHINX),
                     "needs sphinx_fe (sphinxbase-utils) and pocketsphinx-testdata")
class MatchesSphinxFe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.pairs = []  # (label, ours [T, 13], sphinx_fe's [T, 13])
        for label, path in reference_wavs(cls.tmp):
            samples, rate = W.read_wav(path)
            cls.pairs.append((label, F.mfcc(samples), sphinx_fe(path, cls.tmp)))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_clips_are_there(self):
        self.assertGreaterEqual(len(self.pairs), 10)

    def test_same_frames_and_cepstra(self):
        # sphinx_fe runs the same arithmetic (double signal path, float sums): a few float ulps apart
        for label, ours, ref in self.pairs:
            with self.subTest(clip=label):
                self.assertEqual(ours.shape, ref.shape)
                self.assertLess(np.abs(ours - ref).max(), 1e-4)

    def test_after_cmn_the_difference_is_far_below_an4_spread(self):
        diffs = np.concatenate([np.abs(F.cepstral_mean_normalize(o) - F.cepstral_mean_normalize(r))
                                for _, o, r in self.pairs])
        mean, worst = diffs.mean(axis=0), diffs.max(axis=0)
        if REPORT:
            print(f"\n{len(self.pairs)} clips, {len(diffs)} frames; per coefficient c0..c12 after CMN:")
            print("  max |diff|  ", " ".join(f"{v:.1e}" for v in worst))
            print("  mean |diff| ", " ".join(f"{v:.1e}" for v in mean))
            print("  mean / AN4 std", " ".join(f"{v:.1e}" for v in mean / AN4_CMN_STD))
        np.testing.assert_array_less(mean, 0.05 * AN4_CMN_STD)
        np.testing.assert_array_less(worst, 1e-3 * AN4_CMN_STD)

    def test_statistics_are_on_an4_scale(self):
        cmn = np.concatenate([F.cepstral_mean_normalize(o) for _, o, _ in self.pairs])
        std = cmn.std(axis=0)
        if REPORT:
            print("\nCMN std c0..c12 over these clips:", " ".join(f"{v:.2f}" for v in std))
        ratio = std / AN4_CMN_STD
        self.assertTrue(np.all((ratio > 0.5) & (ratio < 2.5)), f"std / AN4 std = {ratio.round(2)}")
        means = np.concatenate([o for _, o, _ in self.pairs]).mean(axis=0)
        self.assertTrue(5.0 < means[0] < 13.0, f"c0 averages {means[0]:.2f} (AN4: 9.0)")


class Framing(unittest.TestCase):
    def test_frame_count(self):
        self.assertEqual([F.frame_count(n) for n in (0, 1, 410, 411, 569, 570, 16000)], [0, 1, 1, 2, 2, 3, 99])
        self.assertEqual(F.mfcc(np.zeros(571, np.float32)).shape, (3, 13))
        self.assertEqual(F.log_mel_spectrogram(np.zeros(0, np.float32)).shape, (0, 40))

    @unittest.skipUnless(shutil.which("sphinx_fe"), "needs sphinx_fe")
    def test_frame_count_matches_sphinx_fe_from_ten_frames(self):
        # Below 10 frames sphinx_fe's voice-activity start (-vad_startspeech 10, active even with
        # -remove_silence no) holds frames back; from there on the counts agree.
        rng = np.random.default_rng(0)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.wav")
            for n in (1850, 2171, 4096, 16000, 16005, 33333):
                x = rng.uniform(-0.1, 0.1, n)
                with open(path, "wb") as f:
                    f.write(W.wav_bytes(x, 16000, "pcm16"))
                samples, _ = W.read_wav(path)
                with self.subTest(n=n):
                    ref = sphinx_fe(path, tmp)
                    ours = F.mfcc(samples)
                    self.assertEqual(len(ours), len(ref))
                    self.assertLess(np.abs(ours - ref).max(), 1e-4)

    def test_non_finite_samples_are_refused(self):
        x = np.zeros(100, np.float32)
        x[7] = np.nan
        with self.assertRaisesRegex(ValueError, "sample 7 is nan"):
            F.mfcc(x)


class Golden(unittest.TestCase):
    def test_committed_fixtures_are_what_the_script_makes(self):
        # python/attnlab/golden/audio.py is deterministic: the committed files must be its current output
        from attnlab.golden import audio as golden
        with tempfile.TemporaryDirectory() as tmp:
            out, seeds = os.path.join(tmp, "audio"), os.path.join(tmp, "seeds")
            os.makedirs(out)
            if not os.path.exists(golden.CARDS):  # without pocketsphinx-testdata the script keeps the clip it finds
                shutil.copyfile(os.path.join(FIXTURES, "speech.wav"), os.path.join(out, "speech.wav"))
            argv = sys.argv
            sys.argv = ["audio", "--out", out, "--seeds", seeds]
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    golden.main()
            finally:
                sys.argv = argv
            for name in sorted(os.listdir(out)):
                with self.subTest(file=name):
                    with open(os.path.join(out, name), "rb") as a, open(os.path.join(FIXTURES, name), "rb") as b:
                        self.assert_same_fixture(name, a.read(), b.read())
            for name in sorted(os.listdir(seeds)):
                with self.subTest(seed=name):
                    committed = os.path.join(ROOT, "fuzz", "corpus", "fuzz_wav", name)
                    with open(os.path.join(seeds, name), "rb") as a, open(committed, "rb") as b:
                        self.assert_same_fixture(name, a.read(), b.read())

    def assert_same_fixture(self, name, made, committed):
        self.assertEqual(made, committed, f"{name} differs: rerun python/attnlab/golden/audio.py")


class WavReader(unittest.TestCase):
    def test_every_encoding_round_trips(self):
        x = np.array([0.0, 0.5, -0.5, 0.25, -1.0])
        for encoding in ("pcm8", "pcm16", "pcm24", "pcm32", "float32", "float64"):
            for extensible in (False, True):
                with self.subTest(encoding=encoding, extensible=extensible):
                    samples, rate = W.parse_wav(W.wav_bytes(x, 22050, encoding, extensible=extensible))
                    self.assertEqual(rate, 22050)
                    np.testing.assert_array_equal(samples, x.astype(np.float32))

    def test_stereo_is_mixed_and_floats_clamped(self):
        stereo = np.array([[0.5, -0.25], [2.0, 0.0]])
        samples, _ = W.parse_wav(W.wav_bytes(stereo, 16000, "float32"))
        np.testing.assert_array_equal(samples, np.array([0.125, 0.5], np.float32))

    def test_errors_name_the_problem(self):
        good = W.wav_bytes(np.zeros(4), 16000, "pcm16")
        alaw = bytearray(good)
        alaw[20:22] = struct.pack("<H", 6)
        cases = [
            (b"RIFF", "too short for a RIFF/WAVE header"),
            (b"not a wav file, just some text", "not a RIFF/WAVE file"),
            (b"RF64" + good[4:], "RF64"),
            (bytes(alaw), r"unsupported encoding A-law \(format 0x0006\)"),
            (good[:-2], r"truncated data chunk \(8 bytes declared, 6 present\)"),
            (good[:30], r"truncated fmt chunk"),
            (good[:36], "no data chunk"),
        ]
        for data, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(W.WavError, message):
                    W.parse_wav(data)
        nan = W.wav_bytes(np.array([0.0, np.nan]), 16000, "float32")
        with self.assertRaisesRegex(W.WavError, "sample 1 is not finite"):
            W.parse_wav(nan)


class Resampler(unittest.TestCase):
    def test_identity_and_refusals(self):
        x = np.linspace(-1, 1, 101).astype(np.float32)
        np.testing.assert_array_equal(R.resample_to_16k(x, 16000), x)
        for rate in (7999, 48001, 96000):
            with self.assertRaisesRegex(ValueError, f"sample rate {rate} Hz is outside 8000..48000"):
                R.resample_to_16k(x, rate)
        self.assertEqual(R.output_length(44100, 44100), 16000)

    def test_passband_and_stopband(self):
        for rate in (22050, 44100, 48000, 44101):  # 44101 Hz: 16000 phases, weights computed per output
            t = np.arange(rate // 5) / rate
            for hz, passes in ((1000, True), (6800, True), (9000, False), (10500, False)):
                with self.subTest(rate=rate, hz=hz):
                    y = R.resample_to_16k(0.5 * np.sin(2 * np.pi * hz * t), rate)
                    rms = np.sqrt(np.mean(y[len(y) // 4: -len(y) // 4].astype(np.float64) ** 2))
                    if passes:
                        self.assertAlmostEqual(rms, 0.5 / np.sqrt(2), delta=1e-3)
                    else:
                        self.assertLess(rms, 0.5e-3)


class SphinxMfcReader(unittest.TestCase):
    def test_both_byte_orders(self):
        cep = np.arange(26, dtype=np.float32).reshape(2, 13) / 7
        little = struct.pack("<i", 26) + cep.astype("<f4").tobytes()
        big = struct.pack(">i", 26) + cep.astype(">f4").tobytes()
        np.testing.assert_array_equal(F.parse_sphinx_mfc(little), cep)
        np.testing.assert_array_equal(F.parse_sphinx_mfc(big), cep)
        with self.assertRaisesRegex(ValueError, "in neither byte order"):
            F.parse_sphinx_mfc(little[:-4])
        with self.assertRaisesRegex(ValueError, "not a whole number of 13-value frames"):
            F.parse_sphinx_mfc(struct.pack("<i", 12) + bytes(48))

    @unittest.skipUnless(os.path.isdir(os.path.join(SPEECH_DATA, "an4")), "needs ../shared/data/speech/an4")
    def test_an4_statistics_match_the_readme(self):
        # Reading all 948 AN4 files and normalising them gives the README's per-coefficient spread and c0 mean.
        an4 = os.path.join(SPEECH_DATA, "an4")
        with open(os.path.join(an4, "an4_train.fileids")) as f:
            ids = [line.strip() for line in f if line.strip()]
        self.assertEqual(len(ids), 948)
        raw = [F.read_sphinx_mfc(os.path.join(an4, "train", i + ".mfc")) for i in ids]
        self.assertEqual(sum(len(r) for r in raw), 253682)
        cmn = np.concatenate([F.cepstral_mean_normalize(r) for r in raw])
        np.testing.assert_allclose(cmn.std(axis=0), AN4_CMN_STD, atol=0.006)
        self.assertAlmostEqual(float(np.concatenate(raw)[:, 0].mean()), 9.0, delta=0.1)


if __name__ == "__main__":
    unittest.main()
