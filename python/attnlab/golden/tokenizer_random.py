#!/usr/bin/python3
"""Random Unicode golden for the C++ tokenizer (tests/cpp/test_tokenizer.cpp), computed by sentencepiece.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.golden.tokenizer_random

Seeded, and made only from the committed tokenizers (models/tokenizers/*.model), so the same lines come out on
every run. Writes <golden dir>/tokenizer_random/<name>.tsv (build/golden unless $ATTNLAB_GOLDEN_DIR), one line
per string, with these tab-separated columns (text columns escaped as in attnlab.golden.tokenizer):
    text                  a random string: mixed scripts, emoji and ZWJ sequences, combining marks, odd spaces,
                          control and private-use characters, or bytes that were not UTF-8, repaired (U+FFFD)
    ids                   sentencepiece's encode(text)
    decoded               sentencepiece's decode(ids)
    round trip ids        sentencepiece's encode(decoded): a second trip through both
    raw bytes (hex)       for a repaired line, the invalid bytes it came from (the C++ tokenizer must refuse
                          them); "-" otherwise
"""
import os
import random

import sentencepiece as spm

from attnlab.paths import TOKENIZER_DIR, golden_dir

OUT_DIR = golden_dir("tokenizer_random")
TOKENIZERS = ["multi30k.en", "multi30k.de", "cmn.en", "cmn.zh", "flickr8k.en"]
LINES_PER_TOKENIZER = 300
SEED = 20261201

# (first, last) code points of each pool; every pool is a run of assigned characters.
SCRIPTS = {
    "latin": [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xFF), (0x100, 0x17F)],
    "greek": [(0x391, 0x3A9), (0x3B1, 0x3C9)],
    "cyrillic": [(0x410, 0x44F)],
    "arabic": [(0x627, 0x64A)],
    "hebrew": [(0x5D0, 0x5EA)],
    "devanagari": [(0x905, 0x939)],
    "thai": [(0xE01, 0xE2E)],
    "hangul": [(0xAC00, 0xAC00 + 400)],
    "cjk": [(0x4E00, 0x4E00 + 2000)],
    "cjk_ext_b": [(0x20000, 0x20000 + 200)],  # outside the BMP: 4-byte UTF-8
    "kana": [(0x3041, 0x3096), (0x30A1, 0x30FA)],
    "digits": [(0x30, 0x39), (0x660, 0x669)],
    "punctuation": [(0x21, 0x2F), (0x3A, 0x40), (0x2010, 0x2027), (0x3001, 0x3002)],
}
COMBINING = [(0x300, 0x36F)]
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇩🇪", "❤\ufe0f", "🧑🏿\u200d🚀", "🐕", "🎉", "\u263a", "🏳\ufe0f\u200d🌈"]
SPACES = [" ", "  ", "\t", "\u00a0", "\u3000", "\u2009", "\u200b", "\n", " \r\n "]
ODD = ["\u2581", "\ufffd", "\x01", "\x7f", "\ue000", "\ufeff", "<s>", "</s>", "<unk>", "<0x41>", "\u0130", "\u00df",
       "\ufb01", "\u2126", "\u212b", "\uff21"]  # NFKC folds the last four: ﬁ Ω Å Ａ


def escape(text):
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def pick(rng, ranges):
    first, last = rng.choice(ranges)
    return chr(rng.randint(first, last))


def random_word(rng, script):
    word = "".join(pick(rng, SCRIPTS[script]) for _ in range(rng.randint(1, 8)))
    if rng.random() < 0.2:  # combining marks after a base character, one or several
        at = rng.randint(1, len(word))
        word = word[:at] + "".join(pick(rng, COMBINING) for _ in range(rng.randint(1, 3))) + word[at:]
    return word


def random_text(rng):
    parts = []
    for _ in range(rng.randint(1, 12)):
        roll = rng.random()
        if roll < 0.65:
            parts.append(random_word(rng, rng.choice(list(SCRIPTS))))
        elif roll < 0.8:
            parts.append(rng.choice(EMOJI))
        elif roll < 0.9:
            parts.append(rng.choice(ODD))
        else:
            parts.append(pick(rng, COMBINING))  # a combining mark with no base of its own
        parts.append(rng.choice(SPACES) if rng.random() < 0.3 else " ")
    text = "".join(parts)
    return text.strip() if rng.random() < 0.5 else text


def invalid_bytes(rng):
    """UTF-8 of a random text with a defect spliced in: a stray continuation byte, a truncated sequence, an
    overlong form, a surrogate, a code point past U+10FFFF, or 0xFE/0xFF."""
    good = random_text(rng).encode("utf-8")
    defect = rng.choice([b"\x80", b"\xbf", b"\xe4\xb8", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xe0\x80\xaf",
                         b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xfe", b"\xff", b"\xc3"])
    at = rng.randint(0, len(good))
    # Not inside a character: step back to a lead byte so the defect is the only invalid part.
    while at < len(good) and at > 0 and (good[at] & 0xC0) == 0x80:
        at -= 1
    return good[:at] + defect + good[at:]


def golden_lines(sp, rng):
    for n in range(LINES_PER_TOKENIZER):
        raw = None
        if n % 5 == 4:
            raw = invalid_bytes(rng)
            text = raw.decode("utf-8", errors="replace")
            assert text.encode("utf-8") != raw
        else:
            text = random_text(rng)
        ids = sp.encode(text)
        decoded = sp.decode(ids)
        again = sp.encode(decoded)
        yield "\t".join([escape(text), " ".join(map(str, ids)), escape(decoded), " ".join(map(str, again)),
                         raw.hex() if raw is not None else "-"])


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for index, name in enumerate(TOKENIZERS):
        sp = spm.SentencePieceProcessor(model_file=os.path.join(TOKENIZER_DIR, name + ".model"))
        rng = random.Random(SEED + index)
        path = os.path.join(OUT_DIR, name + ".tsv")
        with open(path + ".tmp", "w", encoding="utf-8", newline="\n") as f:
            for line in golden_lines(sp, rng):
                f.write(line + "\n")
        os.replace(path + ".tmp", path)
        print(f"{name}: {LINES_PER_TOKENIZER} random lines -> {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
