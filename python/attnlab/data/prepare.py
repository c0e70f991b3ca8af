#!/usr/bin/python3
"""Turn the raw corpora in ../shared/data into plain UTF-8 text files under build/data/, one sentence per line.

  build/data/multi30k/{train,val,test2016}.{en,de}       Multi30k task 1, line-aligned
  build/data/cmn/{train,val,test}.{en,zh,attribution}    Tatoeba EN-ZH pairs, line-aligned
  build/data/broad/{train,val,test,tatoeba-val,newstest2013}.{en,de}   Tatoeba EN-DE + Multi30k (prepare_broad)

The cmn split is made by UNIQUE English sentence so that no English sentence appears in two splits (Tatoeba
has many pairs sharing one English side; splitting by pair would leak them into val/test). Which split an
English sentence lands in is decided by sorting the unique sentences by SHA-256("1234" + TAB + sentence):
the first VAL_SENTENCES go to val, the next TEST_SENTENCES to test, the rest to train. A hash instead of
Python's `random` keeps the split identical on every Python version and platform, and no list of sentences
(which is licensed data) needs to be committed. Pairs keep their order from cmn.txt within each split.

    python3 -m attnlab.data.prepare   (takes about a second; always rewrites)

A new data source is a function that writes build/data/<corpus>/ and returns its line count per split, listed in
PREPARERS (and, for translation, its splits and pairs in attnlab.data.pairs).
"""
import gzip
import hashlib
import os
import re
import sys

from attnlab.paths import BUILD_DATA as OUT_ROOT, SHARED_DATA as DATA_ROOT

SPLIT_SEED = "1234"
VAL_SENTENCES = 1000   # unique English sentences (with all their pairs)
TEST_SENTENCES = 1000

# Multi30k file stem in ../shared/data/multi30k -> our split name
MULTI30K_SPLITS = {"train": "train", "val": "val", "test_2016_flickr": "test2016"}


def write_lines(path, lines):
    # Write to a temporary name first so an interrupted run never leaves a half-written file behind.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)


def clean_line(line):
    # Only the line terminator is removed; the text itself is kept verbatim (the tokenizer decides on spaces).
    return line.rstrip("\r\n")


def prepare_multi30k():
    counts = {}
    for stem, split in MULTI30K_SPLITS.items():
        per_lang = {}
        for lang in ("en", "de"):
            src = os.path.join(DATA_ROOT, "multi30k", f"{stem}.{lang}.gz")
            with gzip.open(src, "rt", encoding="utf-8") as f:
                per_lang[lang] = [clean_line(l) for l in f]
        if len(per_lang["en"]) != len(per_lang["de"]):
            sys.exit(f"multi30k {stem}: {len(per_lang['en'])} English vs {len(per_lang['de'])} German lines")
        for lang, lines in per_lang.items():
            write_lines(os.path.join(OUT_ROOT, "multi30k", f"{split}.{lang}"), lines)
        counts[split] = len(per_lang["en"])
    return counts


def split_key(english):
    return hashlib.sha256((SPLIT_SEED + "\t" + english).encode("utf-8")).hexdigest()


def prepare_cmn():
    pairs = []
    with open(os.path.join(DATA_ROOT, "cmn", "cmn.txt"), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = clean_line(line).split("\t")
            if len(fields) != 3:
                sys.exit(f"cmn.txt line {number}: expected EN<TAB>ZH<TAB>attribution, got {len(fields)} fields")
            pairs.append(fields)

    unique_english = sorted({en for en, _, _ in pairs}, key=lambda s: (split_key(s), s))
    split_of = {}
    for rank, english in enumerate(unique_english):
        if rank < VAL_SENTENCES:
            split_of[english] = "val"
        elif rank < VAL_SENTENCES + TEST_SENTENCES:
            split_of[english] = "test"
        else:
            split_of[english] = "train"

    counts = {}
    for split in ("train", "val", "test"):
        chosen = [p for p in pairs if split_of[p[0]] == split]
        for column, suffix in enumerate(("en", "zh", "attribution")):
            write_lines(os.path.join(OUT_ROOT, "cmn", f"{split}.{suffix}"), [p[column] for p in chosen])
        counts[split] = len(chosen)
    return counts


# Tatoeba EN-DE ("broad"): no-break spaces become spaces, soft hyphens and zero-width spaces go.
BROAD_SPACES = re.compile("[\u00a0\u202f]")
BROAD_INVISIBLE = re.compile("[\u00ad\u200b]")
BROAD_VAL_SENTENCES = 1000
BROAD_TEST_SENTENCES = 2000


def normalize_broad(line):
    line = BROAD_INVISIBLE.sub("", BROAD_SPACES.sub(" ", clean_line(line)))
    return " ".join(line.split())


def read_broad_pairs(stem):
    per_lang = {}
    for lang in ("en", "de"):
        with gzip.open(os.path.join(DATA_ROOT, "broad", f"{stem}.{lang}.gz"), "rt", encoding="utf-8") as f:
            per_lang[lang] = [normalize_broad(line) for line in f]
    if len(per_lang["en"]) != len(per_lang["de"]):
        sys.exit(f"broad {stem}: {len(per_lang['en'])} English vs {len(per_lang['de'])} German lines")
    return list(zip(per_lang["en"], per_lang["de"]))


def read_prepared_pairs(corpus, split):
    files = [os.path.join(OUT_ROOT, corpus, f"{split}.{lang}") for lang in ("en", "de")]
    with open(files[0], encoding="utf-8") as en, open(files[1], encoding="utf-8") as de:
        return [(clean_line(a), clean_line(b)) for a, b in zip(en, de)]


def prepare_broad():
    """Tatoeba EN-DE split by English sentence, as cmn is (an alternative translation goes where its English
    sentence's pair goes), together with Multi30k (prepared first):
      train         Tatoeba train + the alternative translations of its sentences + Multi30k train
      val           Tatoeba val + Multi30k val (model selection over both styles)
      test          Tatoeba test (one reference each: the train file's translation)
      tatoeba-val   Tatoeba val alone;  newstest2013  WMT13 news, how far a model carries beyond Tatoeba"""
    main_pairs = read_broad_pairs("train")
    unique_english = sorted({en for en, _ in main_pairs}, key=lambda s: (split_key(s), s))
    split_of = {}
    for rank, english in enumerate(unique_english):
        split_of[english] = ("val" if rank < BROAD_VAL_SENTENCES else
                             "test" if rank < BROAD_VAL_SENTENCES + BROAD_TEST_SENTENCES else "train")
    chosen = {split: [p for p in main_pairs if split_of[p[0]] == split] for split in ("train", "val", "test")}
    # The few alternative sentences without a pair in train.* have no split of their own: they train.
    alt_train = [p for p in read_broad_pairs("alt") if split_of.get(p[0], "train") == "train"]
    splits = {
        "train": chosen["train"] + alt_train + read_prepared_pairs("multi30k", "train"),
        "val": chosen["val"] + read_prepared_pairs("multi30k", "val"),
        "test": chosen["test"],
        "tatoeba-val": chosen["val"],
        "newstest2013": read_broad_pairs("newstest2013"),
    }
    for split, pairs in splits.items():
        for column, lang in enumerate(("en", "de")):
            write_lines(os.path.join(OUT_ROOT, "broad", f"{split}.{lang}"), [p[column] for p in pairs])
    return {split: len(pairs) for split, pairs in splits.items()}


# corpus -> (the function writing build/data/<corpus>/, what its counts count), in order: broad reads multi30k's
PREPARERS = {"multi30k": (prepare_multi30k, "lines"), "cmn": (prepare_cmn, "pairs"), "broad": (prepare_broad, "pairs")}


def main():
    for corpus, (prepare, unit) in PREPARERS.items():
        counts = prepare()
        print(f"{corpus}:", ", ".join(f"{k} {v}" for k, v in counts.items()), unit, "->", os.path.join(OUT_ROOT, corpus))


if __name__ == "__main__":
    main()
