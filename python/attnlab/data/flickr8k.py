#!/usr/bin/python3
"""Flickr8k for the Show-Attend-Tell captioner: captions, the standard split, the caption tokenizer, BLEU references.

    /usr/bin/python3 models/flickr8k.py            # trains models/tokenizers/flickr8k.en.{model,gguf}

Data: ../shared/data/flickr8k (never committed, never shipped). `Flickr8k.token.txt` has 5 captions per image
(`IMAGE.jpg#k<TAB>caption`); `Flickr_8k.{train,dev,test}Images.txt` the standard 6,000 / 1,000 / 1,000 split.

Caption text (`clean_caption`): lower-cased, whitespace collapsed, the final " ." the captions end with dropped.
The model is trained on, and writes, this form; the BLEU references are the same cleaned captions, and BLEU
tokenizes both sides with models/bleu.py's lower-cased 13a tokenizer (`tokenize_lc_13a`), 5 references per image,
as the paper's "lower-cased, tokenized" BLEU.

Tokenizer: SentencePiece BPE trained on the train split's cleaned captions with models/train_tokenizer.py's
settings (byte fallback, identity normalization, split digits, pad 0 / unk 1 / bos 2 / eos 3). Vocabulary 4000:
the train captions have ~7.4k word types; nearly every word seen 5+ times stays one piece.
"""
from __future__ import annotations

import os
import re
import sys
from collections import OrderedDict
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

DATA_DIR = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "flickr8k"))
if not os.path.isdir(DATA_DIR):
    DATA_DIR = "/work/shared/data/flickr8k"
IMAGE_DIR = os.path.join(DATA_DIR, "images")
TOKENIZER_PREFIX = os.path.join(ROOT, "models", "tokenizers", "flickr8k.en")
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
    """Reference streams for models/bleu.py: refs[k][i] is caption k of images[i] (every image has 5)."""
    streams = [[] for _ in range(count)]
    for img in images:
        caps = captions[img]
        for k in range(count):
            streams[k].append(caps[k % len(caps)])
    return streams


def bleu_1_to_4(hyps: List[str], refs) -> List[float]:
    """Corpus BLEU-1..4 (no smoothing, as coco-caption), lower-cased 13a tokens, multiple references."""
    from bleu import bleu_stats, compute_bleu, tokenize_lc_13a
    correct, total, sys_len, ref_len = bleu_stats(hyps, refs, tokenize_lc_13a, max_order=4)
    return [compute_bleu(correct[:n], total[:n], sys_len, ref_len, smooth="none", max_order=n) for n in (1, 2, 3, 4)]


def train_tokenizer(out_prefix: str = TOKENIZER_PREFIX, vocab_size: int = VOCAB_SIZE) -> str:
    import sentencepiece as spm
    from gguf_writer import GGUFWriter
    from tokenizer_gguf import add_tokenizer

    captions = load_captions()
    text_dir = os.path.join(ROOT, "build", "data", "flickr8k")
    os.makedirs(text_dir, exist_ok=True)
    text_path = os.path.join(text_dir, "train.en")
    with open(text_path, "w", encoding="utf-8") as f:
        for img in load_split("train"):
            for cap in captions[img]:
                f.write(cap + "\n")
    try:
        from train_tokenizer import train as spm_train  # same settings as the translation tokenizers
        import train_tokenizer
        saved = train_tokenizer.OUT_DIR
        train_tokenizer.OUT_DIR = os.path.dirname(out_prefix)
        try:
            model_path = spm_train(os.path.basename(out_prefix), text_path, vocab_size, 1.0)
        finally:
            train_tokenizer.OUT_DIR = saved
    except ImportError:
        spm.SentencePieceTrainer.train(
            input=text_path, model_prefix=out_prefix, model_type="bpe", vocab_size=vocab_size,
            character_coverage=1.0, byte_fallback=True, normalization_rule_name="identity", split_digits=True,
            pad_id=0, unk_id=1, bos_id=2, eos_id=3, pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>",
            eos_piece="</s>", num_threads=1, input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2)
        os.remove(out_prefix + ".vocab")
        model_path = out_prefix + ".model"
    writer = GGUFWriter(out_prefix + ".gguf", architecture="attnlab.tokenizer")
    writer.add_string("general.name", os.path.basename(out_prefix))
    add_tokenizer(writer, model_path, role="text")
    writer.write()
    return model_path


def main():
    path = train_tokenizer()
    captions = load_captions()
    print(f"{len(captions)} images with captions; splits "
          + ", ".join(f"{s} {len(load_split(s))}" for s in SPLIT_FILES) + f"; tokenizer {path}")


if __name__ == "__main__":
    main()
