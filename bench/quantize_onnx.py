#!/usr/bin/python3
"""Dynamic int8 versions of the benchmark's ONNX graphs, the rewrite onnxruntime's quantize_dynamic makes (the
`_quantized.onnx` files Transformers.js ships), written with the onnx package alone (Debian has python3-onnx but
no onnxruntime Python package):

    PYTHONPATH=python /usr/bin/python3 bench/quantize_onnx.py IN.onnx OUT.onnx [IN2.onnx OUT2.onnx ...]

Every MatMul whose B is a float initializer [K,N], and every Gemm whose B is one (transB, alpha = beta = 1, C an
initializer or absent), becomes

    x -> DynamicQuantizeLinear -> (x_q uint8, x_scale, x_zero_point)
    MatMulInteger(x_q, W_q int8 [K,N], x_zero_point, W_zero_point = 0) -> Cast float -> Mul(x_scale * W_scale)
    [-> Add C]

with the weights quantized symmetrically per output column (quantize_dynamic with per_channel=True, weight_type
QInt8). reduce_range is not used: it keeps x86's 16-bit pmaddubsw sums from saturating in native MLAS, and the
wasm kernels widen to 32 bits. onnxruntime's optimizer fuses the chain into DynamicQuantizeMatMul, as it does for
quantize_dynamic's output. Products of two activations (attention), the GRU op and the embedding lookups stay f32;
a weight the graph also reads elsewhere (the RNN's output projection is tied to the embedding) keeps its f32 copy.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantize_columns(w):
    """w [K,N] f32 -> (int8 [K,N], scale f32 [N]): symmetric, w ~= q * scale per column."""
    peak = np.abs(w).max(axis=0)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def float_attribute(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.f
    return default


def int_attribute(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.i
    return default


def quantize_graph(model):
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    new_nodes, new_inits, dropped = [], [], set()
    quantized = 0
    for node in graph.node:
        weight_name = node.input[1] if len(node.input) > 1 else None
        weight = inits.get(weight_name)
        eligible = weight is not None and weight.data_type == TensorProto.FLOAT and len(weight.dims) == 2
        bias = None
        if node.op_type == "Gemm" and eligible:
            eligible = (int_attribute(node, "transA", 0) == 0 and float_attribute(node, "alpha", 1.0) == 1.0 and
                        float_attribute(node, "beta", 1.0) == 1.0)
            if len(node.input) > 2 and node.input[2]:
                bias = node.input[2]
        elif node.op_type != "MatMul":
            eligible = False
        if not eligible:
            new_nodes.append(node)
            continue
        w = numpy_helper.to_array(weight).astype(np.float32)
        if node.op_type == "Gemm" and int_attribute(node, "transB", 0):
            w = w.T
        q, scale = quantize_columns(np.ascontiguousarray(w))
        base = f"{node.name or weight_name}_int8"
        x, y = node.input[0], node.output[0]
        new_inits += [numpy_helper.from_array(q, f"{base}.W_q"),
                      numpy_helper.from_array(np.zeros(q.shape[1], np.int8), f"{base}.W_zero_point"),
                      numpy_helper.from_array(scale, f"{base}.W_scale")]
        product = f"{base}.y" if bias else y
        new_nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [f"{base}.x_q", f"{base}.x_scale", f"{base}.x_zero_point"],
                             name=f"{base}.quantize"),
            helper.make_node("MatMulInteger", [f"{base}.x_q", f"{base}.W_q", f"{base}.x_zero_point",
                                               f"{base}.W_zero_point"], [f"{base}.int32"], name=f"{base}.matmul"),
            helper.make_node("Cast", [f"{base}.int32"], [f"{base}.float"], to=TensorProto.FLOAT, name=f"{base}.cast"),
            helper.make_node("Mul", [f"{base}.x_scale", f"{base}.W_scale"], [f"{base}.scale"], name=f"{base}.scales"),
            helper.make_node("Mul", [f"{base}.float", f"{base}.scale"], [product], name=f"{base}.rescale"),
        ]
        if bias:
            new_nodes.append(helper.make_node("Add", [product, bias], [y], name=f"{base}.bias"))
        readers[weight_name] -= 1
        if readers[weight_name] == 0:
            dropped.add(weight_name)
        quantized += 1
    del graph.node[:]
    graph.node.extend(new_nodes)
    kept = [i for i in graph.initializer if i.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(kept + new_inits)
    return quantized


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        sys.exit(__doc__)
    for source, target in zip(argv[0::2], argv[1::2]):
        model = onnx.load(source)
        count = quantize_graph(model)
        onnx.checker.check_model(model)
        onnx.save(model, target)
        print(f"quantize_onnx: {source} -> {target}: {count} products int8")


if __name__ == "__main__":
    main(sys.argv[1:])
