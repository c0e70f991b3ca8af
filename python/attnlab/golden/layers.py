#!/usr/bin/python3
"""Golden fixtures for the C++ layers (src/attnlab/nn): PyTorch runs each layer on tiny, odd-sized inputs and
the weights, inputs and outputs go into tests/fixtures/layers/*.gguf (all F32 unless noted).

    python3 -m attnlab.golden.layers [--out tests/fixtures/layers]

Files and tensor names (checked by tests/cpp/test_{linear,attention,multihead,rnn}.cpp):
  linear.gguf     f32.{weight,bias}, f32.x [3, 10], f32.y [3, 7], f32.x1 [1, 10], f32.y1 [1, 7];
                  f16.weight (F16) + f16.bias, f16.x, f16.y; q8.weight (Q8_0, [9, 64]) + q8.bias, q8.x [4, 64],
                  q8.y [4, 9], q8.x1, q8.y1 (expected from numpy's dequantized weights, in float64)
  attention.gguf  per score s in dot, general, additive, cosine, scaled_dot, prefix <s> = attn_<s>: the module's
                  weights under <s>., <s>.keys [S, dk], <s>.values [S, dv], <s>.query [2, dq]; row 0 unmasked, row 1 with <s>.mask [S]
                  (1 = token, 0 = padding); expected <s>.scores [2, S] (0 stored where masked;
                  C++ must give -inf there), <s>.weights, <s>.context
                  metadata <s>.query_dim, <s>.key_dim, <s>.attn_dim
  multihead.gguf  nn.MultiheadAttention(10, 2) state_dict under mha.; self.x [7, 10] causal -> self.out, self.attn
                  [2, 7, 7]; cross.query [5, 10], cross.memory [7, 10], cross.mask [7] -> cross.out, cross.attn [2, 5, 7]
  rnn.gguf        gru_cell.* (nn.GRUCell(5, 6)), gru_cell.x [4, 5], gru_cell.h0 [6], gru_cell.h [4, 6] (state after each
                  step); lstm_cell.* (nn.LSTMCell(5, 6)), lstm_cell.{x, h0, c0, h, c}; bigru.* (nn.GRU(5, 6,
                  bidirectional, batch_first)), bigru.x [7, 5], bigru.h0 [2, 6], bigru.out [7, 12], bigru.h_n [2, 6],
                  bigru.out_zero / bigru.h_n_zero (h0 = 0)
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn

from attnlab.gguf.writer import GGUFWriter, dequantize_q8_0, quantize_q8_0
from attnlab.nn.attention import Attention
from attnlab.paths import FIXTURES

ARCH = "attnlab.fixture"


def np32(t):
    return t.detach().cpu().numpy().astype(np.float32)


def add_state(writer, prefix, module):
    for name, tensor in module.state_dict().items():
        writer.add_tensor(f"{prefix}.{name}", np32(tensor))


def linear_fixture(path):
    w = GGUFWriter(path, architecture=ARCH)
    # f32, 2 rows (gemm) and 1 row (gemv)
    layer = nn.Linear(10, 7)
    add_state(w, "f32", layer)
    x, x1 = torch.randn(3, 10), torch.randn(1, 10)
    w.add_tensor("f32.x", np32(x)); w.add_tensor("f32.y", np32(layer(x)))
    w.add_tensor("f32.x1", np32(x1)); w.add_tensor("f32.y1", np32(layer(x1)))
    # f16 weights: the loader widens them; expected output from the f16-rounded weights
    layer = nn.Linear(10, 7)
    weight16 = layer.weight.detach().numpy().astype(np.float16)
    w.add_tensor("f16.weight", layer.weight.detach().numpy(), "f16")
    w.add_tensor("f16.bias", np32(layer.bias))
    x = torch.randn(3, 10)
    y = x.double().numpy() @ weight16.astype(np.float64).T + layer.bias.detach().double().numpy()
    w.add_tensor("f16.x", np32(x)); w.add_tensor("f16.y", y.astype(np.float32))
    # Q8_0 weights stay quantized in C++; expected output from numpy's dequantization (ggml's formula)
    weight = torch.randn(9, 64).numpy()
    bias = torch.randn(9).numpy()
    scales, quants = quantize_q8_0(weight)
    dequantized = dequantize_q8_0(scales, quants).reshape(9, 64).astype(np.float64)
    w.add_tensor("q8.weight", weight, "q8_0")
    w.add_tensor("q8.bias", bias)
    for suffix, rows in (("", 4), ("1", 1)):
        x = torch.randn(rows, 64).numpy()
        w.add_tensor(f"q8.x{suffix}", x)
        w.add_tensor(f"q8.y{suffix}", (x.astype(np.float64) @ dequantized.T + bias).astype(np.float32))
    w.write()


def attention_fixture(path):
    S, dv = 7, 5
    configs = {  # score -> (dq, dk, A)
        "dot": (10, 10, 0), "general": (6, 10, 0), "additive": (6, 10, 9), "cosine": (10, 10, 0),
        "scaled_dot": (10, 10, 0),
    }
    mask = torch.tensor([1, 1, 0, 1, 1, 0, 0], dtype=torch.bool)  # padding in the middle and at the end
    w = GGUFWriter(path, architecture=ARCH)
    for score, (dq, dk, A) in configs.items():
        module = Attention(score, dq, dk, A or None)
        if score == "cosine":
            with torch.no_grad():
                module.gain.fill_(3.7)
        add_state(w, f"attn_{score}", module)
        keys = torch.randn(1, S, dk) * 1.5
        values = torch.randn(1, S, dv)
        query = torch.randn(2, dq) * 1.5
        masks = torch.stack([torch.ones(S, dtype=torch.bool), mask])
        with torch.no_grad():
            e, a, c = module(query, keys.expand(2, S, dk), values.expand(2, S, dv), masks)
        e = e.masked_fill(~masks, 0.0)  # GGUF files hold no infinities; the test expects -inf where mask == 0
        for name, array in (("keys", keys[0]), ("values", values[0]), ("query", query), ("mask", mask.float()),
                            ("scores", e), ("weights", a), ("context", c)):
            w.add_tensor(f"attn_{score}.{name}", np32(array))
        w.add_uint32(f"attn_{score}.query_dim", dq)
        w.add_uint32(f"attn_{score}.key_dim", dk)
        w.add_uint32(f"attn_{score}.attn_dim", A)
    w.write()


def multihead_fixture(path):
    d, heads, T, S = 10, 2, 5, 7
    mha = nn.MultiheadAttention(d, heads, batch_first=True)
    with torch.no_grad():  # nonzero biases so that a dropped bias is caught
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    mha.eval()
    w = GGUFWriter(path, architecture=ARCH)
    add_state(w, "mha", mha)
    w.add_uint32("mha.d_model", d)
    w.add_uint32("mha.heads", heads)
    with torch.no_grad():
        x = torch.randn(1, S, d)
        causal = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)  # True = may not attend
        out, attn = mha(x, x, x, attn_mask=causal, need_weights=True, average_attn_weights=False)
        w.add_tensor("self.x", np32(x[0])); w.add_tensor("self.out", np32(out[0])); w.add_tensor("self.attn", np32(attn[0]))
        query, memory = torch.randn(1, T, d), torch.randn(1, S, d)
        keep = torch.tensor([1, 1, 1, 0, 1, 0, 0], dtype=torch.bool)
        out, attn = mha(query, memory, memory, key_padding_mask=~keep[None], need_weights=True,
                        average_attn_weights=False)
        for name, array in (("query", query[0]), ("memory", memory[0]), ("mask", keep.float()), ("out", out[0]),
                            ("attn", attn[0])):
            w.add_tensor(f"cross.{name}", np32(array))
    w.write()


def rnn_fixture(path):
    n_in, H, steps, S = 5, 6, 4, 7
    w = GGUFWriter(path, architecture=ARCH)
    with torch.no_grad():
        cell = nn.GRUCell(n_in, H)
        add_state(w, "gru_cell", cell)
        x, h = torch.randn(steps, n_in), torch.randn(H)
        w.add_tensor("gru_cell.x", np32(x)); w.add_tensor("gru_cell.h0", np32(h))
        states = []
        for t in range(steps):
            h = cell(x[t:t + 1], h[None])[0]
            states.append(h)
        w.add_tensor("gru_cell.h", np32(torch.stack(states)))

        cell = nn.LSTMCell(n_in, H)
        add_state(w, "lstm_cell", cell)
        x, h, c = torch.randn(steps, n_in), torch.randn(H), torch.randn(H)
        w.add_tensor("lstm_cell.x", np32(x)); w.add_tensor("lstm_cell.h0", np32(h)); w.add_tensor("lstm_cell.c0", np32(c))
        hs, cs = [], []
        for t in range(steps):
            h, c = cell(x[t:t + 1], (h[None], c[None]))
            h, c = h[0], c[0]
            hs.append(h); cs.append(c)
        w.add_tensor("lstm_cell.h", np32(torch.stack(hs))); w.add_tensor("lstm_cell.c", np32(torch.stack(cs)))

        gru = nn.GRU(n_in, H, bidirectional=True, batch_first=True)
        add_state(w, "bigru", gru)
        x, h0 = torch.randn(1, S, n_in), torch.randn(2, 1, H)
        out, h_n = gru(x, h0)
        w.add_tensor("bigru.x", np32(x[0])); w.add_tensor("bigru.h0", np32(h0[:, 0]))
        w.add_tensor("bigru.out", np32(out[0])); w.add_tensor("bigru.h_n", np32(h_n[:, 0]))
        out, h_n = gru(x)
        w.add_tensor("bigru.out_zero", np32(out[0])); w.add_tensor("bigru.h_n_zero", np32(h_n[:, 0]))
    w.write()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(FIXTURES, "layers"))
    args = parser.parse_args()
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    np.random.seed(1234)
    os.makedirs(args.out, exist_ok=True)
    for name, make in (("linear", linear_fixture), ("attention", attention_fixture),
                       ("multihead", multihead_fixture), ("rnn", rnn_fixture)):
        path = os.path.join(args.out, f"{name}.gguf")
        make(path)
        print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
