#!/usr/bin/python3
"""Export attnlab's translators to ONNX for the head-to-head benchmark against onnxruntime-web
(bench/bench_translate.mjs). The weights come from the SAME GGUF file the engine runs (f16 / q8_0 widened to
f32 exactly as the engine widens them: attnlab.gguf.reader.read_gguf_tensors), so both engines compute with
identical numbers and must produce identical greedy tokens.

    PYTHONPATH=python /usr/bin/python3 bench/export_onnx.py [--rnn models/weights/bahdanau-en-de.f16.gguf]
        [--transformer tests/fixtures/transformer/tiny.gguf] [--out build/bench]

Writes, for each model NAME (rnn, transformer), NAME.encoder.onnx, NAME.decoder.onnx and NAME.json (which weights
were used, the sizes, BOS/EOS ids). Batch 1, no padding, so there are no masks. Graphs (opset 17):

  rnn.encoder:      source_ids int64 [1,S] -> keys [1,S,*] (query-independent score part), memory_gates [1,S,3H],
                    memory_deep [1,S,emb] (the annotations through the decoder's c_i columns), s0 [1,H]
  rnn.decoder:      token int64 [1], state [1,H], keys, memory_gates, memory_deep -> logits [1,V], next_state [1,H]
                    (--rnn-form concatenated: the model's equations as trained, memory [1,S,2E] and keys in place
                    of the three, every step multiplying c_i; NAME.json's memory_names lists them)
  transformer.encoder: source_ids int64 [1,S] -> cross_k, cross_v [L,1,heads,S,hd] (memory projected once per
                    layer, as attnlab and attnlab.nn.transformer do)
  transformer.decoder: token int64 [1], position int64 [1], past_k, past_v [L,1,heads,t,hd], cross_k, cross_v ->
                    logits [1,V], present_k, present_v [L,1,heads,t+1,hd]   (the KV cache; t starts at 0)

The equations are attnlab.nn.seq2seq_rnn's and attnlab.nn.transformer's; the wrappers below only drop the masks and
the packing (batch 1), make the Transformer's position an input instead of a Python int, and (the RNN's projected
form) move the decoder's products with c_i into the encoder as attnlab does.

The paragraph benchmark's beam graphs (beam search over beams x sentences, bench/paragraph_harness.mjs) step
R = N x K rows at once, K rows per live sentence (N of them, source positions padded to the longest, `mask` True
on real positions). The state of the previous step (P rows) is reordered inside the graph by the back-pointers
(`parents` [R], a Gather), and the graph ends in the beam's first cut: for row r the `k` best values of
log_softmax(logits_r) + beam_log_probability[r] with their tokens (TopK; k an input, so the harness can ask for as
many more as the n-gram rule may ban in a row):

  rnn.beam_encoder: rnn.encoder's graph in --rnn-beam-form (default concatenated: memory and keys), one sentence at a
                    time (a padded batch would run its backward GRU over the padding)
  rnn.beam_decoder: token [R], parents [R], state [P,H], the encoder's beam_memory_names [N,S,*], mask bool [N,S],
                    beam_log_probability [R], k int64 [1] -> top_values [R,k], top_tokens int64 [R,k], next_state [R,H]
  transformer.beam_encoder: source_ids int64 [N,S] (PAD-padded) -> cross_k, cross_v [L,N,heads,S,hd]
  transformer.beam_decoder: token [R], position int64 [1] (= t, the same for every row), parents [R],
                    past_k, past_v [L,P,heads,t,hd], cross_k, cross_v [L,N,heads,S,hd], mask bool [N,S],
                    beam_log_probability [R], k -> top_values, top_tokens, present_k, present_v [L,R,heads,t+1,hd]
bench/quantize_onnx.py rewrites any of these graphs to dynamic int8.

Which RNN form is ORT's best was measured (docs/performance.md, "ORT's RNN graphs in two forms"): per sentence at
batch 1 the projected form (its steps are faster by more than its encoder is slower), in the paragraphs with int8
the concatenated one (the weighted sums over the projected rows stay f32 batched MatMuls there, while the c_i
products are int8 like every other product).
"""
import argparse
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.gguf import bahdanau, transformer
from attnlab.nn.transformer import _split_in_proj
from attnlab.paths import ROOT

OPSET = 17
DEFAULT_RNN = os.path.join(ROOT, "models", "weights", "bahdanau-en-de.f16.gguf")
DEFAULT_TRANSFORMER = os.path.join(ROOT, "tests", "fixtures", "transformer", "tiny.gguf")


# ---- RNN (attnlab.nn.seq2seq_rnn) ------------------------------------------------------------------------------
class RnnEncoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, source_ids):
        """source_ids [1,S] -> memory [1,S,2E], keys [1,S,*], s0 [1,H]."""
        x = self.m.src_embed(source_ids)                                        # [1,S,emb]
        memory, h_n = self.m.encoder(x)                                         # h_n [2,1,E]
        s0 = torch.tanh(self.m.init(torch.cat([h_n[0], h_n[1]], dim=-1)))      # [1,H]
        return memory, self.m.attn.precompute_keys(memory), s0


class RnnDecoderStep(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, token, state, memory, keys):
        """token [1], state s_{i-1} [1,H], memory [1,S,2E], keys [1,S,*] -> logits [1,V], s_i [1,H]."""
        m = self.m
        y_emb = m.tgt_embed(token)                                              # [1,emb]
        scores = m.attn.scores(state, keys)                                     # [1,S]
        weights = torch.softmax(scores, dim=-1)
        context = m.attn.context(weights, memory)                               # [1,2E]
        s = m.decoder(torch.cat([y_emb, context], dim=-1), state)
        return m.output_logits(s, context, y_emb), s


# ---- RNN, projected form: the equations attnlab runs (models/rnn_seq2seq.hpp) --------------------------------
# The GRU's input weights and W_t act on c_i linearly, and W c_i = sum_j a_ij (W h_j): the encoder projects the
# annotations through the c_i columns once per sentence and a step weighs those rows by its attention instead of
# multiplying c_i by them. The same values up to float rounding; the same work split as attnlab's, so the
# encoders and the steps of the two engines compare like with like.
def linear_from(weight, bias=None):
    layer = nn.Linear(weight.size(1), weight.size(0), bias=bias is not None)
    with torch.no_grad():
        layer.weight.copy_(weight)
        if bias is not None:
            layer.bias.copy_(bias)
    return layer


class ContextColumns(nn.Module):
    """The decoder's weights split by the input they act on: y_{i-1}, s, c_i (attnlab's RnnSeq2Seq fields)."""

    def __init__(self, model):
        super().__init__()
        cfg = model.cfg
        emb, H, mem = cfg.emb, cfg.dec_hidden, 2 * cfg.enc_hidden
        w_ih, w_t = model.decoder.weight_ih.detach(), model.deep_out.weight.detach()
        self.gates_embedding = linear_from(w_ih[:, :emb], model.decoder.bias_ih.detach())   # [3H, emb]
        self.gates_context = linear_from(w_ih[:, emb:])                                     # [3H, 2E]
        self.deep_state = linear_from(w_t[:, :H], model.deep_out.bias.detach())             # [emb, H]
        self.deep_context = linear_from(w_t[:, H:H + mem])                                  # [emb, 2E]
        self.deep_embedding = linear_from(w_t[:, H + mem:])                                 # [emb, emb]

    def step(self, model, y_emb, s_prev, gates_from_context, deep_from_context):
        """y_emb [R,emb], s_prev [R,H], the weighted rows' sums [R,3H], [R,emb] -> logits [R,V], s_i [R,H]."""
        gi = self.gates_embedding(y_emb) + gates_from_context
        gh = F.linear(s_prev, model.decoder.weight_hh, model.decoder.bias_hh)
        i_r, i_z, i_n = gi.chunk(3, dim=-1)
        h_r, h_z, h_n = gh.chunk(3, dim=-1)
        r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        s = (1 - z) * torch.tanh(i_n + r * h_n) + z * s_prev                    # torch.nn.GRUCell's equations
        t = torch.tanh(self.deep_state(s) + self.deep_embedding(y_emb) + deep_from_context)
        return F.linear(t, model.tgt_embed.weight, model.out_bias), s


class RnnProjectedEncoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.encoder, self.columns = RnnEncoder(model), ContextColumns(model)

    def forward(self, source_ids):
        """source_ids [1,S] -> keys [1,S,*], memory_gates [1,S,3H], memory_deep [1,S,emb], s0 [1,H]."""
        memory, keys, s0 = self.encoder(source_ids)
        return keys, self.columns.gates_context(memory), self.columns.deep_context(memory), s0


class RnnProjectedStep(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m, self.columns = model, ContextColumns(model)

    def forward(self, token, state, keys, memory_gates, memory_deep):
        """token [1], state [1,H], keys [1,S,*], memory_gates [1,S,3H], memory_deep [1,S,emb] -> logits, s_i."""
        m = self.m
        weights = torch.softmax(m.attn.scores(state, keys), dim=-1).unsqueeze(1)   # [1,1,S]
        return self.columns.step(m, m.tgt_embed(token), state, (weights @ memory_gates).squeeze(1),
                                 (weights @ memory_deep).squeeze(1))


# ---- Transformer (attnlab.nn.transformer) ---------------------------------------------------------------------
class TransformerEncoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, source_ids):
        """source_ids [1,S] -> cross_k, cross_v [L,1,heads,S,hd]."""
        m = self.m
        n = source_ids.size(1)
        h = m.src_embed(source_ids) * math.sqrt(m.cfg.d_model) + m.pe[:n]
        for layer in m.encoder.layers:
            h, _ = layer(h, None)
        memory = m.encoder.norm(h)                                              # [1,S,d]
        ks, vs = [], []
        for layer in m.decoder.layers:
            k, v = project_kv(layer.cross_attn, memory)
            ks.append(k)
            vs.append(v)
        return torch.stack(ks), torch.stack(vs)


def project_kv(mha, x):
    """x [1,N,d] -> keys, values [1,heads,N,hd] (attnlab.nn.transformer's project_kv with shapes ONNX can trace)."""
    _, (wk, bk), (wv, bv) = _split_in_proj(mha)
    d, heads = mha.embed_dim, mha.num_heads
    k = F.linear(x, wk, bk).reshape(1, -1, heads, d // heads).transpose(1, 2)
    v = F.linear(x, wv, bv).reshape(1, -1, heads, d // heads).transpose(1, 2)
    return k, v


def attend_one(mha, x, k, v):
    """One query: x [1,d], k/v [1,heads,N,hd] -> [1,d] (attnlab.nn.transformer's attend_cached without a mask)."""
    (wq, bq), _, _ = _split_in_proj(mha)
    d, heads = mha.embed_dim, mha.num_heads
    hd = d // heads
    q = F.linear(x, wq, bq).reshape(1, heads, 1, hd)
    weights = ((q / math.sqrt(hd)) @ k.transpose(-1, -2)).softmax(-1)          # [1,heads,1,N]
    return mha.out_proj((weights @ v).reshape(1, d))


class TransformerDecoderStep(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, token, position, past_k, past_v, cross_k, cross_v):
        """token [1], position [1] (= t), past_k/v [L,1,heads,t,hd], cross_k/v [L,1,heads,S,hd]
        -> logits [1,V], present_k/v [L,1,heads,t+1,hd]."""
        m = self.m
        g = m.tgt_embed(token) * math.sqrt(m.cfg.d_model) + m.pe.index_select(0, position)   # [1,d]
        present_k, present_v = [], []
        for l, layer in enumerate(m.decoder.layers):
            x = layer.norm1(g)
            nk, nv = project_kv(layer.self_attn, x.unsqueeze(1))                # [1,heads,1,hd]
            k = torch.cat([past_k[l], nk], 2)
            v = torch.cat([past_v[l], nv], 2)
            g = g + attend_one(layer.self_attn, x, k, v)
            g = g + attend_one(layer.cross_attn, layer.norm2(g), cross_k[l], cross_v[l])
            g = g + layer.ffn(layer.norm3(g))
            present_k.append(k)
            present_v.append(v)
        return m.logits(g), torch.stack(present_k), torch.stack(present_v)


# ---- beams x sentences (the paragraph benchmark) -----------------------------------------------------------
def first_cut(logits, beam_log_probability, k):
    """logits [R,V] -> the k best of log_softmax + the row's beam log p, per row (values, tokens)."""
    scores = torch.log_softmax(logits, dim=-1) + beam_log_probability.unsqueeze(1)
    return torch.topk(scores, k, dim=-1)


def beam_attention(m, s_prev, keys, mask):
    """s_prev [R,H] (K rows per sentence), keys [N,S,A], mask [N,S] -> additive attention weights [N,K,S]."""
    # the query-dependent part [N,K,1,A] against the sentence's keys [N,1,S,A]
    q = m.attn.W_q(s_prev).reshape(keys.size(0), -1, 1, keys.size(-1))
    scores = m.attn.v(torch.tanh(keys.unsqueeze(1) + q)).squeeze(-1)          # [N,K,S]
    return torch.softmax(scores.masked_fill(~mask.unsqueeze(1), float("-inf")), dim=-1)


class RnnBeamDecoder(nn.Module):
    def __init__(self, model, k):
        super().__init__()
        self.m, self.k = model, k

    def forward(self, token, parents, state, memory, keys, mask, beam_log_probability):
        m = self.m
        s_prev = state.index_select(0, parents)                                 # [R,H]
        rows = s_prev.size(0)
        y_emb = m.tgt_embed(token)                                              # [R,emb]
        weights = beam_attention(m, s_prev, keys, mask)                         # [N,K,S]
        context = (weights @ memory).reshape(rows, -1)                          # [R,2E]
        s = m.decoder(torch.cat([y_emb, context], dim=-1), s_prev)
        values, tokens = first_cut(m.output_logits(s, context, y_emb), beam_log_probability, self.k)
        return values, tokens, s


class RnnProjectedBeamDecoder(nn.Module):
    def __init__(self, model, k):
        super().__init__()
        self.m, self.k, self.columns = model, k, ContextColumns(model)

    def forward(self, token, parents, state, keys, memory_gates, memory_deep, mask, beam_log_probability):
        m = self.m
        s_prev = state.index_select(0, parents)                                 # [R,H]
        rows = s_prev.size(0)
        weights = beam_attention(m, s_prev, keys, mask)                         # [N,K,S]
        logits, s = self.columns.step(m, m.tgt_embed(token), s_prev, (weights @ memory_gates).reshape(rows, -1),
                                      (weights @ memory_deep).reshape(rows, -1))
        values, tokens = first_cut(logits, beam_log_probability, self.k)
        return values, tokens, s


class TransformerBeamEncoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, source_ids):
        """source_ids [N,S] PAD-padded -> cross_k, cross_v [L,N,heads,S,hd]."""
        memory, _, _ = self.m.encode(source_ids)
        ks, vs = [], []
        for layer in self.m.decoder.layers:
            k, v = project_kv_rows(layer.cross_attn, memory)
            ks.append(k)
            vs.append(v)
        return torch.stack(ks), torch.stack(vs)


def project_kv_rows(mha, x):
    """x [B,N,d] -> keys, values [B,heads,N,hd] with the batch size traced as dynamic."""
    _, (wk, bk), (wv, bv) = _split_in_proj(mha)
    d, heads = mha.embed_dim, mha.num_heads
    k = F.linear(x, wk, bk).reshape(x.size(0), -1, heads, d // heads).transpose(1, 2)
    v = F.linear(x, wv, bv).reshape(x.size(0), -1, heads, d // heads).transpose(1, 2)
    return k, v


class TransformerBeamDecoder(nn.Module):
    def __init__(self, model, k):
        super().__init__()
        self.m, self.k = model, k

    def forward(self, token, position, parents, past_k, past_v, cross_k, cross_v, mask, beam_log_probability):
        m = self.m
        d, heads = m.cfg.d_model, m.cfg.heads
        hd = d // heads
        n = cross_k.size(1)
        past_k = past_k.index_select(1, parents)
        past_v = past_v.index_select(1, parents)
        g = m.tgt_embed(token) * math.sqrt(d) + m.pe.index_select(0, position)    # [R,d]
        rows = g.size(0)
        key_bias = torch.zeros(mask.shape, dtype=g.dtype).masked_fill(~mask, float("-inf"))[:, None, None, :]
        present_k, present_v = [], []
        for l, layer in enumerate(m.decoder.layers):
            x = layer.norm1(g)
            nk, nv = project_kv_rows(layer.self_attn, x.unsqueeze(1))          # [R,heads,1,hd]
            k = torch.cat([past_k[l], nk], 2)
            v = torch.cat([past_v[l], nv], 2)
            (wq, bq), _, _ = _split_in_proj(layer.self_attn)
            q = F.linear(x, wq, bq).reshape(rows, heads, 1, hd)
            a = ((q / math.sqrt(hd)) @ k.transpose(-1, -2)).softmax(-1) @ v      # [R,heads,1,hd]
            g = g + layer.self_attn.out_proj(a.reshape(rows, d))
            # cross-attention: the K rows of a sentence against its keys, [N,heads,K,hd] x [N,heads,hd,S]
            x = layer.norm2(g)
            (wq, bq), _, _ = _split_in_proj(layer.cross_attn)
            q = F.linear(x, wq, bq).reshape(n, -1, heads, hd).transpose(1, 2)
            w = ((q / math.sqrt(hd)) @ cross_k[l].transpose(-1, -2) + key_bias).softmax(-1)
            a = (w @ cross_v[l]).transpose(1, 2).reshape(rows, d)
            g = g + layer.cross_attn.out_proj(a)
            g = g + layer.ffn(layer.norm3(g))
            present_k.append(k)
            present_v.append(v)
        values, tokens = first_cut(m.logits(g), beam_log_probability, self.k)
        return values, tokens, torch.stack(present_k), torch.stack(present_v)


def make_k_an_input(path, k_name="k"):
    """torch traces topk's k as a constant; the harness needs it per step (2K plus the row's banned tokens), so the
    TopK node's K becomes the graph input `k` (int64 [1])."""
    import onnx
    from onnx import TensorProto, helper
    graph_model = onnx.load(path)
    graph = graph_model.graph
    topk = [n for n in graph.node if n.op_type == "TopK"]
    assert len(topk) == 1, f"{path}: expected one TopK, found {len(topk)}"
    topk[0].input[1] = k_name
    graph.input.append(helper.make_tensor_value_info(k_name, TensorProto.INT64, [1]))
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, path)


# ---- export --------------------------------------------------------------------------------------------------
def export_graph(module, args, path, input_names, output_names, dynamic_axes):
    torch.onnx.export(module, args, path, input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes, opset_version=OPSET, do_constant_folding=True)
    try:
        import onnx
        onnx.checker.check_model(onnx.load(path))
    except ImportError:
        pass


def describe(path, kind, extra):
    """The NAME.json the benchmark reads: which weights, and what the decoding loop needs."""
    return {"kind": kind, "gguf": os.path.relpath(os.path.abspath(path), ROOT), "bytes": os.path.getsize(path),
            "bos": 2, "eos": 3, "max_len_a": 1.5, "max_len_b": 10, **extra}


RNN_FORMS = ("projected", "concatenated")


def rnn_graphs(model, form):
    """(encoder, batch-1 step, beam step class, the encoder outputs a step takes) in `form`."""
    if form == "projected":
        return (RnnProjectedEncoder(model), RnnProjectedStep(model), RnnProjectedBeamDecoder,
                ["keys", "memory_gates", "memory_deep"])
    return RnnEncoder(model), RnnDecoderStep(model), RnnBeamDecoder, ["memory", "keys"]


def export_rnn(gguf_path, out_dir, form="projected", beam_form="concatenated"):
    """form (the batch-1 graphs) and beam_form (the paragraph benchmark's): `projected` (the decoder's products with
    c_i moved into the encoder, as attnlab runs the model) or `concatenated` (the model's equations as trained:
    every step multiplies c_i)."""
    model, _ = bahdanau.load(gguf_path)
    model.eval()
    cfg = model.cfg
    S = 7
    src = torch.randint(4, cfg.src_vocab, (1, S))
    info = {"config": cfg.to_dict(), "state_size": cfg.dec_hidden, "form": form, "beam_form": beam_form}
    for encoder_name, graph_form in (("rnn.encoder", form), ("rnn.beam_encoder", beam_form)):
        encoder, decoder, beam_decoder, memory_names = rnn_graphs(model, graph_form)
        with torch.no_grad():
            *memory, s0 = encoder(src)
        per_source = {name: {1: "S"} for name in memory_names}
        export_graph(encoder, (src,), os.path.join(out_dir, f"{encoder_name}.onnx"), ["source_ids"],
                     memory_names + ["s0"], {"source_ids": {1: "S"}, **per_source})
        if encoder_name == "rnn.encoder":
            export_graph(decoder, (torch.tensor([2]), s0, *memory), os.path.join(out_dir, "rnn.decoder.onnx"),
                         ["token", "state"] + memory_names, ["logits", "next_state"], per_source)
            info["memory_names"] = memory_names
        else:
            export_rnn_beam(model, beam_decoder, memory_names, memory, s0, out_dir)
            info["beam_memory_names"] = memory_names
    info = describe(gguf_path, "rnn", info)
    with open(os.path.join(out_dir, "rnn.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


def export_transformer(gguf_path, out_dir):
    model, _ = transformer.load(gguf_path)
    model.eval()
    cfg = model.cfg
    L, heads, hd = cfg.dec_layers, cfg.heads, cfg.d_model // cfg.heads
    S, t = 7, 3
    src = torch.randint(4, cfg.src_vocab, (1, S))
    encoder, decoder = TransformerEncoder(model), TransformerDecoderStep(model)
    with torch.no_grad():
        cross_k, cross_v = encoder(src)
    export_graph(encoder, (src,), os.path.join(out_dir, "transformer.encoder.onnx"), ["source_ids"],
                 ["cross_k", "cross_v"], {"source_ids": {1: "S"}, "cross_k": {3: "S"}, "cross_v": {3: "S"}})
    past = torch.randn(L, 1, heads, t, hd)
    export_graph(decoder, (torch.tensor([5]), torch.tensor([t]), past, past.clone(), cross_k, cross_v),
                 os.path.join(out_dir, "transformer.decoder.onnx"),
                 ["token", "position", "past_k", "past_v", "cross_k", "cross_v"],
                 ["logits", "present_k", "present_v"],
                 {"past_k": {3: "t"}, "past_v": {3: "t"}, "cross_k": {3: "S"}, "cross_v": {3: "S"},
                  "present_k": {3: "t1"}, "present_v": {3: "t1"}})
    export_transformer_beam(model, out_dir)
    info = describe(gguf_path, "transformer", {"config": cfg.to_dict(), "layers": L, "heads": heads,
                                               "head_size": hd, "max_positions": cfg.max_positions})
    with open(os.path.join(out_dir, "transformer.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


BEAM_EXAMPLE_K = 4  # the traced example's rows per sentence; every size is dynamic in the graphs


def export_rnn_beam(model, beam_decoder, memory_names, memory, s0, out_dir):
    assert model.attn.score == "additive", "rnn.beam_decoder is written for additive attention"
    n, k = 2, BEAM_EXAMPLE_K
    rows = n * k
    memory = [m.expand(n, -1, -1).contiguous() for m in memory]
    mask = torch.ones(n, memory[0].size(1), dtype=torch.bool)
    mask[1, -2:] = False
    path = os.path.join(out_dir, "rnn.beam_decoder.onnx")
    export_graph(beam_decoder(model, 2 * k),
                 (torch.full((rows,), 2), torch.zeros(rows, dtype=torch.long), s0, *memory, mask, torch.zeros(rows)),
                 path, ["token", "parents", "state", *memory_names, "mask", "beam_log_probability"],
                 ["top_values", "top_tokens", "next_state"],
                 {"token": {0: "R"}, "parents": {0: "R"}, "state": {0: "P"},
                  **{name: {0: "N", 1: "S"} for name in memory_names}, "mask": {0: "N", 1: "S"},
                  "beam_log_probability": {0: "R"}, "top_values": {0: "R", 1: "k"}, "top_tokens": {0: "R", 1: "k"},
                  "next_state": {0: "R"}})
    make_k_an_input(path)


def export_transformer_beam(model, out_dir):
    cfg = model.cfg
    L, heads, hd = cfg.dec_layers, cfg.heads, cfg.d_model // cfg.heads
    n, k, S, t = 2, BEAM_EXAMPLE_K, 7, 3
    rows = n * k
    src = torch.randint(4, cfg.src_vocab, (n, S))
    src[1, -2:] = 0
    encoder = TransformerBeamEncoder(model)
    with torch.no_grad():
        cross_k, cross_v = encoder(src)
    export_graph(encoder, (src,), os.path.join(out_dir, "transformer.beam_encoder.onnx"), ["source_ids"],
                 ["cross_k", "cross_v"], {"source_ids": {0: "N", 1: "S"}, "cross_k": {1: "N", 3: "S"},
                                          "cross_v": {1: "N", 3: "S"}})
    past = torch.randn(L, rows, heads, t, hd)
    path = os.path.join(out_dir, "transformer.beam_decoder.onnx")
    export_graph(TransformerBeamDecoder(model, 2 * k),
                 (torch.full((rows,), 5), torch.tensor([t]), torch.arange(rows), past, past.clone(), cross_k, cross_v,
                  src != 0, torch.zeros(rows)),
                 path, ["token", "position", "parents", "past_k", "past_v", "cross_k", "cross_v", "mask",
                        "beam_log_probability"],
                 ["top_values", "top_tokens", "present_k", "present_v"],
                 {"token": {0: "R"}, "parents": {0: "R"}, "past_k": {1: "P", 3: "t"}, "past_v": {1: "P", 3: "t"},
                  "cross_k": {1: "N", 3: "S"}, "cross_v": {1: "N", 3: "S"}, "mask": {0: "N", 1: "S"},
                  "beam_log_probability": {0: "R"}, "top_values": {0: "R", 1: "k"}, "top_tokens": {0: "R", 1: "k"},
                  "present_k": {1: "R", 3: "t1"}, "present_v": {1: "R", 3: "t1"}})
    make_k_an_input(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rnn", default=DEFAULT_RNN, help="Bahdanau GGUF (default: the shipped f16 EN-DE)")
    ap.add_argument("--transformer", default=DEFAULT_TRANSFORMER,
                    help="Transformer GGUF (default: the tiny test fixture); `none` exports the RNN alone")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--rnn-form", choices=RNN_FORMS, default="projected",
                    help="the batch-1 RNN graphs: the decoder's c_i products per step (concatenated) or once per "
                         "sentence in the encoder (projected, as attnlab; default)")
    ap.add_argument("--rnn-beam-form", choices=RNN_FORMS, default="concatenated",
                    help="the paragraph benchmark's RNN graphs (default concatenated: ORT's faster form there)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    infos = [export_rnn(args.rnn, args.out, args.rnn_form, args.rnn_beam_form)]
    if args.transformer != "none":
        infos.append(export_transformer(args.transformer, args.out))
    for info in infos:
        print(f"export_onnx: {info['kind']} from {info['gguf']} -> {args.out}/{info['kind']}.{{encoder,decoder}}.onnx")


if __name__ == "__main__":
    main()
