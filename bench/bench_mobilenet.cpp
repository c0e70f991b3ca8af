// MobileNetV2 encoder timing: one 224x224 forward (preprocess + 52 layers), natively and in wasm (node).
//   bench_mobilenet MODEL.gguf [runs]      (python/attnlab/golden/mobilenet.py writes build/golden/mobilenet/*.gguf)
// Prints per-phase best and median milliseconds. The machine is shared, so the best run is the one to quote.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/image/preprocess.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/mobilenet_v2.hpp"

using namespace attnlab;
using clock_type = std::chrono::steady_clock;

namespace {

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

void report(const char* what, std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    std::printf("%-28s best %7.2f ms   median %7.2f ms   (%zu runs)\n", what, ms.front(), ms[ms.size() / 2], ms.size());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s MODEL.gguf [runs]\n", argv[0]);
        return 2;
    }
    try {
        const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 10;
        auto t0 = clock_type::now();
        const auto model = models::load_mobilenet_v2(gguf::File::open(argv[1]));
        std::printf("simd %s, load %.1f ms\n", kernels::simd_name(), ms_since(t0));
        // a 640x480 RGBA photo-sized input, so the resize is part of the measurement
        const int w = 640, h = 480;
        std::vector<uint8_t> rgba(std::size_t(w) * h * 4);
        for (std::size_t i = 0; i < rgba.size(); ++i) rgba[i] = uint8_t((i * 131) >> 3);
        std::vector<double> pre, fwd, fwd_logits;
        float sink = 0;
        for (int r = 0; r < runs; ++r) {
            t0 = clock_type::now();
            const Tensor3 x = image::preprocess_rgba(rgba.data(), rgba.size(), w, h);
            pre.push_back(ms_since(t0));
            t0 = clock_type::now();
            const auto out = models::mobilenet_forward(model, x, false);
            fwd.push_back(ms_since(t0));
            t0 = clock_type::now();
            const auto out2 = models::mobilenet_forward(model, x, true);
            fwd_logits.push_back(ms_since(t0));
            sink += out.features(0, 0) + (out2.logits.size() ? out2.logits(0) : 0.0f);
        }
        report("preprocess 640x480 -> 224", pre);
        report("forward (features)", fwd);
        report("forward (+ classifier)", fwd_logits);
        std::printf("(checksum %g)\n", double(sink));

        // Where the time goes: each layer's kernel alone (best of 5) on an input of its shape, summed by kind.
        double stem = 0, pointwise = 0, pointwise_nn = 0, depthwise = 0;
        int h_in = model.input_size, w_in = model.input_size;
        for (const auto& l : model.layers) {
            const auto gr = kernels::conv_geometry(h_in, l.kernel, l.stride, l.padding);
            const auto gc = kernels::conv_geometry(w_in, l.kernel, l.stride, l.padding);
            std::vector<float> in(std::size_t(h_in) * w_in * l.in_channels, 0.5f);
            std::vector<float> out(std::size_t(gr.out) * gc.out * l.out_channels);
            std::vector<float> scratch(kernels::conv2d_scratch_size(h_in, w_in, l.in_channels, l.kernel, l.stride, l.padding));
            double best = 1e30;
            for (int r = 0; r < 5; ++r) {
                t0 = clock_type::now();
                if (l.depthwise)
                    kernels::depthwise_conv2d(in.data(), h_in, w_in, l.in_channels, l.weight.weight.data(),
                                              l.weight.bias.data(), l.kernel, l.stride, l.padding, l.activation, out.data());
                else
                    kernels::conv2d(in.data(), h_in, w_in, l.in_channels, l.weight.weight.data(), l.weight.bias.data(),
                                    l.out_channels, l.kernel, l.stride, l.padding, l.activation, out.data(),
                                    scratch.empty() ? nullptr : scratch.data());
                best = std::min(best, ms_since(t0));
            }
            (l.depthwise ? depthwise : l.kernel == 1 ? pointwise : stem) += best;
            if (!l.depthwise && l.kernel == 1) {
                // the same 1x1 convolution in the other GEMM form, weights transposed to [Cin, Cout]
                std::vector<float> wt(std::size_t(l.in_channels) * l.out_channels);
                for (int o = 0; o < l.out_channels; ++o)
                    for (int i = 0; i < l.in_channels; ++i)
                        wt[std::size_t(i) * l.out_channels + o] = l.weight.weight(o, i);
                double best_nn = 1e30;
                const int pixels = h_in * w_in;
                for (int r = 0; r < 5; ++r) {
                    t0 = clock_type::now();
                    kernels::gemm_nn(pixels, l.out_channels, l.in_channels, in.data(), l.in_channels, wt.data(),
                                     l.out_channels, out.data(), l.out_channels);
                    kernels::bias_act(pixels, l.out_channels, out.data(), l.out_channels, l.weight.bias.data(),
                                      l.activation);
                    best_nn = std::min(best_nn, ms_since(t0));
                }
                pointwise_nn += best_nn;
            }
            h_in = gr.out;
            w_in = gc.out;
        }
        std::printf("kernels alone: stem %.2f ms, 1x1 convs %.2f ms (as gemm_nn: %.2f ms), depthwise %.2f ms\n", stem,
                    pointwise, pointwise_nn, depthwise);
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
