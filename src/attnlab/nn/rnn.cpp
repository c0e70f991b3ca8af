#include "attnlab/nn/rnn.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/parallel/pool.hpp"

namespace attnlab::nn {

namespace {

float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

template <class Cell>
void validate_cell(const Cell& cell, int gates, const char* kind) {
    const int H = cell.hidden_size;
    if (!(cell.input_size > 0 && H > 0)) fail(std::string(kind) + ": input_size and hidden_size must be positive");
    validate(cell.ih, std::string(kind) + " weight_ih");
    validate(cell.hh, std::string(kind) + " weight_hh");
    if (!(cell.ih.in == cell.input_size && cell.ih.out == gates * H))
        fail(std::string(kind) + ": weight_ih must be [" + std::to_string(gates) + "H, input_size]");
    if (!(cell.hh.in == H && cell.hh.out == gates * H))
        fail(std::string(kind) + ": weight_hh must be [" + std::to_string(gates) + "H, H]");
}

void check_input(const Matrix& x, int input_size, const char* what) {
    if (!(x.dimension() == 2 && cols(x) == input_size))
        fail(std::string(what) + ": input has " + std::to_string(cols(x)) + " features, the cell expects " +
             std::to_string(input_size));
}

}  // namespace

void validate(const GRUCell& cell) {
    validate_cell(cell, 3, "GRU");
}
void validate(const LSTMCell& cell) {
    validate_cell(cell, 4, "LSTM");
}

namespace {

// gru_step_projected with the room for W_hh h + b_hh [3H] given
void gru_step_projected(const GRUCell& cell, const float* input_gates, const float* h, float* h_out,
                        float* hidden_gates) {
    linear(cell.hh, h, 1, hidden_gates);
    kernels::gru_gates(1, cell.hidden_size, input_gates, hidden_gates, h, h_out);
}

}  // namespace

// input_gates [3H] = W_ih x + b_ih, h [H] -> h_out [H]
void gru_step_projected(const GRUCell& cell, const float* input_gates, const float* h, float* h_out) {
    std::vector<float> hidden_gates(3 * std::size_t(cell.hidden_size));
    gru_step_projected(cell, input_gates, h, h_out, hidden_gates.data());
}

// x [rows, in], h [rows, H] -> h_out [rows, H]
void gru_step_rows(const GRUCell& cell, const float* x, const float* h, int rows, float* h_out, float* gates) {
    const int H = cell.hidden_size;
    float* input_gates = gates;                                  // [rows, 3H]
    float* hidden_gates = gates + std::size_t(rows) * 3 * H;     // [rows, 3H]
    linear_batched(cell.ih, x, rows, input_gates);
    linear_batched(cell.hh, h, rows, hidden_gates);
    kernels::gru_gates(rows, H, input_gates, hidden_gates, h, h_out);
}

// x [in], h [H] -> h_out [H]
void gru_step(const GRUCell& cell, const float* x, const float* h, float* h_out) {
    validate(cell);
    std::vector<float> input_gates(3 * std::size_t(cell.hidden_size));
    linear(cell.ih, x, 1, input_gates.data());
    gru_step_projected(cell, input_gates.data(), h, h_out);
}

// x [S, in] -> [S, H]
Matrix gru_sequence(const GRUCell& cell, const Matrix& x, const float* h0, bool reverse, SequenceProducts products) {
    validate(cell);
    check_input(x, cell.input_size, "gru_sequence");
    const int S = rows(x), H = cell.hidden_size;
    const Matrix input_gates = project_sequence(cell.ih, x, products);  // [S, 3H], one GEMM for the whole sequence
    Matrix outputs = Matrix::from_shape({std::size_t(S), std::size_t(H)});
    std::vector<float> h(H, 0.0f), hidden_gates(3 * std::size_t(H));
    if (h0) std::copy(h0, h0 + H, h.begin());
    for (int step = 0; step < S; ++step) {
        const int s = reverse ? S - 1 - step : step;
        gru_step_projected(cell, input_gates.data() + std::size_t(s) * 3 * H, h.data(), h.data(), hidden_gates.data());
        std::copy(h.begin(), h.end(), outputs.data() + std::size_t(s) * H);
    }
    return outputs;
}

// x [in], h [H], c [H] -> h_out [H], c_out [H]
void lstm_step(const LSTMCell& cell, const float* x, const float* h, const float* c, float* h_out, float* c_out) {
    validate(cell);
    const int H = cell.hidden_size;
    std::vector<float> gates(4 * std::size_t(H));  // W_ih x + b_ih + W_hh h + b_hh   [4H]
    std::vector<float> hidden_gates(4 * std::size_t(H));
    linear(cell.ih, x, 1, gates.data());
    linear(cell.hh, h, 1, hidden_gates.data());
    for (int j = 0; j < 4 * H; ++j) gates[j] += hidden_gates[j];
    for (int j = 0; j < H; ++j) {
        const float i = sigmoid(gates[j]);
        const float f = sigmoid(gates[H + j]);
        const float g = std::tanh(gates[2 * H + j]);
        const float o = sigmoid(gates[3 * H + j]);
        const float c_new = f * c[j] + i * g;
        c_out[j] = c_new;
        h_out[j] = o * std::tanh(c_new);
    }
}

// x [S, in] -> outputs [S, H], final h, c
LSTMSequenceOutput lstm_sequence(const LSTMCell& cell, const Matrix& x, const float* h0, const float* c0) {
    validate(cell);
    check_input(x, cell.input_size, "lstm_sequence");
    const int S = rows(x), H = cell.hidden_size;
    LSTMSequenceOutput result;
    result.outputs = Matrix::from_shape({std::size_t(S), std::size_t(H)});
    result.h = xt::zeros<float>({std::size_t(H)});
    result.c = xt::zeros<float>({std::size_t(H)});
    if (h0) std::copy(h0, h0 + H, result.h.begin());
    if (c0) std::copy(c0, c0 + H, result.c.begin());
    for (int s = 0; s < S; ++s) {
        lstm_step(cell, x.data() + std::size_t(s) * cell.input_size, result.h.data(), result.c.data(), result.h.data(),
                  result.c.data());
        std::copy(result.h.begin(), result.h.end(), result.outputs.data() + std::size_t(s) * H);
    }
    return result;
}

// x [S, in] -> outputs [S, 2H], final_hidden [2, H]
BiGRUOutput bigru_forward(const BiGRU& gru, const Matrix& x, const Matrix* h0, SequenceProducts products) {
    validate(gru.forward);
    validate(gru.backward);
    const int H = gru.forward.hidden_size;
    if (!(gru.backward.hidden_size == H && gru.backward.input_size == gru.forward.input_size))
        fail("BiGRU: the two directions have different sizes");
    if (!(!h0 || (h0->dimension() == 2 && rows(*h0) == 2 && cols(*h0) == H))) fail("BiGRU: h0 must be [2, H]");
    const int S = rows(x);
    // The two directions are independent: with a second thread each runs on its own, where their steps' products
    // are too small for the kernels to split (the same instructions either way, so the same bits).
    Matrix forward, backward;  // [S, H] each
    const double work = 2.0 * S * 3 * H * (double(gru.forward.input_size) + H);
    parallel::parallel_for(2, 1, work, [&](int begin, int end) {
        for (int direction = begin; direction < end; ++direction) {
            if (direction == 0) forward = gru_sequence(gru.forward, x, h0 ? h0->data() : nullptr, false, products);
            else backward = gru_sequence(gru.backward, x, h0 ? h0->data() + H : nullptr, true, products);
        }
    });

    BiGRUOutput result;
    result.outputs = Matrix::from_shape({std::size_t(S), 2 * std::size_t(H)});
    for (int s = 0; s < S; ++s) {
        std::copy_n(forward.data() + std::size_t(s) * H, H, result.outputs.data() + std::size_t(s) * 2 * H);
        std::copy_n(backward.data() + std::size_t(s) * H, H, result.outputs.data() + std::size_t(s) * 2 * H + H);
    }
    result.final_hidden = xt::zeros<float>({std::size_t(2), std::size_t(H)});
    if (h0) std::copy_n(h0->data(), 2 * H, result.final_hidden.data());  // an empty sequence keeps h0
    if (S > 0) {
        std::copy_n(forward.data() + std::size_t(S - 1) * H, H, result.final_hidden.data());
        std::copy_n(backward.data(), H, result.final_hidden.data() + H);
    }
    return result;
}

namespace {

// weight_ih/weight_hh [gates·H, ·] with their optional biases
template <class Cell>
Cell load_cell(const gguf::File& file, const std::string& prefix, int input_size, int hidden_size,
               const std::string& suffix, int gates) {
    if (!(input_size > 0 && hidden_size > 0)) fail("load recurrent cell(" + prefix + "): sizes must be positive");
    Cell cell;
    cell.input_size = input_size;
    cell.hidden_size = hidden_size;
    cell.ih = load_linear_tensors(file, prefix + ".weight_ih" + suffix, prefix + ".bias_ih" + suffix, input_size,
                                  gates * hidden_size);
    cell.hh = load_linear_tensors(file, prefix + ".weight_hh" + suffix, prefix + ".bias_hh" + suffix, hidden_size,
                                  gates * hidden_size);
    validate(cell);
    return cell;
}

}  // namespace

GRUCell load_gru_cell(const gguf::File& file, const std::string& prefix, int input_size, int hidden_size,
                      const std::string& suffix) {
    return load_cell<GRUCell>(file, prefix, input_size, hidden_size, suffix, 3);
}

LSTMCell load_lstm_cell(const gguf::File& file, const std::string& prefix, int input_size, int hidden_size,
                        const std::string& suffix) {
    return load_cell<LSTMCell>(file, prefix, input_size, hidden_size, suffix, 4);
}

BiGRU load_bigru(const gguf::File& file, const std::string& prefix, int input_size, int hidden_size) {
    return {load_gru_cell(file, prefix, input_size, hidden_size, "_l0"),
            load_gru_cell(file, prefix, input_size, hidden_size, "_l0_reverse")};
}

}  // namespace attnlab::nn
