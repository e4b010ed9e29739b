#!/usr/bin/env python3
"""CPU benchmark: conv-run next to torch (oneDNN) and IREE, NCHW and NHWC, f32, T threads.

For each layer (the seed layer, ResNet-50 convolutions at N=1 and N=8, a MobileNetV2
depthwise layer) and each layout:
  conv-run  lowered_ms of `conv-run --target cpu --json --repeat R --warmup 1 --reference
            none --check --num-threads T --constant-weights` (the filter packed once
            before timing, as the engines do at session creation; --per-call-weights:
            without), and the CPU route its report names ("im2col")
  IREE      conv-run's own --emit-mlir module, compiled by iree-compile for the llvm-cpu
            backend and this CPU, checked against a float64 numpy convolution, then timed
            by iree-benchmark-module on the local-task driver with T workers (median of R)
  torch     torch.nn.functional.conv2d (Debian's python3-torch), torch.set_num_threads(T),
            channels_last tensors for NHWC, median of R after two warm-ups, no grad

IREE and matplotlib come from PyPI into a virtual environment that this script makes
(.cache/bench-venv) and uses through two helpers run by the venv's python: iree_time.py
and chart_cpu.py. torch is measured here, so run this script with Debian's python.
Not a test: it prints numbers and does not fail on them (exit 1 only if conv-run fails).

Usage: /usr/bin/python3 bench/cpu/bench_cpu.py [--quick | --smoke] [--threads T]
           [--repeat R] [--out FILE.md] [--chart FILE.png] [--json FILE.json]
           [--conv-run PATH] [--venv DIR] [--no-iree] [--no-torch] [--no-engines]
           [--per-call-weights]
"""

import argparse
import dataclasses
import datetime
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
DEFAULT_CONV_RUN = REPO_ROOT / "build" / "release" / "bin" / "conv-run"
DEFAULT_VENV = REPO_ROOT / ".cache" / "bench-venv"
IREE_CACHE = REPO_ROOT / ".cache" / "bench-iree"      # compiled .vmfb, keyed by module
LAYOUTS = ("nchw", "nhwc")

# What the venv holds. IREE is pinned so that recorded runs compare one compiler; bump it
# here (the venv is brought up to date on the next run: see ensure_venv).
VENV_REQUIREMENTS = ["iree-base-compiler==3.13.0", "iree-base-runtime==3.13.0",
                     "onnx==1.23.2", "onnxruntime==1.32.0", "openvino==2026.4.1",
                     "numpy", "matplotlib"]


def log(text):
    print(text, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------
# Layers.
# ----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Layer:
    name: str
    n: int
    c: int
    hw: int        # square input
    f: int
    k: int         # square kernel
    stride: int = 1
    pad: int = 0
    groups: int = 1

    def out_hw(self):
        return (self.hw + 2 * self.pad - self.k) // self.stride + 1

    def filter_shape(self):
        """torch's F, C/G, KH, KW."""
        return [self.f, self.c // self.groups, self.k, self.k]

    def gflop(self):
        return 2 * self.n * self.f * self.out_hw() ** 2 * self.c // self.groups \
            * self.k ** 2 / 1e9

    def conv_run_flags(self, layout):
        """The problem in conv-run's flags (torch order for the shapes in every layout)."""
        return (["--input-shape", f"{self.n},{self.c},{self.hw},{self.hw}",
                 "--filter-shape", ",".join(map(str, self.filter_shape())),
                 "--stride", str(self.stride), "--padding", str(self.pad),
                 "--layout", layout] +
                (["--groups", str(self.groups)] if self.groups > 1 else []))


def resnet50_layers(n):
    """ResNet-50's 3x3 convolutions of each stage and its first 1x1 reduction."""
    return [Layer(f"r50 3x3 64 56x56 N{n}", n, 64, 56, 64, 3, pad=1),
            Layer(f"r50 3x3 128 28x28 N{n}", n, 128, 28, 128, 3, pad=1),
            Layer(f"r50 3x3 256 14x14 N{n}", n, 256, 14, 256, 3, pad=1),
            Layer(f"r50 3x3 512 7x7 N{n}", n, 512, 7, 512, 3, pad=1),
            Layer(f"r50 1x1 256->64 56x56 N{n}", n, 256, 56, 64, 1)]


def other_layer_classes():
    """The layer classes the ResNet-50 stages leave out (issue 33's set): the 1x1
    expansion, a strided 3x3, the 7x7 stride-2 stem on 3 channels, a grouped 3x3 with 8
    channels a group (ResNeXt-50 32x4d's stage 2), MobileNetV2's strided depthwise, and
    ResNet-50's widest 1x1 (stage 4's 512 -> 2048 expansion: W^T rows 8 KB apart)."""
    return [Layer("r50 1x1 64->256 56x56 N1", 1, 64, 56, 256, 1),
            Layer("r50 1x1 512->2048 7x7 N1", 1, 512, 7, 2048, 1),
            Layer("r50 3x3 128 56x56 s2 N1", 1, 128, 56, 128, 3, stride=2, pad=1),
            Layer("r50 stem 7x7 s2 C3 224 N1", 1, 3, 224, 64, 7, stride=2, pad=3),
            Layer("ResNeXt g32 3x3 256 28x28 N1", 1, 256, 28, 256, 3, pad=1, groups=32),
            Layer("mnv2 dw 3x3 96 112x112 s2 N1", 1, 96, 112, 96, 3, stride=2, pad=1,
                  groups=96)]


SEED = Layer("seed N16 C64 56x56 F128 3x3", 16, 64, 56, 128, 3, pad=1)
# MobileNetV2's depthwise 3x3 at 56x56 (the expanded 24 -> 144 channels of block 2).
MOBILENET_DW = Layer("mnv2 dw 3x3 144 56x56 N1", 1, 144, 56, 144, 3, pad=1, groups=144)
FULL = ([SEED] + resnet50_layers(1) + resnet50_layers(8) + other_layer_classes() +
        [MOBILENET_DW])
QUICK = [SEED, resnet50_layers(1)[0], MOBILENET_DW]
# Tiny problems that check the plumbing (every column, the checks, the chart) in seconds.
SMOKE = [Layer("tiny 3x3 N1 C8 12x12 F16", 1, 8, 12, 16, 3, pad=1),
         Layer("tiny 3x3 s2 N2 C8 13x13 F8", 2, 8, 13, 8, 3, stride=2, pad=1),
         Layer("tiny dw 3x3 C8 12x12", 1, 8, 12, 8, 3, pad=1, groups=8)]


@dataclasses.dataclass
class Row:
    layer: Layer
    layout: str
    conv_run_ms: float = None
    route: str = None          # the report's "im2col": how conv-run formed the GEMM's A
    conv_run_report: dict = None
    iree_ms: float = None
    iree: dict = None          # iree_time.py's result for this row
    torch_ms: float = None
    torch_times: list = None   # every timed run, ms (the median is torch_ms)
    torch_backend: str = None  # what torch's conv2d dispatched to (Mkldnn = oneDNN)
    ort_ms: float = None       # ONNX Runtime (engines_time.py)
    ov_ms: float = None        # OpenVINO (engines_time.py)
    engines: dict = None       # engines_time.py's result for this row's layer
    notes: list = dataclasses.field(default_factory=list)

    @property
    def label(self):
        return f"{self.layer.name} {self.layout}"

    def torch_ratio(self):
        return ratio(self.torch_ms, self.conv_run_ms)

    def iree_ratio(self):
        return ratio(self.iree_ms, self.conv_run_ms)

    def ort_ratio(self):
        return ratio(self.ort_ms, self.conv_run_ms)

    def ov_ratio(self):
        return ratio(self.ov_ms, self.conv_run_ms)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


# ----------------------------------------------------------------------------------------
# conv-run.
# ----------------------------------------------------------------------------------------

def conv_run_command(conv_run, layer, layout, repeat, threads, constant_weights=True,
                     dtype="f32"):
    # --target cpu: on a machine with a GPU, auto would pick cuda. --constant-weights:
    # the filter packed once before timing, as the engines prepare theirs at session
    # creation (--per-call-weights times the packing in every call).
    return [conv_run, *layer.conv_run_flags(layout), "--target", "cpu", "--json",
            "--repeat", str(repeat), "--warmup", "1", "--reference", "none", "--check",
            "--num-threads", str(threads), "--dtype", dtype] + (
                ["--constant-weights"] if constant_weights else []) + (
                # The engines' quantized model: activations around a zero point,
                # symmetric weights.
                ["--zero-points", "3,0"] if dtype == "i8" else [])


def measure_conv_run(row, args):
    r = subprocess.run(conv_run_command(args.conv_run, row.layer, row.layout, args.repeat,
                                        args.threads, not args.per_call_weights,
                                        args.dtype),
                       capture_output=True, text=True)
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        row.notes.append(f"conv-run exit {r.returncode}: {r.stderr.strip()[:300]}")
        return
    # The device block says only that no GPU was used: the CPU bench has no use for it.
    report.pop("device", None)
    row.conv_run_report = report
    row.route = str(report.get("im2col", "?"))
    if not report.get("check_passed", False):
        row.notes.append(f"conv-run check failed (rel L2 error {report.get('rel_l2_error')},"
                         f" exit {r.returncode}): not timed")
    else:
        row.conv_run_ms = report["lowered_ms"]


def emit_mlir(conv_run, layer, layout):
    """conv-run's linalg module for the problem: the exact input IREE compiles."""
    r = subprocess.run([conv_run, *layer.conv_run_flags(layout), "--emit-mlir"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"conv-run --emit-mlir exit {r.returncode}: {r.stderr[:300]}")
    return r.stdout


# ----------------------------------------------------------------------------------------
# The venv: IREE and matplotlib from PyPI.
# ----------------------------------------------------------------------------------------

def ensure_venv(venv):
    """The venv's python, the venv made or updated first if it lacks VENV_REQUIREMENTS
    (recorded in a stamp file after a successful install). Raises RuntimeError."""
    python = venv / "bin" / "python"
    stamp = venv / "bench-requirements.txt"
    wanted = "\n".join(VENV_REQUIREMENTS) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        log(f"creating the venv {venv} (IREE, numpy, matplotlib: about 700 MB, a minute)")
        # Debian's python first (this script's), the one on PATH if its venv module fails
        # (Debian splits ensurepip into python3-venv).
        for base in dict.fromkeys([sys.executable, shutil.which("python3")]):
            if base and subprocess.run([base, "-m", "venv", "--clear", str(venv)]
                                       ).returncode == 0:
                break
        else:
            raise RuntimeError("python -m venv failed (apt-get install -y python3-venv)")
    log(f"installing {' '.join(VENV_REQUIREMENTS)} into {venv}")
    r = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", *VENV_REQUIREMENTS])
    if r.returncode != 0:
        raise RuntimeError(f"pip install into {venv} failed (exit {r.returncode}; "
                           f"`rm -rf {venv}` starts it over)")
    stamp.write_text(wanted)
    return python


# ----------------------------------------------------------------------------------------
# IREE (through iree_time.py in the venv).
# ----------------------------------------------------------------------------------------

def iree_case(row, conv_run):
    layer = row.layer
    return {"id": row.label, "mlir": emit_mlir(conv_run, layer, row.layout),
            "layout": row.layout, "x_shape": [layer.n, layer.c, layer.hw, layer.hw],
            "w_shape": layer.filter_shape(), "stride": layer.stride, "pad": layer.pad,
            "groups": layer.groups}


def measure_iree(rows, args, python):
    """Fills the rows' IREE columns; returns iree_time.py's versions and flags."""
    cases = []
    for row in rows:
        try:
            cases.append(iree_case(row, args.conv_run))
        except RuntimeError as e:
            row.notes.append(f"IREE: {e}")
    job = {"threads": args.threads, "repeat": args.repeat, "cache_dir": str(IREE_CACHE),
           "cases": cases}
    # stderr passes through: the helper's progress lines.
    r = subprocess.run([str(python), str(HERE / "iree_time.py")], input=json.dumps(job),
                       stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"iree_time.py exit {r.returncode}")
    out = json.loads(r.stdout)
    by_id = {res["id"]: res for res in out.pop("results")}
    for row in rows:
        res = by_id.get(row.label)
        if res is None:
            continue
        row.iree, row.iree_ms = res, res["ms"]
        if res["error"]:
            row.notes.append(f"IREE: {res['error']}")
    return out


# ----------------------------------------------------------------------------------------
# ONNX Runtime and OpenVINO (through engines_time.py in the venv).
# ----------------------------------------------------------------------------------------

def measure_engines(rows, args, python):
    """Fills the rows' ORT and OpenVINO columns; returns engines_time.py's versions and
    settings. ONNX's Conv is NCHW: each layer is measured once, and its NCHW and NHWC
    rows show the same engine times (the engines choose their own internal layouts)."""
    layers = list(dict.fromkeys(row.layer for row in rows))
    cases = [{"id": layer.name, "x_shape": [layer.n, layer.c, layer.hw, layer.hw],
              "w_shape": layer.filter_shape(), "stride": layer.stride, "pad": layer.pad,
              "groups": layer.groups} for layer in layers]
    job = {"threads": args.threads, "repeat": args.repeat, "cases": cases,
           "precision": args.dtype}
    r = subprocess.run([str(python), str(HERE / "engines_time.py")],
                       input=json.dumps(job), stdout=subprocess.PIPE, text=True, cwd=HERE)
    if r.returncode != 0:
        raise RuntimeError(f"engines_time.py exit {r.returncode}")
    out = json.loads(r.stdout)
    by_id = {res["id"]: res for res in out.pop("results")}
    for row in rows:
        res = by_id.get(row.layer.name)
        if res is None:
            continue
        row.engines, row.ort_ms, row.ov_ms = res, res["ort_ms"], res["ov_ms"]
        for key, name in (("ort_error", "ONNX Runtime"), ("ov_error", "OpenVINO")):
            if key == "ort_error" and args.dtype == "bf16":
                continue             # said once, under the tables
            if res.get(key) and row.layout == LAYOUTS[0]:
                row.notes.append(f"{name}: {res[key]}")
    return out


# ----------------------------------------------------------------------------------------
# torch (in this process: Debian's python3-torch).
# ----------------------------------------------------------------------------------------

def import_torch():
    try:
        import torch
        return torch
    except ImportError:
        log("torch is not importable: `apt-get install -y python3-torch` and run this "
            "script with /usr/bin/python3 (the torch column stays empty)")
        return None


def torch_backend(torch, x, w, layer):
    """The kernel family torch's conv2d dispatches to ('Mkldnn' is oneDNN); None where
    this torch cannot say."""
    try:
        s, p = [layer.stride] * 2, [layer.pad] * 2
        backend = torch._C._select_conv_backend(x, w, None, s, p, [1, 1], False, [0, 0],
                                                layer.groups)
        return str(backend).rsplit(".", 1)[-1]
    except (AttributeError, RuntimeError, TypeError):
        return None


def measure_torch(row, torch, threads, repeat):
    """Median ms of F.conv2d over `repeat` runs after two warm-ups, on `threads` threads;
    NHWC as torch does it: both tensors in channels_last memory format."""
    layer = row.layer
    torch.set_num_threads(threads)
    x = torch.randn(layer.n, layer.c, layer.hw, layer.hw)
    w = torch.randn(*layer.filter_shape())
    if row.layout == "nhwc":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    row.torch_backend = torch_backend(torch, x, w, layer)

    def conv():
        return torch.nn.functional.conv2d(x, w, stride=layer.stride, padding=layer.pad,
                                          groups=layer.groups)
    times = []
    with torch.no_grad():
        for _ in range(2):
            conv()
        for _ in range(repeat):
            start = time.perf_counter()
            conv()
            times.append((time.perf_counter() - start) * 1e3)
    row.torch_times = times
    row.torch_ms = statistics.median(times)


# ----------------------------------------------------------------------------------------
# Report.
# ----------------------------------------------------------------------------------------

def fmt(v, digits=2):
    return "—" if v is None else f"{v:.{digits}f}"


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


# The ratio columns: (key, label, Row method).
RATIOS = [("ort_ratio", "ORT", Row.ort_ratio), ("ov_ratio", "OpenVINO", Row.ov_ratio),
          ("torch_ratio", "torch", Row.torch_ratio), ("iree_ratio", "IREE", Row.iree_ratio)]


def geomeans(rows):
    return {key: geomean(of(r) for r in rows) for key, _, of in RATIOS}


def geomean_line(rows, what):
    g = geomeans(rows)
    parts = [f"{label}/conv-run **{fmt(g[key])}** ({sum(1 for r in rows if of(r))} rows)"
             for key, label, of in RATIOS]
    return f"Geo-mean {what}: " + ", ".join(parts) + "."


def table(rows):
    head = ["layer", "GFLOP", "conv-run ms", "GFLOP/s", "route", "ORT ms", "OpenVINO ms",
            "IREE ms", "torch ms"] + [f"{label}/conv-run" for _, label, _ in RATIOS]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * 3 + "---|" + "---:|" * 8]
    for r in rows:
        g = r.layer.gflop()
        cells = [r.layer.name, fmt(g, 3), fmt(r.conv_run_ms, 3),
                 fmt(ratio(g * 1e3, r.conv_run_ms), 1), r.route or "—",
                 fmt(r.ort_ms, 3), fmt(r.ov_ms, 3), fmt(r.iree_ms, 3), fmt(r.torch_ms, 3)]
        cells += [fmt(of(r)) for _, _, of in RATIOS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def command_output(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT).stdout.strip()
    except OSError:
        return ""


def cpu_model():
    for line in command_output(["lscpu"]).splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def machine_info(args, torch, iree_info, engines_info):
    rev = command_output(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    if command_output(["git", "status", "--porcelain"]):
        rev += " (plus uncommitted changes)"
    version = command_output([args.conv_run, "--version"]).splitlines()
    versions = (iree_info or {}).get("versions", {})
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": args.threads,
            "load_at_start": args.load_at_start, "load_at_end": os.getloadavg()[0],
            "date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
            "commit": rev, "conv_run": version[-1].strip() if version else args.conv_run,
            "torch": torch.__version__ if torch else None,
            "torch_onednn": bool(torch and torch.backends.mkldnn.is_available()),
            "iree": versions.get("iree-base-compiler"),
            "iree_runtime": versions.get("iree-base-runtime"),
            "iree_compile_flags": (iree_info or {}).get("compile_flags"),
            "iree_run_flags": (iree_info or {}).get("run_flags"),
            "engines": engines_info}


def machine_lines(m):
    torch_text = (f"torch {m['torch']} (Debian python3-torch; oneDNN "
                  f"{'available' if m['torch_onednn'] else 'NOT available'})"
                  if m["torch"] else "torch: not measured")
    iree_text = (f"IREE {m['iree']} (PyPI iree-base-compiler / iree-base-runtime "
                 f"{m['iree_runtime']}): `iree-compile {' '.join(m['iree_compile_flags'])}`,"
                 f" run with `{' '.join(m['iree_run_flags'])}`"
                 if m["iree"] else "IREE: not measured")
    return [f"- machine: {m['cpu']}, {m['cores']} cores (`lscpu`, `os.cpu_count()`); "
            f"every column on **{m['threads']} thread(s)**; 1-min load average "
            f"{m['load_at_start']:.2f} at the start, {m['load_at_end']:.2f} at the end "
            "(another busy process skews every column, torch's most)",
            f"- date: {m['date']}",
            f"- commit: `{m['commit']}`; {m['conv_run']}",
            f"- {torch_text}",
            f"- {iree_text}",
            f"- {engines_text(m.get('engines'))}"]


def engines_text(info):
    if not info:
        return "ONNX Runtime, OpenVINO: not measured"
    v, s = info["versions"], info["settings"]
    return (f"ONNX Runtime {v['onnxruntime']} and OpenVINO {v['openvino']} (PyPI; onnx "
            f"{v['onnx']}, opset {s['onnx_opset']}): each layer a one-node ONNX model, the "
            "filter an initializer (prepared when the session is made); ORT "
            f"`{json.dumps(s['onnxruntime'])}`, OpenVINO CPU `{json.dumps(s['openvino'])}`; "
            "ONNX Conv is NCHW, so the NHWC tables show the same engine times")


def gemm_units(rows):
    """The CPU units conv-run's reports name for the GEMMs (its kernel line's
    notes, e.g. "bf16 GEMMs in K pairs on AMX tiles (TDPBF16PS)"): which of
    the host's units the bf16 and i8 rows ran on."""
    notes = set()
    for r in rows:
        kernel = (r.conv_run_report or {}).get("kernel", "")
        notes.update(part for part in kernel.split("; ")[1:] if "GEMMs" in part)
    return sorted(notes)


def markdown(rows, machine, args, wall_s):
    out = ["# ConvLower CPU benchmark" + (" (--quick)" if args.quick else "") +
           (" (--smoke)" if args.smoke else ""), ""] + machine_lines(machine)
    units = gemm_units(rows)
    if units:
        out.append(f"- conv-run's GEMMs: {'; '.join(units)} (conv-run --doctor: the "
                   "CPU's units)")
    for layout in LAYOUTS:
        part = [r for r in rows if r.layout == layout]
        out += ["", f"## {layout.upper()}", "", table(part), "", geomean_line(part, layout)]
    out += ["", "## Overall", "", geomean_line(rows, "over both layouts"), "",
            f"ms: medians of {args.repeat} runs after warm-up, {args.dtype}"
            + (" (conv-run: bf16 data, f32 accumulation and output; OpenVINO: "
               "INFERENCE_PRECISION_HINT bf16 on the f32 model, checked at 1e-2)"
               if args.dtype == "bf16" else "")
            + (" (conv-run: i8 data with zero points, i32 output, checked exactly; "
               "ORT and OpenVINO: the QDQ model of a quantizer, uint8 in and out, int8 "
               "filter, checked at 3e-2 after dequantization)"
               if args.dtype == "i8" else "") + ". Ratios > 1: conv-run is "
            "faster. route: conv-run's report (`im2col`: how the GEMM's A operand is "
            "formed). ORT, OpenVINO: a one-node ONNX model with the filter constant, "
            "output checked against a float64 numpy convolution before it is timed. "
            "IREE: conv-run's `--emit-mlir` module, output checked the same way before it "
            "is timed by iree-benchmark-module."]
    not_onednn = [f"{r.label} ({r.torch_backend})" for r in rows
                  if r.torch_backend not in (None, "Mkldnn")]
    if not_onednn:
        out.append(f"torch did not run oneDNN on: {', '.join(not_onednn)}.")
    compiled = [r.iree["compile_s"] for r in rows if r.iree and r.iree["compiled_now"]]
    if compiled:
        out.append(f"IREE compiled {len(compiled)} module(s) in {sum(compiled):.0f} s "
                   f"(cached in {IREE_CACHE.relative_to(REPO_ROOT)} for the next run).")
    notes = [f"{r.label}: {n}" for r in rows for n in r.notes]
    if notes:
        out += ["", "Problems:", ""] + [f"- {n}" for n in notes]
    out += ["", f"Total wall time {wall_s:.0f} s."]
    return "\n".join(out)


def results_json(rows, machine, args):
    return {"machine": machine,
            "settings": {"repeat": args.repeat, "quick": args.quick, "smoke": args.smoke,
                         "conv_run": args.conv_run},
            "geomeans": {**{layout: geomeans([r for r in rows if r.layout == layout])
                            for layout in LAYOUTS}, "all": geomeans(rows)},
            "rows": [{"layer": r.layer.name, "layout": r.layout,
                      "problem": dataclasses.asdict(r.layer), "gflop": r.layer.gflop(),
                      "conv_run_ms": r.conv_run_ms, "route": r.route,
                      "iree_ms": r.iree_ms, "torch_ms": r.torch_ms,
                      "torch_times_ms": r.torch_times,
                      "torch_backend": r.torch_backend,
                      "ort_ms": r.ort_ms, "ov_ms": r.ov_ms, "engines": r.engines,
                      **{key: of(r) for key, _, of in RATIOS},
                      "conv_run_report": r.conv_run_report, "iree": r.iree,
                      "notes": r.notes} for r in rows]}


def draw_chart(python, results_path, png):
    r = subprocess.run([str(python), str(HERE / "chart_cpu.py"), str(results_path), png])
    if r.returncode != 0:
        log(f"chart_cpu.py exit {r.returncode}: no chart")


# ----------------------------------------------------------------------------------------
# Main.
# ----------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--quick", action="store_true",
                       help="the seed layer and 2 small layers")
    which.add_argument("--smoke", action="store_true",
                       help="tiny layers: checks every column in seconds")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads of every column (default: os.cpu_count() = %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per measurement")
    ap.add_argument("--out", help="also write the markdown to this file")
    ap.add_argument("--chart", help="write a PNG chart of the ratios (matplotlib, venv)")
    ap.add_argument("--json", help="write every raw number to this file")
    ap.add_argument("--conv-run", default=str(DEFAULT_CONV_RUN))
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV,
                    help="virtual environment for IREE and matplotlib (made if missing; "
                         "default %(default)s)")
    ap.add_argument("--no-iree", action="store_true", help="leave the IREE column empty")
    ap.add_argument("--no-torch", action="store_true", help="leave the torch column empty")
    ap.add_argument("--no-engines", action="store_true",
                    help="leave the ONNX Runtime and OpenVINO columns empty")
    ap.add_argument("--dtype", choices=("f32", "bf16", "i8"), default="f32",
                    help="bf16: conv-run --dtype bf16 (VDPBF16PS where the CPU has "
                         "AVX512-BF16) against OpenVINO asked for bf16 on the same f32 "
                         "model (ORT runs no bf16 convolution). i8: conv-run --dtype i8 "
                         "(VPDPBUSD where the CPU has AVX512-VNNI) against ORT and "
                         "OpenVINO on the quantized (QDQ) model. IREE and torch are left "
                         "out of both")
    ap.add_argument("--per-call-weights", action="store_true",
                    help="conv-run without --constant-weights: the filter re-packed (W^T, "
                         "Winograd's U) in every timed call")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.dtype in ("bf16", "i8"):
        args.no_iree = args.no_torch = True
    args.load_at_start = os.getloadavg()[0]
    if not os.access(args.conv_run, os.X_OK):
        log(f"error: conv-run not found or not executable: {args.conv_run} "
            "(build it, or pass --conv-run)")
        return 2
    torch = None if args.no_torch else import_torch()
    python = None
    if not args.no_iree or not args.no_engines or args.chart:
        try:
            python = ensure_venv(args.venv)
        except RuntimeError as e:
            log(f"venv: {e} (the IREE, ORT and OpenVINO columns and the chart stay "
                "empty)")
    layers = SMOKE if args.smoke else QUICK if args.quick else FULL
    rows = [Row(layer, layout) for layout in LAYOUTS for layer in layers]
    start = time.monotonic()

    # One column at a time, conv-run's first: torch's OpenMP threads keep spinning after
    # each call and would take the cores from the others' threads, so torch goes last, and
    # IREE's, ORT's and OpenVINO's workers live in processes that are gone before torch
    # starts.
    for row in rows:
        measure_conv_run(row, args)
        log(f"  {row.label}: conv-run {fmt(row.conv_run_ms, 3)} ms "
            f"({time.monotonic() - start:.0f} s)")
    iree_info = None
    if python and not args.no_iree:
        try:
            iree_info = measure_iree(rows, args, python)
        except (RuntimeError, json.JSONDecodeError) as e:
            log(f"IREE: {e} (the IREE column stays empty)")
    engines_info = None
    if python and not args.no_engines:
        try:
            engines_info = measure_engines(rows, args, python)
        except (RuntimeError, json.JSONDecodeError) as e:
            log(f"engines: {e} (the ORT and OpenVINO columns stay empty)")
        log(f"  ORT and OpenVINO done ({time.monotonic() - start:.0f} s)")
    if torch is not None:
        for row in rows:
            measure_torch(row, torch, args.threads, args.repeat)
        log(f"  torch done ({time.monotonic() - start:.0f} s)")

    machine = machine_info(args, torch, iree_info, engines_info)
    text = markdown(rows, machine, args, time.monotonic() - start)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    results = results_json(rows, machine, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if args.chart:
        if python is None:
            log("no venv: no chart")
        else:
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                json.dump(results, f)
                f.flush()
                draw_chart(python, f.name, args.chart)
    return 1 if any(r.conv_run_ms is None for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
