#!/usr/bin/env python3
"""ONNX Runtime and OpenVINO half of bench_cpu.py: the CPU inference engines a user would
pick instead, each convolution as a one-node ONNX model.

Runs under the benchmark's virtual environment (onnx, onnxruntime, openvino and numpy
from PyPI), as iree_time.py does; bench_cpu.py starts it with a job as JSON on stdin and
reads the results as JSON from stdout; progress goes to stderr.

Job:    {"threads": T, "repeat": R, "cases": [{"id", "x_shape": [N,C,H,W],
         "w_shape": [F,C/G,KH,KW], "stride", "pad", "groups"}],
         "precision": "f32" (default), "bf16" (OpenVINO asked for bf16 and checked
         at 1e-2; ONNX Runtime, which has no bf16 convolution, not run) or "i8"
         (the quantized model below, both engines, checked at 3e-2)}
Result: {"versions": {...}, "settings": {...}, "results": [{"id", "ort_ms", "ov_ms",
         "ort_times_ms", "ov_times_ms", "ort_rel_l2", "ov_rel_l2", "ort_error",
         "ov_error"}]}

Each model is `Conv(x, W)` with W an initializer: a constant, as in a deployed network,
which both engines prepare (reorder, pack) when the session or compiled model is made,
before anything is timed. With precision "i8" the model is the QDQ form a quantizer
writes (what onnxruntime.quantization emits and both engines run as an int8
convolution: ORT's QLinearConv, OpenVINO's low-precision transformations): a uint8 input
(zero point 128) dequantized, a per-tensor int8 filter (zero point 0) dequantized, the
f32 Conv, its output quantized to uint8 -- int8 in, int8 out, against conv-run's i8 in,
i32 out. ONNX's Conv is NCHW; each engine picks its own internal layout
(ORT's MLAS NCHWc blocks, OpenVINO's oneDNN blocked formats). Every output is checked
against a float64 numpy convolution (relative L2 error <= 1e-4) before the engine is
timed; a case that fails is not timed. The engines run one after the other, ORT's
sessions released before OpenVINO starts: an idle engine's spinning threads would take
the cores from the other's.
"""

import gc
import importlib.metadata
import json
import os
import statistics
import sys
import tempfile
import time

# numpy's BLAS only computes the reference (as in iree_time.py): one thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

from iree_time import RELATIVE_TOLERANCE, reference_conv  # noqa: E402

OPSET = 17
WARMUP = 2


def log(text):
    print(f"  engines: {text}", file=sys.stderr, flush=True)


def versions():
    out = {}
    for name in ("onnx", "onnxruntime", "openvino", "numpy"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def output_shape(case):
    """The case's output [N, F, Ho, Wo]."""
    n, _, h, wd = case["x_shape"]
    f, _, kh, kw = case["w_shape"]
    s, p = case["stride"], case["pad"]
    return [n, f, (h + 2 * p - kh) // s + 1, (wd + 2 * p - kw) // s + 1]


def conv_node(case, x, w, y):
    """The case's ONNX Conv node from `x` and `w` into `y`."""
    from onnx import helper
    kh, kw = case["w_shape"][2:]
    s, p = case["stride"], case["pad"]
    return helper.make_node("Conv", [x, w], [y], kernel_shape=[kh, kw],
                            strides=[s, s], pads=[p, p, p, p], group=case["groups"])


def conv_model(case, w):
    """The one-node ONNX model of the case, W as an initializer."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        [conv_node(case, "x", "w", "y")], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, case["x_shape"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape(case))],
        initializer=[numpy_helper.from_array(w, name="w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


# The quantized model's scales: input and filter fixed, the output's from the reference's
# range (uint8 around 128), so that the requantized output keeps ~8 bits of it.
QUANT_X_SCALE, QUANT_W_SCALE, QUANT_X_ZERO = 0.02, 0.01, 128
# What requantizing the output to 8 bits costs (rounding: ~0.3 % of its range, rel L2).
I8_RELATIVE_TOLERANCE = 3e-2


def quantized_model(case, w_q, y_scale):
    """The QDQ model of the case: uint8 x -> DequantizeLinear -> Conv (with the int8
    filter dequantized) -> QuantizeLinear -> uint8 y."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    scalar = numpy_helper.from_array
    inits = [numpy_helper.from_array(w_q, name="w_q"),
             scalar(np.array(QUANT_X_SCALE, np.float32), "x_scale"),
             scalar(np.array(QUANT_X_ZERO, np.uint8), "x_zero"),
             scalar(np.array(QUANT_W_SCALE, np.float32), "w_scale"),
             scalar(np.array(0, np.int8), "w_zero"),
             scalar(np.array(y_scale, np.float32), "y_scale"),
             scalar(np.array(128, np.uint8), "y_zero")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["wf"]),
             conv_node(case, "xf", "wf", "yf"),
             helper.make_node("QuantizeLinear", ["yf", "y_scale", "y_zero"], ["y"])]
    graph = helper.make_graph(
        nodes, "qconv",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, case["x_shape"])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, output_shape(case))],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def quantized_case(case):
    """(x uint8, model, reference of the dequantized output, dequantize(y) function)."""
    rng = np.random.default_rng(0)
    x_q = rng.integers(0, 256, case["x_shape"], dtype=np.uint8)
    w_q = rng.integers(-127, 128, case["w_shape"], dtype=np.int8)
    xf = (x_q.astype(np.float64) - QUANT_X_ZERO) * QUANT_X_SCALE
    wf = w_q.astype(np.float64) * QUANT_W_SCALE
    ref = reference_conv(xf, wf, case["stride"], case["pad"], case["groups"])
    y_scale = float(np.abs(ref).max()) / 127.0 or 1.0
    model = quantized_model(case, w_q, y_scale)
    return x_q, model, ref, lambda y: (y.astype(np.float64) - 128.0) * y_scale


def inputs(case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case["x_shape"], dtype=np.float32)
    w = rng.standard_normal(case["w_shape"], dtype=np.float32)
    return x, w


def rel_l2(y, ref):
    return float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref))


def timed(call, repeat):
    for _ in range(WARMUP):
        call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return times


# bf16 data (OpenVINO's bf16 inference precision): the stated bf16 tolerance.
BF16_RELATIVE_TOLERANCE = 1e-2


def measure_case(result, prefix, run, ref, repeat, tolerance=RELATIVE_TOLERANCE,
                 decode=None):
    """Checks `run()`'s output (through `decode`, if given) against `ref`, then times
    it; fills result[prefix_*]."""
    out = run()
    error = rel_l2(decode(out) if decode else out, ref)
    result[f"{prefix}_rel_l2"] = error
    if not error <= tolerance:
        result[f"{prefix}_error"] = (f"wrong result: relative L2 error {error:.3g} "
                                     f"> {tolerance}: not timed")
        return
    times = timed(run, repeat)
    result[f"{prefix}_times_ms"] = times
    result[f"{prefix}_ms"] = statistics.median(times)


def ort_settings(threads):
    return {"providers": ["CPUExecutionProvider"], "intra_op_num_threads": threads,
            "inter_op_num_threads": 1, "execution_mode": "ORT_SEQUENTIAL",
            "graph_optimization_level": "ORT_ENABLE_ALL"}


def run_ort(cases, models, data, refs, results, threads, repeat, precision="f32"):
    import onnxruntime as ort
    for case in cases:
        result = results[case["id"]]
        try:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(models[case["id"]], so,
                                           providers=["CPUExecutionProvider"])
            x = data[case["id"]][0]
            measure_case(result, "ort", lambda: session.run(None, {"x": x})[0],
                         refs[case["id"]], repeat, **check_settings(case, precision))
            del session
        except Exception as e:  # noqa: BLE001 - reported per case, the run goes on
            result["ort_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        log(f"ORT {case['id']}: {result.get('ort_ms')}")
    gc.collect()


# The quantized cases' output decoders (dequantize), by case id.
DECODERS = {}


def check_settings(case, precision):
    """measure_case's tolerance (and, for i8, the output's dequantization)."""
    if precision == "i8":
        return {"tolerance": I8_RELATIVE_TOLERANCE, "decode": DECODERS[case["id"]]}
    return {"tolerance": BF16_RELATIVE_TOLERANCE if precision == "bf16"
            else RELATIVE_TOLERANCE}


def ov_settings(threads, precision="f32"):
    # f32 inference unless bf16 is asked for: on CPUs with AVX512-BF16 or AMX OpenVINO
    # would otherwise run f32 models in bf16. One stream, latency: one request at a time
    # on `threads` threads.
    # The quantized model runs its int8 convolution whatever the hint; f32 keeps the
    # rest (the requantization) as written.
    return {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "f32" if precision == "i8" else precision}


def run_openvino(cases, models, data, refs, results, threads, repeat, precision="f32"):
    import openvino as ov
    core = ov.Core()
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            result = results[case["id"]]
            try:
                path = os.path.join(tmp, f"conv{i}.onnx")
                with open(path, "wb") as f:
                    f.write(models[case["id"]])
                compiled = core.compile_model(path, "CPU", ov_settings(threads, precision))
                request = compiled.create_infer_request()
                x = data[case["id"]][0]

                def run():
                    request.infer({0: x})
                    return request.get_output_tensor(0).data

                measure_case(result, "ov", run, refs[case["id"]], repeat,
                             **check_settings(case, precision))
                del request, compiled
            except Exception as e:  # noqa: BLE001 - reported per case
                result["ov_error"] = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"OpenVINO {case['id']}: {result.get('ov_ms')}")


def main():
    job = json.load(sys.stdin)
    threads, repeat, cases = job["threads"], job["repeat"], job["cases"]
    data, models, refs = {}, {}, {}
    results = {c["id"]: {"id": c["id"], "ort_ms": None, "ov_ms": None,
                         "ort_error": None, "ov_error": None} for c in cases}
    # Models and references first: numpy's work is over before any engine is timed.
    precision = job.get("precision", "f32")
    for case in cases:
        if precision == "i8":
            x, models[case["id"]], refs[case["id"]], DECODERS[case["id"]] = (
                quantized_case(case))
            data[case["id"]] = (x, None)
            continue
        x, w = inputs(case)
        data[case["id"]] = (x, w)
        models[case["id"]] = conv_model(case, w)
        refs[case["id"]] = reference_conv(x, w, case["stride"], case["pad"],
                                          case["groups"])
    if precision == "bf16":
        # ONNX Runtime's CPU provider has no bf16 convolution.
        for r in results.values():
            r["ort_error"] = "no bf16 convolution on ONNX Runtime's CPU provider"
        engines = [("ov", run_openvino)]
    else:
        engines = [("ort", run_ort), ("ov", run_openvino)]
    for prefix, run in engines:
        try:
            run(cases, models, data, refs, results, threads, repeat, precision)
        except ImportError as e:
            for r in results.values():
                r[f"{prefix}_error"] = f"not installed: {e}"
    json.dump({"versions": versions(),
               "settings": {"onnx_opset": OPSET, "warmup": WARMUP,
                            "onnxruntime": ort_settings(threads),
                            "openvino": ov_settings(threads, precision)},
               "results": list(results.values())}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
