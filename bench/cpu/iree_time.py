#!/usr/bin/env python3
"""IREE half of bench_cpu.py: compile, check and time conv-run's modules with IREE.

Runs under the benchmark's virtual environment (iree-base-compiler, iree-base-runtime and
numpy from PyPI), not under the system python that measures conv-run and torch: Debian's
torch and PyPI's IREE do not share an interpreter here. bench_cpu.py starts it with a job
as JSON on stdin and reads the results as JSON from stdout; progress goes to stderr.

Job:    {"threads": T, "repeat": R, "cache_dir": DIR, "cases": [{"id", "mlir", "layout",
         "x_shape": [N,C,H,W], "w_shape": [F,C/G,KH,KW], "stride", "pad", "groups"}]}
Result: {"versions": {...}, "compile_flags": [...], "run_flags": [...],
         "results": [{"id", "ms", "aggregates_ms", "compile_s", "compiled_now", "rel_l2",
                      "max_abs_diff", "check_passed", "error", "vmfb"}]}

Every case is compiled and checked (iree-run-module's output against a float64 numpy
convolution) before any is timed (iree-benchmark-module), so that numpy's work is over
while IREE's timings run; a case that fails its check is not timed.
"""

import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# numpy's BLAS only computes the float64 reference: one thread keeps it off the cores
# that the other engineer's or the next measurement's threads use. Set before importing
# numpy; IREE's own worker threads are not affected.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

BIN = Path(sys.executable).parent          # the venv's bin/: iree-compile, iree-*-module

# The CPU backend generating code for this machine's CPU (as conv-run's JIT does).
COMPILE_FLAGS = ["--iree-hal-target-device=local",
                 "--iree-hal-local-target-device-backends=llvm-cpu",
                 "--iree-llvmcpu-target-cpu=host"]

RELATIVE_TOLERANCE = 1e-4                  # on ||y - ref||_2 / ||ref||_2


def run_flags(threads):
    """The local-task driver (IREE's multi-threaded CPU runtime) with exactly `threads`
    workers. --task_topology_group_count sets the worker count itself;
    --task_topology_max_group_count only caps IREE's own choice, which is one worker per
    *physical* core and so would give fewer than `threads` on an SMT machine."""
    return ["--device=local-task", f"--task_topology_group_count={threads}"]


def log(text):
    print(f"  iree: {text}", file=sys.stderr, flush=True)


def versions():
    found = {}
    for package in ("iree-base-compiler", "iree-base-runtime"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    found["numpy"] = np.__version__
    return found


def tool_output(cmd):
    """stdout of an IREE tool; raises RuntimeError with its stderr's tail."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip()[-600:]
        raise RuntimeError(f"{Path(cmd[0]).name} exit {r.returncode}: {tail}")
    return r.stdout


# ----------------------------------------------------------------------------------------
# Data and the float64 reference (torch's conv2d terms: NCHW input, F,C/G,KH,KW filter).
# ----------------------------------------------------------------------------------------

def reference_conv(x, w, stride, pad, groups):
    """float64 grouped 2-D convolution of NCHW x with F,C/G,KH,KW w (no dilation)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    w = w.astype(np.float64)
    kh, kw = w.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride]            # N, C, Ho, Wo, KH, KW
    cg, fg = x.shape[1] // groups, w.shape[0] // groups
    outs = []
    for g in range(groups):                                # one BLAS contraction a group
        part = np.tensordot(windows[:, g * cg:(g + 1) * cg], w[g * fg:(g + 1) * fg],
                            axes=([1, 4, 5], [1, 2, 3]))   # N, Ho, Wo, F/G
        outs.append(part.transpose(0, 3, 1, 2))
    return np.concatenate(outs, axis=1)                    # N, F, Ho, Wo


def to_layout(x, w, layout):
    """conv-run's module takes NCHW x / FCHW w, or NHWC x / FHWC w (groups or not)."""
    if layout == "nhwc":
        return x.transpose(0, 2, 3, 1).copy(), w.transpose(0, 2, 3, 1).copy()
    return x, w


def output_to_nchw(y, layout):
    return y.transpose(0, 3, 1, 2) if layout == "nhwc" else y


def signature_shapes(mlir):
    """Shapes of @conv's two arguments, read from the module: a guard that the data fed to
    IREE has the layout the module was built for."""
    m = re.search(r"func\.func @conv\(([^)]*)\)", mlir)
    if not m:
        raise RuntimeError("no func.func @conv in the module")
    return [tuple(int(d) for d in dims.split("x"))
            for dims in re.findall(r"tensor<([0-9x]+)xf32>", m.group(1))]


def write_inputs(case, folder):
    """Random f32 inputs (seed 0) in the module's layout, saved as .npy for IREE's tools;
    returns the torch-order arrays for the reference."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case["x_shape"], dtype=np.float32)
    w = rng.standard_normal(case["w_shape"], dtype=np.float32)
    xl, wl = to_layout(x, w, case["layout"])
    expected = signature_shapes(case["mlir"])
    if expected != [xl.shape, wl.shape]:
        raise RuntimeError(f"module takes {expected}, data is {[xl.shape, wl.shape]}")
    np.save(folder / "x.npy", xl)
    np.save(folder / "w.npy", wl)
    return x, w


# ----------------------------------------------------------------------------------------
# Compile, check, time.
# ----------------------------------------------------------------------------------------

def host_cpu():
    """The CPU's model and feature flags: `--iree-llvmcpu-target-cpu=host` code is only
    valid for them, so they are part of the cache key (.cache may move to a new machine)."""
    try:
        lines = open("/proc/cpuinfo").read().splitlines()
    except OSError:
        return ""
    return "\n".join(sorted({l for l in lines if l.startswith(("model name", "flags"))}))


def compile_module(case, cache_dir, compiler_version):
    """Path of the .vmfb, compiled unless the cache has it for this module, these flags,
    this compiler and this CPU; (path, seconds, compiled_now)."""
    key = hashlib.sha256("\n".join([case["mlir"], *COMPILE_FLAGS, compiler_version,
                                    host_cpu()]).encode()).hexdigest()[:16]
    vmfb = cache_dir / f"{key}.vmfb"
    if vmfb.exists():
        return vmfb, 0.0, False
    source = cache_dir / f"{key}.mlir"
    source.write_text(case["mlir"])
    start = time.monotonic()
    partial = vmfb.with_suffix(".vmfb.tmp")     # a killed compile leaves no bad cache entry
    tool_output([str(BIN / "iree-compile"), str(source), *COMPILE_FLAGS, "-o", str(partial)])
    partial.rename(vmfb)
    return vmfb, time.monotonic() - start, True


def module_args(vmfb, folder, threads):
    return [f"--module={vmfb}", "--function=conv", f"--input=@{folder / 'x.npy'}",
            f"--input=@{folder / 'w.npy'}", *run_flags(threads)]


def check(case, vmfb, folder, threads, result):
    x, w = write_inputs(case, folder)
    tool_output([str(BIN / "iree-run-module"), *module_args(vmfb, folder, threads),
                 f"--output=@{folder / 'y.npy'}"])
    y = output_to_nchw(np.load(folder / "y.npy"), case["layout"])
    ref = reference_conv(x, w, case["stride"], case["pad"], case["groups"])
    if y.shape != ref.shape:
        raise RuntimeError(f"IREE output shape {y.shape}, expected {ref.shape}")
    result["rel_l2"] = float(np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-30))
    result["max_abs_diff"] = float(np.max(np.abs(y - ref)))
    result["check_passed"] = result["rel_l2"] <= RELATIVE_TOLERANCE


def benchmark(vmfb, folder, threads, repeat):
    """Google Benchmark's aggregates of `repeat` single calls after a warm-up, in ms, from
    iree-benchmark-module (1 iteration a repetition; the warm-up runs for at least 0.1 s
    before the first repetition): {"median": ms, "mean": ms, "stddev": ms, "cv": ...}."""
    out = tool_output([str(BIN / "iree-benchmark-module"), *module_args(vmfb, folder, threads),
                       f"--benchmark_repetitions={repeat}", "--benchmark_min_time=1x",
                       "--benchmark_min_warmup_time=0.1", "--benchmark_format=json",
                       "--benchmark_report_aggregates_only=true"])
    report = json.loads(out[out.index("{"):])      # the tool may print lines before it
    aggregates = {}
    for bench in report["benchmarks"]:
        if bench.get("aggregate_unit") == "percentage":        # cv: a fraction, no unit
            aggregates[bench["aggregate_name"]] = bench["real_time"]
        elif "aggregate_name" in bench:
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[bench["time_unit"]]
            aggregates[bench["aggregate_name"]] = bench["real_time"] * scale
    if "median" not in aggregates:
        raise RuntimeError("iree-benchmark-module reported no median")
    return aggregates


def main():
    job = json.load(sys.stdin)
    threads, repeat = job["threads"], job["repeat"]
    cache_dir = Path(job["cache_dir"])
    cache_dir.mkdir(parents=True, exist_ok=True)
    compiler_version = tool_output([str(BIN / "iree-compile"), "--version"])
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-iree-") as tmp:
        # Compile and check everything first: numpy's reference is done before any timing.
        for i, case in enumerate(job["cases"]):
            result = {"id": case["id"], "ms": None, "compile_s": None, "compiled_now": None,
                      "rel_l2": None, "max_abs_diff": None, "check_passed": None,
                      "error": None}
            folder = Path(tmp) / str(i)
            folder.mkdir()
            try:
                vmfb, seconds, now = compile_module(case, cache_dir, compiler_version)
                result.update(compile_s=round(seconds, 2), compiled_now=now)
                check(case, vmfb, folder, threads, result)
                result["vmfb"] = str(vmfb)
                log(f"{case['id']}: compiled{f' in {seconds:.1f} s' if now else ' (cached)'}"
                    f", rel L2 error {result['rel_l2']:.1e}")
            except RuntimeError as e:
                result["error"] = str(e)
                log(f"{case['id']}: {e}")
            results.append(result)
        for i, (case, result) in enumerate(zip(job["cases"], results)):
            if result["check_passed"]:
                try:
                    result["aggregates_ms"] = benchmark(result["vmfb"], Path(tmp) / str(i),
                                                        threads, repeat)
                    result["ms"] = result["aggregates_ms"]["median"]
                except RuntimeError as e:
                    result["error"] = str(e)
                log(f"{case['id']}: timed")
            elif result["error"] is None:
                result["error"] = (f"wrong result: rel L2 error {result['rel_l2']:.2e} "
                                   f"> {RELATIVE_TOLERANCE:g} (not timed)")
    json.dump({"versions": versions(), "compiler": compiler_version.strip().splitlines(),
               "compile_flags": COMPILE_FLAGS, "run_flags": run_flags(threads),
               "results": results}, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
