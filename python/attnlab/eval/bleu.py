"""Corpus BLEU and chrF, reimplemented to match sacreBLEU 2.x (no pip packages on this machine).

- `bleu_13a(hyps, refs)`: sacreBLEU's default signature
  `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp` on detokenized, cased text.
- `bleu_lc_tok(hyps, refs)`: the "lower-cased, tokenized" BLEU that published Multi30k numbers use.
  We lowercase and then apply the same 13a (mteval-v13a) tokenization, i.e. sacreBLEU `-lc -tok 13a`.
  Published numbers are usually Moses-tokenized + multi-bleu.perl; on Multi30k's simple captions
  the two tokenizations differ only in rare cases (e.g. Moses splits "don't" as "don 't"), so
  this is close to, not identical with, those numbers.
- `bleu_char(hyps, refs)`: character-level BLEU for Chinese: every non-space character is a token.
- `chrf(hyps, refs)`: chrF2 (char order 6, no word n-grams, beta 2, whitespace dropped), as
  sacreBLEU's default CHRF.

All functions take one reference per hypothesis (`refs[i]` is the reference of `hyps[i]`) or a
list of reference streams (`refs[k][i]`), and return a score in 0..100.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Callable, List, Sequence

# ---- tokenizers ----------------------------------------------------------------------------
_13A_RULES = [
    # language-dependent part (assuming Western languages): split out ASCII symbols
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    # tokenize period and comma unless preceded by a digit
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    # tokenize period and comma unless followed by a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    # tokenize dash when preceded by a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(line: str) -> str:
    """mteval-v13a tokenization exactly as sacreBLEU's Tokenizer13a."""
    line = line.replace("<skipped>", "")
    line = line.replace("-\n", "")
    line = line.replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"')
        line = line.replace("&amp;", "&")
        line = line.replace("&lt;", "<")
        line = line.replace("&gt;", ">")
    line = f" {line} "
    for pattern, repl in _13A_RULES:
        line = pattern.sub(repl, line)
    return " ".join(line.split())


def tokenize_lc_13a(line: str) -> str:
    return tokenize_13a(line.lower())


def tokenize_chars(line: str) -> str:
    return " ".join(ch for ch in line if not ch.isspace())


# ---- BLEU ------------------------------------------------------------------------------------
def _ngrams(tokens: List[str], max_order: int) -> Counter:
    counts = Counter()
    for n in range(1, max_order + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i:i + n])] += 1
    return counts


def _ref_streams(refs) -> List[Sequence[str]]:
    if len(refs) > 0 and isinstance(refs[0], str):
        return [refs]
    return list(refs)


def _my_log(x: float) -> float:
    return -9999999999.0 if x == 0.0 else math.log(x)


def bleu_stats(hyps: Sequence[str], refs, tokenize: Callable[[str], str], max_order: int = 4):
    """-> (correct[n], total[n], sys_len, ref_len) summed over the corpus."""
    streams = _ref_streams(refs)
    for s in streams:
        if len(s) != len(hyps):
            raise ValueError(f"{len(hyps)} hypotheses but a reference stream has {len(s)} lines")
    correct = [0] * max_order
    total = [0] * max_order
    sys_len = ref_len = 0
    for i, hyp in enumerate(hyps):
        hyp_toks = tokenize(hyp.rstrip()).split()
        ref_counts = Counter()
        closest_len, closest_diff = None, None
        for s in streams:
            ref_toks = tokenize(s[i].rstrip()).split()
            diff = abs(len(hyp_toks) - len(ref_toks))
            # sacreBLEU: closest reference length, ties go to the shorter reference
            if closest_diff is None or diff < closest_diff or (diff == closest_diff and len(ref_toks) < closest_len):
                closest_len, closest_diff = len(ref_toks), diff
            for ng, c in _ngrams(ref_toks, max_order).items():
                ref_counts[ng] = max(ref_counts[ng], c)
        sys_len += len(hyp_toks)
        ref_len += closest_len
        for ng, c in _ngrams(hyp_toks, max_order).items():
            n = len(ng)
            total[n - 1] += c
            correct[n - 1] += min(c, ref_counts.get(ng, 0))
    return correct, total, sys_len, ref_len


def compute_bleu(correct, total, sys_len, ref_len, smooth="exp", smooth_value=None,
                 effective_order=False, max_order=4) -> float:
    """sacreBLEU's BLEU.compute_bleu: smoothing 'exp' (default), 'floor', 'add-k' or 'none'."""
    defaults = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}
    if smooth not in defaults:
        raise ValueError(f"unknown smoothing {smooth!r}")
    if smooth_value is None:
        smooth_value = defaults[smooth]
    correct, total = list(correct), list(total)
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    else:
        bp = 1.0
    precisions = [0.0] * max_order
    if not any(correct):
        return 0.0
    smooth_mteval = 1.0
    eff_order = max_order
    for n in range(1, max_order + 1):
        if smooth == "add-k" and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth == "exp":
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
            elif smooth == "floor":
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    return bp * math.exp(sum(_my_log(p) for p in precisions[:eff_order]) / eff_order)


def corpus_bleu(hyps, refs, tokenize=tokenize_13a, smooth="exp", effective_order=False) -> float:
    c, t, sl, rl = bleu_stats(hyps, refs, tokenize)
    return compute_bleu(c, t, sl, rl, smooth=smooth, effective_order=effective_order)


def bleu_13a(hyps, refs) -> float:
    return corpus_bleu(hyps, refs, tokenize_13a)


def bleu_lc_tok(hyps, refs) -> float:
    return corpus_bleu(hyps, refs, tokenize_lc_13a)


def bleu_char(hyps, refs) -> float:
    return corpus_bleu(hyps, refs, tokenize_chars)


def sentence_bleu(hyp: str, refs: List[str], tokenize=tokenize_13a) -> float:
    """sacreBLEU's sentence_bleu defaults: exp smoothing with effective order."""
    return corpus_bleu([hyp], [[r] for r in refs], tokenize, effective_order=True)


# ---- chrF ------------------------------------------------------------------------------------
def _char_ngram_stats(hyp: str, ref: str, order: int) -> List[int]:
    hyp = "".join(hyp.split())
    ref = "".join(ref.split())
    stats = []
    for n in range(1, order + 1):
        h = Counter(hyp[i:i + n] for i in range(len(hyp) - n + 1))
        r = Counter(ref[i:i + n] for i in range(len(ref) - n + 1))
        match = sum(min(c, r[g]) for g, c in h.items())
        stats += [sum(h.values()), sum(r.values()), match]
    return stats


def _chrf_from_stats(stats: List[int], order: int, beta: float) -> float:
    eps = 1e-16
    factor = beta ** 2
    avg_prec = avg_rec = 0.0
    effective_order = 0
    for i in range(order):
        n_hyp, n_ref, n_match = stats[3 * i:3 * i + 3]
        prec = n_match / n_hyp if n_hyp > 0 else eps
        rec = n_match / n_ref if n_ref > 0 else eps
        effective_order += 1 if n_hyp > 0 and n_ref > 0 else 0
        avg_prec += prec
        avg_rec += rec
    if effective_order == 0:
        return 0.0
    avg_prec /= effective_order
    avg_rec /= effective_order
    if avg_prec + avg_rec == 0:
        return 0.0
    return 100.0 * (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec)


def chrf(hyps, refs, order: int = 6, beta: float = 2.0) -> float:
    """Corpus chrF: n-gram statistics are summed over sentences, then one F-score is taken.
    With several references, each sentence uses the reference with the best sentence chrF."""
    streams = _ref_streams(refs)
    totals = [0] * (3 * order)
    for i, hyp in enumerate(hyps):
        best, best_f = None, -1.0
        for s in streams:
            st = _char_ngram_stats(hyp, s[i], order)
            f = _chrf_from_stats(st, order, beta)
            if f > best_f:
                best, best_f = st, f
        totals = [a + b for a, b in zip(totals, best)]
    return _chrf_from_stats(totals, order, beta)


def bleu_1_to_4(hyps, refs) -> List[float]:
    """Captions: corpus BLEU-1..4 (no smoothing, as coco-caption), lower-cased 13a tokens, multiple references."""
    correct, total, sys_len, ref_len = bleu_stats(hyps, refs, tokenize_lc_13a, max_order=4)
    return [compute_bleu(correct[:n], total[:n], sys_len, ref_len, smooth="none", max_order=n) for n in (1, 2, 3, 4)]


def metric_for(tgt_lang):
    """A translator's validation metric: character BLEU for Chinese, word BLEU (13a) otherwise."""
    return bleu_char if tgt_lang == "zh" else bleu_13a


def scores_for(tgt_lang, hyps, refs):
    """Word BLEU (13a, lower-cased tokenized), or for Chinese, which has no spaces to split words at (word BLEU
    would count each sentence as a few "words"), character BLEU and chrF."""
    if tgt_lang == "zh":
        out = {"bleu_char": bleu_char(hyps, refs), "chrf": chrf(hyps, refs)}
    else:
        out = {"bleu_13a": bleu_13a(hyps, refs), "bleu_lc_tok": bleu_lc_tok(hyps, refs)}
    return {k: round(v, 2) for k, v in out.items()}
