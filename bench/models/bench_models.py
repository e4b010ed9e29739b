#!/usr/bin/env python3
"""Whole torchvision networks with every convolution through ConvLower on the CPU.

For each model (ResNet-50, MobileNetV2, ResNeXt-50 32x4d: random weights, seeded, eval
mode, f32, NCHW) and batch (224x224 random images):
  end to end  the logits of convlower.patch(model, target="cpu", threads=T) against the
              unpatched model's on the same input (max |diff| / max |logit| <= 1e-3, else
              exit 1), and the forward time both ways: median of --repeat after a
              warm-up. The patched model's first forward compiles every distinct
              convolution; its wall time less a steady forward is the compile overhead,
              next to the reports' compile_ms summed over the distinct compilations.
  per layer   each distinct convolution problem (shape and parameters; the layers that
              share it are counted) timed standalone on the input the layer really gets
              (captured by a forward pre-hook in the unpatched run): ConvLower = the
              layer's compiled convlower.Conv on numpy copies of (input, weight, bias),
              torch = torch.nn.functional.conv2d with the layer's parameters (oneDNN) on
              the same tensor under inference_mode; median of --repeat after a warm-up.
torch runs on T threads too (torch.set_num_threads), so oneDNN and ConvLower get the
same cores, and the same thread pool: ConvLower's threaded code runs on the OpenMP
runtime torch already has (GNU libgomp; CONVLOWER_OPENMP=<libomp> in --omp-env brings
back a second pool, to measure what two cost). Idle OpenMP threads spin a while after
each parallel region, so the phases are separated by a pause (settle), and --omp-env
sets the runtimes' variables (GOMP_SPINCOUNT, KMP_BLOCKTIME, CONVLOWER_OPENMP).
The process keeps its freed memory (convlower.retain_freed_memory, what compile() and
patch() apply) from the start, so torch's eager forwards share that heap; torch eager is
also timed in a fresh process that never loads ConvLower (glibc's default heap, where
each forward's activations may come on fresh pages: a page fault per 4 KiB).
Each model+batch waits for an idle spell first and is run again (--retries) when other
processes took more than --busy cores meanwhile.

Run with Debian's python (torch 1.13, torchvision 0.14). The chart (--chart) is drawn
by chart_models.py under the virtual environment of bench/cpu (.cache/bench-venv, made
by bench/cpu/bench_cpu.py's ensure_venv if missing), which holds matplotlib.

Usage: /usr/bin/python3 bench/models/bench_models.py [--quick] [--models M,..]
           [--batches B,..] [--threads T] [--repeat R] [--out FILE.md]
           [--json FILE.json] [--chart FILE.png] [--note TEXT] [--busy CORES]
           [--retries N] [--idle-wait S] [--omp-env VAR=VALUE]... [--build DIR]
           [--venv DIR]
"""

import argparse
import datetime
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
DEFAULT_BUILD = REPO_ROOT / "build" / "release"
DEFAULT_VENV = REPO_ROOT / ".cache" / "bench-venv"
MODELS = ("resnet50", "mobilenet_v2", "resnext50_32x4d")
BATCHES = (1, 8)
TOLERANCE = 1e-3          # max |patched - torch| / max |torch logit|, f32
BF16_TOLERANCE = 3e-2     # the same for precision="bf16" (ConvLower, OpenVINO)
SEED = 0
OMP_VARIABLES = ("LD_PRELOAD", "CONVLOWER_OPENMP", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                 "KMP_BLOCKTIME", "OMP_NUM_THREADS",
                 "OMP_PROC_BIND", "KMP_AFFINITY")


def log(text):
    print(text, file=sys.stderr, flush=True)


def load_bench_cpu():
    """bench/cpu/bench_cpu.py as a module: its venv (ensure_venv) and machine helpers."""
    spec = importlib.util.spec_from_file_location("bench_cpu",
                                                  REPO_ROOT / "bench" / "cpu" / "bench_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_convlower(build):
    try:
        import convlower
        return convlower
    except ImportError:
        pass
    packages = Path(build) / "python_packages"
    sys.path.insert(0, str(packages))
    try:
        import convlower
    except ImportError as e:
        log(f"error: convlower is not importable from {packages} ({e}); build the "
            "python package (target convlower-python) or pass --build DIR")
        raise SystemExit(2)
    return convlower


def settle():
    """Lets the idle OpenMP threads of the last phase go to sleep before the next phase
    times anything: after a parallel region GNU libgomp spins GOMP_SPINCOUNT
    iterations, LLVM's libomp KMP_BLOCKTIME = 200 ms (one of them, with two runtimes:
    CONVLOWER_OPENMP), and a spinning thread takes a core from other threads."""
    time.sleep(0.5)


def median(values):
    return statistics.median(values) if values else None


def timed(fn, repeat):
    """One warm-up call, then `repeat` timed calls: (the times in ms, the last result)."""
    result = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times, result


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def rel_err(got, want):
    """max |got - want| / max |want| (float64)."""
    import numpy as np
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = np.abs(want).max()
    return float(np.abs(got - want).max() / (scale if scale else 1.0))


class OtherLoad:
    """The CPU time other processes took while this one ran, in cores (0.0: the
    machine was ours; 1.0: another process kept one core busy all along), from
    /proc/stat's busy time less this process's own (os.times). None where /proc/stat
    is unreadable."""

    def __init__(self):
        self.start = self._sample()

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        # user nice system idle iowait irq softirq steal ...: busy = all but idle, iowait.
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
        t = os.times()
        return time.monotonic(), busy, t.user + t.system

    def cores(self):
        end = self._sample()
        if self.start is None or end is None or end[0] <= self.start[0]:
            return None
        wall, busy, own = (e - s for e, s in zip(end, self.start))
        return max(0.0, (busy - own) / wall)


def wait_idle(limit_s, threshold, window_s=2.0):
    """Waits (at most limit_s) for a window of window_s in which other processes use
    under `threshold` cores; returns the seconds waited and whether it found one."""
    start = time.monotonic()
    while True:
        meter = OtherLoad()
        time.sleep(window_s)
        cores = meter.cores()
        waited = time.monotonic() - start
        if cores is None or cores < threshold:
            return waited, True
        if waited >= limit_s:
            return waited, False


# ----------------------------------------------------------------------------------------
# One model at one batch.
# ----------------------------------------------------------------------------------------

def torch_backend(torch, x, m):
    """The kernel family torch's conv2d dispatches this call to ('Mkldnn': oneDNN;
    'Slow2d': torch's own im2col + GEMM), or None where this torch cannot say."""
    try:
        backend = torch._C._select_conv_backend(x, m.weight, m.bias, list(m.stride),
                                                list(m.padding), list(m.dilation), False,
                                                [0, 0], m.groups)
        return str(backend).rsplit(".", 1)[-1]
    except (AttributeError, RuntimeError, TypeError):
        return None


def problem_key(module, input_shape):
    """What makes two layers the same convolution for ConvLower (and torch)."""
    return (tuple(input_shape), module.out_channels, tuple(module.kernel_size),
            tuple(module.stride), tuple(module.padding), tuple(module.dilation),
            module.groups, module.bias is not None, module.padding_mode)


def problem_fields(key, output_shape):
    (n, c, h, w), f, (kh, kw), stride, padding, dilation, groups, bias, _ = key
    ho, wo = output_shape[2:]
    label = f"N{n} C{c} {h}x{w} F{f} {kh}x{kw} s{stride[0]}"
    if stride[0] != stride[1]:
        label += f",{stride[1]}"
    label += f" p{padding[0]}" + (f",{padding[1]}" if padding[0] != padding[1] else "")
    if dilation != (1, 1):
        label += f" d{dilation[0]},{dilation[1]}"
    label += f" g{groups}" + (" +bias" if bias else "")
    return {"label": label, "n": n, "c": c, "h": h, "w": w, "f": f, "kh": kh, "kw": kw,
            "stride": list(stride), "padding": list(padding), "dilation": list(dilation),
            "groups": groups, "bias": bias, "ho": ho, "wo": wo,
            "gflop": 2 * n * f * ho * wo * (c // groups) * kh * kw / 1e9}


def seeded_model(torch, torchvision, name, batch):
    """The model (random weights, seed SEED, eval mode) and a random input batch:
    the same in this process and in the --eager-only and --compile-only children."""
    torch.manual_seed(SEED)
    model = getattr(torchvision.models, name)(weights=None).eval()
    return model, torch.randn(batch, 3, 224, 224)


def eager_only(name, batch, threads, repeat):
    """--eager-only: torch alone, no ConvLower imported, glibc's heap as a torch user
    has it; prints the median forward ms."""
    import torch
    import torchvision
    torch.set_num_threads(threads)
    model, x = seeded_model(torch, torchvision, name, batch)
    with torch.inference_mode():
        model(x)
        times, _ = timed(lambda: model(x), repeat)
    print(json.dumps({"ms": median(times)}))


def compile_only(name, batch, threads, build):
    """--compile-only: what a second process pays for compile(): a fresh interpreter
    that builds the same model and compiles it on the disk cache it inherits
    (CONVLOWER_CACHE_DIR); prints the compile() call's seconds and the disk cache's
    hits."""
    convlower = import_convlower(build)
    import torch
    import torchvision
    torch.set_num_threads(threads)
    model, x = seeded_model(torch, torchvision, name, batch)
    start = time.perf_counter()
    compiled = convlower.compile(model, (x,), target="cpu", threads=threads)
    seconds = time.perf_counter() - start
    states = [report["disk_cache"] for m in compiled.graph_module.modules()
              if type(m).__name__ == "FusedConv" for report in m.reports()]
    print(json.dumps({"s": seconds, "hits": f"{states.count('hit')} of {len(states)}"}))


def compile_in_second_process(name, batch, args):
    """(seconds, hits) of compile() in a second process on this run's disk cache
    (compile_only), or (None, the reason)."""
    r = subprocess.run([sys.executable, __file__, "--compile-only", f"{name},{batch}",
                        "--threads", str(args.threads), "--build", str(args.build)],
                       stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        log(f"  {name} N{batch}: the second process's compile() failed (exit "
            f"{r.returncode})")
        return None, f"failed (exit {r.returncode})"
    result = json.loads(r.stdout.strip().splitlines()[-1])
    return result["s"], result["hits"]


def torch_with_default_heap(name, batch, args):
    """The eager forward in a fresh process that never loads ConvLower: the heap torch
    users have. This process keeps its freed memory (retain_freed_memory, what
    compile() and patch() do), which speeds torch's own forwards too, so the eager
    column is measured both ways."""
    env = {k: v for k, v in os.environ.items() if k != "CONVLOWER_MALLOC"}
    r = subprocess.run([sys.executable, __file__, "--eager-only", f"{name},{batch}",
                        "--threads", str(args.threads), "--repeat", str(args.repeat)],
                       env=env, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        log(f"  {name} N{batch}: the default-heap eager run failed (exit {r.returncode})")
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])["ms"]


def run_model(name, batch, args, torch, torchvision, convlower):
    import numpy as np
    F = torch.nn.functional
    model, x = seeded_model(torch, torchvision, name, batch)
    run = {"model": name, "batch": batch, "load_at_start": os.getloadavg()[0]}
    # First: the child process would count as another process's load.
    run["torch_default_heap_ms"] = torch_with_default_heap(name, batch, args)
    other = OtherLoad()
    convlower.cache_clear()      # every model+batch compiles its own convolutions

    # The unpatched model: a capture run (each distinct problem's real input), then the
    # timed forwards.
    captured, layer_keys = {}, {}
    convs = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)]

    def pre_hook(layer_name):
        def hook(module, inputs):
            key = problem_key(module, inputs[0].shape)
            layer_keys[layer_name] = key
            if key not in captured:
                captured[key] = (layer_name, inputs[0].detach().clone())
        return hook
    handles = [m.register_forward_pre_hook(pre_hook(n)) for n, m in convs]
    with torch.inference_mode():
        model(x)
    for h in handles:
        h.remove()
    settle()
    with torch.inference_mode():
        times, reference = timed(lambda: model(x), args.repeat)
    run["torch_forward_times"] = times
    run["torch_forward_ms"] = median(times)
    log(f"  {name} N{batch}: torch forward {run['torch_forward_ms']:.1f} ms (glibc's "
        f"default heap, another process: {fmt(run['torch_default_heap_ms'], 1)} ms)")

    # The patched model: the first forward compiles, then the timed forwards.
    patch = convlower.patch(model, target="cpu", threads=args.threads, strict=True)
    settle()
    try:
        with torch.inference_mode():
            start = time.perf_counter()
            model(x)
            run["first_patched_ms"] = (time.perf_counter() - start) * 1e3
            model(x)                         # the warm-up
            for record in patch.layers:      # time in ConvLower over the timed forwards
                record.ms, record.calls = 0.0, 0
            times, conv_times = [], []
            for _ in range(args.repeat):
                in_convs = sum(r.ms for r in patch.layers)
                start = time.perf_counter()
                logits = model(x)
                times.append((time.perf_counter() - start) * 1e3)
                conv_times.append(sum(r.ms for r in patch.layers) - in_convs)
        run["patched_forward_times"] = times
        run["patched_forward_ms"] = median(times)
        # The time inside the compiled convolutions, per timed forward (the patch's
        # records), and of the forward whose total is the median.
        run["convlower_in_model_times"] = conv_times
        run["convlower_in_model_ms"] = conv_times[
            min(range(len(times)), key=lambda i: abs(times[i] - run["patched_forward_ms"]))]
        run["compile_s"] = (run["first_patched_ms"] - run["patched_forward_ms"]) / 1e3
        run["logits_err"] = rel_err(logits.numpy(), reference.numpy())
        run["logits_ok"] = run["logits_err"] <= TOLERANCE
        distinct = {id(r.conv): r.conv for r in patch.layers if r.conv is not None}
        reports = {i: c.report() for i, c in distinct.items()}
        run["compiled_convs"] = len(distinct)
        run["report_compile_ms_sum"] = sum(r["compile_ms"] for r in reports.values())
        run["conv_calls_per_forward"] = sum(r.calls for r in patch.layers) / args.repeat
        records = {r.name: r for r in patch.layers}
    finally:
        patch.restore()
    log(f"  {name} N{batch}: patched forward {run['patched_forward_ms']:.1f} ms, "
        f"first {run['first_patched_ms'] / 1e3:.1f} s, logits error "
        f"{run['logits_err']:.2e}")
    run_compiled(run, model, x, reference, args, torch, convlower)
    if args.engines_dir:
        export_onnx(run, model, x, reference, args, torch)

    # Per layer, standalone: every distinct problem through its compiled Conv, then
    # (all of ConvLower first: torch's OpenMP threads spin a while after each call)
    # through F.conv2d.
    problems = []
    settle()
    for key, (first, xin) in captured.items():
        names = [n for n, _ in convs if layer_keys.get(n) == key]
        record = records[first]
        module = record.module
        conv = record.conv
        report = reports[id(conv)]
        xa = np.ascontiguousarray(xin.numpy())
        wa = np.ascontiguousarray(module.weight.detach().numpy())
        ba = (np.ascontiguousarray(module.bias.detach().numpy())
              if module.bias is not None else None)
        if tuple(conv.input_shape) != tuple(xa.shape):
            raise RuntimeError(f"{first}: compiled for {conv.input_shape}, captured "
                               f"{tuple(xa.shape)}")
        times, y = timed(lambda: conv(xa, wa, ba), args.repeat)
        p = problem_fields(key, conv.output_shape)
        p.update({"layers": names, "count": len(names), "convlower_times": times,
                  "convlower_ms": median(times),
                  "route": f"{report['target']}/{report['im2col']}",
                  "compile_ms": report["compile_ms"],
                  "in_model_ms": sum(records[n].ms for n in names)
                  / max(sum(records[n].calls for n in names), 1)})
        p["_y"], p["_x"], p["_module"] = y, xin, module
        problems.append(p)
    settle()
    with torch.inference_mode():
        for p in problems:
            m, xin = p.pop("_module"), p.pop("_x")
            times, ref = timed(lambda: F.conv2d(xin, m.weight, m.bias, m.stride, m.padding,
                                                m.dilation, m.groups), args.repeat)
            p["torch_times"] = times
            p["torch_backend"] = torch_backend(torch, xin, m)
            p["torch_ms"] = median(times)
            p["err"] = rel_err(p.pop("_y"), ref.numpy())
            p["ratio"] = ratio(p["torch_ms"], p["convlower_ms"])
            p["convlower_gflops"] = p["gflop"] / (p["convlower_ms"] / 1e3)
            p["torch_gflops"] = p["gflop"] / (p["torch_ms"] / 1e3)
    run["problems"] = problems
    run["layers"] = len(convs)
    run["sum_convlower_ms"] = sum(p["count"] * p["convlower_ms"] for p in problems)
    run["sum_torch_ms"] = sum(p["count"] * p["torch_ms"] for p in problems)
    run["sum_ratio"] = ratio(run["sum_torch_ms"], run["sum_convlower_ms"])
    run["geomean_ratio"] = geomean([p["ratio"] for p in problems])
    run["geomean_ratio_layers"] = geomean([p["ratio"] for p in problems
                                           for _ in range(p["count"])])
    run["forward_ratio"] = ratio(run["torch_forward_ms"], run["patched_forward_ms"])
    run["gflop_convs"] = sum(p["count"] * p["gflop"] for p in problems)
    run["other_cores"] = other.cores()
    log(f"  {name} N{batch}: {len(problems)} distinct convolutions of {len(convs)}, "
        f"sum ConvLower {run['sum_convlower_ms']:.1f} ms, torch {run['sum_torch_ms']:.1f} ms")
    return run


def layer_class(layer):
    """What a compiled layer of compile()'s graph is, for the profile's
    breakdown: the RGB stem, 1x1, 3x3 (strided), depthwise, grouped, other
    windows, the poolings, Linear, concatenation (no step of its own: its
    layers write its slices, and their times hold the copies), and
    DenseNet's BatchNorm of a concatenation (a step per input)."""
    name = type(layer).__name__
    if name == "FusedCat":
        return "concatenation"
    if name == "FusedCatNorm":
        return "concatenation's BatchNorm"
    if name == "FusedMaxPool":
        return "max pooling"
    if name in ("FusedGlobalPool", "FusedAvgPool", "FusedMean"):
        return "average pooling"
    if name == "FusedLinear":
        return "Linear"
    shape = layer._conv_shape
    k, strided = tuple(shape.kernel_size), max(shape.stride) > 1
    where = " strided" if strided else ""
    if shape.in_channels <= 4:
        return f"stem {k[0]}x{k[1]}"
    if shape.groups > 1:
        return ("depthwise" if shape.groups == shape.in_channels else "grouped") + where
    return f"{k[0]}x{k[1]}{where}"


def run_compiled(run, model, x, reference, args, torch, convlower):
    """convlower.compile: compiled cold (the bench's disk cache emptied), then in a
    second process from the disk cache alone (what a second process pays), then the
    timed forwards and the per-op profile."""
    convlower.cache_clear()
    # The run's one cache directory already holds what patch() and the models
    # before compiled: ResNeXt-50 compiled after ResNet-50 found 17 of its 55
    # convolutions there (7.1 s against 9.8 in an empty directory), and the
    # cold figure, and the warm one's ratio to it, would not be what they say.
    # A directory the user named (--disk-cache) is theirs: used as it is.
    if not args.disk_cache:
        convlower.disk_cache_clear()
    start = time.perf_counter()
    compiled = convlower.compile(model, (x,), target="cpu", threads=args.threads)
    run["compile_cold_s"] = time.perf_counter() - start
    # A second process, not this one with its in-process cache dropped: that left
    # out what a process pays once (the JIT's and OpenMP's start, torch's first
    # forward), and read 0.35 s where a new process's compile() took 0.7-1.4
    # (ResNeXt-50 N1, 2-core Zen 3).
    run["compile_warm_s"], run["compile_warm_hits"] = compile_in_second_process(
        run["model"], run["batch"], args)
    settle()
    with torch.inference_mode():
        times, logits = timed(lambda: compiled(x), args.repeat)
    run["compiled_forward_times"] = times
    run["compiled_forward_ms"] = median(times)
    run["compiled_ratio"] = ratio(run["torch_forward_ms"], run["compiled_forward_ms"])
    run["compiled_logits_err"] = rel_err(logits.numpy(), reference.numpy())
    run["logits_ok"] = run["logits_ok"] and run["compiled_logits_err"] <= TOLERANCE
    # precision="bf16" (AMX tiles where the CPU has AMX, else VDPBF16PS where it has AVX512-BF16), timed the same way.
    compiled_bf16 = convlower.compile(model, (x,), target="cpu", threads=args.threads,
                                      precision="bf16")
    settle()
    with torch.inference_mode():
        times, logits_bf16 = timed(lambda: compiled_bf16(x), args.repeat)
    run["compiled_bf16_forward_ms"] = median(times)
    run["compiled_bf16_logits_err"] = rel_err(logits_bf16.numpy(), reference.numpy())
    run["logits_ok"] = run["logits_ok"] and run["compiled_bf16_logits_err"] <= BF16_TOLERANCE
    del compiled_bf16
    profile = compiled.profile(x, repeat=3)
    kinds = {}
    for op in compiled.ops:
        kind = (layer_class(compiled.layer(op.node)) if op.where == "convlower"
                else op.what)
        kinds[kind] = kinds.get(kind, 0.0) + profile[op.name]
    total = sum(kinds.values())
    run["compiled_profile"] = sorted(((k, v, v / total) for k, v in kinds.items()),
                                     key=lambda kv: -kv[1])
    run["compiled_summary"] = compiled.summary().splitlines()[0]
    log(f"  {run['model']} N{run['batch']}: compile() {run['compiled_forward_ms']:.1f} ms "
        f"a forward, compiled in {run['compile_cold_s']:.1f} s cold, "
        f"{fmt(run['compile_warm_s'])} s in a second process from the disk cache "
        f"({run['compile_warm_hits']} hits)")


def export_onnx(run, model, x, reference, args, torch):
    """The model as ONNX (opset 17) with its input and torch's logits, for the engines."""
    import numpy as np
    stem = os.path.join(args.engines_dir, f"{run['model']}-N{run['batch']}")
    torch.onnx.export(model, x, stem + ".onnx", opset_version=17, input_names=["x"],
                      output_names=["logits"], do_constant_folding=True)
    np.save(stem + "-x.npy", x.numpy())
    np.save(stem + "-logits.npy", reference.numpy())
    run["_onnx"] = {"id": f"{run['model']}-N{run['batch']}", "onnx": stem + ".onnx",
                    "input": stem + "-x.npy", "logits": stem + "-logits.npy"}


def measure_engines(runs, args, python):
    """ONNX Runtime and OpenVINO f32 on every exported model (engines_models.py in the
    venv); fills each run's ort_ms / ov_ms and returns the engines' versions."""
    job = {"threads": args.threads, "repeat": args.repeat, "tolerance": TOLERANCE,
           "bf16_tolerance": BF16_TOLERANCE,
           "models": [r.pop("_onnx") for r in runs if "_onnx" in r]}
    r = subprocess.run([str(python), str(HERE / "engines_models.py")],
                       input=json.dumps(job), stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"engines_models.py exit {r.returncode}")
    out = json.loads(r.stdout)
    by_id = {res["id"]: res for res in out["results"]}
    for run in runs:
        res = by_id.get(f"{run['model']}-N{run['batch']}")
        if res:
            run["engines"] = res
            run["ort_ms"], run["ov_ms"] = res.get("ort_ms"), res.get("ov_ms")
            run["ov_bf16_ms"] = res.get("ov_bf16_ms")
    return out["versions"]


def run_with_retries(name, batch, args, torch, torchvision, convlower):
    """run_model on a quiet machine if one comes: waits for an idle spell first, and
    runs again (--retries times at most) while other processes took more than
    --busy cores during the run; keeps the least disturbed attempt."""
    attempts = []
    for attempt in range(args.retries + 1):
        waited, idle = wait_idle(args.idle_wait, args.busy)
        if not idle:
            log(f"  the machine stayed busy for {waited:.0f} s; running anyway")
        try:
            run = run_model(name, batch, args, torch, torchvision, convlower)
        except (convlower.ConvLowerError, RuntimeError) as e:
            log(f"  {name} N{batch} failed: {type(e).__name__}: {e}")
            return {"model": name, "batch": batch, "error": f"{type(e).__name__}: {e}"}
        run["waited_s"] = waited
        attempts.append(run)
        cores = run["other_cores"]
        if cores is None or cores <= args.busy:
            break
        log(f"  other processes took {cores:.2f} cores during the run"
            + ("; again" if attempt < args.retries else ""))
    best = min(attempts, key=lambda r: r["other_cores"] or 0.0)
    best["attempts"] = len(attempts)
    best["attempts_other_cores"] = [r["other_cores"] for r in attempts]
    return best


# ----------------------------------------------------------------------------------------
# Report.
# ----------------------------------------------------------------------------------------

def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def layer_names(names, shown=3):
    if len(names) <= shown:
        return ", ".join(names)
    return ", ".join(names[:shown - 1]) + f", +{len(names) - shown + 1} more"


def machine_info(args, torch, bench_cpu, convlower):
    rev = bench_cpu.command_output(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    if bench_cpu.command_output(["git", "status", "--porcelain"]):
        rev += " (plus uncommitted changes)"
    lscpu = bench_cpu.command_output(["lscpu"])
    cpus = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines()
                 if line.startswith("CPU(s):")), str(os.cpu_count()))
    import torchvision
    return {"cpu": bench_cpu.cpu_model(), "cpus": cpus, "threads": args.threads,
            "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
            "commit": rev, "torch": torch.__version__, "torchvision": torchvision.__version__,
            "torch_onednn": bool(torch.backends.mkldnn.is_available()),
            "torch_threads": torch.get_num_threads(),
            "convlower_library": str(convlower.library_path),
            "openmp_runtime": convlower.openmp_runtime(),
            "heap": convlower.memory_policy(),
            "omp_env": {k: os.environ[k] for k in OMP_VARIABLES if k in os.environ},
            "load_at_start": args.load_at_start, "load_at_end": os.getloadavg()[0]}


def engines_table(runs):
    out = ["| model | batch | torch eager ms, glibc's default heap | torch eager ms | "
           "patch ms | compile ms | ONNX Runtime ms | "
           "OpenVINO f32 ms | torch / compile | ORT / compile | OpenVINO / compile | "
           "compile() s: cold, from the disk cache | compile bf16 ms | OpenVINO bf16 ms | "
           "OpenVINO bf16 / compile bf16 |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in runs:
        if "error" in r:
            continue
        c = r["compiled_forward_ms"]
        out.append(f"| {r['model']} | {r['batch']} | "
                   f"{fmt(r.get('torch_default_heap_ms'), 1)} | "
                   f"{fmt(r['torch_forward_ms'], 1)} | "
                   f"{fmt(r['patched_forward_ms'], 1)} | {fmt(c, 1)} | "
                   f"{fmt(r.get('ort_ms'), 1)} | {fmt(r.get('ov_ms'), 1)} | "
                   f"{fmt(ratio(r['torch_forward_ms'], c))} | "
                   f"{fmt(ratio(r.get('ort_ms'), c))} | {fmt(ratio(r.get('ov_ms'), c))} | "
                   f"{r['compile_cold_s']:.1f}, {fmt(r['compile_warm_s'])} "
                   f"({r['compile_warm_hits']} hits) | "
                   f"{fmt(r.get('compiled_bf16_forward_ms'), 1)} | "
                   f"{fmt(r.get('ov_bf16_ms'), 1)} | "
                   f"{fmt(ratio(r.get('ov_bf16_ms'), r.get('compiled_bf16_forward_ms')))} |")
    return out


def profile_lines(run):
    return [f"Where `compile`'s forward goes ({run['compiled_summary']}; "
            "`CompiledModel.profile`, layer by layer, by class): " + "; ".join(
                f"{kind} {ms:.1f} ms ({share:.0%})"
                for kind, ms, share in run["compiled_profile"]) + "."]


def summary_table(runs):
    out = ["| model | batch | logits error | patched forward ms | torch forward ms | "
           "torch / patched | compile s (first forward - steady) | compile_ms sum "
           "(reports) | convs (distinct) | conv GFLOP | other processes' CPU (cores) |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in runs:
        if "error" in r:
            out.append(f"| {r['model']} | {r['batch']} | failed: {r['error']} |"
                       " | | | | | | | |")
            continue
        mark = "" if r["logits_ok"] else " **over tolerance**"
        out.append(f"| {r['model']} | {r['batch']} | {r['logits_err']:.1e}{mark} | "
                   f"{fmt(r['patched_forward_ms'], 1)} | {fmt(r['torch_forward_ms'], 1)} | "
                   f"{fmt(r['forward_ratio'])} | {fmt(r['compile_s'], 1)} | "
                   f"{r['report_compile_ms_sum']:.0f} | {r['layers']} "
                   f"({len(r['problems'])}) | {r['gflop_convs']:.2f} | "
                   f"{fmt(r['other_cores'])}"
                   + (f" (best of {r['attempts']} runs)" if r.get("attempts", 1) > 1 else "")
                   + " |")
    return out


def layer_table(run):
    out = ["| layer(s) | problem | count | ConvLower ms | torch ms | torch / ConvLower | "
           "ConvLower GFLOP/s | torch GFLOP/s | route | torch kernel | error | "
           "ConvLower ms in the model |",
           "|---|---|--:|--:|--:|--:|--:|--:|---|---|--:|--:|"]
    for p in run["problems"]:
        out.append(f"| {layer_names(p['layers'])} | {p['label']} | {p['count']} | "
                   f"{fmt(p['convlower_ms'], 3)} | {fmt(p['torch_ms'], 3)} | "
                   f"{fmt(p['ratio'])} | {fmt(p['convlower_gflops'], 1)} | "
                   f"{fmt(p['torch_gflops'], 1)} | {p['route']} | "
                   f"{p['torch_backend'] or '-'} | {p['err']:.0e} | "
                   f"{fmt(p['in_model_ms'], 3)} |")
    out.append(f"| **all {run['layers']} layers** | | {run['layers']} | "
               f"**{run['sum_convlower_ms']:.2f}** | **{run['sum_torch_ms']:.2f}** | "
               f"**{fmt(run['sum_ratio'])}** (sum) | "
               f"{run['gflop_convs'] / run['sum_convlower_ms'] * 1e3:.1f} | "
               f"{run['gflop_convs'] / run['sum_torch_ms'] * 1e3:.1f} | | | | "
               f"{run['convlower_in_model_ms']:.2f} |")
    slowest = sorted(run["problems"], key=lambda p: p["ratio"])[:3]
    out += ["",
            f"Geometric mean of torch / ConvLower: **{fmt(run['geomean_ratio'])}** over the "
            f"{len(run['problems'])} distinct problems, {fmt(run['geomean_ratio_layers'])} "
            f"over the {run['layers']} layers (each problem counted once per layer). "
            f"In the patched forward of median time ({run['patched_forward_ms']:.1f} ms), "
            f"ConvLower's convolutions took {run['convlower_in_model_ms']:.1f} ms (over the "
            f"{len(run['patched_forward_times'])} timed forwards: "
            + ", ".join(f"{c:.0f} of {t:.0f}" for c, t in zip(run["convlower_in_model_times"],
                                                               run["patched_forward_times"]))
            + " ms).",
            "",
            "Slowest relative to torch: " + "; ".join(
                f"{p['label']} ({layer_names(p['layers'], 2)}): {p['ratio']:.2f}"
                for p in slowest) + "."]
    return out


def markdown(runs, machine, args, wall_s):
    m = machine
    out = ["# ConvLower on whole torchvision networks (CPU)" +
           (" (--quick)" if args.quick else ""), "",
           "Written by `bench/models/bench_models.py` (see bench/models/README.md). "
           "f32, NCHW, random weights (seed 0), random 224x224 inputs.", "",
           f"- machine: {m['cpu']}, {m['cpus']} CPU(s) (`lscpu`); ConvLower and torch "
           f"each on **{m['threads']} thread(s)** (`threads=`, `torch.set_num_threads`); "
           f"1-min load average {m['load_at_start']:.2f} at the start, "
           f"{m['load_at_end']:.2f} at the end (this run's threads included); other "
           f"processes kept {fmt(m['other_cores'])} core(s) busy on average during the "
           "run",
           f"- date: {m['date']}",
           f"- commit: `{m['commit']}`; library {m['convlower_library']}",
           f"- torch {m['torch']}, torchvision {m['torchvision']} (Debian; oneDNN "
           f"{'available' if m['torch_onednn'] else 'NOT available'}; OpenMP: libgomp), "
           f"ConvLower's threads: {m.get('openmp_runtime') or 'LLVM libomp'}; "
           "OpenMP environment: " +
           (", ".join(f"`{k}={v}`" for k, v in m["omp_env"].items()) or "none (defaults)"),
           f"- heap: {m.get('heap', 'glibc defaults')} (every column of this process, "
           "torch eager's too; the column \"glibc's default heap\" is torch eager in a "
           "fresh process that never loads ConvLower)",
           f"- timings: median of {args.repeat} after one warm-up; whole run "
           f"{wall_s:.0f} s", ""]
    if args.note:
        out += [args.note, ""]
    out += ["## End to end", "",
            f"Logits error = max |patched - torch| / max |torch logit|; tolerance "
            f"{TOLERANCE:g}. Compile s: the patched model's first forward (it compiles "
            "each distinct convolution) less a steady one; compile_ms sum: the reports' "
            "compile_ms over the distinct compilations. Other processes' CPU: the cores "
            "the rest of the machine kept busy while that row ran (/proc/stat less this "
            f"process; on {m['cpus']} CPU(s), anything above ~0.1 makes the row's "
            "timings unreliable, torch's most).", ""]
    out += summary_table(runs)
    out += ["", "## compile() against the inference engines", "",
            "`convlower.compile(model)`: the torch.fx graph with each convolution, its "
            "BatchNorm (folded), residual add and ReLU one ConvLower call, weights packed "
            "once, channels-last between the convolutions, the pooling head and Linear "
            "compiled too, each chain of them one C call over planned buffers; the other "
            "ops torch's. ONNX Runtime "
            "and OpenVINO (f32 asked for) run the model exported to ONNX (opset 17) on the "
            "same threads, one after the other, after the ConvLower and torch runs"
            + (f" ({m['engines']})" if m.get("engines") else " (not run: --no-engines "
               "or no venv)") + ". compile() s: the call compiling every convolution "
            "cold (an empty disk cache, unless --disk-cache), then in a second "
            "process (a new interpreter building the same model) from the disk "
            "cache: what a second process pays. compile bf16: "
            "`compile(model, precision=\"bf16\")` (ungrouped convolutions and Linear on "
            "bfloat16 operands into float32: AMX tiles where the CPU has AMX, else "
            "VDPBF16PS where it has AVX512-BF16); "
            "OpenVINO bf16: `INFERENCE_PRECISION_HINT` bf16; both checked against torch's "
            f"float32 logits at {BF16_TOLERANCE:g} (logits errors: "
            + ", ".join(f"{r['model']} N{r['batch']} {r['compiled_bf16_logits_err']:.1e}"
                        for r in runs if "compiled_bf16_logits_err" in r) + ").", ""]
    out += engines_table(runs)
    for r in runs:
        if "error" not in r:
            out += ["", f"{r['model']} batch {r['batch']}: "] + profile_lines(r)
    for r in runs:
        if "error" in r:
            continue
        out += ["", f"## {r['model']}, batch {r['batch']}", "",
                "Standalone, on the input each layer gets in the model; torch / ConvLower "
                "> 1: ConvLower is faster. Count: layers sharing the problem (the sums "
                "count each of them). Error: ConvLower against torch, relative to the "
                "largest output. ConvLower ms in the model: the same compiled convolution's "
                "mean time per call inside the patched forwards (the patch's records), "
                "between torch's other operators. Torch kernel: what F.conv2d dispatched "
                "to (Mkldnn: oneDNN; Slow2d: torch's own im2col + GEMM, which this torch "
                "picks for some batch-1 shapes).", ""]
        out += layer_table(r)
    return "\n".join(out)


def strip(runs):
    """The runs as JSON (tuples to lists)."""
    return json.loads(json.dumps(runs))


# ----------------------------------------------------------------------------------------
# Main.
# ----------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke: resnet50 at batch 1, --repeat 1 (each unless given)")
    ap.add_argument("--models", help="comma-separated torchvision model names (default "
                                     + ",".join(MODELS) + ")")
    ap.add_argument("--batches", help="comma-separated batch sizes (default "
                                      + ",".join(map(str, BATCHES)) + ")")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads of ConvLower and of torch (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per measurement (default 5; 1 with --quick)")
    ap.add_argument("--out", help="write the markdown to this file")
    ap.add_argument("--json", help="write every number to this file")
    ap.add_argument("--chart", help="write a PNG chart (chart_models.py, matplotlib, venv)")
    ap.add_argument("--note", help="a line for the markdown (say, that the machine was busy)")
    ap.add_argument("--busy", type=float, default=0.1,
                    help="other processes' cores above which a model+batch run counts as "
                         "disturbed (default %(default)s)")
    ap.add_argument("--retries", type=int, default=2,
                    help="runs again of a disturbed model+batch (default %(default)s; the "
                         "least disturbed attempt is kept)")
    ap.add_argument("--idle-wait", type=float, default=30,
                    help="seconds to wait for an idle spell before each run (default "
                         "%(default)s)")
    ap.add_argument("--no-engines", action="store_true",
                    help="skip ONNX Runtime and OpenVINO (they run in --venv, on the "
                         "models exported to ONNX)")
    ap.add_argument("--disk-cache", default=None, metavar="DIR",
                    help="the disk cache of compiled code to use, as it is (default: "
                         "a fresh temporary directory, emptied before each model's "
                         "compile() so that its cold time is cold)")
    ap.add_argument("--omp-env", action="append", default=[], metavar="VAR=VALUE",
                    help="set an environment variable before torch and ConvLower start "
                         "their OpenMP runtimes, e.g. GOMP_SPINCOUNT=0 (torch's idle "
                         "threads then sleep instead of spinning: see README); repeatable")
    ap.add_argument("--eager-only", metavar="MODEL,BATCH", help=argparse.SUPPRESS)
    ap.add_argument("--compile-only", metavar="MODEL,BATCH", help=argparse.SUPPRESS)
    ap.add_argument("--build", default=str(DEFAULT_BUILD),
                    help="build directory holding python_packages (default %(default)s)")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV,
                    help="virtual environment with matplotlib (default %(default)s; made "
                         "by bench/cpu/bench_cpu.py's ensure_venv if missing)")
    args = ap.parse_args(argv)
    quick = {"models": "resnet50", "batches": "1", "repeat": 1}
    full = {"models": ",".join(MODELS), "batches": ",".join(map(str, BATCHES)), "repeat": 5}
    for name, value in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    args.models = [m for m in args.models.split(",") if m]
    args.batches = [int(b) for b in args.batches.split(",") if b]
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.eager_only:
        name, batch = args.eager_only.split(",")
        eager_only(name, int(batch), args.threads, args.repeat)
        return 0
    if args.compile_only:
        name, batch = args.compile_only.split(",")
        compile_only(name, int(batch), args.threads, args.build)
        return 0
    args.load_at_start = os.getloadavg()[0]
    for item in args.omp_env:
        # Read when each OpenMP runtime starts: set before torch (libgomp) is imported
        # and before ConvLower's first threaded convolution chooses its runtime.
        var, sep, value = item.partition("=")
        if not sep or not var:
            log(f"error: --omp-env {item!r}: expected VAR=VALUE")
            return 2
        os.environ[var] = value
    cache_dir = args.disk_cache or tempfile.mkdtemp(prefix="convlower-cache-")
    os.environ["CONVLOWER_CACHE_DIR"] = cache_dir     # read at the first compile
    args.engines_dir = None if args.no_engines else tempfile.mkdtemp(prefix="bench-onnx-")
    convlower = import_convlower(args.build)
    # What compile() and patch() do anyway, done first: every column of this process
    # (torch's eager forwards too) runs on the same retained heap.
    convlower.retain_freed_memory()
    import torch
    import torchvision
    unknown = [m for m in args.models if not callable(getattr(torchvision.models, m, None))]
    if unknown:
        log(f"error: not torchvision models: {', '.join(unknown)}")
        return 2
    torch.set_num_threads(args.threads)
    bench_cpu = load_bench_cpu()
    start = time.monotonic()
    other = OtherLoad()
    runs = []
    for name in args.models:
        for batch in args.batches:
            log(f"{name} batch {batch} ({time.monotonic() - start:.0f} s)")
            runs.append(run_with_retries(name, batch, args, torch, torchvision,
                                         convlower))
    if args.engines_dir:
        try:
            versions = measure_engines(runs, args, bench_cpu.ensure_venv(args.venv))
            engines_note = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
        except RuntimeError as e:
            log(f"engines: {e}")
            engines_note = None
        shutil.rmtree(args.engines_dir, ignore_errors=True)
    if not args.disk_cache:
        shutil.rmtree(cache_dir, ignore_errors=True)
    wall_s = time.monotonic() - start
    machine = machine_info(args, torch, bench_cpu, convlower)
    if args.engines_dir:
        machine["engines"] = engines_note
    machine["other_cores"] = other.cores()
    text = markdown(runs, machine, args, wall_s)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    results = {"machine": machine, "tolerance": TOLERANCE, "repeat": args.repeat,
               "seed": SEED, "wall_s": wall_s, "runs": strip(runs)}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if args.chart:
        try:
            python = bench_cpu.ensure_venv(args.venv)
        except RuntimeError as e:
            log(f"venv: {e} (no chart)")
        else:
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                json.dump(results, f)
                f.flush()
                r = subprocess.run([str(python), str(HERE / "chart_models.py"), f.name,
                                    args.chart])
                if r.returncode != 0:
                    log(f"chart_models.py exit {r.returncode}: no chart")
    failed = [r for r in runs if "error" in r or not r["logits_ok"]]
    for r in failed:
        log(f"FAILED: {r['model']} batch {r['batch']}: " +
            (r.get("error") or f"logits error {r['logits_err']:.2e} > {TOLERANCE:g}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
