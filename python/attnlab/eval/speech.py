#!/usr/bin/python3
"""Evaluate a speech recognizer GGUF THROUGH THE C++ ENGINE (the native CLI), on the fixed dev sets of
attnlab.data.speech and the woodchuck test clip: the numbers of models/speech-las.md.

    PYTHONPATH=python python3 -m attnlab.eval.speech --model models/weights/speech-las.q8_0.gguf [--beam 4]
        [--ctc-weight W] [--lm-weight W] [--sets an4,fsdd,ljspeech,pocketsphinx,synth,woodchuck] [--synth DIR] [--woodchuck FILE.wav]
    PYTHONPATH=python python3 -m attnlab.eval.speech --model M --sets woodchuck-voices   # not among the default sets

Each set is one `attnlab transcribe --model F --beam N [--ctc-weight W] [--lm-weight W] --json FILE...` run (AN4 as its Sphinx .mfc
files, the others as their WAV/FLAC audio, decoded and featurized by the engine; without --ctc-weight the file's
own weight). Per set, one JSON line:
    {"model", "set", "beam", "ctc_weight", "lm_weight", "utterances", "characters", "edits", "cer", "exact", "monotone", "seconds"}
and then one line with "set": "pooled": the corpus CER over every set evaluated (edits / reference characters).
cer: corpus character error rate in percent (attnlab.eval.cer); exact: the share of utterances transcribed
exactly, in percent (the FSDD digit target); monotone: the share, in percent, of characters (from the second of
each utterance) whose attention peak frame is not before the previous character's. The sets:
  an4           AN4 dev speakers (8 speakers unseen in training)
  fsdd          FSDD's held-out speaker (attnlab.data.speech.fsdd_heldout_speaker(): yweweler), all 500 clips
  ljspeech      LJ Speech dev clips (60)
  pocketsphinx  Debian pocketsphinx-testdata (10 clips)
  synth         the synthetic dev voices (held out by voice), when --synth has attnlab.data.synthesize_speech output
  woodchuck     "how much wood would a woodchuck chuck ...", festival's cmu_us_slt_arctic_hts voice (never in
                training): web/app/samples/speech/woodchuck.wav, made by scripts/make_speech_samples.py
  woodchuck-voices  the same sentence spoken as that clip is (clean, normal speed and pitch) by the voices of
                attnlab.data.synthesize_speech (WOODCHUCK_VOICES: one per espeak-ng accent, every flite and festival
                voice, most of them heard in training), made afresh in a temporary folder; to stderr, each voice's
                split, CER and transcript. It tells the sentence's share of the woodchuck clip's errors from the
                voice's.
"""
import argparse
from collections import Counter
import json
import os
import subprocess
import sys
import tempfile
import time

from attnlab.data import speech as data
from attnlab.data import synthesize_speech as synthetic
from attnlab.eval.cer import character_error_rate, edit_distance
from attnlab.paths import CLI, ROOT

SETS = ("an4", "fsdd", "ljspeech", "pocketsphinx", "synth", "woodchuck")
WOODCHUCK_TEXT = synthetic.WOODCHUCK
DEFAULT_WOODCHUCK = os.path.join(ROOT, "web", "app", "samples", "speech", "woodchuck.wav")
WOODCHUCK_VOICES = ([f"espeak:{accent}+m1" for accent in synthetic.ESPEAK_ACCENTS]
                    + [f"flite:{v}" for v in synthetic.FLITE_VOICES]
                    + [f"festival:{v}" for v in synthetic.FESTIVAL_VOICES] + [synthetic.TEST_VOICE])


def woodchuck_in_voices(folder):
    """[(path, WOODCHUCK_TEXT, voice)]: one clip per voice of WOODCHUCK_VOICES, in that order, written into `folder`."""
    return [(synthetic.speak_clean(voice, WOODCHUCK_TEXT, os.path.join(folder, f"{i:02d}.wav")), WOODCHUCK_TEXT, voice)
            for i, voice in enumerate(WOODCHUCK_VOICES)]


def print_by_voice(pairs, voices):
    """To stderr: each voice's split, CER and transcript, in WOODCHUCK_VOICES' order."""
    for (hypothesis, reference), voice in zip(pairs, voices):
        split = synthetic.VOICE_SPLITS.get(voice, "test")
        print(f"  {voice} ({split}): CER {character_error_rate([hypothesis], [reference]):.1f}%: {hypothesis}",
              file=sys.stderr)


def utterances(name, synth_root, woodchuck):
    """[(path, reference transcript)] of one set (woodchuck-voices is made by woodchuck_in_voices)."""
    if name == "an4":
        return [(u["mfc"], u["transcript"]) for u in data.an4_utterances() if u["split"] == "dev"]
    if name == "fsdd":
        return [(u["audio"], u["transcript"]) for u in data.fsdd_utterances() if u["split"] == "fsdd-heldout"]
    if name == "ljspeech":
        return [(u["audio"], u["transcript"]) for u in data.ljspeech_utterances() if u["split"] == "dev"]
    if name == "pocketsphinx":
        return [(u["audio"], u["transcript"]) for u in data.pocketsphinx_utterances()]
    if name == "synth":
        return [(u["audio"], u["transcript"]) for u in data.synthetic_utterances(synth_root) if u["split"] == "dev"]
    if name == "woodchuck":
        return [(woodchuck, WOODCHUCK_TEXT)] if os.path.exists(woodchuck) else []
    raise ValueError(f"unknown set {name}")


def peak(row):
    return max(range(len(row)), key=row.__getitem__)


def monotone_counts(attention):
    """(characters whose peak is not before the previous one's, characters compared) of one [T][S] attention."""
    peaks = [peak(row) for row in attention if row]
    return sum(b >= a for a, b in zip(peaks, peaks[1:])), max(0, len(peaks) - 1)


def transcribe(cli, model, beam, paths, chunk=200, ctc_weight=None, lm_weight=None):
    """The CLI's --json lines for paths, in order (several runs for long lists, to bound the argument list)."""
    out = []
    weight = [] if ctc_weight is None else ["--ctc-weight", str(ctc_weight)]
    weight += [] if lm_weight is None else ["--lm-weight", str(lm_weight)]
    for start in range(0, len(paths), chunk):
        part = paths[start:start + chunk]
        r = subprocess.run([cli, "transcribe", "--model", model, "--beam", str(beam), *weight, "--json", *part],
                           capture_output=True, text=True)
        lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
        if len(lines) != len(part):
            sys.exit(f"attnlab.eval.speech: {cli} gave {len(lines)} lines for {len(part)} files:\n{r.stderr}")
        for path, line in zip(part, lines):
            if "error" in line:
                sys.exit(f"attnlab.eval.speech: {path}: {line['error']}")
        out += lines
    return out


def the_weight(results, key):
    """The one weight every result was decoded with (a sorted list if they differ)."""
    weights = {r.get(key, 0.0) for r in results}
    return round(weights.pop(), 4) if len(weights) == 1 else sorted(weights)


def evaluate(cli, model, beam, name, items, ctc_weight=None, lm_weight=None):
    start = time.time()
    results = transcribe(cli, model, beam, [p for p, _ in items], ctc_weight=ctc_weight, lm_weight=lm_weight)
    hypotheses = [r["text"] for r in results]
    references = [t for _, t in items]
    kept = compared = 0
    for r in results:
        k, c = monotone_counts(r["attention"])
        kept, compared = kept + k, compared + c
    return {"model": os.path.relpath(model, ROOT) if model.startswith(ROOT) else model, "set": name, "beam": beam,
            "ctc_weight": the_weight(results, "ctc_weight"), "lm_weight": the_weight(results, "lm_weight"),
            "utterances": len(items), "characters": sum(len(r) for r in references),
            "edits": sum(edit_distance(h, r) for h, r in zip(hypotheses, references)),
            "cer": round(character_error_rate(hypotheses, references), 2),
            "exact": round(100.0 * sum(h == r for h, r in zip(hypotheses, references)) / len(items), 2),
            "monotone": round(100.0 * kept / compared, 2) if compared else None,
            "seconds": round(time.time() - start, 1)}, list(zip(hypotheses, references))


def print_confusions(pairs):
    """To stderr: each reference with a wrong hypothesis, most often wrong first: 'six: 20 of 50 wrong; eight 16, ...'."""
    seen, heard = Counter(r for _, r in pairs), {}
    for h, r in pairs:
        if h != r:
            heard.setdefault(r, Counter())[h] += 1
    for r, wrong in sorted(heard.items(), key=lambda kv: -sum(kv[1].values())):
        top = ", ".join(f"{h!r} {n}" for h, n in wrong.most_common(3))
        print(f"  {r}: {sum(wrong.values())} of {seen[r]} wrong; heard as {top}", file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--ctc-weight", type=float, default=None,
                    help="the joint search's CTC weight, 0 (attention only)..1 (default: the file's)")
    ap.add_argument("--lm-weight", type=float, default=None,
                    help="the language model's weight, 0 (none)..2 (default: the file's)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--synth", default=data.SYNTH_ROOT, help="attnlab.data.synthesize_speech's output folder")
    ap.add_argument("--woodchuck", default=DEFAULT_WOODCHUCK)
    ap.add_argument("--cli", default=CLI)
    ap.add_argument("--examples", type=int, default=0, help="print this many hypothesis/reference pairs per set")
    ap.add_argument("--confusions", action="store_true",
                    help="per set, each reference transcribed wrongly at least once: how often, and as what")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as spoken:
        for name in args.sets.split(","):
            voices = WOODCHUCK_VOICES if name == "woodchuck-voices" else []
            items = ([(path, text) for path, text, _ in woodchuck_in_voices(spoken)] if voices
                     else utterances(name, args.synth, args.woodchuck))
            if not items:
                print(f"attnlab.eval.speech: set {name} has no utterances here; skipped", file=sys.stderr)
                continue
            row, pairs = evaluate(args.cli, args.model, args.beam, name, items, args.ctc_weight, args.lm_weight)
            rows.append(row)
            print(json.dumps(row), flush=True)
            for h, r in pairs[:args.examples]:
                print(f"  ref: {r}\n  hyp: {h}", file=sys.stderr)
            if args.confusions:
                print_confusions(pairs)
            if voices:
                print_by_voice(pairs, voices)
    if rows:
        characters, edits = sum(r["characters"] for r in rows), sum(r["edits"] for r in rows)
        print(json.dumps({"model": rows[0]["model"], "set": "pooled", "beam": args.beam,
                          "ctc_weight": rows[0]["ctc_weight"], "lm_weight": rows[0]["lm_weight"], "sets": [r["set"] for r in rows],
                          "utterances": sum(r["utterances"] for r in rows), "characters": characters,
                          "edits": edits, "cer": round(100.0 * edits / characters, 2)}), flush=True)


if __name__ == "__main__":
    main()
