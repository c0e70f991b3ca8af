#!/usr/bin/python3
"""Golden ids for the C++ tokenizer parity test (tests/cpp/test_tokenizer.cpp), computed by sentencepiece.

    python3 -m attnlab.data.prepare && python3 -m attnlab.golden.tokenizer

Writes build/golden/tokenizer/<name>.tsv (derived from ../shared/data, so never committed), one line per input:
    text <TAB> ids (space-separated) <TAB> sentencepiece's decode(ids)
Text columns escape backslash, tab, newline and carriage return as \\\\, \\t, \\n, \\r.

    multi30k.en / multi30k.de   all of Multi30k val (+ adversarial lines + one 10,000+ character line)
    cmn.en                      Tatoeba val English side
    cmn.zh                      1,000 Chinese lines: the val split, then test, in file order
    toy*                        a hand-made vocabulary (written here as a .model protobuf and a .gguf) that
                                exercises score ties, unused pieces (resegmentation), user-defined and
                                single-character control symbols, and the normalizer flags
"""
import os
import struct
import sys

import sentencepiece as spm

from attnlab.gguf.tokenizer import add_tokenizer
from attnlab.gguf.writer import GGUFWriter
from attnlab.paths import BUILD_DATA as DATA_DIR, TOKENIZER_DIR, golden_dir

OUT_DIR = golden_dir("tokenizer")

ADVERSARIAL = [
    "", " ", "   ", "\t", " \t ", "  leading spaces", "trailing spaces   ", "many    inner     spaces",
    "tab\tseparated\twords", "line\nbreak and\r\ncarriage return", "\u3000ideographic space\u3000",
    "non\u00a0breaking\u00a0space", "emoji 😀👍🏽 and 👨\u200d👩\u200d👧 family", "rare CJK 𠀀𪚥龘 饕餮 and 中文句子。",
    "digits 0123456789, 3.14159 and 1,000,000", "combining e\u0301 n\u0303 a\u0308\u0304", "Ωμέγα русский العربية עברית",
    "▁", "a ▁", "▁▁x", "x▁▁", "▁ ▁ a", "<s> </s> <unk> <pad> <0x41>", "\x00nul", "\ufffd replacement",
    "A", "a", "Zebra.", "ÄÖÜ äöü ß", "\u2581\u2581", "  \u2581  ", "x" * 300,
]

# the toy model's normal pieces: (piece, score); ties on purpose
TOY_PIECES = [
    ("▁", -1.0), ("a", -1.0), ("b", -1.0), ("c", -1.0), ("d", -1.0), ("ab", -2.0), ("bc", -2.0), ("cd", -2.0),
    ("abc", -3.0), ("▁ab", -2.5), ("▁c", -2.0), ("bcd", -3.0), ("dd", -4.0), ("ddd", -4.0), ("dddd", -4.0),
    ("▁▁", -2.0), ("a▁", -2.2),
]
TOY_UNUSED = [("▁a", 0.0), ("ca", -0.5), ("cab", -0.5), ("bb", -0.1)]  # merge steps that never reach the output
TOY_USER_DEFINED = ["@@", "@@@", "<sep>"]
TOY_CONTROL = ["§"]  # a one-character control symbol: typed in text it still maps to its id
TOY_TEXTS = [
    "abc", "ab bc abc", "ac", "a c", "cab", "bb", "abb", "bbb", "dddddd", "ddddd d dd", "abcd bcd cd",
    "@@a@@@b@@@@", "<sep>a<sep>", "§a§", "a§ §", "x y z", "  a  b  ", " ab ", "ab  ", "a\u00e9b", "▁a",
    "ca ab ca", "cabab", "aaaa", "▁▁ a", "a ▁▁",
]
TOY_VARIANTS = {  # name -> (add_dummy_prefix, remove_extra_whitespaces, byte pieces)
    "toy": (True, True, True),
    "toy.nodummy": (False, True, True),
    "toy.keepspaces": (True, False, True),
    "toy.rawspaces": (False, False, True),
    "toy.nobytes": (True, True, False),
}


def escape(text):
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def read_lines(relative):
    with open(os.path.join(DATA_DIR, relative), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def long_line(lines, min_chars=10000):
    out = []
    while sum(len(x) + 1 for x in out) < min_chars:
        out.append(lines[len(out) % len(lines)])
    return " ".join(out)


def write_golden(name, sp, texts):
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, name + ".tsv")
    with open(path + ".tmp", "w", encoding="utf-8", newline="\n") as f:
        for text in texts:
            ids = sp.encode(text)
            ids_column = " ".join(map(str, ids))
            if not ids and any(symbol in text for symbol in TOY_CONTROL):
                # sentencepiece fails on a one-character control symbol typed as text ("all normalized
                # characters are not consumed") and the binding returns []: the C++ side must throw.
                ids_column = "!error"
            f.write(f"{escape(text)}\t{ids_column}\t{escape(sp.decode(ids))}\n")
    os.replace(path + ".tmp", path)
    print(f"{name}: {len(texts)} lines -> {path}")


# --- a hand-written ModelProto (sentencepiece_model.proto), since google.protobuf is not installed ---------
def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, wire, payload):
    key = _varint((number << 3) | wire)
    if wire == 0:
        return key + _varint(payload)
    if wire == 5:
        return key + payload
    return key + _varint(len(payload)) + payload


def toy_model_proto(add_dummy_prefix, remove_extra_whitespaces, with_bytes):
    pieces = [("<pad>", 0.0, 3), ("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    if with_bytes:
        pieces += [(f"<0x{b:02X}>", 0.0, 6) for b in range(256)]
    pieces += [(p, 0.0, 4) for p in TOY_USER_DEFINED] + [(p, 0.0, 3) for p in TOY_CONTROL]
    pieces += [(p, s, 1) for p, s in TOY_PIECES] + [(p, s, 5) for p, s in TOY_UNUSED]
    proto = b""
    for piece, score, kind in pieces:
        proto += _field(1, 2, _field(1, 2, piece.encode("utf-8")) + _field(2, 5, struct.pack("<f", score)) +
                        _field(3, 0, kind))
    trainer = (_field(3, 0, 2) + _field(4, 0, len(pieces)) + _field(35, 0, int(with_bytes)) + _field(40, 0, 1) +
               _field(41, 0, 2) + _field(42, 0, 3) + _field(43, 0, 0))
    normalizer = (_field(1, 2, b"identity") + _field(3, 0, int(add_dummy_prefix)) +
                  _field(4, 0, int(remove_extra_whitespaces)) + _field(5, 0, 1))
    return proto + _field(2, 2, trainer) + _field(3, 2, normalizer)


def write_toys():
    for name, (dummy, remove, with_bytes) in TOY_VARIANTS.items():
        model_path = os.path.join(OUT_DIR, name + ".model")
        with open(model_path, "wb") as f:
            f.write(toy_model_proto(dummy, remove, with_bytes))
        writer = GGUFWriter(os.path.join(OUT_DIR, name + ".gguf"), architecture="attnlab.tokenizer")
        add_tokenizer(writer, model_path, role="text")
        writer.write()
        write_golden(name, spm.SentencePieceProcessor(model_file=model_path), TOY_TEXTS + ADVERSARIAL)


def main():
    for relative in ("multi30k/val.en", "cmn/val.zh"):
        if not os.path.exists(os.path.join(DATA_DIR, relative)):
            sys.exit(f"{os.path.join(DATA_DIR, relative)} is missing: run python3 -m attnlab.data.prepare")
    os.makedirs(OUT_DIR, exist_ok=True)
    zh = (read_lines("cmn/val.zh") + read_lines("cmn/test.zh"))[:1000]
    corpora = {
        "multi30k.en": read_lines("multi30k/val.en"),
        "multi30k.de": read_lines("multi30k/val.de"),
        "cmn.en": read_lines("cmn/val.en"),
        "cmn.zh": zh,
    }
    for name, lines in corpora.items():
        sp = spm.SentencePieceProcessor(model_file=os.path.join(TOKENIZER_DIR, name + ".model"))
        write_golden(name, sp, lines + ADVERSARIAL + [long_line(lines)])
    write_toys()


if __name__ == "__main__":
    main()
