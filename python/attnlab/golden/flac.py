#!/usr/bin/python3
"""FLAC fixtures for src/attnlab/audio/flac.cpp (tests/cpp/test_flac.cpp, tests/js/cli_transcribe.test.mjs): WAVs
encoded by Debian's `flac` (1.4) and `sox`, whose decoded samples must equal the WAV's bit for bit.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.golden.flac [--out tests/fixtures/audio/flac]

Writes <name>.flac next to its source <name>.wav (the source is the front end's fixture in tests/fixtures/audio
where one exists, copied by path in SOURCES; otherwise made here), and prints which subframe kinds and channel
assignments each FLAC holds, so that the set covers constant, verbatim, fixed and LPC subframes, wasted bits and
the four stereo modes. Also seeds fuzz/corpus/fuzz_flac/ with the smallest files.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

from attnlab.audio import wav as W

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
AUDIO = os.path.join(ROOT, "tests", "fixtures", "audio")
SEED_DIR = os.path.join(ROOT, "fuzz", "corpus", "fuzz_flac")

# name -> (source WAV in tests/fixtures/audio or None: made by make_source, encoder command)
FIXTURES = {
    "speech": ("speech.wav", ["flac", "-8"]),                         # 16-bit mono, LPC
    "speech_sox": ("speech.wav", ["sox", "-C", "0"]),                # sox level 0: fixed predictors only
    "stereo_44k": ("synth_44k_stereo_pcm16.wav", ["flac", "-8", "-b", "1152"]),  # stereo decorrelation
    "pcm24_32k": ("synth_32k_pcm24.wav", ["flac", "-5"]),
    "pcm8_8k": ("synth_8k_pcm8.wav", ["flac", "-5"]),
    "pcm32_22k": ("synth_22k_pcm32.wav", ["flac", "-5"]),
    "mixed": (None, ["flac", "-8", "-b", "256", "--lax"]),            # constant, verbatim, wasted bits, modes
}


def make_mixed(rate=16000, seconds=0.2, seed=7):
    """Stereo 16-bit whose blocks of 256 samples call for different codings: digital silence (constant), full-scale
    white noise (verbatim), a tone in steps of 8 (wasted bits), identical channels (side = 0) and one channel
    silent (left/side or right/side)."""
    rng = np.random.default_rng(seed)
    n = int(rate * seconds)
    t = np.arange(n) / rate
    tone = 0.4 * np.sin(2 * np.pi * 440 * t)
    left, right = np.zeros(n), np.zeros(n)
    blocks = [(i, min(n, i + 256)) for i in range(0, n, 256)]
    for b, (lo, hi) in enumerate(blocks):
        kind = b % 6
        if kind == 0:
            pass
        elif kind == 1:
            left[lo:hi] = rng.uniform(-1, 1, hi - lo)
            right[lo:hi] = rng.uniform(-1, 1, hi - lo)
        elif kind == 2:
            left[lo:hi] = np.round(tone[lo:hi] * 4096) / 4096
            right[lo:hi] = np.round(0.5 * tone[lo:hi] * 4096) / 4096
        elif kind == 3:
            left[lo:hi] = right[lo:hi] = tone[lo:hi] + 0.01 * rng.standard_normal(hi - lo)
        elif kind == 4:
            left[lo:hi] = tone[lo:hi]
        else:
            right[lo:hi] = tone[lo:hi] * 0.7 + 0.001 * rng.standard_normal(hi - lo)
    return W.wav_bytes(np.clip(np.stack([left, right], axis=1), -1, 1), rate, "pcm16")


def encode(command, wav, flac):
    if command[0] == "flac":
        subprocess.run(command + ["--silent", "--force", "--no-padding", "-o", flac, wav], check=True)
    else:
        subprocess.run([command[0], wav] + command[1:] + [flac], check=True)


class Bits:
    def __init__(self, data, pos):
        self.data, self.bit = data, pos * 8

    def read(self, n):
        v = 0
        for _ in range(n):
            v = (v << 1) | ((self.data[self.bit >> 3] >> (7 - (self.bit & 7))) & 1)
            self.bit += 1
        return v


def frame_headers(data):
    """The channel assignments of the frame headers found by scanning for sync codes (a sync pattern inside audio
    data can add a false one): only for the printed summary."""
    pos = 4
    last = False
    while not last:
        last = bool(data[pos] & 0x80)
        pos += 4 + int.from_bytes(data[pos + 1:pos + 4], "big")
    assignments = set()
    for i in range(pos, len(data) - 4):
        if data[i] == 0xFF and data[i + 1] in (0xF8, 0xF9):
            assignments.add(data[i + 3] >> 4)
    return assignments


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(AUDIO, "flac"))
    args = parser.parse_args()
    for tool in ("flac", "sox"):
        if not shutil.which(tool):
            sys.exit(f"attnlab.golden.flac: `{tool}` is not installed (apt-get install flac sox)")
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(SEED_DIR, exist_ok=True)
    for name, (source, command) in FIXTURES.items():
        wav = os.path.join(args.out, name + ".wav")
        if source is None:
            with open(wav, "wb") as f:
                f.write(make_mixed())
        else:
            wav = os.path.join(AUDIO, source)
        flac = os.path.join(args.out, name + ".flac")
        encode(command, wav, flac)
        with open(flac, "rb") as f:
            data = f.read()
        modes = sorted(frame_headers(data))
        print(f"{name}.flac: {len(data)} bytes from {os.path.relpath(wav, ROOT)}; channel assignments {modes}")
        if len(data) <= 8192:
            shutil.copyfile(flac, os.path.join(SEED_DIR, name + ".flac"))


if __name__ == "__main__":
    main()
