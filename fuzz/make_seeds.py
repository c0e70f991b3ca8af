#!/usr/bin/python3
"""Writes the seed corpora in fuzz/corpus/<target>/ (committed; a few KB each). Deterministic.

    PYTHONPATH=python /usr/bin/python3 fuzz/make_seeds.py

fuzz_gguf: the small GGUF fixtures; tiny but complete models that load and run (8-piece vocabularies, 2-wide
layers): Bahdanau translators (general in F32, dot in F16), a Transformer, a decoder-only captioner and one behind
a one-layer i8 image encoder; and
truncated / bit-flipped variants.
fuzz_tokenizer: first byte = tokenizer index (| 0x80: the rest is little-endian int32 ids), then the text.
fuzz_image: int32 width, int32 height, u8 output side, u8 flags, pixels (see fuzz/fuzz_image.cpp).
"""
import os
import shutil
import struct
import tempfile
import zlib

import numpy as np
import torch

from attnlab.gguf import captioner, mobilenet
from attnlab.gguf import transformer as transformer_schema
from attnlab.gguf.common import add_model_identity
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn import mobilenet_v2 as mnv2
from attnlab.nn import show_attend_tell as sat
from attnlab.nn import tflite_mobilenet
from attnlab.nn.seq2seq_rnn import Config, Seq2SeqRNN
from attnlab.nn.transformer import Config as TConfig, Transformer
from attnlab.paths import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))

torch.set_num_threads(1)
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    path = os.path.join(CORPUS, target, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def tiny_translator(path, score="additive", dtype="f32"):
    torch.manual_seed(0)
    pieces = PIECES
    dec_hidden = 4 if score in ("dot", "cosine") else 3
    cfg = Config(src_vocab=len(pieces), tgt_vocab=len(pieces), emb=2, enc_hidden=2, dec_hidden=dec_hidden,
                 attn_dim=2, score=score)
    model = Seq2SeqRNN(cfg)
    arch = "attnlab.bahdanau"
    w = GGUFWriter(path, architecture=arch)
    w.add_string("attnlab.task", "translate")
    p = arch + "."
    for key, value in (("source_vocab_size", cfg.src_vocab), ("target_vocab_size", cfg.tgt_vocab),
                       ("embedding_size", cfg.emb), ("encoder_hidden_size", cfg.enc_hidden),
                       ("decoder_hidden_size", cfg.dec_hidden), ("attention_size", cfg.attn_dim)):
        w.add_uint32(p + key, value)
    w.add_string(p + "score", score)
    w.add_string(p + "deep_output_activation", "tanh")
    w.add_bool(p + "tied_output", True)
    w.add_bool(p + "source_add_eos", True)
    for name, tensor in model.state_dict().items():
        w.add_tensor(name, tensor.float().numpy(), dtype=dtype)
    for role in ("source", "target"):
        add_tiny_tokenizer(w, role)
    w.write()


PIECES = ["<pad>", "<unk>", "<s>", "</s>", "\u2581", "a", "b", "\u2581a"]


def add_tiny_tokenizer(w, role):
    """An 8-piece vocabulary (pad 0, unk 1, bos 2, eos 3 like every attnlab tokenizer; "▁a" is the merge)."""
    pieces = PIECES
    types = [3, 2, 3, 3, 1, 1, 1, 1]
    scores = [0.0, 0.0, 0.0, 0.0, -1.0, -2.0, -3.0, -0.5]
    prefix = f"tokenizer.{role}."
    w.add_string(prefix + "model", "spm-bpe")
    w.add_array(prefix + "tokens", pieces, "string")
    w.add_array(prefix + "scores", scores, "float32")
    w.add_array(prefix + "token_type", types, "int32")
    for key, value in (("padding_token_id", 0), ("unknown_token_id", 1), ("bos_token_id", 2),
                       ("eos_token_id", 3)):
        w.add_uint32(prefix + key, value)
    w.add_bool(prefix + "add_dummy_prefix", True)
    w.add_bool(prefix + "remove_extra_whitespaces", True)


def tiny_transformer(path):
    """A 1+1-layer, d_model 4, 2-head Transformer written by attnlab.gguf.transformer's own build_writer."""
    torch.manual_seed(0)
    cfg = TConfig(src_vocab=len(PIECES), tgt_vocab=len(PIECES), d_model=4, heads=2, enc_layers=1, dec_layers=1,
                  ff=4, max_positions=16)
    model = Transformer(cfg)
    transformer_schema.add_tokenizer = lambda w, _spm, role: add_tiny_tokenizer(w, role)
    meta = {"pair": "xx-yy", "src_lang": "xx", "tgt_lang": "yy"}
    w, _ = transformer_schema.build_writer(path, cfg, model.state_dict(), meta, "f32", None, None)
    w.write()


def tiny_captioner(path):
    """A decoder-only Show-Attend-Tell (2 x 2 grid of 4 features, 2-wide layers): caption_features runs on it."""
    torch.manual_seed(0)
    cfg = sat.Config(vocab=len(PIECES), feature_dim=4, grid=4, emb=2, hidden=2, attn_dim=2)
    w = GGUFWriter(path, architecture=captioner.ARCH)
    add_model_identity(w, "tiny-captioner", "caption", target_language="en")
    captioner.add_decoder(w, sat.ShowAttendTell(cfg), cfg, 2, 2, 5, "f32")
    add_tiny_tokenizer(w, "target")
    w.write()


def tiny_captioner_with_i8_encoder(path):
    """tiny_captioner's decoder behind a one-layer image encoder (3x3 stride-2 convolution, 4x4x3 -> 2x2x4) stored
    as i8 integers with a scale and zero point, as the shipped captioners store MobileNetV2: model loading runs
    the i8 path of load_mobilenet_v2."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    q, scale, zero_point = rng.integers(0, 256, size=(4, 3, 3, 3), dtype=np.uint8), np.float32(0.02), 120
    spec = {"kind": "conv", "kernel": 3, "stride": 2, "padding": "same", "activation": "relu6", "residual": -1,
            "in_channels": 3, "out_channels": 4, "weight": tflite_mobilenet.dequantize(q, scale, zero_point),
            "bias": np.linspace(-0.1, 0.1, 4, dtype=np.float32)}
    encoder = mnv2.MobileNetV2([spec]).eval()
    cfg = sat.Config(vocab=len(PIECES), feature_dim=4, grid=4, emb=2, hidden=2, attn_dim=2)
    w = GGUFWriter(path, architecture=captioner.ARCH)
    add_model_identity(w, "tiny-captioner-i8-encoder", "caption", target_language="en")
    captioner.add_decoder(w, sat.ShowAttendTell(cfg), cfg, 2, 2, 5, "f32")
    w.add_string(captioner.ARCH + ".encoder", "mobilenet_v2")
    mobilenet.add_mobilenet(w, model=encoder, dtype="i8", feature_layer=0, quantized=[(q, scale, zero_point)],
                                   input_size=4)
    add_tiny_tokenizer(w, "target")
    w.write()


def gguf_seeds():
    for name in ("tiny", "metadata_only", "aligned64", "basic"):
        with open(os.path.join(ROOT, "tests/fixtures/gguf", name + ".gguf"), "rb") as f:
            data = f.read()
        write("fuzz_gguf", name + ".gguf", data)
        write("fuzz_gguf", name + ".truncated.gguf", data[: len(data) * 2 // 3])
    tmp = tempfile.mkdtemp()
    try:
        for score, dtype in (("general", "f32"), ("dot", "f16")):
            path = os.path.join(tmp, "m.gguf")
            tiny_translator(path, score, dtype)
            with open(path, "rb") as f:
                data = f.read()
            write("fuzz_gguf", f"translator.{score}.{dtype}.gguf", data)
        tiny_captioner(path)
        with open(path, "rb") as f:
            write("fuzz_gguf", "captioner.f32.gguf", f.read())
        tiny_captioner_with_i8_encoder(path)
        with open(path, "rb") as f:
            write("fuzz_gguf", "captioner.i8_encoder.gguf", f.read())
        tiny_transformer(path)
        with open(path, "rb") as f:
            write("fuzz_gguf", "transformer.f32.gguf", f.read())
        write("fuzz_gguf", "translator.truncated.gguf", data[: len(data) // 2])
        flipped = bytearray(data)
        flipped[40] ^= 0xFF  # inside the first key's string
        write("fuzz_gguf", "translator.flipped.gguf", bytes(flipped))
    finally:
        shutil.rmtree(tmp)
    write("fuzz_gguf", "magic_only", b"GGUF")
    write("fuzz_gguf", "header_only", b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
    write("fuzz_gguf", "huge_counts", b"GGUF" + struct.pack("<IQQ", 3, 2**62, 2**62))


def tokenizer_seeds():
    texts = [
        "A dog runs in the park.", "Zwei Männer spielen Fußball.", "我们走吧。", "  many   spaces  ", "",
        "\u2581\u2581", "<s></s><unk>", "emoji \U0001F600 and \u00e9\u0301", "\t\n\r", "a" * 300,
    ]
    for i, text in enumerate(texts):
        write("fuzz_tokenizer", f"text{i}", bytes([i % 5]) + text.encode("utf-8"))
    invalid = [b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"ok\x00nul"]
    for i, data in enumerate(invalid):
        write("fuzz_tokenizer", f"invalid{i}", bytes([i % 5]) + data)
    ids = [[2, 10, 11, 12, 3], [0, 1, 2, 3], [4, 5, 6, 7, 8, 9, 200, 201], [-1, 2**31 - 1, 100000]]
    for i, seq in enumerate(ids):
        write("fuzz_tokenizer", f"ids{i}", bytes([0x80 | (i % 5)]) + struct.pack(f"<{len(seq)}i", *seq))


def image_seeds():
    def image(width, height, out, flags, pixels):
        return struct.pack("<iiBB", width, height, out, flags) + pixels

    write("fuzz_image", "2x2", image(2, 2, 4, 0, bytes(range(16))))
    write("fuzz_image", "3x5", image(3, 5, 7, 1, bytes((i * 37) % 256 for i in range(60))))
    write("fuzz_image", "1x1_to_64", image(1, 1, 64, 2, b"\x10\x20\x30\xff"))
    write("fuzz_image", "16x16", image(16, 16, 16, 0, bytes((i * 7) % 256 for i in range(1024))))
    write("fuzz_image", "huge_small_buffer", image(8192, 8192, 8, 0, b"\0" * 16))
    write("fuzz_image", "too_large", image(1 << 20, 1 << 20, 8, 0, b"\0" * 16))
    write("fuzz_image", "negative", image(-4, 4, 8, 0, b"\0" * 64))
    write("fuzz_image", "zero", image(0, 0, 8, 0, b""))
    write("fuzz_image", "overflow", image(2**31 - 1, 2**31 - 1, 8, 0, b"\0" * 4))
    write("fuzz_image", "features_bytes", image(1, 1, 8, 0x20, bytes((i * 13) % 256 for i in range(288))))
    nan = struct.pack("<f", float("nan")) * 10 + struct.pack("<f", float("inf")) * 10 + b"\0" * 1072
    write("fuzz_image", "features_nan", image(1, 1, 8, 0x60 | 1, nan))
    write("fuzz_image", "features_wrong_grid", image(1, 1, 8, 0xA0, b"\1" * 13))
    # Whole image files for decode_image: PNGs of each colour type stb expands to RGBA, and a photo's JPEG.
    for name, color_type, channels, extra in [("png_grey", 0, 1, b""), ("png_rgb", 2, 3, b""),
                                               ("png_grey_alpha", 4, 2, b""), ("png_rgba", 6, 4, b""),
                                               ("png_palette", 3, 1, png_chunk(b"PLTE", bytes(range(12))) +
                                                png_chunk(b"tRNS", b"\xff\x80"))]:
        rows = b"".join(bytes([y % 5]) + bytes((x * 31 + y * 17) % (4 if color_type == 3 else 256)
                                               for x in range(5 * channels)) for y in range(3))
        write("fuzz_image", name, b"\x89PNG\r\n\x1a\n" +
              png_chunk(b"IHDR", struct.pack(">IIBBBBB", 5, 3, 8, color_type, 0, 0, 0)) + extra +
              png_chunk(b"IDAT", zlib.compress(rows, 9)) + png_chunk(b"IEND", b""))
    with open(os.path.join(ROOT, "web/app/samples/rocket.jpg"), "rb") as f:
        write("fuzz_image", "jpeg_rocket", f.read())


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


if __name__ == "__main__":
    shutil.rmtree(CORPUS, ignore_errors=True)
    gguf_seeds()
    tokenizer_seeds()
    image_seeds()
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        size = sum(os.path.getsize(os.path.join(CORPUS, target, f)) for f in files)
        print(f"{target}: {len(files)} files, {size} bytes")
