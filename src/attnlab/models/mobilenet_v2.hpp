#pragma once
// The MobileNetV2 image encoder (ImageNet-trained, converted from TFLite by python/attnlab/nn/tflite_mobilenet.py and exported
// by python/attnlab/gguf/mobilenet.py). A flat list of 52 convolution layers read from GGUF metadata attnlab.mobilenet.*
// (kind, kernel, stride, padding, activation, residual, channels), run NHWC:
//
//   image [224, 224, 3] in [-1, 1]  (image::preprocess_rgba)
//   layer i:  y = act(conv_i(x) + b_i) (+ input of layer residual_i)      conv: 3x3/2 stem via im2col + GEMM,
//                                                                          1x1 as GEMM (f32 or Q8_0), depthwise 3x3
//   features = output of feature_layer as a grid [H*W, C]   (51: [49, 1280]; 39: [196, 576])
//   logits   = classifier(mean over 7x7 of layer 51) [1001]  (when the file has the classifier)
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/kernels/conv.hpp"
#include "attnlab/nn/linear.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::gguf {
class File;
}

namespace attnlab::models {

struct MobileNetLayer {
    bool depthwise = false;
    int kernel = 1;
    int stride = 1;
    kernels::Padding padding = kernels::Padding::same;
    kernels::Activation activation = kernels::Activation::none;
    int residual = -1;  // the earlier layer whose input is added to this layer's output, or -1
    int in_channels = 0;
    int out_channels = 0;
    // dense kxk (k > 1): weight.weight is [Cout, k*k*Cin] ([Cout, kh, kw, Cin] flattened);
    // 1x1: [Cout, Cin]; depthwise: weight.weight is [k*k, C]. Bias in weight.bias [Cout]. Always f32: f16, Q8_0
    // and i8 files (the TFLite integers with a per-layer scale and zero point) are widened at load.
    nn::Linear weight;
};

struct MobileNetV2 {
    std::vector<MobileNetLayer> layers;
    int input_size = 224;
    int feature_layer = 0;            // whose output is the feature grid
    bool has_classifier = false;
    nn::Linear classifier;            // [1001, C_last] when has_classifier
    std::vector<std::string> labels;  // 1001 class names when has_classifier (0 = "background")
};

// Reads attnlab.mobilenet.* and the tensors "<attnlab.mobilenet.tensor_prefix>layers.<i>.{weight,bias}" (+
// "classifier.*"). Checks that the layers chain (channels, spatial sizes) and that residuals line up; throws
// attnlab::Error naming the problem otherwise.
MobileNetV2 load_mobilenet_v2(const gguf::File& file);

struct MobileNetOutput {
    Matrix features;       // [grid_height * grid_width, channels], row-major over (y, x)
    int grid_height = 0;
    int grid_width = 0;
    Vector logits;         // [1001], empty unless requested and the model has a classifier
};

// image [input_size, input_size, 3] (preprocessed) -> features (+ logits when with_logits and has_classifier).
MobileNetOutput mobilenet_forward(const MobileNetV2& model, const Tensor3& image, bool with_logits = false);

}  // namespace attnlab::models
