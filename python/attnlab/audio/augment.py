"""Augmentations of stored Sphinx MFCCs in the log-mel domain they came from, for training the recognizer.

The recognizer reads 13 cepstra per frame, and AN4 ships nothing else, so a change of voice or channel cannot be
made on the audio for every source. The 13 cepstra are a linear map of the 40 log mel energies
(attnlab.audio.features._legacy_dct: C = L · D, D [40, 13]), so the smoothed log-mel spectrum L = C · D⁺ can be
changed and mapped back (C' = L' · D; with L' = L, C' = C exactly, since D⁺ · D = I):

- warp_bands: the band axis stretched or squeezed by a factor near 1 (vocal tract length perturbation, Jaitly and
  Hinton 2013): a speaker with a shorter or longer vocal tract, the lever for voices the training data lacks;
- mask_bands: a run of bands set to its mean over the utterance (SpecAugment's frequency masks, Park et al. 2019);
- narrowband: the bands above 4 kHz replaced by what audio recorded at 8 kHz (FSDD's) leaves there once resampled to
  16 kHz: the resampler's leakage, a fixed distance below band 30 (NARROWBAND_DROPS, measured on FSDD's training
  speakers by `python3 -m attnlab.audio.augment --narrowband-profile`), so 16 kHz speech also teaches how it
  sounds through an 8 kHz recording.
"""
import argparse

import numpy as np

from attnlab.audio.features import CEPSTRA, MEL_BANDS, dct_matrix


def legacy_dct_map():
    """-> D [40, 13] float64 with _legacy_dct(L) = L · D (up to its float32 rounding)."""
    cosines = dct_matrix().astype(np.float64)         # [13, 40]
    beta = np.full(MEL_BANDS, 2.0)
    beta[0] = 1.0
    d = np.empty((MEL_BANDS, CEPSTRA))
    d[:, 0] = beta / (2.0 * MEL_BANDS)                 # c0: (L0 / 2 + Σ_{j≥1} Lj) / 40
    d[:, 1:] = (cosines[1:] * beta).T / (2.0 * MEL_BANDS)
    return d


_D = legacy_dct_map()
_D_PINV = np.linalg.pinv(_D)                           # [13, 40]


def to_log_mel(cepstra):
    """cepstra [T, 13] -> the smoothed log mel energies [T, 40] they hold."""
    return np.asarray(cepstra, dtype=np.float64) @ _D_PINV


def to_cepstra(log_mel):
    """log_mel [T, 40] -> cepstra [T, 13] float32."""
    return (np.asarray(log_mel, dtype=np.float64) @ _D).astype(np.float32)


def _warp(log_mel, alpha):
    source = np.clip(np.arange(MEL_BANDS) * alpha, 0, MEL_BANDS - 1)
    low = np.floor(source).astype(int)
    high = np.minimum(low + 1, MEL_BANDS - 1)
    frac = source - low
    return log_mel[:, low] * (1 - frac) + log_mel[:, high] * frac


def _mask(log_mel, start, width):
    log_mel[:, start:start + width] = log_mel[:, start:start + width].mean(axis=0)
    return log_mel


def warp_bands(cepstra, alpha):
    """cepstra [T, 13] -> [T, 13] whose band j holds the input's band j · alpha (linear interpolation, clamped
    at the edges): alpha > 1 moves the spectrum's features to lower bands, as a longer vocal tract does."""
    if not alpha > 0:
        raise ValueError(f"warp_bands: alpha must be positive, got {alpha}")
    return to_cepstra(_warp(to_log_mel(cepstra), alpha))


def mask_bands(cepstra, start, width):
    """cepstra [T, 13] -> [T, 13] with bands [start, start + width) set to their mean over the frames."""
    if not (0 <= start and width >= 0 and start + width <= MEL_BANDS):
        raise ValueError(f"mask_bands: bands [{start}, {start + width}) are outside 0..{MEL_BANDS}")
    return to_cepstra(_mask(to_log_mel(cepstra), start, width))


# Band 30 (3.46-3.93 kHz) is the last one whose whole filter lies below 4 kHz; bands 31..39 of FSDD's training
# speakers' clips lie on average this far below it (natural log of the energy), `--narrowband-profile`'s output.
NARROWBAND_EDGE = 30
NARROWBAND_DROPS = np.array([3.11, 7.55, 7.98, 8.26, 8.48, 8.67, 8.83, 8.98, 9.10])


def _narrowband(log_mel):
    log_mel[:, NARROWBAND_EDGE + 1:] = log_mel[:, NARROWBAND_EDGE:NARROWBAND_EDGE + 1] - NARROWBAND_DROPS
    return log_mel


def narrowband(cepstra):
    """cepstra [T, 13] -> [T, 13] as if the audio had been recorded at 8 kHz: bands above band 30 replaced by band
    30 minus NARROWBAND_DROPS."""
    return to_cepstra(_narrowband(to_log_mel(cepstra)))


def augment(cepstra, rng, warp=0.0, freq_masks=0, max_mask_width=5, narrowband_share=0.0):
    """One random draw of all three, by rng (random.Random): with probability narrowband_share the 8 kHz
    recording's bands (narrowband), then alpha uniform in [1 - warp, 1 + warp], then freq_masks masks of
    0..max_mask_width bands each. None asked for: the input unchanged."""
    narrow = bool(narrowband_share) and rng.random() < narrowband_share
    if not warp and not freq_masks and not narrow:
        return cepstra
    log_mel = to_log_mel(cepstra)
    if narrow:
        log_mel = _narrowband(log_mel)
    if warp:
        log_mel = _warp(log_mel, rng.uniform(1.0 - warp, 1.0 + warp))
    for _ in range(freq_masks):
        width = rng.randint(0, max_mask_width)
        log_mel = _mask(log_mel, rng.randint(0, MEL_BANDS - width), width)
    return to_cepstra(log_mel)


def narrowband_profile():
    """-> the mean of band 30 minus band j (j = 31..39) over the log-mel frames of FSDD's training speakers' clips,
    through the engine's front end (attnlab.data.speech_features), as NARROWBAND_DROPS holds it."""
    from attnlab.audio.features import features
    from attnlab.audio.resample import resample_to_16k
    from attnlab.data import speech
    from attnlab.data.speech_features import read_audio

    differences = []
    for utterance in speech.fsdd_utterances():
        if utterance["split"] != "train":
            continue
        samples, rate = read_audio(utterance["audio"])
        log_mel = features(resample_to_16k(samples, rate))[1].astype(np.float64)
        differences.append(log_mel[:, NARROWBAND_EDGE:NARROWBAND_EDGE + 1] - log_mel[:, NARROWBAND_EDGE + 1:])
    return np.concatenate(differences).mean(axis=0)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--narrowband-profile", action="store_true", help="print NARROWBAND_DROPS, measured")
    if ap.parse_args().narrowband_profile:
        print("NARROWBAND_DROPS = np.array([" + ", ".join(f"{d:.2f}" for d in narrowband_profile()) + "])")
