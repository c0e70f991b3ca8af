#!/usr/bin/python3
"""Golden fixtures for the speech front end (src/attnlab/audio, checked by tests/cpp/test_{wav,resample,features}.cpp):
WAV files in several encodings and rates, and what python/attnlab/audio computes from them.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.golden.audio [--out tests/fixtures/audio]

Deterministic (fixed seeds, no dependence on the machine but numpy's float64 arithmetic). Writes:
  synth_*.wav      0.5 s of a 150 Hz -> 0.45 · min(rate, 16 kHz) chirp plus a little noise (two channels: the
                   chirp left, a slower chirp right), one file per (rate, encoding) in FIXTURES
  speech.wav       300 ms of /usr/share/pocketsphinx/test/data/cards/001.wav (Debian pocketsphinx-testdata, BSD-2:
                   see LICENSE-pocketsphinx), 16 kHz 16-bit mono
  speech.sphinx_fe.mfc  sphinx_fe's MFCCs of speech.wav (little-endian, as it writes them on x86), when sphinx_fe is
                   installed; otherwise the committed one is kept
  features.gguf    per fixture <name>: the decoded WAV as <name>.samples_head [<= 2048] and metadata
                   <name>.samples_count, .samples_sum, .samples_abs_sum (float64), <name>.resampled [m] (16 kHz; rates
                   other than 16 kHz), <name>.mfcc [T, 13], <name>.log_mel [T, 40], <name>.cmn [T, 13];
                   metadata <name>.rate; filterbank [40, 257] (the dense mel filters)
and the seed corpus of fuzz/fuzz_wav.cpp in fuzz/corpus/fuzz_wav/.
"""
import argparse
import os
import shutil
import subprocess
import tempfile

import numpy as np

from attnlab.audio import features as F
from attnlab.audio import resample as R
from attnlab.audio import wav as W
from attnlab.gguf.writer import GGUFWriter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CARDS = "/usr/share/pocketsphinx/test/data/cards/001.wav"
SPEECH_SAMPLES = 4800  # 300 ms at 16 kHz
SAMPLES_HEAD = 2048

# name, rate, encoding, channels, extensible, seconds. 44101 Hz takes the resampler's untabulated path
# (16000 phases).
FIXTURES = [
    ("synth_16k_pcm16", 16000, "pcm16", 1, False, 0.5),
    ("synth_8k_pcm8", 8000, "pcm8", 1, False, 0.5),
    ("synth_22k_pcm32", 22050, "pcm32", 1, False, 0.5),
    ("synth_32k_pcm24", 32000, "pcm24", 1, False, 0.5),
    ("synth_44k_stereo_pcm16", 44100, "pcm16", 2, False, 0.5),
    ("synth_48k_float32_ext", 48000, "float32", 1, True, 0.5),
    ("synth_16k_float64", 16000, "float64", 1, False, 0.5),
    ("synth_44101_pcm16", 44101, "pcm16", 1, False, 0.1),
]
SEED_DIR = os.path.join(ROOT, "fuzz", "corpus", "fuzz_wav")


def synthetic(rate, channels, seed, seconds=0.5):
    n = int(round(rate * seconds))
    t = np.arange(n) / rate
    top = 0.45 * min(rate, 16000)

    def chirp(f0, f1):
        k = (f1 - f0) / seconds
        return np.sin(2 * np.pi * (f0 * t + 0.5 * k * t * t))

    rng = np.random.default_rng(seed)
    left = 0.5 * chirp(150.0, top) + 0.02 * rng.standard_normal(n)
    if channels == 1:
        return left
    right = 0.4 * chirp(300.0, top / 2) + 0.02 * rng.standard_normal(n)
    return np.stack([left, right], axis=1)


def portable(samples, encoding):
    """The samples a float64 WAV stores: rounded to float32 first, so the file is the same on every CPU (numpy's
    vectorized sin and exp may round a float64's last bit differently on another CPU, never a float32's). The
    engine decodes to float32, so the features are unchanged. Integer PCM quantizes coarser than float32 already."""
    return samples.astype(np.float32).astype(np.float64) if encoding == "float64" else samples


def speech_clip():
    samples, rate = W.read_wav(CARDS)
    assert rate == 16000
    # the 300 ms of most energy, so that the clip is speech rather than the leading silence
    energy = np.convolve(samples.astype(np.float64) ** 2, np.ones(SPEECH_SAMPLES), mode="valid")
    start = int(np.argmax(energy[::160])) * 160
    return samples[start:start + SPEECH_SAMPLES]


def sphinx_fe(wav_path, mfc_path):
    subprocess.run(["sphinx_fe", "-i", wav_path, "-o", mfc_path, "-samprate", "16000", "-lowerf", "130",
                    "-upperf", "6800", "-nfilt", "40", "-transform", "legacy", "-remove_noise", "no",
                    "-remove_silence", "no"], check=True, capture_output=True)


def add_features(writer, name, samples, rate):
    writer.add_uint32(f"{name}.rate", rate)
    # the decoded samples: the first SAMPLES_HEAD in full, all of them through their count and sums (float64)
    writer.add_tensor(f"{name}.samples_head", samples[:SAMPLES_HEAD].astype(np.float32))
    writer.add_uint32(f"{name}.samples_count", samples.size)
    writer.add_float64(f"{name}.samples_sum", float(np.sum(samples.astype(np.float64))))
    writer.add_float64(f"{name}.samples_abs_sum", float(np.sum(np.abs(samples.astype(np.float64)))))
    at16k = samples if rate == 16000 else R.resample_to_16k(samples, rate)
    if rate != 16000:
        writer.add_tensor(f"{name}.resampled", at16k)
    mfcc, log_mel = F.features(at16k)
    writer.add_tensor(f"{name}.mfcc", mfcc)
    writer.add_tensor(f"{name}.log_mel", log_mel)
    writer.add_tensor(f"{name}.cmn", F.cepstral_mean_normalize(mfcc))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "audio"))
    parser.add_argument("--seeds", default=SEED_DIR, help="where the fuzz_wav seed corpus goes")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    writer = GGUFWriter(os.path.join(args.out, "features.gguf"), architecture="attnlab.fixture")
    for seed, (name, rate, encoding, channels, extensible, seconds) in enumerate(FIXTURES):
        data = W.wav_bytes(portable(synthetic(rate, channels, seed, seconds), encoding), rate, encoding,
                           extensible=extensible)
        with open(os.path.join(args.out, name + ".wav"), "wb") as f:
            f.write(data)
        samples, decoded_rate = W.parse_wav(data)
        add_features(writer, name, samples, decoded_rate)

    speech_path = os.path.join(args.out, "speech.wav")
    if os.path.exists(CARDS):
        with open(speech_path, "wb") as f:
            f.write(W.wav_bytes(speech_clip().astype(np.float64), 16000, "pcm16"))
    samples, rate = W.read_wav(speech_path)
    add_features(writer, "speech", samples, rate)
    if shutil.which("sphinx_fe"):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "speech.mfc")
            sphinx_fe(speech_path, out)
            shutil.copyfile(out, os.path.join(args.out, "speech.sphinx_fe.mfc"))

    writer.add_tensor("filterbank", F.mel_matrix().T.astype(np.float32))
    writer.write()
    write_fuzz_seeds(args.seeds)
    print(f"wrote {len(FIXTURES) + 1} WAV fixtures and features.gguf to {args.out}, fuzz seeds to {args.seeds}")


def write_fuzz_seeds(folder):
    """Small inputs for fuzz/fuzz_wav.cpp: 30 ms WAVs of every encoding, layout and rate class, a streamed and a
    truncated one, and two Sphinx .mfc files."""
    os.makedirs(folder, exist_ok=True)
    seeds = {}
    for i, (rate, encoding, channels, extensible) in enumerate([
            (16000, "pcm16", 1, False), (8000, "pcm8", 1, False), (22050, "pcm24", 1, False),
            (44100, "pcm32", 2, False), (48000, "float32", 1, True), (16000, "float64", 2, False),
            (11025, "pcm16", 1, True), (96000, "pcm16", 1, False)]):
        x = synthetic(rate, channels, 100 + i, seconds=0.03)
        seeds[f"{encoding}_{rate}_{channels}ch{'_ext' if extensible else ''}.wav"] = \
            W.wav_bytes(portable(x, encoding), rate, encoding, extensible=extensible)
    base = seeds["pcm16_16000_1ch.wav"]
    seeds["streamed.wav"] = base[:40] + b"\xff\xff\xff\xff" + base[44:]
    seeds["truncated.wav"] = base[:300]
    seeds["list_chunk.wav"] = base[:12] + b"LIST\x03\x00\x00\x00abc\x00" + base[12:]
    frames = synthetic(16000, 1, 200, seconds=0.05).astype(np.float32)
    cep = F.mfcc(frames)
    seeds["little.mfc"] = np.int32(cep.size).tobytes() + cep.astype("<f4").tobytes()
    seeds["big.mfc"] = np.array([cep.size], ">i4").tobytes() + cep.astype(">f4").tobytes()
    for name, data in seeds.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
