#!/usr/bin/python3
"""The one SentencePiece recipe of every attnlab tokenizer, the table of shipped tokenizers, and the command that
trains them and exports each as a GGUF tokenizer file.

    python3 -m attnlab.data.prepare              # first: writes build/data/
    python3 -m attnlab.data.tokenizer [NAME...]  # writes models/tokenizers/<name>.{model,gguf} (default: all)

Choices (docs/gguf.md, "Tokenizer"):
- model_type=bpe with byte_fallback: every input encodes without <unk>; a character outside the vocabulary
  becomes its UTF-8 bytes <0xXX>.
- normalization_rule_name='identity': no NFKC, so the C++ tokenizer needs no normalization tables. The
  normalizer then only drops leading/trailing/repeated U+0020 spaces, adds the "▁" dummy prefix and turns
  spaces into "▁".
- split_digits: numbers become single digits, so rare numbers share pieces with common ones.
- Vocabulary sizes (they include the 4 special ids and the 256 byte pieces):
    multi30k.en / multi30k.de  8000  Multi30k train, 29k captions, ~15k/25k word types: the size the
                                     published Multi30k baselines use, frequent words stay whole.
    cmn.en                     4000  Tatoeba train, 26k short sentences, ~12k word types: a smaller corpus,
                                     so fewer, more frequent pieces.
    cmn.zh                     4000  ~2,650 characters pass character_coverage 0.9995 (the rest fall back to
                                     bytes), which leaves ~1,100 merges for frequent words.
    flickr8k.en                4000  the train split's cleaned captions (attnlab.data.flickr8k), ~7.4k word
                                     types: nearly every word seen 5+ times stays one piece.
- ids: pad=0, unk=1, bos=2, eos=3 (attnlab.nn.decoding).
- Deterministic: one thread, all sentences in file order (no sampling or shuffling).

A new tokenizer is one TOKENIZERS entry: its training text (under build/data, or written by its own function) and
its vocabulary size and character coverage. The golden fixtures train tiny ones with the same recipe (train_bpe).
"""
import argparse
import os
import sys
from dataclasses import dataclass
from typing import Callable, Optional

import sentencepiece as spm

from attnlab.data import flickr8k
from attnlab.gguf.tokenizer import add_tokenizer
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn.decoding import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from attnlab.paths import BUILD_DATA, TOKENIZER_DIR

# What every tokenizer shares; train_bpe adds the corpus, the vocabulary size, the coverage and byte fallback.
RECIPE = dict(
    model_type="bpe",
    normalization_rule_name="identity",
    split_digits=True,
    pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
    pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>", eos_piece="</s>",
    num_threads=1,
    input_sentence_size=0,          # use every sentence
    shuffle_input_sentence=False,
    max_sentence_length=16384,
    minloglevel=2,
)


@dataclass(frozen=True)
class TokenizerSpec:
    text: str                                   # training text, relative to build/data
    vocab_size: int
    character_coverage: float = 1.0
    write_text: Optional[Callable[[str], None]] = None   # writes the text first (else attnlab.data.prepare has)


TOKENIZERS = {
    "multi30k.en": TokenizerSpec("multi30k/train.en", 8000),
    "multi30k.de": TokenizerSpec("multi30k/train.de", 8000),
    "cmn.en": TokenizerSpec("cmn/train.en", 4000),
    "cmn.zh": TokenizerSpec("cmn/train.zh", 4000, 0.9995),
    # 10,000 pieces keep everyday words whole ("Law", "perfect", "tired", "because", "überquerte" at 12,000):
    # 8,000 split "L·aw". character_coverage < 1 leaves rare characters (names in other scripts) to byte fallback.
    "broad.en": TokenizerSpec("broad/train.en", 10000, 0.9999),
    "broad.de": TokenizerSpec("broad/train.de", 10000, 0.9999),
    "flickr8k.en": TokenizerSpec("flickr8k/train.en", flickr8k.VOCAB_SIZE, write_text=flickr8k.write_train_captions),
}


def train_bpe(text_path, prefix, vocab_size, character_coverage=1.0, byte_fallback=True):
    """RECIPE on one text file -> prefix.model (the .vocab file, the same pieces unreadably, is removed)."""
    spm.SentencePieceTrainer.train(input=text_path, model_prefix=prefix, vocab_size=vocab_size,
                                   character_coverage=character_coverage, byte_fallback=byte_fallback, **RECIPE)
    os.remove(prefix + ".vocab")
    return prefix + ".model"


def export_gguf(name, model_path, out_dir=TOKENIZER_DIR):
    writer = GGUFWriter(os.path.join(out_dir, name + ".gguf"), architecture="attnlab.tokenizer")
    writer.add_string("general.name", name)
    add_tokenizer(writer, model_path, role="text")
    writer.write()


def build(name, out_dir=TOKENIZER_DIR, data_dir=BUILD_DATA):
    """Trains TOKENIZERS[name] -> out_dir/<name>.{model,gguf}; returns the .model path."""
    spec = TOKENIZERS[name]
    text_path = os.path.join(data_dir, spec.text)
    if spec.write_text is not None:
        spec.write_text(text_path)
    if not os.path.exists(text_path):
        sys.exit(f"{text_path} is missing: run python3 -m attnlab.data.prepare first")
    os.makedirs(out_dir, exist_ok=True)
    model_path = train_bpe(text_path, os.path.join(out_dir, name), spec.vocab_size, spec.character_coverage)
    export_gguf(name, model_path, out_dir)
    return model_path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", metavar="NAME",
                    help=f"tokenizers to train (default: all of {', '.join(TOKENIZERS)})")
    ap.add_argument("--out", default=TOKENIZER_DIR, help="directory for <name>.{model,gguf}")
    args = ap.parse_args(argv)
    unknown = [name for name in args.names if name not in TOKENIZERS]
    if unknown:
        ap.error(f"unknown tokenizer(s) {unknown}; expected some of {list(TOKENIZERS)}")
    for name in args.names or list(TOKENIZERS):
        model_path = build(name, args.out)
        print(f"{name}: vocab {TOKENIZERS[name].vocab_size} -> {model_path} and .gguf")


if __name__ == "__main__":
    main()
