"""The speech language model's text (attnlab.nn.char_lm): what people say to the recognizer, normalized as its
transcripts are (attnlab.data.speech_text), with every dev transcript kept out.

    train, dev = lm_texts()

Sources: LJ Speech's sentences without audio (ljspeech_text_pool: no clip's own sentence, so no LJ Speech dev clip),
English Tatoeba sentences (../shared/data/broad), AN4's training speakers' transcripts and AN4-style commands,
spelled letters and digit strings (attnlab.data.synthesize_speech's generators). Removed wherever they occur: the
transcripts of every dev set the card reports (AN4 dev speakers, FSDD, LJ Speech clips, pocketsphinx, the
synthetic dev voices) and anything with "woodchuck" in it (a test sentence). Deterministic: `seed` draws the
generated lines and the LM's own dev share (held-out sentences for its perplexity).
"""
import random

from attnlab.data.speech import (SYNTH_ROOT, an4_utterances, fsdd_utterances, ljspeech_text_pool,
                                 ljspeech_utterances, pocketsphinx_utterances, synthetic_utterances)
from attnlab.data.speech_text import normalize_transcript
from attnlab.data.synthesize_speech import an4_style, digit_string, tatoeba_english

LM_DEV_SHARE = 0.02


def held_out_transcripts(synth_root=SYNTH_ROOT):
    """Every dev transcript of the recognizer's dev sets (and every transcript of the recorded sets that have no
    training split: LJ Speech clips and pocketsphinx are all kept out)."""
    synth = synthetic_utterances(synth_root)
    if not synth:
        raise SystemExit(f"{synth_root}: no synthetic speech store (attnlab.data.synthesize_speech): its dev voices' "
                         "transcripts must be kept out of the language model's text")
    dev = [u for u in an4_utterances() + fsdd_utterances() + synth if u["split"] == "dev"]
    return {u["transcript"] for u in dev + ljspeech_utterances() + pocketsphinx_utterances()}


def lm_texts(synth_root=SYNTH_ROOT, seed=1234, tatoeba=120000, generated=6000, lj_repeat=2):
    """-> (train, dev): lists of normalized transcripts. LJ Speech's pool counts lj_repeat times (the book-reading
    style the recorded dev clips have; Tatoeba is short everyday speech)."""
    rng = random.Random(seed)
    an4_train = [u["transcript"] for u in an4_utterances() if u["split"] == "train"]
    an4_words = sorted({w for t in an4_train for w in t.split()})
    lj = [normalize_transcript(t) for t in ljspeech_text_pool()]
    everyday = [normalize_transcript(t) for t in tatoeba_english(tatoeba)]
    made = [an4_style(rng, an4_words) for _ in range(generated)] + [digit_string(rng) for _ in range(generated // 3)]
    held_out = held_out_transcripts(synth_root)
    texts = sorted({t for t in lj + everyday + an4_train + made
                    if t and t not in held_out and "woodchuck" not in t})
    rng.shuffle(texts)
    n_dev = max(1, int(len(texts) * LM_DEV_SHARE))
    dev, train = texts[:n_dev], texts[n_dev:]
    lj_set = set(lj)
    train = train + [t for t in train if t in lj_set] * (lj_repeat - 1)
    return train, dev
