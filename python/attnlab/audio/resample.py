"""Any rate in 8..48 kHz -> 16 kHz: the twin of src/attnlab/audio/resample.cpp (docs/speech.md).

Band-limited interpolation with a Kaiser-windowed sinc, evaluated at the exact rational position of each output
sample (output n sits at input sample n · rate / 16000; output 0 on input 0). With nyquist = min(rate, 16000) / 2:
    cutoff   fc = 0.94 · nyquist (Hz), so the 6800 Hz the features use is passed and nothing above nyquist
             folds back (the transition band, 0.88..1.0 · nyquist, is what the window's length buys);
    kernel   h(t) = sinc(2 fc t) · kaiser(t / T, β = 8),  t in seconds, |t| < T = 32 / (2 fc)
             (32 zero crossings each side), the weights of each output normalised to sum 1 (a constant stays
             constant, and the DC gain is exactly 1);
    outside  samples before 0 and after the end count as 0;
    length   ceil(n · 16000 / rate) outputs.
16 kHz input is returned unchanged. Arithmetic in float64, result float32.
"""
import math

import numpy as np

TARGET_RATE = 16000
MIN_RATE = 8000
MAX_RATE = 48000
ROLLOFF = 0.94
ZERO_CROSSINGS = 32
KAISER_BETA = 8.0


def check_rate(rate):
    if int(rate) != rate or not MIN_RATE <= rate <= MAX_RATE:
        raise ValueError(f"resample: sample rate {rate} Hz is outside {MIN_RATE}..{MAX_RATE} Hz")
    return int(rate)


def output_length(n_samples, rate):
    return (int(n_samples) * TARGET_RATE + rate - 1) // rate


def _bessel_i0(x):
    # The power series Σ ((x/2)^k / k!)², to the double's precision; the C++ side sums the same series.
    half = x / 2.0
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, 64):
        term = term * (half / k) ** 2
        total = total + term
    return total


def filter_geometry(rate):
    """-> (cutoff Hz, half width T in seconds, taps each side J in input samples)."""
    nyquist = min(rate, TARGET_RATE) / 2.0
    cutoff = ROLLOFF * nyquist
    half_width = ZERO_CROSSINGS / (2.0 * cutoff)
    taps = int(math.ceil(half_width * rate))
    return cutoff, half_width, taps


def kernel_weights(rate, fractions):
    """fractions [m] in [0, 1): the output positions' offsets past their input sample i0 -> weights [m, 2J + 1]
    for input samples i0 - J .. i0 + J, normalised to sum 1."""
    cutoff, half_width, taps = filter_geometry(rate)
    offsets = np.arange(-taps, taps + 1, dtype=np.float64)
    t = (offsets[None, :] - np.asarray(fractions, dtype=np.float64)[:, None]) / rate  # seconds
    u = t / half_width
    inside = np.abs(u) < 1.0
    window = np.where(inside, _bessel_i0(KAISER_BETA * np.sqrt(np.maximum(0.0, 1.0 - u * u))), 0.0)
    window = window / _bessel_i0(np.array(KAISER_BETA))
    w = np.sinc(2.0 * cutoff * t) * window
    return w / w.sum(axis=1, keepdims=True)


def resample_to_16k(samples, rate, chunk=4096):
    """samples [n] float at `rate` Hz -> float32 [ceil(n · 16000 / rate)] at 16 kHz."""
    rate = check_rate(rate)
    x = np.asarray(samples, dtype=np.float32)
    if x.ndim != 1:
        raise ValueError(f"resample: samples must be one-dimensional, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        bad = int(np.flatnonzero(~np.isfinite(x))[0])
        raise ValueError(f"resample: sample {bad} is {x[bad]}: samples must be finite")
    if rate == TARGET_RATE:
        return x.copy()
    _, _, taps = filter_geometry(rate)
    n_out = output_length(x.size, rate)
    padded = np.concatenate([np.zeros(taps), x.astype(np.float64), np.zeros(taps + 1)])
    # The fraction n · rate mod 16000 takes 16000 / gcd values: one table of weights for all of them when small.
    step = math.gcd(rate, TARGET_RATE)
    phases = TARGET_RATE // step
    table = kernel_weights(rate, np.arange(phases) * step / TARGET_RATE) if phases <= 1024 else None
    out = np.empty(n_out, dtype=np.float32)
    for start in range(0, n_out, chunk):
        n = np.arange(start, min(start + chunk, n_out), dtype=np.int64)
        numerator = n * rate
        first = numerator // TARGET_RATE                       # i0
        residue = numerator % TARGET_RATE
        if table is not None:
            weights = table[residue // step]                   # [m, 2J + 1]
        else:
            weights = kernel_weights(rate, residue / TARGET_RATE)
        index = first[:, None] + np.arange(2 * taps + 1)[None, :]  # padded index of i0 - J + k
        out[start:start + n.size] = (weights * padded[index]).sum(axis=1).astype(np.float32)
    return out
