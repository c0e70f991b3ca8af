#!/usr/bin/python3
"""Test fixture for captioning from pixels (the npm module's caption(), the page's Caption tab): a complete, tiny,
untrained Show-Attend-Tell captioner WITH an image encoder, so that RGBA in -> caption out runs end to end.
(tests/fixtures/caption/tiny_model.gguf has no encoder and a 2x3 grid; an encoder's grid is square.)

    PYTHONPATH=python /usr/bin/python3 scripts/make_caption_fixture.py [--out tests/fixtures/caption/tiny_encoder_model.gguf]

Contents: a 10-layer MobileNetV2-style encoder in the export's layout (attnlab.gguf.mobilenet.add_mobilenet:
stride-2 stem, depthwise + pointwise convolutions, one residual) giving a 7x7x24 grid from the 224x224 input,
the decoder (attnlab.gguf.captioner.add_decoder, F16) with the real flickr8k.en tokenizer, both briefly trained
(over-fitted) to give the page's first five sample photos (web/app/samples, scripts/make_samples.py; the
cameraman came later) their own short captions, so that the page shows a different caption per sample; and what
PyTorch computes from the F16-rounded
weights for one deterministic image (fixture_pixels below, mirrored in tests/js/caption.test.mjs):
    fixture.image_width / fixture.image_height   uint32
    fixture.greedy_ids                            int32 array (no BOS/EOS)
    fixture.greedy_text                           sentencepiece's decoding of them
"""
import argparse
import os

import numpy as np
import sentencepiece as spm
import torch

from attnlab.gguf import captioner, mobilenet
from attnlab.gguf.captioner import add_decoder
from attnlab.gguf.mobilenet import add_mobilenet
from attnlab.gguf.tokenizer import add_tokenizer
from attnlab.gguf.writer import GGUFWriter
from attnlab.golden.caption import add_expected
from attnlab.nn import mobilenet_v2 as mnv2
from attnlab.nn import show_attend_tell as sat
from attnlab.paths import ROOT

GRID = 7
MAX_LEN = 12
IMAGE_W, IMAGE_H = 40, 30


def layer(kind, kernel, stride, cin, cout, activation="relu6", residual=-1):
    return {"kind": kind, "kernel": kernel, "stride": stride, "padding": "same", "activation": activation,
            "residual": residual, "in_channels": cin, "out_channels": cout}


# 224 -> 112 -> 56 -> 28 -> 14 -> 7
ENCODER = [
    layer("conv", 3, 2, 3, 8),
    layer("depthwise", 3, 2, 8, 8),
    layer("conv", 1, 1, 8, 16),
    layer("depthwise", 3, 2, 16, 16),
    layer("conv", 1, 1, 16, 16, "none"),
    layer("depthwise", 3, 1, 16, 16),
    layer("conv", 1, 1, 16, 16, "none", residual=5),
    layer("depthwise", 3, 2, 16, 16),
    layer("depthwise", 3, 2, 16, 16),
    layer("conv", 1, 1, 16, 24),
]
FEATURE_LAYER = len(ENCODER) - 1


def fixture_pixels(width=IMAGE_W, height=IMAGE_H):
    """uint8 RGBA [height, width, 4]: a deterministic pattern (the JS test computes the same bytes)."""
    y, x = np.mgrid[0:height, 0:width]
    channels = [(x * 7 + y * 13 + c * 50 + (x * y) % 17) % 256 for c in range(3)]
    return np.stack(channels + [np.full_like(x, 255)], axis=-1).astype(np.uint8)


def grid_features(encoder, rgba):
    """RGBA image -> the decoder's annotations [1, 49, C], row-major over (y, x) as the engine builds them."""
    x = mnv2.to_tensor([mnv2.preprocess(rgba)])
    with torch.no_grad():
        y, _ = encoder._run(x, FEATURE_LAYER)   # [1, C, 7, 7]
    return y.flatten(2).transpose(1, 2).contiguous()


# The captions the fixture learns for the page's samples: a test model, not a real captioner.
SAMPLE_CAPTIONS = {
    "cat": "a cat looks at the camera",
    "coffee": "a cup of coffee on a wooden table",
    "astronaut": "a woman in an orange suit",
    "rocket": "a rocket stands at night",
    "galaxies": "many stars in the dark sky",
}
TRAIN_STEPS = 150


def train(encoder, decoder, sp, samples_dir):
    """Over-fits encoder + decoder on the sample photos (decoded by PIL, like make_samples.py wrote them)."""
    from PIL import Image
    images, captions = [], []
    for name, caption in SAMPLE_CAPTIONS.items():
        with Image.open(os.path.join(samples_dir, f"{name}.jpg")) as im:
            images.append(mnv2.preprocess(np.asarray(im.convert("RGB"))))
        captions.append(sp.encode(caption))
    x = mnv2.to_tensor(images)
    T = max(len(c) for c in captions) + 1
    tgt_in = torch.zeros(len(captions), T, dtype=torch.long)
    tgt_out = torch.zeros(len(captions), T, dtype=torch.long)
    for i, ids in enumerate(captions):
        tgt_in[i, :len(ids) + 1] = torch.tensor([sat.BOS_ID] + ids)
        tgt_out[i, :len(ids) + 1] = torch.tensor(ids + [sat.EOS_ID])
    params = list(encoder.parameters()) + list(decoder.parameters())
    opt = torch.optim.Adam(params, lr=1e-2)
    encoder.train()
    decoder.train()
    for step in range(TRAIN_STEPS):
        y, _ = encoder._run(x, FEATURE_LAYER)
        loss, _, _ = decoder.loss(y.flatten(2).transpose(1, 2), tgt_in, tgt_out)
        opt.zero_grad()
        loss.backward()
        opt.step()
    encoder.eval()
    decoder.eval()
    print(f"trained {TRAIN_STEPS} steps, loss {float(loss):.4f}")


def make(out, samples_dir):
    torch.manual_seed(2024)
    torch.set_num_threads(1)
    spm_path = os.path.join(ROOT, "models", "tokenizers", "flickr8k.en.model")
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    encoder = mnv2.MobileNetV2(ENCODER).eval()
    cfg = sat.Config(vocab=sp.get_piece_size(), feature_dim=ENCODER[-1]["out_channels"], grid=GRID * GRID, emb=32,
                     hidden=32, attn_dim=32, dropout=0.0)
    decoder = sat.ShowAttendTell(cfg)
    train(encoder, decoder, sp, samples_dir)

    def write(expected=None):
        w = GGUFWriter(out, architecture="attnlab.captioner")
        w.add_string("general.name", "captioner-tiny-encoder-fixture")
        w.add_string("attnlab.task", "caption")
        add_decoder(w, decoder, cfg, GRID, GRID, MAX_LEN, dtype="f16")
        w.add_string("attnlab.captioner.feature_layer", str(FEATURE_LAYER))
        w.add_string("attnlab.captioner.encoder", "mobilenet_v2")
        add_mobilenet(w, model=encoder, prefix="encoder.", dtype="f16", feature_layer=FEATURE_LAYER)
        add_tokenizer(w, spm_path, "target")
        w.add_uint32("fixture.image_width", IMAGE_W)
        w.add_uint32("fixture.image_height", IMAGE_H)
        add_expected(w, expected)
        w.write()

    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    write()   # first pass: F16 weights; PyTorch then runs exactly those
    rounded_decoder, _ = captioner.load(out)
    rounded_encoder = mobilenet.load(out)
    features = grid_features(rounded_encoder, fixture_pixels())
    greedy = sat.greedy_decode(rounded_decoder, features, MAX_LEN)[0]
    write({"fixture.greedy_ids": greedy, "fixture.greedy_text": sp.decode(greedy)})
    print(f"wrote {out} ({os.path.getsize(out)} bytes); fixture image: greedy {greedy} {sp.decode(greedy)!r}")
    for name in SAMPLE_CAPTIONS:
        from PIL import Image
        with Image.open(os.path.join(samples_dir, f"{name}.jpg")) as im:
            rgb = np.asarray(im.convert("RGB"))
        ids = sat.greedy_decode(rounded_decoder, grid_features(rounded_encoder, rgb), MAX_LEN)[0]
        print(f"  {name}: {sp.decode(ids)!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "caption", "tiny_encoder_model.gguf"))
    ap.add_argument("--samples", default=os.path.join(ROOT, "web", "app", "samples"))
    args = ap.parse_args()
    make(args.out, args.samples)


if __name__ == "__main__":
    main()
