#!/usr/bin/python3
"""Every GGUF export, one command: a trained checkpoint (or, for a captioner, an exported file) -> the file the
engine runs. Each kind's keys and tensors are its schema module's docstring (attnlab.gguf.<schema>).

    python3 -m attnlab.export rnn --checkpoint /work/ckpt/bahdanau-en-de/best.pt --dtype q8_0 \\
        --out models/weights/bahdanau-en-de.q8_0.gguf
    python3 -m attnlab.export transformer --checkpoint /work/ckpt/transformer-de-en/best.pt --dtype q8_0 \\
        --out models/weights/transformer-de-en.q8_0.gguf
    python3 -m attnlab.export translator --checkpoint CKPT ...    # rnn or transformer, from the checkpoint
    python3 -m attnlab.export caption --checkpoint /work/ckpt/captioner/best.pt [--member CKPT ...] --dtype q8_0 \\
        --out models/weights/captioner.q8_0.gguf
    python3 -m attnlab.export caption-classifier --gguf models/weights/captioner.q8_0.gguf --dtype q8_0 \\
        --out build/captioner.q8_0.gguf                        # the same file with the ImageNet classifier
    python3 -m attnlab.export mobilenet --dtype f16 --out build/mobilenet/mobilenet_v2.f16.gguf
    python3 -m attnlab.export speech --checkpoint /work/ckpt/speech-las/best.pt --dtype q8_0 \\
        --out models/weights/speech-las.q8_0.gguf

--dtype: f32, f16 or q8_0 (q8_0 falls back to f16 where a row is not a multiple of 32 values; 1-D tensors are f32).
"""
import argparse
import os

import torch

from attnlab.gguf import bahdanau, captioner, mobilenet, speech, transformer
from attnlab.gguf.common import EXPORT_DTYPES
from attnlab.paths import ROOT


def report_written(path, counts, what="tensors"):
    print(f"wrote {path}: {os.path.getsize(path) / 1e6:.2f} MB, {what} by type {counts}")


def translator_schema(checkpoint):
    """The schema of a translator checkpoint: a Transformer's config has d_model, an RNN's does not."""
    config = torch.load(checkpoint, map_location="cpu")["config"]
    return transformer if "d_model" in config else bahdanau


def export_translator(args, schema=None):
    schema = schema or translator_schema(args.checkpoint)
    report_written(args.out, schema.write(args.checkpoint, args.dtype, args.out, args.root))


def export_caption(args):
    counts = captioner.write([args.checkpoint] + args.member, args.dtype, args.out, args.root,
                             with_encoder=not args.no_encoder, encoder_dtype=args.encoder_dtype,
                             no_repeat_ngram=args.no_repeat_ngram, classifier=args.classifier)
    report_written(args.out, counts, "decoder tensors")


def export_caption_classifier(args):
    if os.path.abspath(args.gguf) == os.path.abspath(args.out):
        raise SystemExit("--out must be another file than --gguf")
    added = captioner.add_classifier_to(args.gguf, args.out, args.dtype)
    print(f"wrote {args.out}: {os.path.getsize(args.out) / 1e6:.2f} MB ({added / 1e6:.2f} MB of classifier)")


def export_mobilenet(args):
    mobilenet.write(args.out, dtype=args.dtype, classifier=not args.no_classifier, prefix=args.prefix)
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB)")


def export_speech(args):
    report_written(args.out, speech.write(args.checkpoint, args.dtype, args.out, ctc=not args.no_ctc,
                                          ctc_weight=args.ctc_weight, lm=args.lm, lm_weight=args.lm_weight))


def parser():
    ap = argparse.ArgumentParser(prog="python3 -m attnlab.export", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = ap.add_subparsers(dest="kind", required=True, metavar="KIND")

    def kind(name, help, run, checkpoint_help, dtypes=EXPORT_DTYPES):
        p = kinds.add_parser(name, help=help, description=help)
        if checkpoint_help:
            p.add_argument("--checkpoint", required=True, help=checkpoint_help)
        p.add_argument("--dtype", default="f16", choices=dtypes)
        p.add_argument("--out", required=True)
        p.set_defaults(run=run)
        return p

    for name, help, run in (("rnn", "a Bahdanau RNN translator (attnlab.gguf.bahdanau)",
                             lambda a: export_translator(a, bahdanau)),
                            ("transformer", "a Transformer translator (attnlab.gguf.transformer)",
                             lambda a: export_translator(a, transformer)),
                            ("translator", "either translator, as its checkpoint says", export_translator)):
        p = kind(name, help, run, "a trainer's best.pt / last.pt / epoch-<n>.pt, or an averaged checkpoint")
        p.add_argument("--root", default=ROOT, help="repository root the tokenizer paths are relative to")

    p = kind("speech", "a Listen, Attend and Spell recognizer (attnlab.gguf.speech)", export_speech,
             "an attnlab.train.speech checkpoint (best.pt, last.pt or epoch-<n>.pt)")
    p.add_argument("--ctc-weight", type=float, default=None, metavar="W",
                   help="the joint search's CTC weight stored in the file, 0..1 (default: the training loss's)")
    p.add_argument("--no-ctc", action="store_true", help="leave out the CTC head: the engine decodes with attention only")
    p.add_argument("--lm", metavar="CKPT", help="an attnlab.train.char_lm checkpoint stored with it (shallow fusion), "
                   "or a speech GGUF file whose language model it keeps")
    p.add_argument("--lm-weight", type=float, default=None, metavar="W",
                   help=f"with --lm: the language model's weight stored in the file, 0..{speech.MAX_LM_WEIGHT} "
                   f"(default {speech.DEFAULT_LM_WEIGHT})")

    p = kind("caption", "a Show-Attend-Tell captioner with its encoder (attnlab.gguf.captioner)", export_caption,
             "a attnlab.train.caption checkpoint, or an exported single-decoder captioner GGUF file")
    p.add_argument("--member", action="append", default=[], metavar="CKPT",
                   help="another checkpoint whose decoder joins --checkpoint's as an ensemble (repeatable)")
    p.add_argument("--no-encoder", action="store_true", help="decoder + tokenizer only (engine: caption_from_features)")
    p.add_argument("--encoder-dtype", default="i8", choices=["i8", "same", "f16", "q8_0", "f32"],
                   help="storage of the MobileNetV2 weights (default i8: the TFLite model's own integers)")
    p.add_argument("--no-repeat-ngram", type=int, default=0, metavar="N",
                   help="the engine's search never repeats a token n-gram of this size (0: off)")
    p.add_argument("--classifier", action="store_true",
                   help="also store MobileNetV2's ImageNet classifier (the engine's CaptionOptions::recognize)")
    p.add_argument("--root", default=ROOT)

    p = kind("caption-classifier", "an exported captioner file with MobileNetV2's ImageNet classifier added "
             "(attnlab.gguf.captioner.add_classifier_to)", export_caption_classifier, None, dtypes=("f16", "q8_0"))
    p.add_argument("--gguf", required=True, help="the captioner file to copy")

    p = kind("mobilenet", "the MobileNetV2 encoder and its ImageNet classifier (attnlab.gguf.mobilenet)",
             export_mobilenet, None, dtypes=("f16", "q8_0", "f32", "i8"))
    p.add_argument("--prefix", default="encoder.")
    p.add_argument("--no-classifier", action="store_true")
    return ap


def main(argv=None):
    ap = parser()
    args = ap.parse_args(argv)
    if args.kind == "caption" and not (args.no_repeat_ngram == 0 or 2 <= args.no_repeat_ngram <= 8):
        ap.error("--no-repeat-ngram must be 0 (off) or 2..8")
    args.run(args)


if __name__ == "__main__":
    main()
