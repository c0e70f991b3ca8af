#!/usr/bin/python3
"""The Speech tab's sample clips: short sentences spoken by Debian's TTS engines in voices the speech model never
heard in training, as 16 kHz 16-bit mono WAV in web/app/samples/speech/, plus speech.json (the tab's list).
Licences: web/app/samples/speech/ATTRIBUTION.md.

    PYTHONPATH=python /usr/bin/python3 scripts/make_speech_samples.py [--out web/app/samples/speech]

woodchuck.wav is attnlab.data.synthesize_speech's test clip (TEST_VOICE, clean), the one models/speech-las.md
scores; the others use held-out dev voices (attnlab.data.synthesize_speech.DEV_VOICES). Needs espeak-ng, flite,
festival with festvox-us-slt-hts, and sox (scripts/setup.sh installs them).
"""
import argparse
import json
import os

from attnlab.data import synthesize_speech as S

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (file, voice, text, label)
SAMPLES = [
    ("woodchuck.wav", S.TEST_VOICE, S.WOODCHUCK, "How much wood would a woodchuck chuck (festival, slt)"),
    ("digits.wav", "flite:rms", "three one four one five nine", "Digits: 3 1 4 1 5 9 (flite, rms)"),
    ("command.wav", "espeak:en-gb-scotland+m3", "erase k seven two", "A command: erase k seven two (espeak-ng, Scottish)"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "web", "app", "samples", "speech"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    listing = []
    for name, voice, text, label in SAMPLES:
        assert voice == S.TEST_VOICE or voice in S.DEV_VOICES, f"{voice} is a training voice"
        path = S.speak_clean(voice, text, os.path.join(args.out, name))
        listing.append({"file": name, "label": label, "voice": voice, "transcript": text})
        print(f"wrote {path} ({os.path.getsize(path)} bytes): {voice}: {text}")
    with open(os.path.join(args.out, "speech.json"), "w", encoding="utf-8") as f:
        json.dump(listing, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
