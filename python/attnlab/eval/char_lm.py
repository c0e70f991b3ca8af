"""Bits per character of a speech language model (attnlab.train.char_lm's checkpoint, or the LM inside a speech GGUF
file) on text it never trained on: the recognizer's dev transcripts, the numbers of models/speech-las.md.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.eval.char_lm --lm /work/ckpt/speech-lm2/best.pt

One JSON line per set: {"lm", "set", "lines", "bits_per_char"}; sets: ljspeech (the 60 dev clips' transcripts)
and an4 (the dev speakers').
"""
import argparse
import json

import torch

from attnlab.data.speech import an4_utterances, ljspeech_utterances
from attnlab.gguf import speech
from attnlab.train.char_lm import bits_per_character


def dev_transcripts():
    return {"ljspeech": [u["transcript"] for u in ljspeech_utterances() if u["split"] == "dev"],
            "an4": [u["transcript"] for u in an4_utterances() if u["split"] == "dev"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lm", required=True, help="a char_lm checkpoint (.pt) or a speech GGUF file with an LM")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        lm = speech.load_lm(args.lm)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    for name, lines in dev_transcripts().items():
        print(json.dumps({"lm": args.lm, "set": name, "lines": len(lines),
                          "bits_per_char": round(bits_per_character(lm, lines), 3)}), flush=True)


if __name__ == "__main__":
    main()
