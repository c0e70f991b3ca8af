#!/usr/bin/python3
"""Train the project's SentencePiece BPE tokenizers and export each one as a GGUF tokenizer file.

    /usr/bin/python3 models/prepare_data.py       # first: writes build/data/
    /usr/bin/python3 models/train_tokenizer.py    # writes models/tokenizers/<name>.{model,gguf}

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
- ids: pad=0, unk=1, bos=2, eos=3.
- Deterministic: one thread, all sentences in file order (no sampling or shuffling).
"""
import os
import sys

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import GGUFWriter  # noqa: E402
from tokenizer_gguf import add_tokenizer  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(REPO_ROOT, "build", "data")
OUT_DIR = os.path.join(REPO_ROOT, "models", "tokenizers")

# name -> (training text relative to build/data, vocab size, character coverage)
TOKENIZERS = {
    "multi30k.en": ("multi30k/train.en", 8000, 1.0),
    "multi30k.de": ("multi30k/train.de", 8000, 1.0),
    "cmn.en": ("cmn/train.en", 4000, 1.0),
    "cmn.zh": ("cmn/train.zh", 4000, 0.9995),
}


def train(name, text_path, vocab_size, coverage):
    prefix = os.path.join(OUT_DIR, name)
    spm.SentencePieceTrainer.train(
        input=text_path,
        model_prefix=prefix,
        model_type="bpe",
        vocab_size=vocab_size,
        character_coverage=coverage,
        byte_fallback=True,
        normalization_rule_name="identity",
        split_digits=True,
        pad_id=0, unk_id=1, bos_id=2, eos_id=3,
        pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>", eos_piece="</s>",
        num_threads=1,
        input_sentence_size=0,          # use every sentence
        shuffle_input_sentence=False,
        max_sentence_length=16384,
        minloglevel=2,
    )
    os.remove(prefix + ".vocab")  # the .model holds the same pieces; the GGUF is the readable export
    return prefix + ".model"


def export_gguf(name, model_path):
    writer = GGUFWriter(os.path.join(OUT_DIR, name + ".gguf"), architecture="attnlab.tokenizer")
    writer.add_string("general.name", name)
    add_tokenizer(writer, model_path, role="text")
    writer.write()


def main():
    names = sys.argv[1:] or list(TOKENIZERS)
    os.makedirs(OUT_DIR, exist_ok=True)
    for name in names:
        relative, vocab_size, coverage = TOKENIZERS[name]
        text_path = os.path.join(DATA_DIR, relative)
        if not os.path.exists(text_path):
            sys.exit(f"{text_path} is missing: run /usr/bin/python3 models/prepare_data.py first")
        model_path = train(name, text_path, vocab_size, coverage)
        export_gguf(name, model_path)
        print(f"{name}: vocab {vocab_size} -> {model_path} and .gguf")


if __name__ == "__main__":
    main()
