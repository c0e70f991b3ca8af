"""Greedy and beam search bookkeeping shared by every attnlab model (seq2seq_rnn.py, transformer.py, and
show_attend_tell.py through seq2seq_rnn.py). A model only supplies its decoder step and how to reorder its state.

The C++ engine (src/attnlab/decode/search.cpp) mirrors these semantics exactly, and the parity fixtures
(attnlab.golden.*) are made with them: change both sides together or not at all.
    greedy: argmax each step; a batch stops when every row has produced EOS or at the longest row's limit;
            each row is cut at its first EOS and at its own limit max_len_a * |src| + max_len_b.
    beam:   top 2K candidates per sentence each step; a candidate ending in EOS (or reaching the sentence's
            length limit) is finished with score sum(log p) / len^alpha (len counts EOS); a sentence stops
            once it has K finished hypotheses or reaches its limit; the best finished hypothesis wins.
    no_repeat_ngram n >= 2 (both; captioners whose file sets attnlab.captioner.no_repeat_ngram): before a row
            picks its next token, every token that would complete an n-gram already in its output gets
            log p = -inf (so a token sequence never holds the same n-gram twice).
"""
from typing import Callable, List, Tuple

import torch

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def strip_after_eos(seq: List[int]) -> List[int]:
    """Tokens before the first EOS."""
    out = []
    for t in seq:
        if t == EOS_ID:
            break
        out.append(t)
    return out


def length_limits(src_len, max_len_a, max_len_b) -> List[int]:
    """Per-sentence output limit max_len_a * |src| + max_len_b, truncated like the C++ engine."""
    return (max_len_a * src_len.float() + max_len_b).long().tolist()


def repeated_ngram_tokens(history: List[int], n: int) -> List[int]:
    """The tokens that would complete an n-gram `history` already holds (n < 2: none)."""
    if n < 2 or len(history) < n - 1:
        return []
    prefix = history[len(history) - n + 1:]
    return [history[i + n - 1] for i in range(len(history) - n + 1) if history[i:i + n - 1] == prefix]


def ban_repeated_ngrams(logp, histories, n):
    """In place: -inf for every token that would repeat an n-gram of its row's history (n < 2: nothing)."""
    if n < 2:
        return
    for row, tokens in enumerate(histories):
        banned = repeated_ngram_tokens(tokens, n)
        if banned:
            logp[row, banned] = float("-inf")


def greedy_search(step: Callable, state, src_len, max_len_a=1.5, max_len_b=10, on_step: Callable = None,
                  no_repeat_ngram=0):
    """step(prev [B], state) -> (logits [B,V], state, *extras); src_len [B] -> B token lists (no BOS/EOS).
    on_step(*extras) sees every step's extras (e.g. attention weights) in order. no_repeat_ngram >= 2: never
    emit a token that repeats an n-gram of this size already in the output."""
    batch = src_len.size(0)
    max_len = int(max_len_a * int(src_len.max()) + max_len_b)
    prev = torch.full((batch,), BOS_ID, dtype=torch.long)
    done = torch.zeros(batch, dtype=torch.bool)
    out = []
    for _ in range(max_len):
        logits, state, *extras = step(prev, state)
        if no_repeat_ngram >= 2 and out:
            logits = logits.clone()
            ban_repeated_ngrams(logits, torch.stack(out, 1).tolist(), no_repeat_ngram)
        prev = logits.argmax(-1)
        out.append(prev)
        if on_step is not None:
            on_step(*extras)
        done |= prev == EOS_ID
        if bool(done.all()):
            break
    seqs = torch.stack(out, 1).tolist()
    return [strip_after_eos(seq)[:lim] for seq, lim in zip(seqs, length_limits(src_len, max_len_a, max_len_b))]


def beam_search(step: Callable, state, reorder: Callable, src_len, beam=5, alpha=1.0,
                max_len_a=1.5, max_len_b=10, no_repeat_ngram=0, allowed=None) -> List[List[int]]:
    """Batched beam search over B sentences with K = beam rows each. allowed (bool [V], optional): the only tokens
    it may write, a vocabulary shortlist; the log-softmax then normalizes over them (attnlab.eval.shortlist).

    step(prev [B*K], state) -> (logits [B*K,V], state, ...); reorder(state, rows LongTensor [B*K]) -> state whose
    row i is the old row rows[i]. `state` starts with every sentence repeated K times (rows b*K .. b*K+K-1).
    -> B token lists (no BOS/EOS; empty when a sentence finished nothing).
    """
    B, K = src_len.size(0), beam
    prev = torch.full((B * K,), BOS_ID, dtype=torch.long)
    beam_scores = torch.zeros(B, K)
    beam_scores[:, 1:] = float("-inf")          # all beams start identical: expand beam 0 only
    history = torch.zeros(B * K, 0, dtype=torch.long)
    max_lens = length_limits(src_len, max_len_a, max_len_b)
    finished: List[List[Tuple[float, List[int]]]] = [[] for _ in range(B)]
    done = [False] * B
    for step_index in range(max(max_lens)):
        logits, state = step(prev, state)[:2]
        if allowed is not None:
            logits = logits.masked_fill(~allowed, float("-inf"))
        logp = torch.log_softmax(logits.float(), dim=-1)                         # [B*K,V]
        if no_repeat_ngram >= 2 and history.size(1) >= no_repeat_ngram - 1:
            ban_repeated_ngrams(logp, history.tolist(), no_repeat_ngram)
        V = logp.size(-1)
        cand = (beam_scores.view(-1, 1) + logp).view(B, K * V)
        top_scores, top_idx = cand.topk(2 * K, dim=-1)                           # [B,2K]
        top_scores, top_idx = top_scores.tolist(), top_idx.tolist()
        new_rows, new_tokens, new_scores = [], [], []
        for b in range(B):
            chosen = []
            if not done[b]:
                for sc, idx in zip(top_scores[b], top_idx[b]):
                    if sc == float("-inf"):
                        break
                    k, tok = divmod(idx, V)
                    if tok == EOS_ID or step_index + 1 >= max_lens[b]:
                        if len(finished[b]) < K:
                            seq = history[b * K + k].tolist()
                            if tok != EOS_ID:
                                seq.append(tok)
                            finished[b].append((sc / float(step_index + 1) ** alpha, seq))
                    else:
                        chosen.append((k, tok, sc))
                    if len(chosen) == K:
                        break
                if len(finished[b]) >= K or step_index + 1 >= max_lens[b]:
                    done[b] = True
            if done[b] or not chosen:
                done[b] = True
                chosen = [(0, PAD_ID, float("-inf"))] * K
            while len(chosen) < K:
                chosen.append((chosen[0][0], PAD_ID, float("-inf")))
            for k, tok, sc in chosen:
                new_rows.append(b * K + k)
                new_tokens.append(tok)
                new_scores.append(sc)
        if all(done):
            break
        rows = torch.tensor(new_rows)
        prev = torch.tensor(new_tokens)
        history = torch.cat([history.index_select(0, rows), prev.unsqueeze(1)], 1)
        state = reorder(state, rows)
        beam_scores = torch.tensor(new_scores).view(B, K)
    return [max(f, key=lambda x: x[0])[1] if f else [] for f in finished]
