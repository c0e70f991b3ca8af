"""The speech corpora in ../shared/data/speech (plus Debian's pocketsphinx-testdata and the synthetic speech of
attnlab.data.synthesize_speech), as one list of utterances with fixed splits.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.data.speech        # prints the split sizes

Each utterance is a dict: id, source, speaker, split, transcript (attnlab.data.speech_text), and either "audio"
(a WAV/FLAC path) or "mfc" (AN4: Sphinx MFCC features only, no audio).

Splits, decided by SHA-256(SPLIT_SEED + TAB + key) ranks so they are the same on every machine and no list of
data needs committing:
- AN4: DEV_SPEAKERS_AN4 of the 74 speakers are dev (by speaker: the dev speakers are unseen in training).
- FSDD: one of the 4 speakers is held out entirely ("fsdd-heldout", the digit test); the others train.
- LJ Speech: DEV_CLIPS_LJ of the 300 clips are dev (by clip: one reader); their sentences never go to synthesis.
- pocketsphinx-testdata: all dev (10 clips).
- synthetic: by voice (attnlab.data.synthesize_speech.VOICE_SPLITS).
"""
import csv
import hashlib
import os
import sys

from attnlab.data.speech_text import an4_transcript, normalize_transcript
from attnlab.paths import BUILD_DATA, SHARED_DATA

SPEECH_ROOT = os.path.join(SHARED_DATA, "speech")
POCKETSPHINX_ROOT = "/usr/share/pocketsphinx/test/data"
SYNTH_ROOT = os.path.join(BUILD_DATA, "speech", "synth")

SPLIT_SEED = "speech-1234"
DEV_SPEAKERS_AN4 = 8
DEV_CLIPS_LJ = 60
FSDD_SPEAKERS = ("george", "jackson", "lucas", "yweweler")


def split_rank(keys):
    """keys sorted by their hash: the first n of the result are a seeded, platform-independent sample."""
    return sorted(keys, key=lambda k: (hashlib.sha256(f"{SPLIT_SEED}\t{k}".encode()).hexdigest(), k))


def fsdd_heldout_speaker():
    return split_rank(FSDD_SPEAKERS)[0]


def an4_utterances(root=SPEECH_ROOT):
    base = os.path.join(root, "an4")
    with open(os.path.join(base, "an4_train.fileids"), encoding="utf-8") as f:
        fileids = [line.strip() for line in f if line.strip()]
    with open(os.path.join(base, "an4_train.transcription"), encoding="utf-8") as f:
        transcripts = dict(an4_transcript(line) for line in f if line.strip())
    speakers = sorted({fileid.split("/")[1] for fileid in fileids})
    dev = set(split_rank(speakers)[:DEV_SPEAKERS_AN4])
    out = []
    for fileid in fileids:
        _, speaker, utt = fileid.split("/")
        out.append({"id": f"an4/{utt}", "source": "an4", "speaker": speaker,
                    "split": "dev" if speaker in dev else "train", "transcript": transcripts[utt],
                    "mfc": os.path.join(base, "train", fileid + ".mfc")})
    return out


def fsdd_utterances(root=SPEECH_ROOT):
    base = os.path.join(root, "fsdd")
    heldout = fsdd_heldout_speaker()
    out = []
    for name in sorted(os.listdir(base)):
        if not name.endswith(".flac"):
            continue
        digit, speaker, take = name[:-len(".flac")].split("_")
        out.append({"id": f"fsdd/{digit}_{speaker}_{take}", "source": "fsdd", "speaker": speaker,
                    "split": "fsdd-heldout" if speaker == heldout else "train",
                    "transcript": normalize_transcript(digit), "audio": os.path.join(base, name)})
    return out


def ljspeech_rows(root=SPEECH_ROOT):
    """metadata.csv -> [(id, normalized text)]: CRLF, no header, '|' fields, quotes are literal text."""
    with open(os.path.join(root, "ljspeech", "metadata.csv"), encoding="utf-8", newline="") as f:
        return [(row[0], row[2].rstrip("\r")) for row in csv.reader(f, delimiter="|", quoting=csv.QUOTE_NONE)]


def ljspeech_utterances(root=SPEECH_ROOT):
    base = os.path.join(root, "ljspeech")
    clips = {name[:-len(".flac")] for name in os.listdir(os.path.join(base, "wavs")) if name.endswith(".flac")}
    dev = set(split_rank(sorted(clips))[:DEV_CLIPS_LJ])
    return [{"id": f"ljspeech/{clip}", "source": "ljspeech", "speaker": "lj", "split": "dev" if clip in dev else "train",
             "transcript": normalize_transcript(text), "audio": os.path.join(base, "wavs", clip + ".flac")}
            for clip, text in ljspeech_rows(root) if clip in clips]


def ljspeech_text_pool(root=SPEECH_ROOT):
    """Sentences of metadata.csv without audio: prompts for synthesis (the clips' own sentences are excluded, so a
    dev clip's text is never heard in training)."""
    base = os.path.join(root, "ljspeech", "wavs")
    clips = {name[:-len(".flac")] for name in os.listdir(base)}
    return [text for clip, text in ljspeech_rows(root) if clip not in clips]


def pocketsphinx_utterances(root=POCKETSPHINX_ROOT):
    out = []
    for folder, listing in (("cards", "cards.transcription"), ("librivox", "transcription")):
        path = os.path.join(root, folder, listing)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                words, _, utt = line.strip().rpartition(" (")
                words = words.replace("<s>", " ").replace("</s>", " ")
                name = utt.rstrip(")")
                out.append({"id": f"pocketsphinx/{folder}/{name}", "source": "pocketsphinx", "speaker": folder,
                            "split": "dev", "transcript": normalize_transcript(words),
                            "audio": os.path.join(root, folder, name + ".wav")})
    return out


def synthetic_utterances(root=SYNTH_ROOT):
    listing = os.path.join(root, "utterances.tsv")
    if not os.path.exists(listing):
        return []
    with open(listing, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [{"id": f"synth/{r['id']}", "source": "synth", "speaker": r["voice"], "split": r["split"],
             "transcript": r["transcript"], "audio": os.path.join(root, r["file"])} for r in rows]


def all_utterances():
    return (an4_utterances() + fsdd_utterances() + ljspeech_utterances() + pocketsphinx_utterances()
            + synthetic_utterances())


def main():
    counts = {}
    for u in all_utterances():
        key = (u["source"], u["split"])
        counts[key] = counts.get(key, 0) + 1
    for (source, split), n in sorted(counts.items()):
        print(f"{source:13s} {split:13s} {n:6d}")
    print(f"FSDD held-out speaker: {fsdd_heldout_speaker()}")


if __name__ == "__main__":
    sys.exit(main())
