"""attnlab's Python side: the PyTorch references of the engine's models, their training, evaluation, GGUF export
and the golden files the C++ and JS tests compare against. Run from the repository root with the package on the
path (the npm scripts set it): `PYTHONPATH=python /usr/bin/python3 -m attnlab.<module> ...`.

    data/    corpora, splits, the caption store, batching, the tokenizer recipe
    nn/      the models (attention, RNN, Transformer, Show-Attend-Tell, MobileNetV2) and their search
    gguf/    the GGUF file format and one module per schema (architecture string, keys, write, load)
    train/   the resumable training loop and the families that feed it
    eval/    BLEU, translation / caption evaluation, the engine's scores, grounding and probes
    golden/  the fixture dumps
    export   one command for every GGUF export
"""
