"""Sphinx-compatible MFCC front end, the twin of src/attnlab/audio/features.cpp (docs/speech.md).

It computes what `sphinx_fe -samprate 16000 -lowerf 130 -upperf 6800 -nfilt 40 -transform legacy
-remove_noise no -remove_silence no` computes (sphinxbase fe_sigproc.c, float build), with the same precision
choices: the signal path (pre-emphasis, Hamming window, FFT, power spectrum, filter sums, log) in float64; the
filter edges and weights, the DCT's cosines and the cepstra's running sums in float32, as sphinxbase stores them.

    samples (16 kHz, float in [-1, 1], scaled by 32768 to sphinx's int16 range)
      -> frames of 410 samples every 160 (frame t starts at sample 160·t), pre-emphasis 0.97 across frames
      -> Hamming window (symmetric, 410 points), zero-padded to 512, |FFT|² (257 bins)
      -> 40 triangular mel filters 130..6800 Hz (unit area, edges rounded to FFT bins)
      -> natural log (a filter energy of 0 gives -10)       = log_mel_spectrogram [frames, 40]
      -> legacy DCT to 13 cepstra, c0 first                 = mfcc [frames, 13]

Frames: one per 160 samples while a whole 410-sample window fits, then one last frame of the samples left after
the last whole frame's start + 160, zero-padded (sphinxbase's fe_end_utt): frame_count(n) = 0 for n = 0,
1 for n <= 410, else 2 + (n - 410) // 160.
"""
import struct

import numpy as np

SAMPLE_RATE = 16000
FRAME_SHIFT = 160          # 10 ms: int(16000 / 100 + 0.5)
FRAME_LENGTH = 410         # 25.625 ms: int(0.025625 * 16000 + 0.5)
FFT_SIZE = 512
MEL_BANDS = 40
CEPSTRA = 13
LOWER_HZ = 130.0
UPPER_HZ = 6800.0
PRE_EMPHASIS = float(np.float32(0.97))  # sphinxbase keeps alpha as float32
LOG_FLOOR = -10.0                        # log of a zero filter energy (fe_mel_cep)
INT16_SCALE = 32768.0

f32 = np.float32


def frame_count(n_samples):
    n = int(n_samples)
    if n <= 0:
        return 0
    if n <= FRAME_LENGTH:
        return 1
    return 2 + (n - FRAME_LENGTH) // FRAME_SHIFT


def _mel(hz):
    # fe_mel: float32 in, float64 arithmetic, float32 out
    return f32(2595.0 * np.log10(1.0 + float(f32(hz)) / 700.0))


def _mel_inverse(mel):
    return f32(700.0 * (10.0 ** (float(f32(mel)) / 2595.0) - 1.0))


def mel_filterbank():
    """fe_build_melfilters: -> (spec_start [40] int, weights list of float32 arrays). Filter i sums
    power[spec_start[i] + j] * weights[i][j]."""
    mel_min, mel_max = _mel(LOWER_HZ), _mel(UPPER_HZ)
    mel_bw = f32((mel_max - mel_min) / f32(MEL_BANDS + 1))
    fft_freq = f32(f32(SAMPLE_RATE) / f32(FFT_SIZE))
    starts, weights = [], []
    for i in range(MEL_BANDS):
        freqs = []
        for j in range(3):
            hz = _mel_inverse(f32(f32(i + j) * mel_bw + mel_min))
            hz = f32(int(float(f32(hz / fft_freq)) + 0.5)) * fft_freq  # rounded to a DFT point
            freqs.append(f32(hz))
        start, width = -1, 0
        for j in range(FFT_SIZE // 2 + 1):
            hz = f32(f32(j) * fft_freq)
            if hz < freqs[0]:
                continue
            if hz > freqs[2] or j == FFT_SIZE // 2:
                width = j - start
                break
            if start == -1:
                start = j
        w = np.zeros(width, dtype=f32)
        for j in range(width):
            hz = f32(f32(start + j) * fft_freq)
            lo = f32((hz - freqs[0]) / (freqs[1] - freqs[0]))
            hi = f32((freqs[2] - hz) / (freqs[2] - freqs[1]))
            area = f32(f32(2) / (freqs[2] - freqs[0]))
            lo, hi = f32(lo * area), f32(hi * area)
            w[j] = lo if lo < hi else hi
        starts.append(start)
        weights.append(w)
    return np.array(starts), weights


def mel_matrix():
    """The filterbank as a dense float64 matrix [257, 40] (float32 weights)."""
    starts, weights = mel_filterbank()
    m = np.zeros((FFT_SIZE // 2 + 1, MEL_BANDS))
    for i, (s, w) in enumerate(zip(starts, weights)):
        m[s:s + len(w), i] = w.astype(np.float64)
    return m


def dct_matrix():
    """fe_compute_melcosine: cos(π/40 · i · (j + 0.5)) in float32, [13, 40]."""
    i = np.arange(CEPSTRA)[:, None]
    j = np.arange(MEL_BANDS)[None, :]
    return np.cos(np.pi / MEL_BANDS * i * (j + 0.5)).astype(f32)


def hamming_window():
    """fe_create_hamming: symmetric over 410 points (sphinxbase stores the first half and mirrors it)."""
    half = np.arange(FRAME_LENGTH // 2)
    w = 0.54 - 0.46 * np.cos(2 * np.pi * half / (FRAME_LENGTH - 1.0))
    return np.concatenate([w, w[::-1]])


def _check_samples(samples):
    x = np.asarray(samples)
    if x.ndim != 1:
        raise ValueError(f"audio features: samples must be one-dimensional, got shape {x.shape}")
    x = x.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise ValueError(f"audio features: sample {bad[0]} is {x[bad[0]]}: samples must be finite")
    return x


def _frames(samples):
    """samples [n] float32 -> windowed, pre-emphasized frames [T, 512] float64."""
    x = samples.astype(np.float64) * INT16_SCALE
    n = x.size
    t_count = frame_count(n)
    out = np.zeros((t_count, FFT_SIZE))
    if t_count == 0:
        return out
    previous = np.concatenate([[0.0], x[:-1]])
    emphasized = x - previous * PRE_EMPHASIS
    window = hamming_window()
    for t in range(t_count):
        start = t * FRAME_SHIFT  # the last frame holds what is left from there (fewer than 410 samples)
        seg = emphasized[start:start + FRAME_LENGTH]
        out[t, :seg.size] = seg
    out[:, :FRAME_LENGTH] *= window
    return out


def power_spectrum(samples):
    """samples [n] -> |FFT|² [T, 257] float64."""
    frames = _frames(_check_samples(samples))
    spectrum = np.fft.rfft(frames, n=FFT_SIZE, axis=1)
    return spectrum.real ** 2 + spectrum.imag ** 2


def _log_filter_energies(power):
    energies = power @ mel_matrix()
    out = np.full(energies.shape, LOG_FLOOR)
    positive = energies > 0
    out[positive] = np.log(energies[positive])
    return out


def _legacy_dct(log_mel):
    """fe_spec2cep: log_mel [T, 40] float64 -> [T, 13] float32, the running sums rounded to float32 as sphinxbase's
    mfcc_t accumulator rounds them."""
    t_count = log_mel.shape[0]
    cep = np.zeros((t_count, CEPSTRA), dtype=f32)
    c0 = (log_mel[:, 0] / 2).astype(f32)
    for j in range(1, MEL_BANDS):
        c0 = (c0.astype(np.float64) + log_mel[:, j]).astype(f32)
    cep[:, 0] = (c0.astype(np.float64) / MEL_BANDS).astype(f32)
    cosines = dct_matrix().astype(np.float64)
    acc = np.zeros((t_count, CEPSTRA - 1), dtype=f32)
    for j in range(MEL_BANDS):
        beta = 1.0 if j == 0 else 2.0
        acc = (acc.astype(np.float64) + log_mel[:, j:j + 1] * cosines[None, 1:, j] * beta).astype(f32)
    cep[:, 1:] = (acc.astype(np.float64) / (MEL_BANDS * 2.0)).astype(f32)
    return cep


def features(samples):
    """16 kHz samples [n] -> (mfcc [T, 13] float32, log_mel [T, 40] float32)."""
    log_mel = _log_filter_energies(power_spectrum(samples))
    return _legacy_dct(log_mel), log_mel.astype(f32)


def mfcc(samples):
    return features(samples)[0]


def log_mel_spectrogram(samples):
    return features(samples)[1]


def cepstral_mean_normalize(cepstra):
    """Per-utterance CMN: each coefficient minus its mean over the frames (float64 mean, float32 result)."""
    c = np.asarray(cepstra, dtype=f32)
    if c.ndim != 2:
        raise ValueError(f"cepstral mean normalisation: expected [frames, coefficients], got shape {c.shape}")
    if c.shape[0] == 0:
        return c.copy()
    return (c.astype(np.float64) - c.astype(np.float64).mean(axis=0)).astype(f32)


def parse_sphinx_mfc(data, coefficients=CEPSTRA):
    """Sphinx .mfc bytes -> [frames, coefficients] float32: an int32 count N then N float32 values, in the byte
    order for which 4 + 4·N is the file size (AN4 is big-endian, sphinx_fe writes the machine's order)."""
    data = bytes(data)
    if len(data) < 4:
        raise ValueError(f"Sphinx .mfc: {len(data)} bytes is too short for the 4-byte header")
    for order in (">", "<"):
        (count,) = struct.unpack(order + "i", data[:4])
        if count >= 0 and 4 + 4 * count == len(data):
            break
    else:
        raise ValueError(f"Sphinx .mfc: the header's value count matches the file size ({len(data)} bytes) "
                         "in neither byte order")
    if count % coefficients:
        raise ValueError(f"Sphinx .mfc: {count} values are not a whole number of {coefficients}-value frames")
    values = np.frombuffer(data, dtype=order + "f4", offset=4, count=count).astype(f32)
    return values.reshape(-1, coefficients)


def read_sphinx_mfc(path, coefficients=CEPSTRA):
    with open(path, "rb") as f:
        return parse_sphinx_mfc(f.read(), coefficients)
