"""MFCCs of every utterance of attnlab.data.speech, computed once by the engine's Python twin (attnlab.audio) and
stored per source, so training reads arrays instead of decoding audio.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.data.speech_features [--synth DIR] [--out DIR]
        -> OUT/<source>.npz: ids, transcripts, splits, speakers, offsets [N+1], frames [sum T, 13] float32

AN4 ships Sphinx's own features (.mfc, no audio); every other clip is decoded (WAV by attnlab.audio.wav, FLAC
through `flac -d`), resampled to 16 kHz and run through attnlab.audio.features.mfcc, which matches sphinx_fe
(docs/speech.md): the same kind of features as AN4's. Raw MFCCs are stored; the model normalizes (CMN) itself.
A source whose file holds the same utterances is not recomputed (one whose set changed, such as synthetic speech
extended with --hours, is; delete a file to redo it).
"""
import argparse
import os
import subprocess
import sys
from multiprocessing import Pool

import numpy as np

from attnlab.audio.features import mfcc, read_sphinx_mfc
from attnlab.audio.resample import resample_to_16k
from attnlab.audio.wav import parse_wav
from attnlab.data import speech
from attnlab.paths import BUILD_DATA

FEATURES_ROOT = os.path.join(BUILD_DATA, "speech", "features")


def read_audio(path):
    """A WAV or FLAC file -> (samples float32, sample rate)."""
    if path.endswith(".flac"):
        done = subprocess.run(["flac", "-d", "-c", "-s", path],
                              capture_output=True)
        if done.returncode != 0:
            raise ValueError(f"{path}: flac could not decode it: {done.stderr.decode(errors='replace').strip()}")
        return parse_wav(done.stdout)
    with open(path, "rb") as f:
        return parse_wav(f.read())


def utterance_mfcc(utterance):
    if "mfc" in utterance:
        return read_sphinx_mfc(utterance["mfc"])
    samples, rate = read_audio(utterance["audio"])
    return mfcc(resample_to_16k(samples, rate))


def store(path, utterances, jobs):
    with Pool(jobs) as pool:
        frames = pool.map(utterance_mfcc, utterances, chunksize=16)
    offsets = np.cumsum([0] + [len(f) for f in frames]).astype(np.int64)
    tmp = path + ".tmp.npz"
    np.savez(tmp, ids=np.array([u["id"] for u in utterances]), transcripts=np.array([u["transcript"] for u in utterances]),
             splits=np.array([u["split"] for u in utterances]), speakers=np.array([u["speaker"] for u in utterances]),
             offsets=offsets, frames=np.concatenate(frames).astype(np.float32))
    os.replace(tmp, path)
    return int(offsets[-1])


class SpeechFeatures:
    """One source's stored features: len(), and [i] -> (frames [T, 13], transcript, split, id)."""

    def __init__(self, path):
        with np.load(path) as z:
            self.ids, self.transcripts, self.splits = list(z["ids"]), list(z["transcripts"]), list(z["splits"])
            self.speakers, self.offsets, self.frames = list(z["speakers"]), z["offsets"], z["frames"]

    def __len__(self):
        return len(self.ids)

    def features(self, i):
        return self.frames[self.offsets[i]:self.offsets[i + 1]]


def is_current(path, utterances):
    """Whether the store at path holds exactly these utterances, in order (else it is computed anew)."""
    if not os.path.exists(path):
        return False
    with np.load(path) as z:
        return [str(i) for i in z["ids"]] == [u["id"] for u in utterances]


def load_all(root=FEATURES_ROOT):
    """-> {source: SpeechFeatures} for every stored source."""
    return {name[:-4]: SpeechFeatures(os.path.join(root, name)) for name in sorted(os.listdir(root))
            if name.endswith(".npz") and not name.endswith(".tmp.npz")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synth", default=speech.SYNTH_ROOT, help="attnlab.data.synthesize_speech's --out")
    ap.add_argument("--out", default=FEATURES_ROOT)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    sources = {"an4": speech.an4_utterances(), "fsdd": speech.fsdd_utterances(), "ljspeech": speech.ljspeech_utterances(),
               "pocketsphinx": speech.pocketsphinx_utterances(), "synth": speech.synthetic_utterances(args.synth)}
    for name, utterances in sources.items():
        path = os.path.join(args.out, name + ".npz")
        # A store is kept while it holds exactly these utterances: an extended synthetic set (--hours) is stored anew.
        if is_current(path, utterances):
            print(f"{name}: already stored in {path}")
            continue
        if not utterances:
            print(f"{name}: no utterances (skipped)")
            continue
        frames = store(path, utterances, args.jobs)
        print(f"{name}: {len(utterances)} utterances, {frames} frames ({frames / 360000:.2f} h) -> {path}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
