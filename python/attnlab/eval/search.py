"""Search over many inputs at once: translating lines and captioning a split's stored grids, batched, for the
evaluations and the trainers' validation."""
from attnlab.data.batching import pad_batch
from attnlab.data.pairs import encode_source
from attnlab.nn import show_attend_tell as sat


def translate_lines(family, model, sp_src, sp_tgt, lines, batch_size=64, beam=1, alpha=1.0, max_len_a=1.5,
                    max_len_b=10):
    """Detokenized translations of `lines` (greedy when beam == 1), in input order. Lines are batched by length
    so little padding is decoded. family: the model's module (attnlab.nn.seq2seq_rnn or .transformer), with
    `greedy_decode(model, src, src_len, a, b)` and `beam_search(model, src, src_len, beam=, alpha=, max_len_a=,
    max_len_b=)`."""
    ids = [encode_source(sp_src, line) for line in lines]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = [None] * len(ids)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        src, lens = pad_batch([ids[i] for i in idx])
        if beam == 1:
            hyps = family.greedy_decode(model, src, lens, max_len_a, max_len_b)
        else:
            hyps = family.beam_search(model, src, lens, beam=beam, alpha=alpha, max_len_a=max_len_a,
                                      max_len_b=max_len_b)
        for i, h in zip(idx, hyps):
            out[i] = sp_tgt.decode(h)
    return out


def caption_split(model, data, split, subset=0, beam=1, max_len=30, batch=100, length_penalty=1.0,
                  no_repeat_ngram=0):
    """-> (hypothesis texts, image names) for the split's stored images (data: attnlab.data.captions.Data)."""
    imgs = data.images[split][:subset] if subset else data.images[split]
    hyps = []
    for b in range(0, len(imgs), batch):
        f = data.inputs(split, slice(b, min(b + batch, len(imgs))))
        if beam == 1:
            ids = sat.greedy_decode(model, f, max_len, no_repeat_ngram=no_repeat_ngram)
        else:
            ids = sat.beam_search(model, f, beam=beam, alpha=length_penalty, max_len=max_len,
                                  no_repeat_ngram=no_repeat_ngram)
        hyps.extend(data.sp.decode(x) for x in ids)
    return hyps, imgs
