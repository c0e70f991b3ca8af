#!/usr/bin/python3
"""Golden greedy translations of the SHIPPED f16 translators, for tests/cpp/test_shipped_models.cpp.

    python3 -m attnlab.data.prepare && python3 -m attnlab.golden.shipped

For every models/manifest.json entry with task "translate" and dtype "f16" (an RNN or a Transformer), the GGUF is
dequantized back into the PyTorch model (attnlab.eval.translate's loader, by general.architecture) and
the first --sentences lines of the test split of the corpus it was trained on are translated greedily, keeping each step's attention
weights (for a Transformer: every layer's and head's encoder self-, decoder self- and cross-attention). Written to
build/golden/shipped/<id>.expected.gguf (or $ATTNLAB_GOLDEN_DIR/shipped) in the layout of attnlab.golden.rnn's
*.expected.gguf, plus `expected.model_file` (the repo-relative GGUF path), and build/golden/shipped/index.txt with
one id per line. Derived from ../shared/data, so never committed.

The engine computes in f32 from the same f16 weights, but in another order of operations than PyTorch, so the
test allows a near-tie argmax to flip in one sentence out of 50 (issue 3's "at least 49 identical").
"""
import argparse
import json
import os

import numpy as np
import torch

from attnlab.data.pairs import encode_source, load_tokenizers, pair_paths, read_split
from attnlab.eval.translate import load_translator, training_corpus
from attnlab.gguf.writer import GGUFWriter
from attnlab.golden.rnn import greedy_with_attention
from attnlab.nn import transformer
from attnlab.paths import ROOT, golden_dir

RNN_ARCHS = {"bahdanau", "luong-dot", "luong-general", "cosine"}
TRANSLATOR_ARCHS = RNN_ARCHS | {"transformer"}
OUT_DIR = golden_dir("shipped")


def shipped_translators(manifest_path):
    with open(manifest_path, encoding="utf-8") as f:
        models = json.load(f)["models"]
    return [m for m in models if m["task"] == "translate" and m["dtype"] == "f16" and m["arch"] in TRANSLATOR_ARCHS]


def transformer_greedy(model, src_ids):
    """(tokens, {name: [L,H,rows,cols] array}) for one sentence; rows are the T returned tokens."""
    src = torch.tensor([src_ids])
    hyps, (enc, dec, cross) = transformer.greedy_decode(model, src, torch.tensor([len(src_ids)]), return_attention=True)
    return hyps[0], {"encoder_self_attention": enc.numpy(), "decoder_self_attention": dec.numpy(),
                     "cross_attention": cross.numpy()}


def write_expected(entry, sentences, out_dir):
    model, family, pair = load_translator(os.path.join(ROOT, entry["file"]))
    is_transformer = family is transformer
    if is_transformer != (entry["arch"] == "transformer"):
        raise SystemExit(f"{entry['file']}: the manifest's arch {entry['arch']!r} is not the file's")
    # The tokenizers (and test split) of the corpus the file was trained on (attnlab.training_corpus).
    paths = pair_paths(pair, corpus=training_corpus(os.path.join(ROOT, entry["file"])))
    sp_src, sp_tgt = load_tokenizers(paths)
    lines = read_split(paths, "test", sentences)[0]
    path = os.path.join(out_dir, entry["id"] + ".expected.gguf")
    w = GGUFWriter(path, architecture="attnlab.fixture")
    w.add_string("expected.model_file", entry["file"])
    w.add_uint32("expected.sentences", len(lines))
    for i, text in enumerate(lines):
        src_ids = encode_source(sp_src, text)
        if is_transformer:
            tokens, tensors = transformer_greedy(model, src_ids)
        else:
            tokens, weights, _ = greedy_with_attention(model, src_ids)
            # An empty translation (EOS first) gets a [1, S] zero placeholder: GGUF cannot store zero-size tensors.
            tensors = {"greedy_attention": np.stack(weights) if weights else np.zeros((1, len(src_ids)), np.float32)}
        p = f"sentence.{i}."
        w.add_string(p + "text", text)
        w.add_array(p + "source_ids", src_ids, "int32")
        w.add_array(p + "greedy_ids", tokens, "int32")
        w.add_string(p + "greedy_text", sp_tgt.decode(tokens))
        for name, tensor in tensors.items():
            if tensor.size:  # a Transformer's empty output has [L, H, 0, *] tensors; the test skips them
                w.add_tensor(p + name, tensor)
    w.write()
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", default=os.path.join(ROOT, "models", "manifest.json"))
    ap.add_argument("--sentences", type=int, default=50)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    ids = []
    for entry in shipped_translators(args.manifest):
        print(f"golden_shipped: {entry['id']} -> {write_expected(entry, args.sentences, OUT_DIR)}")
        ids.append(entry["id"])
    with open(os.path.join(OUT_DIR, "index.txt"), "w", encoding="utf-8") as f:
        f.write("".join(i + "\n" for i in ids))


if __name__ == "__main__":
    main()
