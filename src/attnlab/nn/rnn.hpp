#pragma once
// Recurrent cells with PyTorch's exact weight layouts (nn.GRUCell / nn.LSTMCell, and layer 0 of nn.GRU / nn.LSTM).
//
// GRU, gates stacked r, z, n in weight_ih [3H, in] / weight_hh [3H, H] / bias_ih, bias_hh [3H]:
//   r = σ(W_ir x + b_ir + W_hr h + b_hr)
//   z = σ(W_iz x + b_iz + W_hz h + b_hz)
//   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
//   h' = (1 − z) ⊙ n + z ⊙ h
// LSTM, gates stacked i, f, g, o in weight_ih [4H, in] / weight_hh [4H, H]:
//   i = σ(·), f = σ(·), g = tanh(·), o = σ(·);  c' = f ⊙ c + i ⊙ g;  h' = o ⊙ tanh(c')
// The weights are Linear layers (ih = weight_ih + bias_ih, hh = weight_hh + bias_hh), so they may be Q8_0.
#include <string>

#include "attnlab/nn/linear.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::nn {

struct GRUCell {
    int input_size = 0;
    int hidden_size = 0;   // H
    Linear ih;             // weight_ih [3H, in], bias_ih [3H]
    Linear hh;             // weight_hh [3H, H], bias_hh [3H]
};

struct LSTMCell {
    int input_size = 0;
    int hidden_size = 0;   // H
    Linear ih;             // weight_ih [4H, in], bias_ih [4H]
    Linear hh;             // weight_hh [4H, H], bias_hh [4H]
};

void validate(const GRUCell& cell);
void validate(const LSTMCell& cell);

// x [in], h [H] -> h_out [H]; h_out may alias h.
void gru_step(const GRUCell& cell, const float* x, const float* h, float* h_out);
// Same, with the input half already computed: input_gates [3H] = W_ih x + b_ih.
void gru_step_projected(const GRUCell& cell, const float* input_gates, const float* h, float* h_out);

// Independent steps of `rows` hypotheses at once (a batched decoder step): x [rows, in], h [rows, H] ->
// h_out [rows, H] (must not alias h). Row r is gru_step(cell, x_r, h_r) up to the summation order of
// linear_batched, which reads each weight once for all rows. gates: scratch of at least 6·H·rows floats.
void gru_step_rows(const GRUCell& cell, const float* x, const float* h, int rows, float* h_out, float* gates);

// x [S, in], h0 [H] or null (zeros) -> all hidden states [S, H] (row s = state after position s, in input
// order even when reverse). W_ih x for all positions is one GEMM (project_sequence). reverse runs s = S-1 .. 0.
Matrix gru_sequence(const GRUCell& cell, const Matrix& x, const float* h0 = nullptr, bool reverse = false,
                    SequenceProducts products = SequenceProducts::linear);

// x [in], h [H], c [H] -> h_out [H], c_out [H]; the outputs may alias the inputs.
void lstm_step(const LSTMCell& cell, const float* x, const float* h, const float* c, float* h_out, float* c_out);

struct LSTMSequenceOutput {
    Matrix outputs;   // [S, H]
    Vector h;         // final hidden [H]
    Vector c;         // final cell [H]
};
// x [S, in], h0/c0 [H] or null (zeros) -> outputs [S, H] and the final states.
LSTMSequenceOutput lstm_sequence(const LSTMCell& cell, const Matrix& x, const float* h0 = nullptr,
                                 const float* c0 = nullptr);

// nn.GRU(bidirectional=True, batch_first=True), one layer, one sequence.
struct BiGRU {
    GRUCell forward;
    GRUCell backward;
};

struct BiGRUOutput {
    Matrix outputs;        // [S, 2H]: columns [0, H) forward, [H, 2H) backward (PyTorch's order)
    Matrix final_hidden;   // [2, H]: row 0 forward (after x_{S-1}), row 1 backward (after x_0), like h_n
};

// x [S, in], h0 [2, H] or null (zeros) -> BiGRUOutput; products: how each direction projects x (gru_sequence).
BiGRUOutput bigru_forward(const BiGRU& gru, const Matrix& x, const Matrix* h0 = nullptr,
                          SequenceProducts products = SequenceProducts::linear);

// "<prefix>.weight_ih<suffix>", "weight_hh", "bias_ih", "bias_hh" (biases optional, like bias=False).
// nn.GRUCell: suffix "". nn.GRU layer 0: "_l0", its reverse direction "_l0_reverse".
GRUCell load_gru_cell(const gguf::File& file, const std::string& prefix, int input_size, int hidden_size,
                      const std::string& suffix = "");
LSTMCell load_lstm_cell(const gguf::File& file, const std::string& prefix, int input_size, int hidden_size,
                        const std::string& suffix = "");
// nn.GRU(bidirectional=True) layer 0 under prefix: suffixes "_l0" and "_l0_reverse".
BiGRU load_bigru(const gguf::File& file, const std::string& prefix, int input_size, int hidden_size);

}  // namespace attnlab::nn
