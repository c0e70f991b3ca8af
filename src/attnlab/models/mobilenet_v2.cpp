// MobileNetV2 encoder: loading from GGUF (checked against its own metadata) and the NHWC forward pass.
#include "attnlab/models/mobilenet_v2.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::models {

namespace {

constexpr const char* kKey = "attnlab.mobilenet.";
constexpr int kMaxChannels = 8192;

kernels::Padding parse_padding(const std::string& s, int layer) {
    if (s == "same") return kernels::Padding::same;
    if (s == "valid") return kernels::Padding::valid;
    fail("mobilenet layer " + std::to_string(layer) + ": unknown padding '" + s + "'");
}

kernels::Activation parse_activation(const std::string& s, int layer) {
    if (s == "relu6") return kernels::Activation::relu6;
    if (s == "none") return kernels::Activation::none;
    if (s == "relu") return kernels::Activation::relu;
    fail("mobilenet layer " + std::to_string(layer) + ": unknown activation '" + s + "'");
}

struct Hw {
    int h = 0, w = 0;
};

Hw output_size(const MobileNetLayer& l, Hw in) {
    return {kernels::conv_geometry(in.h, l.kernel, l.stride, l.padding).out,
            kernels::conv_geometry(in.w, l.kernel, l.stride, l.padding).out};
}

bool pointwise(const MobileNetLayer& l) { return !l.depthwise && l.kernel == 1 && l.stride == 1; }

// Per-layer affine parameters of i8 weights (export_mobilenet.py --dtype i8: the TFLite model's own integers), or
// empty when the file stores floats.
struct I8Weights {
    std::vector<float> scale;
    std::vector<int32_t> zero_point;
};

I8Weights read_i8_parameters(const gguf::File& file, int n) {
    const std::string k = kKey;
    I8Weights q;
    if (!file.has(k + "weight_scale") && !file.has(k + "weight_zero_point")) return q;
    q.scale = file.get_f32_array(k + "weight_scale");
    q.zero_point = file.get_i32_array(k + "weight_zero_point");
    check(q.scale.size() == std::size_t(n) && q.zero_point.size() == std::size_t(n),
          "attnlab.mobilenet.weight_scale and weight_zero_point must have layer_count (" + std::to_string(n) +
              ") entries");
    for (int i = 0; i < n; ++i)
        check(std::isfinite(q.scale[i]) && q.scale[i] > 0 && q.zero_point[i] >= -128 && q.zero_point[i] <= 127,
              "mobilenet layer " + std::to_string(i) + ": weight scale or zero point out of range");
    return q;
}

// A layer's weight tensor of the given shape, flattened, whatever its storage (f32/f16/q8_0, or i8 with the
// layer's scale and zero point).
std::vector<float> load_weight(const gguf::File& file, const std::string& name, const std::vector<int64_t>& shape,
                               const I8Weights& i8, int layer) {
    if (file.has_tensor(name) && file.tensor(name).type == gguf::TensorType::i8) {
        check(!i8.scale.empty(), "tensor '" + name + "' is i8 but attnlab.mobilenet.weight_scale is missing");
        return file.load_i8_affine(name, shape, i8.scale[layer], i8.zero_point[layer]);
    }
    switch (shape.size()) {
        case 2: { auto t = file.load_f32<2>(name, {shape[0], shape[1]}); return {t.begin(), t.end()}; }
        case 3: { auto t = file.load_f32<3>(name, {shape[0], shape[1], shape[2]}); return {t.begin(), t.end()}; }
        default: {
            auto t = file.load_f32<4>(name, {shape[0], shape[1], shape[2], shape[3]});
            return {t.begin(), t.end()};
        }
    }
}

Matrix to_matrix(const std::vector<float>& values, std::size_t rows, std::size_t cols) {
    Matrix m = Matrix::from_shape({rows, cols});
    std::memcpy(m.data(), values.data(), sizeof(float) * values.size());
    return m;
}

}  // namespace

MobileNetV2 load_mobilenet_v2(const gguf::File& file) {
    const std::string k = kKey;
    check(file.has(k + "layer_count"), "this file has no MobileNetV2 encoder (attnlab.mobilenet.* is missing)");
    const std::string prefix = file.get_string(k + "tensor_prefix");
    const int n = int(file.get_u32(k + "layer_count"));
    check(n > 0 && n <= 1000, "attnlab.mobilenet.layer_count must be in 1..1000, got " + std::to_string(n));
    const auto kinds = file.get_string_array(k + "kind");
    const auto kernel = file.get_i32_array(k + "kernel");
    const auto stride = file.get_i32_array(k + "stride");
    const auto residual = file.get_i32_array(k + "residual");
    const auto cin = file.get_i32_array(k + "in_channels");
    const auto cout = file.get_i32_array(k + "out_channels");
    const auto padding = file.get_string_array(k + "padding");
    const auto activation = file.get_string_array(k + "activation");
    for (const std::size_t size : {kinds.size(), kernel.size(), stride.size(), residual.size(), cin.size(),
                                   cout.size(), padding.size(), activation.size()})
        check(size == std::size_t(n), "attnlab.mobilenet.* arrays must have layer_count (" + std::to_string(n) +
                                          ") entries, one has " + std::to_string(size));

    MobileNetV2 model;
    model.input_size = int(file.get_u32_or(k + "input_size", 224));
    check(model.input_size > 0 && model.input_size <= 4096, "attnlab.mobilenet.input_size is out of range");
    model.feature_layer = int(file.get_u32_or(k + "feature_layer", uint32_t(n - 1)));
    check(model.feature_layer < n, "attnlab.mobilenet.feature_layer " + std::to_string(model.feature_layer) +
                                       " is not a layer (there are " + std::to_string(n) + ")");

    const I8Weights i8 = read_i8_parameters(file, n);

    std::vector<Hw> input_hw;  // spatial size of each layer's input, for the chain and residual checks
    Hw hw{model.input_size, model.input_size};
    int channels = 3;
    for (int i = 0; i < n; ++i) {
        const std::string what = "mobilenet layer " + std::to_string(i);
        MobileNetLayer l;
        check(kinds[i] == "conv" || kinds[i] == "depthwise", what + ": unknown kind '" + kinds[i] + "'");
        l.depthwise = kinds[i] == "depthwise";
        l.kernel = kernel[i];
        l.stride = stride[i];
        check(l.kernel >= 1 && l.kernel <= 7 && l.stride >= 1 && l.stride <= 4, what + ": kernel or stride out of range");
        l.padding = parse_padding(padding[i], i);
        l.activation = parse_activation(activation[i], i);
        l.in_channels = cin[i];
        l.out_channels = cout[i];
        check(l.in_channels == channels, what + ": takes " + std::to_string(l.in_channels) +
                                             " channels, the previous layer gives " + std::to_string(channels));
        check(l.out_channels > 0 && l.out_channels <= kMaxChannels, what + ": channel count out of range");
        check(!l.depthwise || l.in_channels == l.out_channels, what + ": depthwise layers keep the channel count");

        const std::string w = prefix + "layers." + std::to_string(i) + ".weight";
        const std::string b = prefix + "layers." + std::to_string(i) + ".bias";
        check(file.has_tensor(b), what + ": tensor '" + b + "' is missing");
        // Every storage is widened to f32 here, Q8_0 included: gemm_nt_q8 is tuned for a few rows (decoder steps),
        // and a 1x1 convolution is a GEMM with up to 12,544 rows, where f32 weights run ~4x faster. The file's
        // type only sets the download size; the encoder's 2.2M weights take 9 MB as f32.
        const std::size_t taps = std::size_t(l.kernel) * std::size_t(l.kernel);
        if (pointwise(l)) {
            l.weight.weight = to_matrix(load_weight(file, w, {l.out_channels, l.in_channels}, i8, i),
                                        std::size_t(l.out_channels), std::size_t(l.in_channels));
        } else if (l.depthwise) {
            l.weight.weight = to_matrix(load_weight(file, w, {l.kernel, l.kernel, l.in_channels}, i8, i), taps,
                                        std::size_t(l.in_channels));
        } else {
            l.weight.weight = to_matrix(load_weight(file, w, {l.out_channels, l.kernel, l.kernel, l.in_channels}, i8, i),
                                        std::size_t(l.out_channels), taps * std::size_t(l.in_channels));
        }
        l.weight.in = int(l.weight.weight.shape()[1]);
        l.weight.out = int(l.weight.weight.shape()[0]);
        l.weight.bias = nn::load_vector(file, b, l.out_channels);
        l.residual = residual[i];
        input_hw.push_back(hw);
        hw = output_size(l, hw);
        if (l.residual >= 0) {
            const int r = l.residual;
            check(r < i, what + ": residual " + std::to_string(r) + " is not an earlier layer");
            const Hw rhw = input_hw[r];
            check(rhw.h == hw.h && rhw.w == hw.w && model.layers[r].in_channels == l.out_channels,
                  what + ": residual from layer " + std::to_string(r) + "'s input has another shape");
        } else {
            check(l.residual == -1, what + ": residual must be -1 or a layer index");
        }
        channels = l.out_channels;
        model.layers.push_back(std::move(l));
    }

    model.has_classifier = file.get_bool_or(k + "has_classifier", false);
    if (model.has_classifier) {
        const std::string w = prefix + "classifier.weight";
        const auto& info = file.tensor(w);
        check(info.shape.size() == 2 && info.shape[0] > 0 && info.shape[0] <= 100000,
              "tensor '" + w + "' must be [classes, " + std::to_string(channels) + "]");
        model.classifier = nn::load_linear_tensors(file, w, prefix + "classifier.bias", channels, int(info.shape[0]));
        if (file.has(k + "labels")) {
            model.labels = file.get_string_array(k + "labels");
            check(int(model.labels.size()) == model.classifier.out, "attnlab.mobilenet.labels must have one label per class");
        }
    }
    return model;
}

MobileNetOutput mobilenet_forward(const MobileNetV2& model, const Tensor3& image, bool with_logits) {
    const std::size_t s = std::size_t(model.input_size);
    check(image.dimension() == 3 && image.shape()[0] == s && image.shape()[1] == s && image.shape()[2] == 3,
          "mobilenet: the image must be [" + std::to_string(s) + ", " + std::to_string(s) + ", 3]");
    check(!model.layers.empty(), "mobilenet: the model has no layers");
    const int n = int(model.layers.size());
    const bool logits = with_logits && model.has_classifier;
    const int last = logits ? n - 1 : model.feature_layer;

    // Layers whose input a later residual needs: keep a copy of that input until then.
    std::vector<bool> keep_input(n, false);
    for (const auto& l : model.layers)
        if (l.residual >= 0) keep_input[l.residual] = true;
    std::map<int, std::vector<float>> kept;

    std::vector<float> x(image.data(), image.data() + image.size()), y, scratch;
    Hw hw{model.input_size, model.input_size};
    MobileNetOutput out;
    for (int i = 0; i <= last; ++i) {
        const MobileNetLayer& l = model.layers[i];
        if (keep_input[i]) kept[i] = x;
        const Hw o = output_size(l, hw);
        y.resize(std::size_t(o.h) * o.w * l.out_channels);
        const float* bias = l.weight.bias.data();
        if (l.depthwise) {
            // x [H, W, C] -> y [Ho, Wo, C]
            kernels::depthwise_conv2d(x.data(), hw.h, hw.w, l.in_channels, l.weight.weight.data(), bias, l.kernel,
                                      l.stride, l.padding, l.activation, y.data());
        } else if (pointwise(l) && l.weight.quantized()) {
            // x [H*W, Cin] · W[Cout, Cin]ᵀ -> y [H*W, Cout]
            const int pixels = hw.h * hw.w;
            kernels::gemm_nt_q8(pixels, l.out_channels, l.in_channels, x.data(), l.in_channels,
                                l.weight.weight_q8.data(), y.data(), l.out_channels);
            kernels::bias_act(pixels, l.out_channels, y.data(), l.out_channels, bias, l.activation);
        } else {
            // x [H, W, Cin] -> y [Ho, Wo, Cout]; kxk through im2col patches [Ho*Wo, k*k*Cin]
            scratch.resize(kernels::conv2d_scratch_size(hw.h, hw.w, l.in_channels, l.kernel, l.stride, l.padding));
            kernels::conv2d(x.data(), hw.h, hw.w, l.in_channels, l.weight.weight.data(), bias, l.out_channels,
                            l.kernel, l.stride, l.padding, l.activation, y.data(),
                            scratch.empty() ? nullptr : scratch.data());
        }
        if (l.residual >= 0) {
            auto it = kept.find(l.residual);
            check(it != kept.end() && it->second.size() == y.size(), "mobilenet: residual input is unavailable");
            kernels::axpy(int(y.size()), 1.0f, it->second.data(), y.data());
            kept.erase(it);
        }
        std::swap(x, y);
        hw = o;
        if (i == model.feature_layer) {
            // [H, W, C] is already [H*W, C] row-major
            out.grid_height = hw.h;
            out.grid_width = hw.w;
            out.features = Matrix::from_shape({std::size_t(hw.h) * hw.w, std::size_t(l.out_channels)});
            std::memcpy(out.features.data(), x.data(), sizeof(float) * x.size());
        }
    }
    if (logits) {
        // global average pool [H*W, C] -> [C], then the classifier [classes, C]
        const int pixels = hw.h * hw.w, c = model.layers.back().out_channels;
        std::vector<float> pooled(c, 0.0f);
        for (int p = 0; p < pixels; ++p) kernels::axpy(c, 1.0f, x.data() + std::size_t(p) * c, pooled.data());
        for (float& v : pooled) v /= float(pixels);
        out.logits = Vector::from_shape({std::size_t(model.classifier.out)});
        nn::linear(model.classifier, pooled.data(), 1, out.logits.data());
    }
    return out;
}

}  // namespace attnlab::models
