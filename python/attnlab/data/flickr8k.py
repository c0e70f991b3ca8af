"""Flickr8k for the Show-Attend-Tell captioner: captions, the standard split, the caption tokenizer's text, BLEU
references.

    python3 -m attnlab.data.tokenizer flickr8k.en   # trains models/tokenizers/flickr8k.en.{model,gguf}

Data: ../shared/data/flickr8k (never committed, never shipped). `Flickr8k.token.txt` has 5 captions per image
(`IMAGE.jpg#k<TAB>caption`); `Flickr_8k.{train,dev,test}Images.txt` the standard 6,000 / 1,000 / 1,000 split.

Caption text (`clean_caption`): lower-cased, whitespace collapsed, the final " ." the captions end with dropped.
The model is trained on, and writes, this form; the BLEU references are the same cleaned captions, and BLEU
tokenizes both sides with attnlab.eval.bleu's lower-cased 13a tokenizer (`tokenize_lc_13a`), 5 references per image,
as the paper's "lower-cased, tokenized" BLEU (attnlab.eval.bleu.bleu_1_to_4).

Tokenizer: SentencePiece BPE trained on the train split's cleaned captions (write_train_captions) with the recipe of
every attnlab tokenizer (attnlab.data.tokenizer). Vocabulary 4000: the train captions have ~7.4k word types; nearly
every word seen 5+ times stays one piece.
"""
from __future__ import annotations

import os
import re
from collections import OrderedDict
from typing import Dict, List

from attnlab.paths import SHARED_DATA

DATA_DIR = os.path.join(SHARED_DATA, "flickr8k")
IMAGE_DIR = os.path.join(DATA_DIR, "images")
TOKENIZER_PATH = "models/tokenizers/flickr8k.en.model"   # repository-relative, as checkpoints record it
VOCAB_SIZE = 4000
SPLIT_FILES = {"train": "Flickr_8k.trainImages.txt", "dev": "Flickr_8k.devImages.txt",
               "test": "Flickr_8k.testImages.txt"}


def clean_caption(text: str) -> str:
    text = " ".join(text.lower().split())
    text = re.sub(r"\s*\.$", "", text)          # every caption ends with " ." (or "."): the model never writes it
    return text.strip()


def load_captions(data_dir: str = DATA_DIR) -> "OrderedDict[str, List[str]]":
    """image file name -> its cleaned captions (5), in file order."""
    captions: "OrderedDict[str, List[str]]" = OrderedDict()
    with open(os.path.join(data_dir, "Flickr8k.token.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            # the first line of the official file uses a space instead of the tab
            key, _, caption = line.partition("\t") if "\t" in line else line.partition(" ")
            image = key.split("#")[0]
            cleaned = clean_caption(caption)
            if cleaned:
                captions.setdefault(image, []).append(cleaned)
    return captions


def load_split(split: str, data_dir: str = DATA_DIR) -> List[str]:
    """'train' | 'dev' | 'test' -> image file names, in file order."""
    if split not in SPLIT_FILES:
        raise ValueError(f"unknown split {split!r}; expected one of {list(SPLIT_FILES)}")
    with open(os.path.join(data_dir, SPLIT_FILES[split]), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def all_images(data_dir: str = DATA_DIR) -> List[str]:
    """Every image of the three splits (8,000), train first: the order of the feature store."""
    return [img for split in ("train", "dev", "test") for img in load_split(split, data_dir)]


def references(images: List[str], captions: Dict[str, List[str]], count: int = 5) -> List[List[str]]:
    """Reference streams for attnlab.eval.bleu: refs[k][i] is caption k of images[i] (every image has 5)."""
    streams = [[] for _ in range(count)]
    for img in images:
        caps = captions[img]
        for k in range(count):
            streams[k].append(caps[k % len(caps)])
    return streams


def write_train_captions(text_path: str) -> None:
    """The caption tokenizer's training text: every train image's cleaned captions, one per line, in file order."""
    captions = load_captions()
    os.makedirs(os.path.dirname(text_path), exist_ok=True)
    with open(text_path, "w", encoding="utf-8") as f:
        for img in load_split("train"):
            for cap in captions[img]:
                f.write(cap + "\n")
