"""Synthetic training speech from Debian's TTS engines (espeak-ng, flite, festival), augmented, never committed.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.data.synthesize_speech --hours 3 --jobs 2
        -> build/data/speech/synth/{utterances.tsv, wav/<voice>/<id>.wav}   (16 kHz 16-bit mono)

Each utterance is decided by its index and --seed alone (its own random.Random), so a run can be extended or
resumed: files already there are kept. The text comes from four pools: Tatoeba English (everyday sentences,
../shared/data/broad), LJ Speech's sentences without audio, AN4-style commands and spelled letters with digits,
and digit strings (FSDD-style). Nothing containing "woodchuck" is synthesized: the woodchuck sentence is a test.

Voices are split by voice (VOICE_SPLITS): dev voices are never heard in training, and TEST_VOICE only says the
woodchuck sentence (attnlab's speech card). Augmentation (sox, then numpy): speed 0.85-1.15, pitch shift,
reverberation, telephone band limit, gain, additive white/pink/brown noise at 5-30 dB SNR.
"""
import argparse
import csv
import gzip
import os
import random
import shutil
import subprocess
import sys
import tempfile
import wave
from multiprocessing import Pool

import numpy as np

from attnlab.data.speech import SYNTH_ROOT, an4_utterances, ljspeech_text_pool
from attnlab.data.speech_text import DIGIT_WORDS, normalize_transcript
from attnlab.paths import SHARED_DATA

SAMPLE_RATE = 16000
ESPEAK_ACCENTS = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp", "en-gb-x-gbcwmd", "en-029")
ESPEAK_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5", "klatt", "klatt2",
                   "klatt3", "croak", "whisper")
FLITE_VOICES = ("kal", "kal16", "awb", "rms", "slt")
FESTIVAL_VOICES = ("kal_diphone", "ked_diphone")
TEST_VOICE = "festival:cmu_us_slt_arctic_hts"
WOODCHUCK = "how much wood would a woodchuck chuck if a woodchuck could chuck wood"
# Whole accents and whole engines' voices are held out, so dev measures unseen voices.
DEV_VOICES = {f"espeak:en-gb-scotland+{v}" for v in ESPEAK_VARIANTS} | {"flite:rms", "festival:ked_diphone"}
ALL_VOICES = ([f"espeak:{a}+{v}" for a in ESPEAK_ACCENTS for v in ESPEAK_VARIANTS]
              + [f"flite:{v}" for v in FLITE_VOICES] + [f"festival:{v}" for v in FESTIVAL_VOICES])
VOICE_SPLITS = {voice: "dev" if voice in DEV_VOICES else "train" for voice in ALL_VOICES}
DEV_SHARE = 0.08
AN4_COMMANDS = ("erase", "rubout", "repeat", "enter", "stop", "go", "yes", "no", "help", "start")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def tatoeba_english(limit=40000):
    path = os.path.join(SHARED_DATA, "broad", "train.en.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [line.strip() for _, line in zip(range(limit), f)]
    return [line for line in lines if 2 <= len(line.split()) <= 16]


def an4_style(rng, an4_words):
    kind = rng.random()
    if kind < 0.4:
        return " ".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 8)))
    if kind < 0.7:
        words = [rng.choice(AN4_COMMANDS)] + [rng.choice(LETTERS) if rng.random() < 0.6 else rng.choice(DIGIT_WORDS)
                                              for _ in range(rng.randint(1, 6))]
        return " ".join(words)
    return " ".join(rng.choice(an4_words) for _ in range(rng.randint(1, 7)))


def digit_string(rng):
    return " ".join(rng.choice(DIGIT_WORDS) for _ in range(rng.choice((1, 1, 1, 2, 3, 4, 5, 7))))


class TextPools:
    def __init__(self):
        self.tatoeba = tatoeba_english()
        self.lj = [t for t in ljspeech_text_pool() if len(t.split()) <= 24]
        self.an4_words = sorted({w for u in an4_utterances() for w in u["transcript"].split()})

    def draw(self, rng):
        kind = rng.random()
        if kind < 0.35:
            text = rng.choice(self.tatoeba)
        elif kind < 0.6:
            text = rng.choice(self.lj)
        elif kind < 0.85:
            text = an4_style(rng, self.an4_words)
        else:
            text = digit_string(rng)
        transcript = normalize_transcript(text)
        return (text, transcript) if "woodchuck" not in transcript and transcript else self.draw(rng)


def run(command, **kw):
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")


def speak(voice, text, rate, pitch, out_wav, tmp):
    """TTS of `text` into out_wav at the engine's own rate. rate: 1 = the voice's normal speed."""
    engine, name = voice.split(":", 1)
    if engine == "espeak":
        run(["espeak-ng", "-v", name, "-s", str(int(170 * rate)), "-p", str(pitch), "-w", out_wav, text])
    elif engine == "flite":
        run(["flite", "-voice", name, "--setf", f"duration_stretch={1 / rate:.3f}", "-t", text, "-o", out_wav])
    elif engine == "festival":
        script = os.path.join(tmp, "text.txt")
        with open(script, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        run(["text2wave", "-eval", f"(voice_{name})", "-eval", f"(Parameter.set 'Duration_Stretch {1 / rate:.3f})",
             script, "-o", out_wav])
    else:
        raise ValueError(f"unknown TTS engine in voice {voice!r}")


def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError(f"{path}: expected 16-bit mono")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def write_wav(path, samples):
    pcm = np.clip(np.round(samples * 32767.0), -32768, 32767).astype("<i2")
    tmp = path + ".tmp"
    with wave.open(tmp, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm.tobytes())
    os.replace(tmp, path)


def coloured_noise(rng, n, colour):
    white = np.random.default_rng(rng.getrandbits(32)).standard_normal(n).astype(np.float32)
    if colour == "white":
        return white
    spectrum = np.fft.rfft(white)
    f = np.arange(1, len(spectrum) + 1, dtype=np.float32)
    spectrum /= np.sqrt(f) if colour == "pink" else f
    return np.fft.irfft(spectrum, n).astype(np.float32)


def augment(rng, in_wav, out_wav, tmp):
    """sox: 16 kHz, speed, pitch, reverb, band limit; numpy: gain and noise. -> the applied settings as text."""
    effects, notes = [], []
    speed = rng.uniform(0.85, 1.15)
    effects += ["speed", f"{speed:.3f}"]
    notes.append(f"speed={speed:.2f}")
    if rng.random() < 0.3:
        cents = rng.randint(-300, 300)
        effects += ["pitch", str(cents)]
        notes.append(f"pitch={cents}")
    if rng.random() < 0.25:
        reverb = rng.randint(10, 60)
        effects += ["reverb", str(reverb)]
        notes.append(f"reverb={reverb}")
    if rng.random() < 0.2:
        effects += ["sinc", "300-3400"]
        notes.append("telephone")
    mid = os.path.join(tmp, "mid.wav")
    # Resampling first: an 8 kHz voice slowed down would otherwise have no room left for the band limit.
    run(["sox", in_wav, "-r", str(SAMPLE_RATE), "-b", "16", "-c", "1", mid, "rate", str(SAMPLE_RATE)] + effects
        + ["rate", str(SAMPLE_RATE)])
    samples = read_wav(mid)
    # A short pause before and after, as a person speaking into a microphone leaves.
    pad = lambda: np.zeros(int(SAMPLE_RATE * rng.uniform(0.05, 0.4)), np.float32)  # noqa: E731
    samples = np.concatenate([pad(), samples, pad()])
    peak = float(np.max(np.abs(samples))) or 1.0
    samples *= 10 ** (rng.uniform(-20, -1) / 20) / peak
    if rng.random() < 0.6:
        colour = rng.choice(("white", "pink", "brown"))
        snr = rng.uniform(5, 30)
        noise = coloured_noise(rng, len(samples), colour)
        signal_power = float(np.mean(samples ** 2)) + 1e-12
        noise *= np.sqrt(signal_power / (10 ** (snr / 10)) / (float(np.mean(noise ** 2)) + 1e-12))
        samples = samples + noise
        notes.append(f"noise={colour}@{snr:.0f}dB")
    write_wav(out_wav, samples)
    return " ".join(notes)


def plan(index, seed, pools, voices):
    rng = random.Random(seed * 1_000_003 + index)
    voice = rng.choice(voices)
    text, transcript = pools.draw(rng)
    return rng, voice, text, transcript


def make_one(job):
    index, seed, out_root, rng, voice, text, transcript = job
    name = f"{index:06d}"
    relative = os.path.join("wav", voice.replace(":", "-").replace("+", "-"), name + ".wav")
    path = os.path.join(out_root, relative)
    row = {"id": name, "split": VOICE_SPLITS.get(voice, "test"), "voice": voice, "file": relative,
           "transcript": transcript}
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "tts.wav")
        speak(voice, text, rng.uniform(0.8, 1.25), rng.randint(25, 75), raw, tmp)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        row["augmentation"] = augment(rng, raw, path, tmp)
    with wave.open(path, "rb") as w:
        row["seconds"] = f"{w.getnframes() / SAMPLE_RATE:.2f}"
    return row


def speak_clean(voice, text, path):
    """`text` in `voice` at its normal speed and pitch, no augmentation, as 16 kHz 16-bit mono WAV at `path`."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "tts.wav")
        speak(voice, text, 1.0, 50, raw, tmp)
        # -R: sox's dither is otherwise seeded afresh each run, and the same clip would not come out twice alike.
        run(["sox", "-R", raw, "-r", str(SAMPLE_RATE), "-b", "16", "-c", "1", path])
    return path


def make_woodchuck(out_root):
    """The test clip: the woodchuck sentence in TEST_VOICE, clean, never in training."""
    return speak_clean(TEST_VOICE, WOODCHUCK, os.path.join(out_root, "woodchuck.wav"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=SYNTH_ROOT)
    ap.add_argument("--hours", type=float, default=3.0, help="stop once this much audio exists")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    for tool in ("espeak-ng", "flite", "text2wave", "sox"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is missing: bash scripts/setup.sh installs it")
    os.makedirs(args.out, exist_ok=True)
    listing = os.path.join(args.out, "utterances.tsv")
    fields = ["id", "split", "voice", "file", "seconds", "augmentation", "transcript"]
    rows = []
    if os.path.exists(listing):
        with open(listing, encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    seconds = sum(float(r["seconds"]) for r in rows)
    pools = TextPools()
    train_voices = [v for v, s in VOICE_SPLITS.items() if s == "train"]
    dev_voices = sorted(DEV_VOICES)
    print(f"synthesize_speech: {len(rows)} utterances ({seconds / 3600:.2f} h) already in {args.out}")
    index = len(rows)
    with Pool(args.jobs) as pool, open(listing, "a", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fields, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\")
        if not rows:
            writer.writeheader()
        while seconds < args.hours * 3600:
            batch = []
            for i in range(index, index + 64):
                rng, voice, text, transcript = plan(i, args.seed, pools,
                                                    dev_voices if (i % 100) < DEV_SHARE * 100 else train_voices)
                batch.append((i, args.seed, args.out, rng, voice, text, transcript))
            for row in pool.map(make_one, batch):
                writer.writerow(row)
                seconds += float(row["seconds"])
            out.flush()
            index += len(batch)
            print(f"synthesize_speech: {index} utterances, {seconds / 3600:.2f} h", flush=True)
    print(f"woodchuck test clip: {make_woodchuck(args.out)}")


if __name__ == "__main__":
    main()
