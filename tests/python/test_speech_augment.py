"""attnlab.audio.augment: the cepstra <-> smoothed log-mel maps match the front end's legacy DCT, the identity
settings change nothing, a warp moves a spectral peak the way a longer or shorter vocal tract does, a mask flattens
its bands over time, narrowband drops the bands above 4 kHz as an 8 kHz recording does, draws are reproducible from
the seed, and the trainer's batches carry them (narrowband never on FSDD, which is an 8 kHz recording).

    PYTHONPATH=python /usr/bin/python3 -m unittest tests.python.test_speech_augment
"""
import random
import unittest

import numpy as np

from attnlab.audio import augment as aug
from attnlab.audio import features
from attnlab.train import speech as trainer


def smooth_log_mel(rng, frames=50):
    """Random log-mel frames with a spectral envelope (a few broad bumps), as speech has."""
    bands = np.arange(features.MEL_BANDS)
    out = np.zeros((frames, features.MEL_BANDS))
    for t in range(frames):
        for _ in range(3):
            centre, width, height = rng.uniform(0, 40), rng.uniform(2, 5), rng.uniform(1, 4)
            out[t] += height * np.exp(-0.5 * ((bands - centre) / width) ** 2)
    return out


def peak_band(log_mel):
    bands = np.arange(features.MEL_BANDS)
    return float((log_mel * bands).sum() / log_mel.sum())


class LegacyDctMap(unittest.TestCase):
    def test_matches_the_front_ends_dct(self):
        log_mel = np.random.default_rng(1).normal(5.0, 3.0, size=(20, features.MEL_BANDS))
        np.testing.assert_allclose(aug.to_cepstra(log_mel), features._legacy_dct(log_mel), rtol=1e-5, atol=1e-5)

    def test_round_trip_keeps_the_cepstra(self):
        cepstra = np.random.default_rng(2).normal(size=(30, features.CEPSTRA)).astype(np.float32)
        np.testing.assert_allclose(aug.to_cepstra(aug.to_log_mel(cepstra)), cepstra, atol=1e-5)
        np.testing.assert_allclose(aug.warp_bands(cepstra, 1.0), cepstra, atol=1e-5)
        np.testing.assert_allclose(aug.mask_bands(cepstra, 10, 0), cepstra, atol=1e-5)


class Warp(unittest.TestCase):
    def test_moves_a_peak_by_the_factor(self):
        bands = np.arange(features.MEL_BANDS)
        log_mel = np.tile(4.0 * np.exp(-0.5 * ((bands - 20) / 3.0) ** 2), (5, 1))
        cepstra = aug.to_cepstra(log_mel)
        before = peak_band(aug.to_log_mel(cepstra))
        longer = peak_band(aug.to_log_mel(aug.warp_bands(cepstra, 1.1)))
        shorter = peak_band(aug.to_log_mel(aug.warp_bands(cepstra, 0.9)))
        self.assertAlmostEqual(before, 20.0, delta=0.5)
        self.assertAlmostEqual(longer, 20.0 / 1.1, delta=0.6)
        self.assertAlmostEqual(shorter, 20.0 / 0.9, delta=0.6)

    def test_refuses_a_non_positive_factor(self):
        with self.assertRaises(ValueError):
            aug.warp_bands(np.zeros((3, features.CEPSTRA)), 0.0)
        with self.assertRaises(ValueError):
            aug.warp_bands(np.zeros((3, features.CEPSTRA)), float("nan"))


class Mask(unittest.TestCase):
    def test_flattens_its_bands_over_time(self):
        log_mel = smooth_log_mel(np.random.default_rng(3))
        cepstra = aug.to_cepstra(log_mel)
        before = aug.to_log_mel(cepstra)[:, 12:20].var(axis=0).mean()
        after = aug.to_log_mel(aug.mask_bands(cepstra, 12, 8))[:, 12:20].var(axis=0).mean()
        untouched = aug.to_log_mel(aug.mask_bands(cepstra, 12, 8))[:, 30:].var(axis=0).mean()
        self.assertLess(after, 0.5 * before)
        self.assertGreater(untouched, 0.5 * aug.to_log_mel(cepstra)[:, 30:].var(axis=0).mean())

    def test_refuses_bands_outside_the_40(self):
        for start, width in ((-1, 2), (38, 3), (0, -1)):
            with self.assertRaises(ValueError):
                aug.mask_bands(np.zeros((3, features.CEPSTRA)), start, width)


class Narrowband(unittest.TestCase):
    def test_drops_the_bands_above_4_khz_below_band_30(self):
        log_mel = smooth_log_mel(np.random.default_rng(9)) + 8.0
        narrow = aug.to_log_mel(aug.narrowband(aug.to_cepstra(log_mel)))
        smooth = aug.to_log_mel(aug.to_cepstra(log_mel))
        upper = slice(aug.NARROWBAND_EDGE + 3, None)
        drop = (smooth[:, aug.NARROWBAND_EDGE:aug.NARROWBAND_EDGE + 1] - narrow[:, upper]).mean(axis=0)
        # 13 cepstra hold a smoothed spectrum, so the edge is soft: from band 33 on within a log unit of the drops.
        np.testing.assert_allclose(drop, aug.NARROWBAND_DROPS[2:], atol=1.0)
        np.testing.assert_allclose(narrow[:, :24], smooth[:, :24], atol=1.0)

    def test_an_8_khz_spectrum_is_nearly_unchanged(self):
        log_mel = smooth_log_mel(np.random.default_rng(10)) + 8.0
        log_mel[:, aug.NARROWBAND_EDGE + 1:] = log_mel[:, aug.NARROWBAND_EDGE:aug.NARROWBAND_EDGE + 1] - aug.NARROWBAND_DROPS
        cepstra = aug.to_cepstra(log_mel)
        self.assertLess(np.abs(aug.narrowband(cepstra) - cepstra).max(), 0.1 * np.abs(cepstra).max())

    def test_augment_takes_its_share(self):
        cepstra = aug.to_cepstra(smooth_log_mel(np.random.default_rng(11)) + 8.0)
        np.testing.assert_allclose(aug.augment(cepstra, random.Random(0), narrowband_share=1.0), aug.narrowband(cepstra))
        self.assertIs(aug.augment(cepstra, random.Random(0), narrowband_share=0.0), cepstra)
        rng = random.Random(3)
        changed = sum(aug.augment(cepstra, rng, narrowband_share=0.3) is not cepstra for _ in range(1000))
        self.assertGreater(changed, 240)
        self.assertLess(changed, 360)


class Augment(unittest.TestCase):
    def test_nothing_asked_returns_the_input(self):
        cepstra = np.ones((4, features.CEPSTRA), dtype=np.float32)
        self.assertIs(aug.augment(cepstra, random.Random(0)), cepstra)

    def test_draws_follow_the_seed(self):
        cepstra = aug.to_cepstra(smooth_log_mel(np.random.default_rng(4)))
        first = aug.augment(cepstra, random.Random(7), warp=0.1, freq_masks=2)
        again = aug.augment(cepstra, random.Random(7), warp=0.1, freq_masks=2)
        other = aug.augment(cepstra, random.Random(8), warp=0.1, freq_masks=2)
        np.testing.assert_array_equal(first, again)
        self.assertEqual(first.shape, cepstra.shape)
        self.assertEqual(first.dtype, np.float32)
        self.assertGreater(np.abs(first - other).max(), 1e-3)


class TrainerBatches(unittest.TestCase):
    class Store:
        def __init__(self, frames):
            self.frames = frames

        def features(self, i):
            return self.frames[i]

    def test_pad_features_augments_only_with_an_rng(self):
        rng = np.random.default_rng(5)
        frames = [aug.to_cepstra(smooth_log_mel(rng, frames=n)) for n in (30, 20)]
        stores = {"an4": self.Store(frames)}
        items = [("an4", 0, 30, [1]), ("an4", 1, 20, [2])]
        plain, lengths = trainer.pad_features(stores, items)
        np.testing.assert_array_equal(plain[0].numpy(), frames[0])
        np.testing.assert_array_equal(plain[1, :20].numpy(), frames[1])
        self.assertEqual(lengths.tolist(), [30, 20])
        warped, _ = trainer.pad_features(stores, items, random.Random(1), warp=0.1, freq_masks=1)
        self.assertGreater(float((warped[0] - plain[0]).abs().max()), 1e-3)
        self.assertEqual(float(warped[1, 20:].abs().max()), 0.0)
        self.assertTrue(bool(warped.isfinite().all()))

    def test_narrowband_spares_the_8_khz_recordings(self):
        rng = np.random.default_rng(6)
        frames = [aug.to_cepstra(smooth_log_mel(rng, frames=25) + 8.0)]
        stores = {"an4": self.Store(frames), "fsdd": self.Store(frames)}
        items = [("an4", 0, 25, [1]), ("fsdd", 0, 25, [1])]
        narrow, _ = trainer.pad_features(stores, items, random.Random(1), narrowband=1.0)
        np.testing.assert_allclose(narrow[0].numpy(), aug.narrowband(frames[0]), atol=1e-6)
        np.testing.assert_array_equal(narrow[1].numpy(), frames[0])


if __name__ == "__main__":
    unittest.main()
