// GRU / LSTM cells and the bidirectional GRU against nn.GRUCell, nn.LSTMCell and nn.GRU(bidirectional=True)
// (fixtures: python/attnlab/golden/layers.py -> tests/fixtures/layers/rnn.gguf).
#include <doctest/doctest.h>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/nn/rnn.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const gguf::File& rnn_fixture() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/layers/rnn.gguf"));
    return file;
}

constexpr int kIn = 5, kHidden = 6;

}  // namespace

TEST_CASE("rnn: GRU cell steps match nn.GRUCell, and gru_sequence (one GEMM for W_ih x) agrees") {
    const gguf::File& file = rnn_fixture();
    const nn::GRUCell cell = nn::load_gru_cell(file, "gru_cell", kIn, kHidden);
    const Matrix x = file.load_f32<2>("gru_cell.x", {-1, kIn});
    const std::vector<float> h0 = file.load_f32_flat("gru_cell.h0");
    const std::vector<float> expected = file.load_f32_flat("gru_cell.h");
    const int steps = rows(x);
    std::vector<float> h = h0;
    for (int t = 0; t < steps; ++t) {
        CAPTURE(t);
        nn::gru_step(cell, x.data() + t * kIn, h.data(), h.data());   // in place: h_out aliases h
        test::check_close(h.data(), expected.data() + t * kHidden, kHidden, 1e-5f, 0.0f, "gru_step");
    }
    const Matrix all = nn::gru_sequence(cell, x, h0.data());
    test::check_close(all.data(), expected.data(), expected.size(), 1e-5f, 0.0f, "gru_sequence");
}

TEST_CASE("rnn: LSTM cell steps match nn.LSTMCell, and lstm_sequence agrees") {
    const gguf::File& file = rnn_fixture();
    const nn::LSTMCell cell = nn::load_lstm_cell(file, "lstm_cell", kIn, kHidden);
    const Matrix x = file.load_f32<2>("lstm_cell.x", {-1, kIn});
    const std::vector<float> h0 = file.load_f32_flat("lstm_cell.h0"), c0 = file.load_f32_flat("lstm_cell.c0");
    const std::vector<float> expected_h = file.load_f32_flat("lstm_cell.h");
    const std::vector<float> expected_c = file.load_f32_flat("lstm_cell.c");
    std::vector<float> h = h0, c = c0;
    for (int t = 0; t < rows(x); ++t) {
        CAPTURE(t);
        nn::lstm_step(cell, x.data() + t * kIn, h.data(), c.data(), h.data(), c.data());
        test::check_close(h.data(), expected_h.data() + t * kHidden, kHidden, 1e-5f, 0.0f, "h");
        test::check_close(c.data(), expected_c.data() + t * kHidden, kHidden, 1e-5f, 0.0f, "c");
    }
    const nn::LSTMSequenceOutput seq = nn::lstm_sequence(cell, x, h0.data(), c0.data());
    test::check_close(seq.outputs.data(), expected_h.data(), expected_h.size(), 1e-5f, 0.0f, "outputs");
    test::check_close(seq.c.data(), expected_c.data() + (rows(x) - 1) * kHidden, kHidden, 1e-5f, 0.0f, "final c");
}

TEST_CASE("rnn: BiGRU matches nn.GRU(bidirectional=True, batch_first=True): outputs [S, 2H] and h_n [2, H]") {
    const gguf::File& file = rnn_fixture();
    const nn::BiGRU gru = nn::load_bigru(file, "bigru", kIn, kHidden);
    const Matrix x = file.load_f32<2>("bigru.x", {-1, kIn});
    const Matrix h0 = file.load_f32<2>("bigru.h0", {2, kHidden});
    for (bool zero_start : {false, true}) {
        CAPTURE(zero_start);
        const nn::BiGRUOutput result = nn::bigru_forward(gru, x, zero_start ? nullptr : &h0);
        const std::vector<float> out = file.load_f32_flat(zero_start ? "bigru.out_zero" : "bigru.out");
        const std::vector<float> h_n = file.load_f32_flat(zero_start ? "bigru.h_n_zero" : "bigru.h_n");
        REQUIRE(rows(result.outputs) == rows(x));
        REQUIRE(cols(result.outputs) == 2 * kHidden);
        test::check_close(result.outputs.data(), out.data(), out.size(), 1e-5f, 0.0f, "outputs");
        test::check_close(result.final_hidden.data(), h_n.data(), h_n.size(), 1e-5f, 0.0f, "h_n");
    }
}

TEST_CASE("rnn: wrong sizes are attnlab::Error") {
    const gguf::File& file = rnn_fixture();
    CHECK_THROWS_AS(nn::load_gru_cell(file, "gru_cell", kIn, kHidden + 1), Error);
    CHECK_THROWS_AS(nn::load_lstm_cell(file, "gru_cell", kIn, kHidden), Error);   // 3H rows, not 4H
    CHECK_THROWS_AS(nn::load_bigru(file, "gru_cell", kIn, kHidden), Error);       // no _l0 tensors
    const nn::GRUCell cell = nn::load_gru_cell(file, "gru_cell", kIn, kHidden);
    const Matrix wide = xt::zeros<float>({3, kIn + 1});
    CHECK_THROWS_AS(nn::gru_sequence(cell, wide), Error);
    const nn::BiGRU gru = nn::load_bigru(file, "bigru", kIn, kHidden);
    const Matrix x = file.load_f32<2>("bigru.x", {-1, kIn});
    const Matrix bad_h0 = xt::zeros<float>({1, kHidden});
    CHECK_THROWS_AS(nn::bigru_forward(gru, x, &bad_h0), Error);
}
