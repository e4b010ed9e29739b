#!/usr/bin/env python3
"""ONNX Runtime and OpenVINO (f32) on whole models: the engines half of bench_models.py.

Runs under bench/cpu's virtual environment (onnxruntime, openvino, numpy from PyPI);
bench_models.py exports each model to ONNX with torch, saves the input and torch's
logits, and starts this with a job as JSON on stdin; the results go to stdout as JSON,
progress to stderr.

Job:    {"threads": T, "repeat": R, "tolerance": tol, "bf16_tolerance": tol (optional),
         "models": [{"id", "onnx": path, "input": path.npy, "logits": path.npy}]}
Result: {"versions": {...}, "results": [{"id", "ort_ms", "ov_ms", "ort_times_ms",
         "ov_times_ms", "ort_err", "ov_err", "ort_error", "ov_error"}, and with
         bf16_tolerance the same for "ov_bf16"]}

Each engine prepares the model (its own layout, packed weights) before anything is
timed, is checked against torch's logits (max |diff| / max |logit| <= tolerance; a
model that fails is not timed), and is released before the other one starts (an idle
engine's spinning threads would take the cores). OpenVINO is asked for f32
(INFERENCE_PRECISION_HINT): its default on a CPU with AMX or AVX512-BF16 may be bf16;
with bf16_tolerance in the job it also runs asked for bf16, checked at that tolerance.
"""

import gc
import importlib.metadata
import json
import statistics
import sys
import time

import numpy as np

WARMUP = 2


def log(text):
    print(f"  engines: {text}", file=sys.stderr, flush=True)


def timed(fn, repeat):
    for _ in range(WARMUP):
        out = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times, out


def error(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def run_ort(model, x, threads, repeat):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return timed(lambda: session.run(None, {name: x})[0], repeat)


def run_openvino(model, x, threads, repeat, precision="f32"):
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", {
        "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision,
        "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
    request = compiled.create_infer_request()
    return timed(lambda: request.infer({0: x})[compiled.output(0)], repeat)


def main():
    job = json.load(sys.stdin)
    versions = {}
    for name in ("onnxruntime", "openvino", "numpy"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    results = []
    for m in job["models"]:
        x = np.load(m["input"])
        want = np.load(m["logits"])
        res = {"id": m["id"]}
        engines = [("ort", run_ort, job["tolerance"]), ("ov", run_openvino, job["tolerance"])]
        if job.get("bf16_tolerance"):
            engines.append(("ov_bf16", lambda *a: run_openvino(*a, precision="bf16"),
                            job["bf16_tolerance"]))
        for key, runner, tolerance in engines:
            try:
                times, got = runner(m["onnx"], x, job["threads"], job["repeat"])
                err = error(np.asarray(got), want)
                res[f"{key}_err"] = err
                if err > tolerance:
                    res[f"{key}_error"] = f"logits off by {err:.1e}"
                else:
                    res[f"{key}_times_ms"] = times
                    res[f"{key}_ms"] = statistics.median(times)
            except Exception as e:  # an engine that cannot take the model
                res[f"{key}_error"] = f"{type(e).__name__}: {e}"[:300]
            gc.collect()
            log(f"{m['id']} {key}: " + (f"{res[key + '_ms']:.1f} ms" if key + "_ms" in res
                                         else res.get(key + "_error", "?")))
        results.append(res)
    json.dump({"versions": versions, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
