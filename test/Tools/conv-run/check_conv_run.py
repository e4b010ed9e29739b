#!/usr/bin/env python3
"""Black-box tests of conv-run: numbers, reports and bad input.

conv-run builds a convolution from torch-style flags (or reads a .mlir file), compiles it
with ConvLower's CPU pipeline, runs it and reports. This script only drives the binary
and reads what it writes (Y.npy, the JSON and human reports, stderr, the exit status);
the numbers are checked against a float64 numpy convolution written from the formula of
docs/design.md ("Convolution semantics"), never from conv-run's own reference.

Sets (each one lit test):
  numerics   random problems (every layout, dtype, group form, stride, dilation, padding
             form, batch, bias; torch's conv1d shapes) on numpy data given as .npy
             files; Y.npy against numpy, and the JSON's check, byte counts and rates
             against the problem
  constant-weights
             the numerics and winograd problems with --constant-weights: Y.npy against
             numpy, the report's pack_ms/packed_bytes (U's size on Winograd)
  winograd   3x3 stride-1 f32 problems on conv-lower-winograd (forced, and by its cost
             rule): Y.npy within Winograd's stated bound, the report's route; what it
             leaves to the GEMM route
  quantized  --dtype i8 with --zero-points (every group form and layout, padding that
             reads as the input's zero point): Y.npy (i32) exactly equal to numpy's
  volumetric torch's conv3d shapes on the CPU and on the GPU kernel's twin: Y.npy
             against numpy
  json       report keys and types, the human report's lines, --reference direct timing,
             the op --emit-mlir builds for each flag combination, a .mlir file input,
             --function, --seed
  bad-input  every bad input: exit status 2, one `conv-run: error:` line naming the
             problem, no crash dump, no --output file

Usage: check_conv_run.py --set numerics [--conv-run PATH] [--seed S] [--keep-temp]
Prints one line per case and `N passed, M failed`; exits 1 on any failure.
"""

import argparse
import dataclasses
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_CONV_RUN = REPO_ROOT / "build" / "release" / "bin" / "conv-run"

# A case runs conv-run a few times on tiny problems; anything near this is a hang.
RUN_TIMEOUT_S = 120

# Flags that keep a numerics run short: one timed run, no slow reference lowering.
FAST = ["--reference", "none", "--repeat", "1", "--warmup", "0"]

ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1}

# max|Y - ref| / max|ref|. 16-bit inputs are exact and their products exact in f32, so
# they see only f32 summation error like f32 does; 1e-4 leaves room.
REL_TOLERANCE = {"f32": 1e-5, "f16": 1e-4, "bf16": 1e-4, "i8": 0.0}

# Signs of a crash rather than a diagnosed error.
CRASH_MARKERS = ("Traceback", "Stack dump", "PLEASE submit a bug report", "LLVM ERROR",
                 "Segmentation fault", "Assertion")


# ----------------------------------------------------------------------------------------
# Running a case.
# ----------------------------------------------------------------------------------------

class CaseFailure(Exception):
    """What a case found wrong; the message is printed after FAIL."""


def expect(condition, message):
    if not condition:
        raise CaseFailure(message)


@dataclasses.dataclass
class Context:
    conv_run: str
    tmp: Path
    seed: int
    conv_opt: str = ""   # conv-opt, for the cases that check which kernel was built


def run_conv_run(ctx, args):
    cmd = [ctx.conv_run] + [str(a) for a in args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CaseFailure(f"timed out after {RUN_TIMEOUT_S}s: {' '.join(cmd)}")


def command_text(ctx, args):
    return " ".join([os.path.basename(ctx.conv_run)] + [str(a) for a in args])


def run_ok(ctx, args):
    """Runs conv-run, which must succeed; returns stdout."""
    r = run_conv_run(ctx, args)
    expect(r.returncode == 0,
           f"exit status {r.returncode} from `{command_text(ctx, args)}`: "
           f"{r.stderr.strip()[-800:]}")
    return r.stdout


def run_json(ctx, args):
    out = run_ok(ctx, list(args) + ["--json"])
    try:
        return json.loads(out)
    except json.JSONDecodeError as e:
        raise CaseFailure(f"--json printed no valid JSON ({e}): {out[:300]!r}")


def run_cases(cases, ctx):
    """cases: (name, callable(ctx)). Prints one line per case; returns (passed, failed)."""
    passed = failed = 0
    for name, body in cases:
        start = time.monotonic()
        try:
            detail = body(ctx) or ""
            ok = True
        except CaseFailure as e:
            ok, detail = False, str(e)
        except Exception as e:  # a harness bug still fails the case and names itself
            ok, detail = False, f"harness error {type(e).__name__}: {e}"
        secs = time.monotonic() - start
        print(f"{'PASS' if ok else 'FAIL'} {name} ({secs:.2f}s){': ' + detail if detail else ''}",
              flush=True)
        passed += ok
        failed += not ok
    return passed, failed


# ----------------------------------------------------------------------------------------
# Problems, in conv-run's own flag syntax.
# ----------------------------------------------------------------------------------------

def int_list(text):
    return tuple(int(v) for v in text.split(","))


def pair(text):
    """--stride/--dilation: S or SH,SW."""
    v = int_list(text)
    return (v[0], v[-1])


@dataclasses.dataclass(frozen=True)
class Problem:
    name: str
    input: str               # --input-shape N,C,H,W
    filter: str              # --filter-shape F,C/G,KH,KW
    stride: str = "1"
    dilation: str = "1"
    padding: str = "0"       # P, PH,PW (torch) or PT,PL,PB,PR
    groups: int = 1
    bias: bool = False
    layout: str = "nchw"
    dtype: str = "f32"
    zero_points: str = ""    # --zero-points XZ,WZ (i8)

    def flags(self):
        return (["--input-shape", self.input, "--filter-shape", self.filter,
                 "--stride", self.stride, "--dilation", self.dilation,
                 "--padding", self.padding, "--groups", self.groups,
                 "--layout", self.layout, "--dtype", self.dtype] +
                (["--bias"] if self.bias else []) +
                (["--zero-points", self.zero_points] if self.zero_points else []))

    @property
    def conv1d(self):
        """torch's conv1d: N,C,L and F,C/G,K, the 2-D convolution with H = KH = 1."""
        return len(int_list(self.input)) == 3

    @property
    def nchw(self):
        v = int_list(self.input)
        return (v[0], v[1], 1, v[2]) if self.conv1d else v

    @property
    def fchw(self):
        v = int_list(self.filter)
        return (v[0], v[1], 1, v[2]) if self.conv1d else v

    @property
    def depthwise(self):
        """One input and one output channel per group."""
        c, f = self.nchw[1], self.fchw[0]
        return self.groups == c == f and self.groups > 1

    @property
    def grouped_direct(self):
        """conv-lower-grouped-direct's: f32, grouped with more than one channel
        and 4 or 8 filters a group (fewer than the GEMM tile's 16 or 32; the
        pipeline takes multiples of half an AVX2 vector), unit dilations."""
        c, f = self.nchw[1], self.fchw[0]
        g = self.groups
        return (self.dtype == "f32" and len(self.nchw) == 4 and g > 1 and c // g > 1
                and f // g in (4, 8)
                and not self.zero_points
                and all(d == 1 for d in int_list(self.dilation or "1")))

    def cpu_route(self):
        """The im2col the CPU's default route reports: float depthwise layers and
        grouped ones of 8 filters a group run direct (conv-lower-depthwise-direct,
        conv-lower-grouped-direct: no X_col at all), others in panels."""
        if (self.depthwise and self.dtype != "i8") or self.grouped_direct:
            return "direct"
        return "panels"

    @property
    def zx_zw(self):
        return int_list(self.zero_points) if self.zero_points else (0, 0)

    def window(self, text):
        """--stride/--dilation as (H, W): conv1d's one value is along W."""
        return (1, int_list(text)[0]) if self.conv1d else pair(text)

    def pads(self):
        """(top, left, bottom, right) from torch's 1- or 2-value or the 4-value form
        (conv1d: P or PL,PR)."""
        p = int_list(self.padding)
        if self.conv1d:
            return (0, p[0], 0, p[-1])
        if len(p) == 1:
            return (p[0],) * 4
        if len(p) == 2:
            return (p[0], p[1], p[0], p[1])
        return p

    def out_hw(self):
        _, _, h, w = self.nchw
        _, _, kh, kw = self.fchw
        (sh, sw), (dh, dw) = self.window(self.stride), self.window(self.dilation)
        pt, pl, pb, pr = self.pads()
        return ((h + pt + pb - dh * (kh - 1) - 1) // sh + 1,
                (w + pl + pr - dw * (kw - 1) - 1) // sw + 1)

    def shapes(self):
        """Memory-order shapes of input, filter, output: NCHW/FCHW or NHWC/FHWC (conv1d:
        without the unit H, as torch's conv1d has them)."""
        n, c, h, w = self.nchw
        f, cg, kh, kw = self.fchw
        ho, wo = self.out_hw()
        if self.layout == "nchw":
            shapes = (n, c, h, w), (f, cg, kh, kw), (n, f, ho, wo)
        else:
            shapes = (n, h, w, c), (f, kh, kw, cg), (n, ho, wo, f)
        if self.conv1d:
            unit = 2 if self.layout == "nchw" else 1
            shapes = tuple(s[:unit] + s[unit + 1:] for s in shapes)
        return shapes

    def emitted_conv_op(self):
        """The linalg op conv-run builds: ungrouped, grouped, or (NCHW, G=C=F) depthwise;
        i8: the quantized (_q) op (linalg has no depthwise NCHW one: the grouped op)."""
        c, f = self.nchw[1], self.fchw[0]
        q = "_q" if self.dtype == "i8" else ""
        if self.groups == 1:
            return {"nchw": "conv_2d_nchw_fchw", "nhwc": "conv_2d_nhwc_fhwc"}[self.layout] + q
        if self.layout == "nchw" and self.groups == c == f and not q:
            return "depthwise_conv_2d_nchw_chw"
        return {"nchw": "conv_2d_ngchw_gfchw", "nhwc": "conv_2d_nhwgc_gfhwc"}[self.layout] + q


# ----------------------------------------------------------------------------------------
# The float64 reference (docs/design.md, "Convolution semantics").
# ----------------------------------------------------------------------------------------

def conv2d_nchw_reference(x, w, bias, stride, dilation, pads, groups):
    """Y[n, g·Fg+f, oh, ow] = bias + Σ_{c,r,s} W[g·Fg+f, c, r, s] ·
    X[n, g·Cg+c, oh·sh - pt + r·dh, ow·sw - pl + s·dw], zero outside X."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = stride, dilation, pads
    ho = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    fg = f // groups
    y = np.zeros((n, f, ho, wo))
    for g in range(groups):
        xg, wg = xp[:, g * cg:(g + 1) * cg], w[g * fg:(g + 1) * fg]
        for r in range(kh):
            for s in range(kw):
                # Every output position's tap (r, s) at once: a strided window of xp.
                taps = xg[:, :, r * dh:r * dh + sh * (ho - 1) + 1:sh,
                          s * dw:s * dw + sw * (wo - 1) + 1:sw]
                y[:, g * fg:(g + 1) * fg] += np.einsum("nchw,fc->nfhw", taps, wg[:, :, r, s])
    if bias is not None:
        y += bias.astype(np.float64)[None, :, None, None]
    return y


def reference_for(problem, x, w, bias):
    """The reference in the problem's own layout (NHWC/FHWC converted to and from NCHW;
    conv1d with a unit H). A quantized problem subtracts the zero points first, and its
    padding (zeros after the subtraction) is the input's zero point, as in torch."""
    nhwc = problem.layout == "nhwc"
    x_shape, w_shape, y_shape = problem.shapes()
    if problem.conv1d:
        unit = 1 if nhwc else 2
        x, w = np.expand_dims(x, unit), np.expand_dims(w, unit)
    if nhwc:
        x, w = x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2)
    zx, zw = problem.zx_zw
    y = conv2d_nchw_reference(x.astype(np.float64) - zx, w.astype(np.float64) - zw, bias,
                              problem.window(problem.stride),
                              problem.window(problem.dilation), problem.pads(),
                              problem.groups)
    y = y.transpose(0, 2, 3, 1) if nhwc else y
    return y.reshape(y_shape)


# ----------------------------------------------------------------------------------------
# Data.
# ----------------------------------------------------------------------------------------

def random_values(rng, shape, dtype):
    """Uniform [-1, 1) values exactly representable in `dtype`, as the array to save:
    float16 for f16 (conv-run reads '<f2'), float32 otherwise; bf16 values are float32s
    with the low 16 bits cleared (truncation keeps them exactly representable)."""
    if dtype == "i8":      # the whole i8 range, as float32 (conv-run reads '<f4')
        return rng.integers(-128, 128, size=shape).astype(np.float32)
    a = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    if dtype == "f16":
        return a.astype(np.float16)
    if dtype == "bf16":
        return (a.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    return a


def case_rng(ctx, name):
    """Data per case, reproducible from --seed and the case name alone."""
    return np.random.default_rng([ctx.seed, zlib.crc32(name.encode())])


def save(ctx, name, array):
    path = ctx.tmp / name
    np.save(path, np.ascontiguousarray(array))
    return path


def load_output(path, shape, dtype=np.float32):
    expect(path.exists(), f"--output {path.name} was not written")
    y = np.load(path)
    expect(y.dtype == dtype, f"Y.npy has dtype {y.dtype}, not {np.dtype(dtype)}")
    expect(y.shape == tuple(shape), f"Y.npy has shape {y.shape}, expected {tuple(shape)}")
    return y


def compare(y, ref, rel_tolerance):
    """Returns (max|y - ref|, max|ref|); fails beyond rel_tolerance · max|ref| (0: the
    integers must be equal)."""
    max_diff = float(np.max(np.abs(y.astype(np.float64) - ref))) if ref.size else 0.0
    scale = max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30)
    expect(np.all(np.isfinite(y)), "Y.npy holds non-finite values")
    expect(max_diff <= rel_tolerance * scale,
           f"max|Y - ref| = {max_diff:.3e} > {rel_tolerance:g} * max|ref| ({scale:.3e})")
    return max_diff, scale


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


# ----------------------------------------------------------------------------------------
# Set "numerics".
# ----------------------------------------------------------------------------------------

NUMERICS = [
    # nchw (torch's NCHW input, FCHW filter)
    Problem("nchw-3x3-p1", "1,4,8,8", "8,4,3,3", padding="1"),
    Problem("nchw-batch3-stride2-bias", "3,3,9,9", "5,3,3,3", stride="2", padding="1",
            bias=True),
    Problem("nchw-groups2-dilation2", "1,8,10,10", "6,4,3,3", groups=2, dilation="2",
            padding="2"),
    Problem("nchw-depthwise-stride2-torchpad", "2,6,9,7", "6,1,3,3", groups=6, stride="2",
            padding="1,2"),
    Problem("nchw-depthwise-multiplier2-bias", "1,4,7,7", "8,1,3,3", groups=4, padding="1",
            bias=True),
    Problem("nchw-asympad-3x2-kernel", "1,3,7,9", "4,3,3,2", padding="0,1,2,3"),
    Problem("nchw-odd-tile-sizes", "1,16,7,7", "13,16,3,3", padding="1"),
    Problem("nchw-stride1x2-dilation2x1", "1,4,11,12", "4,4,3,3", stride="1,2",
            dilation="2,1", padding="1,0"),
    Problem("nchw-1x1-batch3", "3,8,5,5", "4,8,1,1"),
    Problem("nchw-1x1-stride2", "1,8,6,6", "4,8,1,1", stride="2"),
    # 768 pixels a row of B (more than 512 floats apart): packed column panels.
    Problem("nchw-1x1-wide-image-bias", "2,16,24,32", "24,16,1,1", bias=True),
    # nhwc (NHWC input, FHWC filter)
    Problem("nhwc-3x3-batch3-bias", "3,4,8,8", "6,4,3,3", padding="1", bias=True,
            layout="nhwc"),
    Problem("nhwc-groups3-stride2-asympad", "1,6,8,9", "9,2,3,3", groups=3, stride="2",
            padding="2,0,1,1", layout="nhwc"),
    # Depthwise with 16-channel vector tiles (conv-lower-depthwise-direct).
    Problem("nhwc-depthwise-c48-pad1", "1,48,12,12", "48,1,3,3", groups=48, padding="1",
            layout="nhwc"),
    Problem("nchw-depthwise-c32-stride2-bias", "2,32,11,9", "32,1,3,3", groups=32,
            stride="2", padding="1", bias=True),
    Problem("nhwc-depthwise-dilation2", "1,5,10,10", "5,1,3,3", groups=5, dilation="2",
            padding="2", layout="nhwc"),
    # conv-lower-depthwise-direct's pieces of equal taps (no padded copies): edges and
    # corners at stride 2 on an odd image, asymmetric pads at dilation 2 with a bias,
    # a one-pixel image (only its centre tap lands), a pad beyond the taps' reach
    # (outputs all padding: the bias alone; wide pads take padded strips).
    Problem("nhwc-depthwise-tap-pieces-stride2", "2,32,9,8", "32,1,3,3", groups=32,
            stride="2", padding="1", layout="nhwc"),
    Problem("nhwc-depthwise-tap-pieces-dilation2-asympad", "1,16,10,11", "16,1,3,3",
            groups=16, dilation="2", padding="2,1,0,3", layout="nhwc", bias=True),
    Problem("nhwc-depthwise-one-pixel", "1,16,1,1", "16,1,3,3", groups=16, padding="1",
            layout="nhwc", bias=True),
    Problem("nhwc-depthwise-pad-beyond-taps", "1,16,5,4", "16,1,3,3", groups=16,
            padding="3", layout="nhwc", bias=True),
    # NCHW depthwise at stride 1: one padded plane at a time, vectors along W
    # (48 channels: blocks of 3 planes).
    Problem("nchw-depthwise-planes-batch2-bias", "2,48,13,10", "48,1,3,3", groups=48,
            padding="1", bias=True),
    Problem("nchw-depthwise-planes-5x5-asympad", "1,6,9,11", "6,1,5,5", groups=6,
            padding="2,1,0,2"),
    # Strided: the padded plane split into its phases, one unit-stride
    # convolution per phase (torch's padding past the last window trimmed).
    Problem("nchw-depthwise-planes-stride2-wide", "1,16,30,112", "16,1,3,3", groups=16,
            stride="2", padding="1"),
    Problem("nchw-depthwise-planes-stride1,2-5x5-bias", "2,6,9,13", "6,1,5,5", groups=6,
            stride="1,2", padding="2,1", bias=True),
    Problem("nchw-depthwise-planes-stride3-trimmed", "1,5,10,11", "5,1,3,3", groups=5,
            stride="3", padding="1"),
    Problem("nchw-depthwise-planes-stride2,1-4x2", "1,4,9,8", "4,1,4,2", groups=4,
            stride="2,1", padding="0,1,1,0"),
    # Grouped, 8 filters a group (fewer than the GEMM tile's 16):
    # conv-lower-grouped-direct, one vector of filters, broadcast pixels.
    Problem("nhwc-grouped-direct-g4-batch2-bias", "2,12,9,10", "32,3,3,3", groups=4,
            padding="1", bias=True, layout="nhwc"),
    Problem("nchw-grouped-direct-g2-stride2-asympad", "1,16,11,13", "16,8,3,3", groups=2,
            stride="2", padding="2,0,1,1"),
    Problem("nhwc-grouped-direct-g3-5x3-stride2,1", "1,15,12,17", "24,5,5,3", groups=3,
            stride="2,1", padding="2,1", layout="nhwc"),
    Problem("nhwc-1x1", "2,8,4,4", "8,8,1,1", layout="nhwc"),
    # 16-bit inputs (accumulated in f32)
    Problem("f16-nchw-groups2-bias", "1,4,8,8", "4,2,3,3", groups=2, padding="1", bias=True,
            dtype="f16"),
    Problem("f16-nhwc-depthwise-batch3-stride2", "3,4,9,9", "4,1,3,3", groups=4, stride="2",
            padding="1", layout="nhwc", dtype="f16"),
    Problem("f16-nchw-1x1-batch3", "3,8,4,4", "8,8,1,1", dtype="f16"),
    Problem("bf16-nchw-dilation2-asympad-bias", "1,3,9,9", "4,3,3,3", dilation="2",
            padding="1,0,2,1", bias=True, dtype="bf16"),
    Problem("bf16-nhwc-batch3-stride2-torchpad", "3,4,7,7", "8,4,3,3", stride="2",
            padding="2,1", layout="nhwc", dtype="bf16"),
    Problem("bf16-nhwc-groups2", "1,4,6,6", "6,2,3,3", groups=2, padding="1",
            layout="nhwc", dtype="bf16"),
    # torch's conv1d shapes (N,C,L; F,C/G,K): the 2-D convolution with H = 1
    Problem("conv1d-nchw-stride2-dilation2-pad2,1", "2,16,20", "8,16,5", stride="2",
            dilation="2", padding="2,1"),
    Problem("conv1d-nhwc-groups2-f16", "1,8,15", "6,4,3", groups=2, padding="1",
            layout="nhwc", dtype="f16"),
    Problem("conv1d-nchw-depthwise-planes", "2,8,30", "8,1,5", groups=8, padding="2"),
    Problem("conv1d-nchw-depthwise-planes-stride2", "1,8,31", "8,1,3", groups=8, stride="2",
            padding="1"),
    # f16 data into f32 keeps the channels-last route (upstream's conv_1d
    # vectorization takes one element type).
    Problem("conv1d-nchw-depthwise-f16", "2,8,30", "8,1,5", groups=8, padding="2",
            dtype="f16"),
]


def check_report(problem, report, y, own_max_diff, scale, mode=None):
    """The JSON of a numerics run against the problem's sizes and our own comparison.
    `mode` is the im2col the report must state: "explicit" (X_col whole, its bytes
    reported), "implicit" (the CPU twin), "panels" (the CPU's default: X_col per
    block of output rows, never whole) or "direct" (the CPU's depthwise layers: no
    X_col at all); all but the first report no X_col. None: the CPU's default."""
    mode = mode or problem.cpu_route()
    implicit = mode != "explicit"
    n, c, h, w = problem.nchw
    f, cg, kh, kw = problem.fchw
    ho, wo = problem.out_hw()
    elem = ELEMENT_BYTES[problem.dtype]
    expect(report.get("check_passed") is True, f"check_passed is {report.get('check_passed')}")
    expect(report.get("checked_outputs") == report.get("total_outputs") == y.size,
           f"checked/total outputs {report.get('checked_outputs')}/"
           f"{report.get('total_outputs')}, Y has {y.size}")
    theirs = report.get("max_abs_diff")
    # Both compare the same Y with a float64 convolution: they may differ only by the
    # order of float64 sums and the report's 6 digits (floor: far below f32 rounding).
    expect(isinstance(theirs, (int, float)) and
           abs(theirs - own_max_diff) <= 0.01 * max(theirs, own_max_diff) + 1e-9 * scale,
           f"max_abs_diff {theirs} disagrees with ours {own_max_diff:.6g}")
    im2col = 0 if implicit else problem.groups * n * ho * wo * cg * kh * kw * elem
    expect(report.get("im2col") == mode,
           f"im2col {report.get('im2col')!r}, expected {mode!r}")
    expect(report.get("im2col_bytes") == im2col,
           f"im2col_bytes {report.get('im2col_bytes')} != G*N*Ho*Wo*Cg*KH*KW*{elem} = {im2col}")
    expect(report.get("input_bytes") == n * c * h * w * elem,
           f"input_bytes {report.get('input_bytes')} != N*C*H*W*{elem} = {n * c * h * w * elem}")
    # Implicit: the A operand is the input itself, read in place (1.00x).
    inflation = report.get("inflation")
    want = 1.0 if implicit else im2col / (n * c * h * w * elem)
    expect(isinstance(inflation, (int, float)) and close(inflation, want, 1e-5),
           f"inflation {inflation} != {'1 (implicit)' if implicit else 'im2col/input'}"
           f" = {want:.6g}")
    gflops = report.get("gflops")
    expect(isinstance(gflops, (int, float)) and math.isfinite(gflops) and gflops > 0,
           f"gflops {gflops} is not a positive number")


def run_on_random_data(ctx, problem, extra):
    """conv-run --check on the problem with fresh random .npy data: (JSON report, Y,
    float64 reference)."""
    rng = case_rng(ctx, problem.name)
    x_shape, w_shape, y_shape = problem.shapes()
    x = random_values(rng, x_shape, problem.dtype)
    w = random_values(rng, w_shape, problem.dtype)
    bias = random_values(rng, (w_shape[0],), problem.dtype) if problem.bias else None
    args = problem.flags() + FAST + list(extra) + ["--check",
                                     "--input", save(ctx, f"{problem.name}-x.npy", x),
                                     "--filter", save(ctx, f"{problem.name}-w.npy", w)]
    if bias is not None:
        args += ["--bias-file", save(ctx, f"{problem.name}-b.npy", bias)]
    y_path = ctx.tmp / f"{problem.name}-y.npy"
    report = run_json(ctx, args + ["--output", y_path])
    y = load_output(y_path, y_shape, np.int32 if problem.dtype == "i8" else np.float32)
    return report, y, reference_for(problem, x, w, bias)


def numerics_case(problem, extra=(), mode=None):
    def body(ctx):
        report, y, ref = run_on_random_data(ctx, problem, extra)
        max_diff, scale = compare(y, ref, REL_TOLERANCE[problem.dtype])
        check_report(problem, report, y, max_diff, scale, mode)
        return f"max|Y-ref|/max|ref| = {max_diff / scale:.1e}"
    return body


def numerics_set():
    """Every problem on the CPU's default route (panels) and with X_col whole."""
    panels = [(p.name, numerics_case(p)) for p in NUMERICS]
    explicit = [(p.name + "-explicit",
                 numerics_case(p, ["--im2col", "explicit"], mode="explicit"))
                for p in NUMERICS]
    return panels + explicit


# ----------------------------------------------------------------------------------------
# Set "winograd": 3x3 stride-1 f32 layers on conv-lower-winograd's F(4x4, 3x3).
# ----------------------------------------------------------------------------------------

# Winograd's transforms amplify f32 rounding (entries up to 8 in A^T, 5 in B^T): on
# uniform [-1, 1) data its max|Y - ref| reaches ~1.5e-5 · max|ref| at C = 512 (the GEMM
# route: ~1e-6), its relative L2 error ~4e-6. The bound this set holds it to:
WINOGRAD_REL_TOLERANCE = 5e-5

WINOGRAD = [
    # Output sizes that are not multiples of 4 (a cropped last tile row and column),
    # padding read through clamped loads, NCHW transposed both ways.
    Problem("wino-nchw-pad1-odd-size", "2,16,10,9", "24,16,3,3", padding="1"),
    Problem("wino-nhwc-asympad-batch3", "3,32,11,13", "16,32,3,3", padding="0,1,2,1",
            layout="nhwc"),
    # 8-lane vectors (channels and filters not multiples of 16), no padding.
    Problem("wino-nhwc-c8-f40", "1,8,14,14", "40,8,3,3", layout="nhwc"),
    # Padding wider than the taps reach: whole window rows outside the image.
    Problem("wino-nchw-pad3", "1,16,6,6", "16,16,3,3", padding="3"),
    # The error bound at the most channels the cost rule allows before max-channels.
    Problem("wino-nhwc-c512", "1,512,8,8", "16,512,3,3", padding="1", layout="nhwc"),
]


def winograd_case(problem, extra, mode):
    def body(ctx):
        report, y, ref = run_on_random_data(ctx, problem, extra)
        max_diff, scale = compare(y, ref, WINOGRAD_REL_TOLERANCE)
        expect(report.get("im2col") == mode,
               f"im2col {report.get('im2col')!r}, expected {mode!r}")
        expect(report.get("check_passed") is True,
               f"check_passed is {report.get('check_passed')}")
        rel_l2 = report.get("rel_l2_error")
        expect(isinstance(rel_l2, (int, float)) and rel_l2 <= 1e-5,
               f"rel_l2_error {rel_l2} above f32's 1e-5")
        return f"max|Y-ref|/max|ref| = {max_diff / scale:.1e}, rel L2 {rel_l2:.1e}"
    return body


def random_winograd_problems(count, seed):
    """Problems Winograd takes, drawn at random: 1-3 images as small as one output
    pixel (a window mostly padding) up to 4 tiles across, 8-40 channels and filters
    in whole 8-lane vectors, any 4-sided padding up to 3, either layout."""
    rng = random.Random(seed)
    problems = []
    for i in range(count):
        n, c, f = rng.randint(1, 3), 8 * rng.randint(1, 5), 8 * rng.randint(1, 5)
        pads = [rng.randint(0, 3) for _ in range(4)]
        # At least one output pixel: H + pt + pb >= 3.
        h = rng.randint(max(1, 3 - pads[0] - pads[2]), 17)
        w = rng.randint(max(1, 3 - pads[1] - pads[3]), 17)
        problems.append(Problem(f"wino-random-{i}", f"{n},{c},{h},{w}", f"{f},{c},3,3",
                                padding=",".join(map(str, pads)),
                                layout=rng.choice(["nchw", "nhwc"]),
                                bias=rng.random() < 0.3))
    return problems


def winograd_set():
    """Each problem forced onto Winograd (--winograd always), the fixed ones and 8
    random ones; the cost rule's choice (auto: 32 tiles or more) and what it leaves
    to the GEMM route."""
    always = [(p.name, winograd_case(p, ["--winograd", "always"], "winograd"))
              for p in WINOGRAD + random_winograd_problems(8, seed=20261203)]
    rule = [
        # 2 x 3 x 3 = 18 tiles: below min-tiles, the GEMM route.
        ("auto-18-tiles-panels", winograd_case(WINOGRAD[0], [], "panels")),
        # 3 x 3 x 4 = 36 tiles: Winograd.
        ("auto-36-tiles-winograd", winograd_case(WINOGRAD[1], [], "winograd")),
        ("off-panels", winograd_case(WINOGRAD[1], ["--winograd", "off"], "panels")),
        # A bias is added after the convolution (its accumulator is still a fill).
        ("always-bias-winograd", winograd_case(
            Problem("bias", "2,16,12,12", "16,16,3,3", padding="1", bias=True),
            ["--winograd", "always"], "winograd")),
        # What Winograd does not take, even when asked: a stride, 12 channels.
        ("always-stride2-panels", winograd_case(
            Problem("stride2", "1,16,12,12", "16,16,3,3", stride="2", padding="1"),
            ["--winograd", "always"], "panels")),
        ("always-c12-panels", winograd_case(
            Problem("c12", "1,12,12,12", "16,12,3,3", padding="1", layout="nhwc"),
            ["--winograd", "always"], "panels")),
    ]
    # U past 4 MiB (C = F = 256: 9.4 MB) on one 14x14 image: one block of its 16
    # tiles per 128 filters, a thread each (conv-lower-winograd's filter blocks),
    # U made once (16 tiles suffice then); the output written at each block's
    # filter offset, channels last and first.
    streamed = [
        (f"streamed-filter-blocks-{layout}", winograd_case(
            Problem(f"streamed-{layout}", "1,256,14,14", "256,256,3,3", padding="1",
                    layout=layout, bias=True),
            ["--constant-weights", "--num-threads", "2"], "winograd"))
        for layout in ("nhwc", "nchw")]
    # U in cache, two threads, row blocks that would not split evenly: a 56x56
    # output's 14 tile rows in 14 blocks of one instead of 7 of two.
    balanced = [
        (f"balanced-row-blocks-{layout}", winograd_case(
            Problem(f"balanced-row-blocks-{layout}", "1,16,56,56", "16,16,3,3",
                    padding="1", layout=layout, bias=True),
            ["--winograd", "always", "--num-threads", "2"], "winograd"))
        for layout in ("nhwc", "nchw")]
    return always + rule + streamed + balanced


# ----------------------------------------------------------------------------------------
# Set "constant-weights": --constant-weights packs what depends on the filter once.
# ----------------------------------------------------------------------------------------

def constant_weights_case(problem, extra, tolerance, packs):
    """Y.npy against numpy with the filter packed once (the pack call runs before the
    warm-up and the timed runs, which then read only the packed buffers); the report
    gives the packing apart: pack_ms, and packed_bytes > 0 where the route derives
    something from the filter (`packs`: True, False, or None for either)."""
    def body(ctx):
        report, y, ref = run_on_random_data(ctx, problem, ["--constant-weights", *extra])
        max_diff, scale = compare(y, ref, tolerance)
        expect(report.get("check_passed") is True,
               f"check_passed is {report.get('check_passed')}")
        expect(isinstance(report.get("pack_ms"), (int, float)) and report["pack_ms"] >= 0,
               f"pack_ms {report.get('pack_ms')!r}")
        packed = report.get("packed_bytes")
        expect(isinstance(packed, int) and packed >= 0, f"packed_bytes {packed!r}")
        if packs is not None:
            expect((packed > 0) == packs, f"packed_bytes {packed}, expected "
                   f"{'some' if packs else 'none'} for route {report.get('im2col')}")
        if report.get("im2col") == "winograd":
            # U [36, C, F] in f32, the whole of what Winograd derives from the filter.
            c, f = int(problem.input.split(",")[1]), int(problem.filter.split(",")[0])
            expect(packed == 36 * c * f * 4, f"packed_bytes {packed}, U is {36 * c * f * 4}")
        return f"max|Y-ref|/max|ref| = {max_diff / scale:.1e}, packed {packed} B"
    return body


def constant_weights_set():
    """Every numerics problem (layouts, dtypes, groups, strides, padding forms, batches,
    bias) and the Winograd ones with --constant-weights; the NHWC GEMM (pack-rhs's W^T)
    and Winograd (U, exactly) must pack something."""
    numerics = [(p.name, constant_weights_case(p, [], REL_TOLERANCE[p.dtype], None))
                for p in NUMERICS]
    winograd = [(p.name, constant_weights_case(p, ["--winograd", "always"],
                                               WINOGRAD_REL_TOLERANCE, True))
                for p in WINOGRAD + random_winograd_problems(4, seed=20261204)]
    routes = [
        ("nhwc-gemm-packs", constant_weights_case(
            Problem("nhwc-gemm", "2,16,9,9", "24,16,3,3", stride="2", padding="1",
                    layout="nhwc"), [], REL_TOLERANCE["f32"], True)),
        ("nhwc-1x1-batch8-packs", constant_weights_case(
            Problem("nhwc-1x1", "8,32,7,7", "48,32,1,1", layout="nhwc", bias=True), [],
            REL_TOLERANCE["f32"], True)),
    ]
    return numerics + winograd + routes + filter_panels_cases()


def random_panel_problems(count, seed):
    """GEMM problems whose filters are whole 16- or 32-wide panels, drawn at random:
    1-8 images, 1x1 or 3x3 windows at stride 1 or 2, either layout."""
    rng = random.Random(seed)
    problems = []
    for i in range(count):
        n, c, k = rng.choice([1, 2, 8]), 4 * rng.randint(1, 12), rng.choice([1, 3])
        f, h, w = 16 * rng.randint(1, 8), rng.randint(3, 12), rng.randint(3, 12)
        problems.append(Problem(f"panels-random-{i}", f"{n},{c},{h},{w}",
                                f"{f},{c},{k},{k}", stride=str(rng.choice([1, 2])),
                                padding=str(k // 2), layout=rng.choice(["nchw", "nhwc"]),
                                bias=rng.random() < 0.3))
    return problems


def filter_panels_cases():
    """conv-lower-pack-filter-panels: the filter as [F / nr, K, nr] panels, whole (the
    GEMM's threads split into blocks of panels: few rows, many filters) or sliced per
    block of filters (conv-lower-im2col-panels' filter chunks on a 7x7 image), at both
    panel widths (tile-n 16 and 32, AVX2's and AVX-512's), per call and packed once."""
    fixed = [
        (Problem("panels-nhwc-7x7-filter-chunks", "1,24,7,7", "64,24,3,3", padding="1",
                 layout="nhwc"), ["--tile-n", "16"], True),
        (Problem("panels-nchw-s2-batch3", "3,16,9,9", "96,16,3,3", stride="2",
                 padding="1"), ["--tile-n", "32"], True),
        (Problem("panels-nhwc-1x1-many-filters", "1,32,5,5", "256,32,1,1",
                 layout="nhwc"), ["--tile-n", "32"], True),
        (Problem("panels-nhwc-bias-batch8", "8,16,6,6", "48,16,3,3", padding="1",
                 layout="nhwc", bias=True), ["--tile-n", "16"], True),
        # NCHW 1x1 on fewer than 64 pixels: the image transposed into the NHWC GEMM.
        (Problem("panels-nchw-1x1-7x7-rows-first", "3,64,7,7", "128,64,1,1",
                 bias=True), ["--tile-n", "32"], True),
        (Problem("panels-conv1d-1x1-rows-first", "2,24,40", "64,24,1"), ["--tile-n", "16"],
         True),
    ]
    # Whether a random problem packs depends on its route (a channels-first 1x1
    # reads W as it is): `packs` None for those.
    fixed += [(p, [], None) for p in random_panel_problems(4, seed=20261204)]
    cases = []
    for problem, extra, packs in fixed:
        extra = extra + ["--num-threads", "2", "--winograd", "off"]
        cases.append((problem.name, numerics_case(problem, extra)))
        cases.append((problem.name + "-packed-once", constant_weights_case(
            problem, extra, REL_TOLERANCE["f32"], packs)))
    return cases


# ----------------------------------------------------------------------------------------
# Set "quantized": --dtype i8 --zero-points, i32 output, exact.
# ----------------------------------------------------------------------------------------

QUANTIZED = [
    Problem("i8-nchw-3x3-p1", "2,8,9,9", "16,8,3,3", padding="1", dtype="i8",
            zero_points="3,-2"),
    Problem("i8-nhwc-stride2-asympad", "1,6,8,9", "5,6,3,3", stride="2",
            padding="2,0,1,1", layout="nhwc", dtype="i8", zero_points="-7,5"),
    Problem("i8-nchw-groups2-dilation2", "1,8,10,10", "6,4,3,3", groups=2, dilation="2",
            padding="2", dtype="i8", zero_points="100,-100"),
    Problem("i8-nchw-depthwise", "2,6,9,7", "6,1,3,3", groups=6, padding="1,2",
            dtype="i8", zero_points="-128,127"),
    # Depthwise runs directly on the zero-point-shifted data (conv-lower-depthwise-
    # direct): channels last in 16-channel vectors, strided; zx = 0, whose padding is
    # absorbed (it reads 0).
    Problem("i8-nhwc-depthwise-stride2", "1,32,11,11", "32,1,3,3", groups=32,
            stride="2", padding="1", layout="nhwc", dtype="i8", zero_points="-5,9"),
    Problem("i8-nhwc-depthwise-zx0", "2,16,7,7", "16,1,3,3", groups=16, padding="1",
            layout="nhwc", dtype="i8", zero_points="0,-4"),
    Problem("i8-nhwc-groups3", "1,6,8,8", "9,2,3,3", groups=3, padding="1",
            layout="nhwc", dtype="i8", zero_points="1,1"),
    Problem("i8-nhwc-1x1-zero-points-0", "2,8,4,4", "8,8,1,1", layout="nhwc", dtype="i8"),
    Problem("i8-conv1d", "2,8,20", "4,8,5", stride="2", padding="2,1", dtype="i8",
            zero_points="9,-3"),
]


def quantized_set():
    return [(p.name, numerics_case(p)) for p in QUANTIZED]


# ----------------------------------------------------------------------------------------
# Set "volumetric": torch's conv3d shapes (N,C,D,H,W; F,C,KD,KH,KW).
# ----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Volumetric:
    name: str
    input: str               # N,C,D,H,W
    filter: str              # F,C,KD,KH,KW
    stride: str = "1"        # S or SD,SH,SW
    dilation: str = "1"
    padding: str = "0"       # P, PD,PH,PW or front,top,left,back,bottom,right
    layout: str = "nchw"     # nchw: NCDHW/FCDHW; nhwc: NDHWC/FDHWC
    dtype: str = "f32"
    bias: bool = False
    target: str = "cpu"

    def triple(self, text):
        v = int_list(text)
        return v * 3 if len(v) == 1 else v

    def pads(self):
        v = int_list(self.padding)
        if len(v) == 1:
            v = v * 3
        return (v[:3], v[3:]) if len(v) == 6 else (v, v)

    def flags(self):
        return (["--input-shape", self.input, "--filter-shape", self.filter,
                 "--stride", self.stride, "--dilation", self.dilation,
                 "--padding", self.padding, "--layout", self.layout,
                 "--dtype", self.dtype, "--target", self.target] +
                (["--bias"] if self.bias else []))

    def reference(self, x, w, bias):
        """Y[n,f,o] = bias + sum_{c,k} W[f,c,k] X[n,c,o*s - lo + k*dil] (3 dims), numpy,
        float64, from the NCDHW/FCDHW forms of the data."""
        if self.layout == "nhwc":
            x, w = np.moveaxis(x, -1, 1), np.moveaxis(w, -1, 1)
        x, w = x.astype(np.float64), w.astype(np.float64)
        lo, hi = self.pads()
        xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(lo, hi)))
        st, dl = self.triple(self.stride), self.triple(self.dilation)
        k = w.shape[2:]
        out = [(xp.shape[2 + i] - dl[i] * (k[i] - 1) - 1) // st[i] + 1 for i in range(3)]
        y = np.zeros((x.shape[0], w.shape[0], *out))
        for a in range(k[0]):
            for b in range(k[1]):
                for c in range(k[2]):
                    taps = xp[:, :, a * dl[0]:a * dl[0] + st[0] * (out[0] - 1) + 1:st[0],
                              b * dl[1]:b * dl[1] + st[1] * (out[1] - 1) + 1:st[1],
                              c * dl[2]:c * dl[2] + st[2] * (out[2] - 1) + 1:st[2]]
                    y += np.einsum("ncdhw,fc->nfdhw", taps, w[:, :, a, b, c])
        if bias is not None:
            y += bias.astype(np.float64)[None, :, None, None, None]
        return np.moveaxis(y, 1, -1) if self.layout == "nhwc" else y


VOLUMETRIC = [
    Volumetric("conv3d-ncdhw-stride-pad", "2,4,6,7,8", "5,4,3,2,3", stride="2,1,1",
               padding="1,0,1"),
    Volumetric("conv3d-ndhwc-bias-asympad", "1,3,5,6,6", "4,3,2,3,3", padding="1,1,0,0,1,2",
               layout="nhwc", bias=True),
    Volumetric("conv3d-ncdhw-dilation2-f16", "1,4,7,6,6", "3,4,2,2,2", dilation="2,1,1",
               dtype="f16"),
    Volumetric("conv3d-ndhwc-f16-twin", "1,16,5,6,6", "32,16,3,3,3", padding="1",
               layout="nhwc", dtype="f16", target="cpu-twin"),
    Volumetric("conv3d-ncdhw-twin", "2,3,4,5,5", "4,3,2,3,3", stride="1,2,1",
               padding="0,1,1", target="cpu-twin"),
]


def volumetric_case(v):
    def body(ctx):
        rng = case_rng(ctx, v.name)
        n, c, d, h, w = int_list(v.input)
        f, cg, kd, kh, kw = int_list(v.filter)
        nhwc = v.layout == "nhwc"
        x = random_values(rng, (n, d, h, w, c) if nhwc else (n, c, d, h, w), v.dtype)
        wt = random_values(rng, (f, kd, kh, kw, cg) if nhwc else (f, cg, kd, kh, kw),
                           v.dtype)
        bias = random_values(rng, (f,), v.dtype) if v.bias else None
        args = v.flags() + FAST + ["--check", "--input", save(ctx, f"{v.name}-x.npy", x),
                                   "--filter", save(ctx, f"{v.name}-w.npy", wt)]
        if bias is not None:
            args += ["--bias-file", save(ctx, f"{v.name}-b.npy", bias)]
        ref = v.reference(x, wt, bias)
        y_path = ctx.tmp / f"{v.name}-y.npy"
        report = run_json(ctx, args + ["--output", y_path])
        y = load_output(y_path, ref.shape)
        max_diff, scale = compare(y, ref, REL_TOLERANCE[v.dtype])
        expect(report.get("check_passed") is True,
               f"check_passed is {report.get('check_passed')}")
        expect(report.get("total_outputs") == ref.size,
               f"total_outputs {report.get('total_outputs')}, Y has {ref.size}")
        return f"max|Y-ref|/max|ref| = {max_diff / scale:.1e}"
    return body


def volumetric_set():
    return [(v.name, volumetric_case(v)) for v in VOLUMETRIC]


# ----------------------------------------------------------------------------------------
# Set "twin": --target cpu-twin, the GPU kernel's loop nest on the CPU.
# ----------------------------------------------------------------------------------------

# Sizes that reach the kernel's other paths than the small NUMERICS problems: channels
# in 16-byte chunks (NHWC, C a multiple of 8 or 4: cp.async-style vector copies of A and
# B), several CTA tiles along M and N with partial last tiles, blocks of 64 and 128
# filters, and a K that is not a multiple of the K step.
TWIN = [
    Problem("twin-f16-nhwc-vector-chunks", "2,16,10,10", "32,16,3,3", padding="1",
            layout="nhwc", dtype="f16"),
    Problem("twin-bf16-nhwc-partial-tiles", "1,32,19,17", "130,32,3,3", stride="2,1",
            padding="1", layout="nhwc", dtype="bf16"),
    Problem("twin-f32-nhwc-tf32-chunks", "2,8,9,9", "72,8,3,3", padding="1,0,2,1",
            layout="nhwc"),
    Problem("twin-f16-nchw-gather", "2,24,11,9", "40,24,3,3", dilation="2", padding="2",
            dtype="f16"),
    # NCHW pixel runs (an M-major A tile read by ldmatrix.trans): Wo a multiple of 4
    # (runs of 4), of 2 with a W stride of 2 (a run's loads 2*xW apart), and a
    # grouped one with a bias; Wo = 9 above keeps the element gather.
    Problem("twin-f16-nchw-pixel-runs", "2,16,12,16", "32,16,3,3", padding="1",
            dtype="f16"),
    Problem("twin-f16-nchw-pixel-runs-stride", "2,16,13,19", "40,16,3,2", stride="1,2",
            dilation="2,1", padding="1,0,2,1", dtype="f16"),
    Problem("twin-bf16-nchw-pixel-runs-groups-bias", "2,32,10,12", "64,8,3,3", groups=4,
            padding="1", dtype="bf16", bias=True),
    # Depthwise (groups = C) runs the direct kernel: 8 f16 channels a thread, the
    # grouped filter's taps gathered 9 elements apart; a bias and a stride; i8 with
    # zero points.
    Problem("twin-f16-nhwc-depthwise-direct", "2,144,9,8", "144,1,3,3", groups=144,
            stride="2,1", padding="1", layout="nhwc", dtype="f16", bias=True),
    Problem("twin-i8-nhwc-depthwise-direct", "2,32,9,10", "32,1,3,3", groups=32,
            padding="1", layout="nhwc", dtype="i8", zero_points="3,-2"),
    Problem("twin-f16-nhwc-groups-bias", "1,32,8,8", "64,8,3,3", groups=4, padding="1",
            layout="nhwc", dtype="f16", bias=True),
    Problem("twin-f32-nchw-depthwise", "2,16,9,9", "16,1,3,3", groups=16, padding="1",
            stride="2"),
    Problem("twin-f16-nhwc-pointwise", "3,64,7,7", "200,64,1,1", layout="nhwc",
            dtype="f16"),
    # i8 on the s8 MMA: torch's quantized padding (zx, filled by the kernel itself:
    # cp.async path for NHWC C = 32, element gather for NCHW), both zero points, the
    # grouped and depthwise forms.
    Problem("twin-i8-nhwc-zero-point-padding", "2,32,9,9", "64,32,3,3", padding="1",
            layout="nhwc", dtype="i8", zero_points="5,-3"),
    Problem("twin-i8-nchw-gather-stride2", "1,12,11,10", "24,12,3,3", stride="2",
            padding="2,1", dtype="i8", zero_points="-20,7"),
    Problem("twin-i8-nhwc-groups-depthwise", "2,16,8,8", "16,1,3,3", groups=16,
            padding="1", layout="nhwc", dtype="i8", zero_points="-128,127"),
]


# Explicit mode (X_col stored by the im2col kernel, read by the GEMM kernel): the
# report counts X_col's bytes again.
TWIN_EXPLICIT = [
    Problem("twin-explicit-f16-nhwc", "2,16,10,10", "32,16,3,3", padding="1",
            layout="nhwc", dtype="f16"),
    Problem("twin-explicit-bf16-nchw-groups-bias", "2,12,9,11", "24,4,3,3", groups=3,
            stride="2", padding="1,0,2,1", dtype="bf16", bias=True),
]


def twin_set():
    implicit = [(p.name, numerics_case(p, ["--target", "cpu-twin"], mode="implicit"))
                for p in TWIN]
    explicit = [(p.name, numerics_case(p, ["--target", "cpu-twin", "--im2col", "explicit"],
                                       mode="explicit"))
                for p in TWIN_EXPLICIT]
    return implicit + explicit


# Set "twin-narrow": the twin on .mlir convolutions whose output is f16 or bf16 (what
# conv-run's flags never build: their f16 output is f32), narrowed in the kernel's
# epilogue. Channels-last outputs are staged through shared memory and stored as
# vectors of 8 (Fg = 40: a 64-wide N tile's overhang carries the bias of a channel
# inside the group), or 4 (Fg = 20); NCHW outputs as vectors of 8 pixels (planes of
# 192, with an M tail: 3 images of 192 rows in 128-row tiles) or 4 (planes of 36); a
# plane of 49 pixels keeps the direct scalar stores. Data on a grid exact in bf16;
# the tolerance is the narrowed output's rounding (1e-2).
@dataclasses.dataclass
class NarrowConv:
    name: str
    layout: str          # "nhwc" (FHWC filter) or "nchw" (FCHW filter)
    dtype: str           # "f16" or "bf16": data, bias and output
    n: int
    c: int
    h: int
    w: int
    f: int
    k: int               # square taps, padding k // 2, stride 1
    store_vector: int    # the staged epilogue's elements per store; 0: direct stores
    bias: bool = False

    def shapes(self):
        if self.layout == "nhwc":
            return ((self.n, self.h, self.w, self.c), (self.f, self.k, self.k, self.c),
                    (self.n, self.h, self.w, self.f))
        return ((self.n, self.c, self.h, self.w), (self.f, self.c, self.k, self.k),
                (self.n, self.f, self.h, self.w))

    def mlir(self):
        (x, w, y), e, p = self.shapes(), self.dtype, self.k // 2
        t = lambda shape: "tensor<" + "x".join(map(str, shape)) + "x" + e + ">"
        padded = list(x)
        hw = (1, 2) if self.layout == "nhwc" else (2, 3)
        for d in hw:
            padded[d] += 2 * p
        low = ", ".join(str(p if d in hw else 0) for d in range(4))
        op = "conv_2d_nhwc_fhwc" if self.layout == "nhwc" else "conv_2d_nchw_fchw"
        channel = 3 if self.layout == "nhwc" else 1
        dims = "(n, a, b, c)"
        bias_arg = f", %b: tensor<{self.f}x{e}>" if self.bias else ""
        lines = [
            f"func.func @conv(%x: {t(x)}, %w: {t(w)}{bias_arg}) -> {t(y)} {{",
            f"  %z = arith.constant 0.0 : {e}",
            f"  %p = tensor.pad %x low[{low}] high[{low}] {{",
            "  ^bb0(%i: index, %j: index, %k: index, %l: index):",
            f"    tensor.yield %z : {e}",
            f"  }} : {t(x)} to {t(padded)}",
            f"  %e = tensor.empty() : {t(y)}",
            f"  %f = linalg.fill ins(%z : {e}) outs(%e : {t(y)}) -> {t(y)}",
            f"  %y = linalg.{op} {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}}",
            f"    ins(%p, %w : {t(padded)}, {t(w)}) outs(%f : {t(y)}) -> {t(y)}",
        ]
        if not self.bias:
            return "\n".join(lines + [f"  return %y : {t(y)}", "}"]) + "\n"
        index = "nabc"[channel]
        lines += [
            "  %r = linalg.generic {indexing_maps = [affine_map<" + dims + " -> " + dims +
            ">, affine_map<" + dims + f" -> ({index})>, affine_map<" + dims + " -> " + dims +
            ">], iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"parallel\"]}",
            f"      ins(%y, %b : {t(y)}, tensor<{self.f}x{e}>) outs(%y : {t(y)}) {{",
            f"  ^bb0(%a: {e}, %c: {e}, %o: {e}):",
            f"    %s = arith.addf %a, %c : {e}",
            f"    linalg.yield %s : {e}",
            f"  }} -> {t(y)}",
            f"  return %r : {t(y)}",
            "}",
        ]
        return "\n".join(lines) + "\n"


TWIN_NARROW = [
    NarrowConv("narrow-bf16-nhwc-fg40-bias", "nhwc", "bf16", 2, 32, 9, 11, 40, 3, 8,
               bias=True),
    NarrowConv("narrow-f16-nhwc-fg20", "nhwc", "f16", 1, 16, 7, 10, 20, 3, 4),
    NarrowConv("narrow-f16-nchw-plane192-tail", "nchw", "f16", 3, 16, 12, 16, 32, 3, 8),
    NarrowConv("narrow-bf16-nchw-plane36-bias", "nchw", "bf16", 2, 8, 6, 6, 24, 3, 4,
               bias=True),
    NarrowConv("narrow-f16-nchw-plane49-direct", "nchw", "f16", 2, 8, 7, 7, 16, 3, 0),
]


def kernel_store_vector(ctx, path):
    """The store_vector the GPU kernel of `path` records (conv-opt's rewrite), 0 if none."""
    r = subprocess.run([ctx.conv_opt, str(path), "--conv-lower-implicit-gemm"],
                       capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    expect(r.returncode == 0, f"conv-opt failed on {path.name}: {r.stderr.strip()[-400:]}")
    tiles = re.search(r"conv_lower\.tiles = #conv_lower\.tiles<([^>]*)>", r.stdout)
    expect(tiles is not None, f"no conv_lower.tiles on the kernel of {path.name}")
    vector = re.search(r"store_vector = (\d+)", tiles.group(1))
    return int(vector.group(1)) if vector else 0


def narrow_case(conv):
    def body(ctx):
        rng = case_rng(ctx, conv.name)
        x_shape, w_shape, y_shape = conv.shapes()
        # Multiples of 1/8 and 1/16 in [-2, 2]: exact in f16 and bf16, and conv-run's
        # f32 -> bf16 conversion of them is exact too.
        x = (rng.integers(-16, 17, size=x_shape) / 8).astype(np.float32)
        w = (rng.integers(-16, 17, size=w_shape) / 16).astype(np.float32)
        bias = (rng.integers(-16, 17, size=(conv.f,)) / 4).astype(np.float32)
        path = ctx.tmp / f"{conv.name}.mlir"
        path.write_text(conv.mlir())
        # The case is about its epilogue: it must still be the one built.
        if ctx.conv_opt:
            vector = kernel_store_vector(ctx, path)
            expect(vector == conv.store_vector,
                   f"the kernel stores {vector or 'no'} vectors, expected "
                   f"{conv.store_vector or 'direct stores'}")
        y_path = ctx.tmp / f"{conv.name}-y.npy"
        args = [path, "--target", "cpu-twin", "--repeat", "1",
                "--input", save(ctx, f"{conv.name}-x.npy", x),
                "--filter", save(ctx, f"{conv.name}-w.npy", w), "--output", y_path]
        if conv.bias:
            args += ["--bias-file", save(ctx, f"{conv.name}-b.npy", bias)]
        run_ok(ctx, args)
        y = load_output(y_path, y_shape)
        nhwc = conv.layout == "nhwc"
        xr, wr = (x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2)) if nhwc else (x, w)
        p = conv.k // 2
        ref = conv2d_nchw_reference(xr, wr, bias if conv.bias else None, (1, 1), (1, 1),
                                    (p, p, p, p), 1)
        ref = ref.transpose(0, 2, 3, 1) if nhwc else ref
        max_diff, scale = compare(y, ref, 1e-2)
        return f"max|Y-ref|/max|ref| = {max_diff / scale:.1e}"
    return body


def twin_narrow_set():
    return [(c.name, narrow_case(c)) for c in TWIN_NARROW]


# The sm_90a kernels' twin (--chip sm_90a): TMA im2col and tiled boxes, the 128-byte
# swizzle, the mbarrier ring and wgmma's descriptors and fragments emulated from the
# kernel's own values. NHWC with FHWC filters and channels in multiples of 64 (what
# the family takes): M tiles crossing images and past the batch (zero fill), n64 and
# n128 tiles with a partial last one, asymmetric padding and strides (the box's
# corners and traversal strides), dilation with 18 K tiles (the 6-slot ring wraps
# three times), groups with a bias (B rows g*Fg..), 5x5 taps, one K tile (fewer
# tiles than slots) and a pointwise stride-2 layer.
TWIN_SM90A = [
    Problem("sm90a-f16-3x3-images", "2,64,9,11", "64,64,3,3", padding="1",
            layout="nhwc", dtype="f16"),
    Problem("sm90a-bf16-stride2-asymmetric", "1,64,13,12", "96,64,3,3", stride="2",
            padding="1,0,2,1", layout="nhwc", dtype="bf16"),
    Problem("sm90a-f16-dilation2-ring-wraps", "1,128,10,10", "64,128,3,3",
            dilation="2", padding="2", layout="nhwc", dtype="f16"),
    Problem("sm90a-f16-groups-bias", "1,128,8,8", "128,64,3,3", groups=2, padding="1",
            layout="nhwc", dtype="f16", bias=True),
    Problem("sm90a-bf16-5x5-batch3", "3,64,6,5", "64,64,5,5", padding="2",
            layout="nhwc", dtype="bf16"),
    Problem("sm90a-f16-pointwise-stride2", "2,64,7,7", "200,64,1,1", stride="2",
            layout="nhwc", dtype="f16"),
    # f32 data (tf32 math, m64nNk8, 32-channel K tiles), checked at f32's
    # tolerance: the twin reads the operands as stored (the GPU's tf32 precision
    # is the device's check).
    Problem("sm90a-tf32-c32-images", "2,32,9,11", "64,32,3,3", padding="1",
            layout="nhwc"),
    Problem("sm90a-tf32-groups-bias-stride2", "1,128,11,10", "144,64,3,3", groups=2,
            stride="2", padding="1,0,2,1", layout="nhwc", bias=True),
    # The epilogue: staged into 8-byte vectors (Fg = 50 holds no 16-byte one), and
    # the direct stores of an odd Fg (the other cases stage 16-byte vectors).
    Problem("sm90a-f16-fg50-staged-pairs", "2,64,6,7", "50,64,3,3", padding="1",
            layout="nhwc", dtype="f16", bias=True),
    Problem("sm90a-bf16-fg45-direct", "1,64,7,6", "45,64,3,3", padding="1",
            layout="nhwc", dtype="bf16"),
    # The producer warpgroup's gather where TMA im2col cannot load the image: NCHW
    # (K in the FCHW filter's (c, kh, kw) order, the tap table's entries and
    # masks), stride 2 with asymmetric padding and a partial n128 tile, groups with
    # a bias in tf32, 5x5 taps with the 4-slot ring wrapping six times, a pointwise
    # layer, and a channels-last image whose 24 channels split K tiles across taps
    # (its last tile padded with zeros).
    Problem("sm90a-gather-f16-nchw-images", "2,64,9,11", "64,64,3,3", padding="1",
            dtype="f16"),
    Problem("sm90a-gather-bf16-nchw-stride2-asymmetric", "1,64,13,12", "136,64,3,3",
            stride="2", padding="1,0,2,1", dtype="bf16"),
    Problem("sm90a-gather-tf32-nchw-groups-bias", "1,64,11,10", "144,32,3,3",
            groups=2, stride="2", padding="1", bias=True),
    Problem("sm90a-gather-f16-nchw-5x5-ring-wraps", "1,64,8,8", "64,64,5,5",
            padding="2", dtype="f16"),
    Problem("sm90a-gather-bf16-nchw-pointwise-batch3", "3,128,7,7", "200,128,1,1",
            dtype="bf16"),
    Problem("sm90a-gather-f16-nhwc-c24-dilation2", "2,24,10,9", "40,24,3,3",
            dilation="2", padding="2", layout="nhwc", dtype="f16"),
]


def random_sm90a_window(rng):
    """Filters per group, kernel size, strides, dilations, image size and the
    four paddings of a random sm_90a problem, drawn in this order."""
    fg = rng.choice([8, 16, 40, 64, 72, 96, 128, 136, 200])
    kh, kw = rng.choice([1, 2, 3, 3, 5]), rng.choice([1, 2, 3, 3, 4])
    sh, sw = rng.choice([1, 1, 2, 3]), rng.choice([1, 1, 2, 4])
    dh, dw = rng.choice([1, 1, 2]), rng.choice([1, 1, 3])
    h, w = rng.randint(1, 14), rng.randint(1, 14)
    pads = [rng.randint(0, 3) for _ in range(4)]
    return fg, kh, kw, sh, sw, dh, dw, h, w, pads


def random_sm90a_problems(count, seed):
    """Random convolutions of the kind the sm_90a family takes (NHWC f16/bf16 with 64
    or 128 channels per group, f32 with 32 or 64; FHWC filters): kernel sizes 1-5, strides 1-4 (W) and 1-3 (H),
    dilations, asymmetric padding, groups, filters per group from 8 to 200, images
    down to 1x1, with a bias now and then; the ones with an empty output are redrawn.
    A soak of 300 such configurations passed when written (seed 7)."""
    rng = random.Random(seed)
    problems = []
    while len(problems) < count:
        dtype = rng.choice(["f16", "bf16", "f32"])
        groups = rng.choice([1, 1, 1, 2])
        cg = rng.choice([32, 64] if dtype == "f32" else [64, 64, 128])
        fg, kh, kw, sh, sw, dh, dw, h, w, pads = random_sm90a_window(rng)
        if ((h + pads[0] + pads[2] - dh * (kh - 1) - 1) < 0 or
                (w + pads[1] + pads[3] - dw * (kw - 1) - 1) < 0):
            continue
        problems.append(Problem(
            f"sm90a-random-{seed}-{len(problems)}", f"{rng.choice([1, 2, 3])},{groups * cg},{h},{w}",
            f"{groups * fg},{cg},{kh},{kw}", stride=f"{sh},{sw}", dilation=f"{dh},{dw}",
            padding=",".join(map(str, pads)), groups=groups, layout="nhwc",
            dtype=dtype, bias=rng.random() < 0.3))
    return problems


def random_sm90a_gather_problems(count, seed):
    """Random convolutions the sm_90a family takes with a gathered A tile: NCHW
    images, or channels-last ones whose channels per group are no multiple of the
    64 (f32: 32) a TMA im2col box holds; channels per group keep K a multiple of 16
    bytes (TMA's filter strides). Otherwise drawn as random_sm90a_problems. A soak
    of 200 such configurations passed when written (seed 5)."""
    rng = random.Random(seed)
    problems = []
    while len(problems) < count:
        dtype = rng.choice(["f16", "bf16", "f32"])
        layout = rng.choice(["nchw", "nchw", "nhwc"])
        groups = rng.choice([1, 1, 1, 2])
        cgs = [4, 8, 12, 20, 32, 48] if dtype == "f32" else [8, 16, 24, 40, 64, 96]
        cg = rng.choice(cgs)
        if layout == "nhwc" and cg % (32 if dtype == "f32" else 64) == 0:
            continue
        fg, kh, kw, sh, sw, dh, dw, h, w, pads = random_sm90a_window(rng)
        if ((h + pads[0] + pads[2] - dh * (kh - 1) - 1) < 0 or
                (w + pads[1] + pads[3] - dw * (kw - 1) - 1) < 0):
            continue
        problems.append(Problem(
            f"sm90a-gather-random-{seed}-{len(problems)}",
            f"{rng.choice([1, 2, 3])},{groups * cg},{h},{w}",
            f"{groups * fg},{cg},{kh},{kw}", stride=f"{sh},{sw}", dilation=f"{dh},{dw}",
            padding=",".join(map(str, pads)), groups=groups, layout=layout,
            dtype=dtype, bias=rng.random() < 0.3))
    return problems


def twin_sm90a_set():
    return [(p.name, numerics_case(p, ["--target", "cpu-twin", "--chip", "sm_90a"],
                                   mode="implicit"))
            for p in TWIN_SM90A + random_sm90a_problems(16, seed=12) +
            random_sm90a_gather_problems(8, seed=21)]


# ----------------------------------------------------------------------------------------
# Set "json".
# ----------------------------------------------------------------------------------------

NUMBER = "number"        # int or float (the report prints %.6g: 9 reads back as an int)
NULLABLE_NUMBER = "number or null"
NULLABLE_INT = "int or null"

# Every key of a flags run with --check and --output, and its type.
REPORT_KEYS = {
    "problem": str, "source": str, "target": str, "target_reason": str, "device": dict,
    "pipeline": str, "im2col": str, "threads": int, "compile_ms": NUMBER, "repeat": int, "warmup": int,
    "lowered_ms": NUMBER, "reference_ms": NULLABLE_NUMBER, "reference_repeat": int,
    "reference_kind": str, "speedup": NULLABLE_NUMBER, "gflops": NULLABLE_NUMBER,
    "check_against": str, "max_abs_diff": NUMBER, "rel_l2_error": NUMBER,
    "tolerance": NUMBER, "checked_outputs": int, "total_outputs": int,
    "check_passed": bool, "input_bytes": NULLABLE_INT, "im2col_bytes": NULLABLE_INT,
    "inflation": NULLABLE_NUMBER, "output": str,
}
DEVICE_KEYS = {"count": int, "driver_version": str, "problem": str, "devices": list}

# Lines of the human report, by their first word.
HUMAN_LINES = ["target", "compile", "lowered", "reference", "check", "memory"]

SMALL = Problem("small", "1,4,8,8", "8,4,3,3", padding="1", bias=True)


def has_type(value, kind):
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == NUMBER:
        return is_number
    if kind == NULLABLE_NUMBER:
        return value is None or is_number
    if kind == NULLABLE_INT:
        return value is None or (isinstance(value, int) and not isinstance(value, bool))
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def type_errors(obj, keys, where):
    errors = []
    for key, kind in keys.items():
        if key not in obj:
            errors.append(f"{where}{key} missing")
        elif not has_type(obj[key], kind):
            errors.append(f"{where}{key} = {obj[key]!r} is not {getattr(kind, '__name__', kind)}")
    return errors


def case_json_keys(ctx):
    y_path = ctx.tmp / "keys-y.npy"
    report = run_json(ctx, SMALL.flags() + ["--check", "--repeat", "3", "--warmup", "1",
                                            "--reference-repeat", "1", "--output", y_path])
    errors = type_errors(report, REPORT_KEYS, "")
    device = report.get("device")
    if isinstance(device, dict):
        keys = dict(DEVICE_KEYS)
        if device.get("count"):  # the problem is stated only when no device is usable
            keys.pop("problem")
        errors += type_errors(device, keys, "device.")
    expect(not errors, "; ".join(errors))
    expected = {"source": "flags", "target": "cpu", "pipeline": "conv-lower-to-llvm",
                "im2col": "panels", "repeat": 3, "warmup": 1, "reference_repeat": 1,
                "output": str(y_path)}
    wrong = [f"{k} = {report[k]!r}, expected {v!r}" for k, v in expected.items() if report[k] != v]
    expect(not wrong, "; ".join(wrong))
    expect("float64" in report["check_against"], f"check_against {report['check_against']!r}")
    # Threads by default: every core this process may use.
    cores = len(os.sched_getaffinity(0))
    expect(report["threads"] == cores,
           f"threads = {report['threads']}, expected every usable core ({cores})")
    return f"{len(REPORT_KEYS)} keys"


def case_json_reference_none(ctx):
    report = run_json(ctx, SMALL.flags() + FAST)
    for key in ("reference_ms", "speedup"):
        value = report.get(key, "missing")
        expect(value is None, f"{key} = {value!r}, expected null")
    expect(report.get("reference_repeat") == 0,
           f"reference_repeat = {report.get('reference_repeat')!r}")
    expect("check_passed" not in report, "check keys present without --check")


def human_lines(text):
    return {line.split()[0] for line in text.splitlines() if line.strip()}


def case_human_report(ctx):
    firsts = human_lines(run_ok(ctx, SMALL.flags() + ["--check", "--repeat", "1"]))
    missing = [w for w in HUMAN_LINES if w not in firsts]
    expect(not missing, f"no line starting with {missing}; lines start with {sorted(firsts)}")
    firsts = human_lines(run_ok(ctx, SMALL.flags() + FAST + ["--check"]))
    missing = [w for w in HUMAN_LINES if w != "reference" and w not in firsts]
    expect(not missing, f"--reference none: no line starting with {missing}")
    expect("reference" not in firsts, "--reference none still prints a reference line")


def case_reference_direct(ctx):
    report = run_json(ctx, SMALL.flags() + ["--reference", "direct", "--reference-repeat", "1",
                                            "--repeat", "1"])
    ref, low, speedup = report["reference_ms"], report["lowered_ms"], report["speedup"]
    expect(isinstance(ref, (int, float)) and ref > 0, f"reference_ms = {ref!r}")
    expect(isinstance(low, (int, float)) and low > 0, f"lowered_ms = {low!r}")
    # Three numbers of 6 significant digits each.
    expect(isinstance(speedup, (int, float)) and close(speedup, ref / low, 1e-4),
           f"speedup {speedup} != reference_ms/lowered_ms = {ref / low:.6g}")
    expect(report["reference_repeat"] == 1, f"reference_repeat = {report['reference_repeat']}")
    return f"reference {ref:.3g} ms, lowered {low:.3g} ms"


EMIT_CASES = [
    Problem("nchw", "1,4,8,8", "4,4,3,3"),
    Problem("nchw-padded-bias", "1,4,8,8", "4,4,3,3", padding="1", bias=True),
    Problem("nchw-groups2", "1,4,8,8", "6,2,3,3", groups=2, padding="0,1,0,0"),
    Problem("nchw-depthwise", "1,4,8,8", "4,1,3,3", groups=4, padding="1"),
    Problem("nchw-depthwise-multiplier2", "1,4,8,8", "8,1,3,3", groups=4),
    Problem("nhwc", "1,4,8,8", "4,4,3,3", layout="nhwc"),
    Problem("nhwc-groups2-padded", "1,4,8,8", "6,2,3,3", groups=2, padding="1,0",
            layout="nhwc"),
    Problem("nhwc-depthwise", "1,4,8,8", "4,1,3,3", groups=4, layout="nhwc"),
    Problem("nhwc-bf16-bias", "1,4,8,8", "4,4,3,3", bias=True, layout="nhwc", dtype="bf16"),
    Problem("i8-nchw-padded", "1,4,8,8", "4,4,3,3", padding="1", dtype="i8",
            zero_points="5,-3"),
    Problem("i8-nchw-depthwise", "1,4,8,8", "4,1,3,3", groups=4, dtype="i8",
            zero_points="1,2"),
    Problem("i8-nhwc-groups2", "1,4,8,8", "6,2,3,3", groups=2, layout="nhwc", dtype="i8"),
    Problem("conv1d", "1,4,8", "4,4,3", padding="1"),
]


def emit_case(problem):
    def body(ctx):
        text = run_ok(ctx, problem.flags() + ["--emit-mlir"])
        expect("func.func @conv" in text, "no func.func @conv in the --emit-mlir output")
        ops = set(re.findall(r"linalg\.((?:depthwise_)?conv_2d_\w+)", text))
        want = problem.emitted_conv_op()
        expect(ops == {want}, f"conv ops {sorted(ops)}, expected [{want}]")
        padded = any(problem.pads())
        expect(("tensor.pad" in text) == padded,
               f"tensor.pad {'missing' if padded else 'present'} with --padding {problem.padding}")
        expect(("linalg.generic" in text) == problem.bias,
               f"bias generic {'missing' if problem.bias else 'present'}")
        if problem.dtype == "i8":
            # The zero points are the _q op's i32 operands; the pad value is XZ.
            zx, zw = problem.zx_zw
            for value in {zx, zw}:
                expect(f"arith.constant {value} : i32" in text,
                       f"no i32 zero point {value} in the module")
            expect("-> tensor<" in text and "xi32>" in text, "the output is not i32")
            if padded:
                expect(f"arith.constant {zx} : i8" in text, f"the pad value is not {zx}")
        return want
    return body


# A conv_2d_nhwc_hwcf function as a user would write it: X NHWC, W HWCF, Y NHWC.
HWCF_FUNCTION = """\
func.func @{name}(%x: tensor<{x}xf32>, %w: tensor<{w}xf32>) -> tensor<{y}xf32> {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<{y}xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<{y}xf32>) -> tensor<{y}xf32>
  %y = linalg.conv_2d_nhwc_hwcf
      {{strides = dense<[{sh}, {sw}]> : tensor<2xi64>,
        dilations = dense<[{dh}, {dw}]> : tensor<2xi64>}}
      ins(%x, %w : tensor<{x}xf32>, tensor<{w}xf32>)
      outs(%init : tensor<{y}xf32>) -> tensor<{y}xf32>
  return %y : tensor<{y}xf32>
}}
"""


@dataclasses.dataclass(frozen=True)
class HwcfConv:
    """An unpadded conv_2d_nhwc_hwcf problem for a .mlir file."""
    name: str
    x: tuple                  # N, H, W, C
    w: tuple                  # KH, KW, C, F
    stride: tuple = (1, 1)
    dilation: tuple = (1, 1)

    def y(self):
        n, h, w, _ = self.x
        kh, kw, _, f = self.w
        (sh, sw), (dh, dw) = self.stride, self.dilation
        return (n, (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1, f)

    def mlir(self):
        dims = lambda s: "x".join(map(str, s))
        return HWCF_FUNCTION.format(name=self.name, x=dims(self.x), w=dims(self.w),
                                    y=dims(self.y()), sh=self.stride[0], sw=self.stride[1],
                                    dh=self.dilation[0], dw=self.dilation[1])

    def reference(self, x, w):
        y = conv2d_nchw_reference(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), None,
                                  self.stride, self.dilation, (0, 0, 0, 0), 1)
        return y.transpose(0, 2, 3, 1)


def run_file_conv(ctx, conv, path, extra):
    """Runs conv from `path` on fresh .npy data; returns (report, Y) after comparing Y with
    numpy."""
    rng = case_rng(ctx, conv.name + path.name)
    x, w = random_values(rng, conv.x, "f32"), random_values(rng, conv.w, "f32")
    y_path = ctx.tmp / f"{path.stem}-{conv.name}-y.npy"
    report = run_json(ctx, [path, "--input", save(ctx, f"{conv.name}-x.npy", x),
                            "--filter", save(ctx, f"{conv.name}-w.npy", w),
                            "--output", y_path, "--repeat", "1"] + extra)
    y = load_output(y_path, conv.y())
    compare(y, conv.reference(x, w), REL_TOLERANCE["f32"])
    return report, y


def case_mlir_file(ctx):
    conv = HwcfConv("conv", (2, 7, 7, 3), (3, 3, 3, 4), stride=(2, 1))
    path = ctx.tmp / "hwcf.mlir"
    path.write_text(conv.mlir())
    report, _ = run_file_conv(ctx, conv, path, ["--check", "--reference-repeat", "1"])
    expect(report.get("source") == str(path),
           f"source = {report.get('source')!r}, expected {str(path)!r}")
    expect(report.get("check_passed") is True, f"check_passed = {report.get('check_passed')!r}")
    expect("reference lowering" in str(report.get("check_against")),
           f"check_against = {report.get('check_against')!r}")
    expect("conv_2d_nhwc_hwcf" in str(report.get("problem")),
           f"problem = {report.get('problem')!r}")


DYNAMIC_BATCH_FUNCTION = """\
func.func @conv(%x: tensor<?x7x7x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<?x5x5x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x7x7x3xf32>
  %empty = tensor.empty(%n) : tensor<?x5x5x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x5x5x4xf32>) -> tensor<?x5x5x4xf32>
  %y = linalg.conv_2d_nhwc_hwcf
      {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x7x7x3xf32>, tensor<3x3x3x4xf32>)
      outs(%init : tensor<?x5x5x4xf32>) -> tensor<?x5x5x4xf32>
  return %y : tensor<?x5x5x4xf32>
}
"""


def case_mlir_file_dynamic_batch(ctx):
    """A dynamic batch: the CPU's panels leave that GEMM with X_col whole, and the
    report says so (explicit, not panels)."""
    conv = HwcfConv("conv", (2, 7, 7, 3), (3, 3, 3, 4))
    path = ctx.tmp / "dynamic.mlir"
    path.write_text(DYNAMIC_BATCH_FUNCTION)
    report, _ = run_file_conv(ctx, conv, path, ["--check", "--reference-repeat", "1"])
    expect(report.get("check_passed") is True, f"check_passed = {report.get('check_passed')!r}")
    expect(report.get("im2col") == "explicit",
           f"im2col = {report.get('im2col')!r}, expected 'explicit' (dynamic batch)")


def case_function_select(ctx):
    convs = [HwcfConv("first", (1, 6, 6, 2), (3, 3, 2, 3)),
             HwcfConv("second", (1, 9, 8, 3), (2, 2, 3, 5), dilation=(2, 3))]
    path = ctx.tmp / "two.mlir"
    path.write_text("\n".join(c.mlir() for c in convs))
    for conv in convs:
        report, _ = run_file_conv(ctx, conv, path, ["--function", conv.name, "--reference", "none"])
        expect(f"@{conv.name}" in str(report.get("problem")),
               f"--function {conv.name}: problem = {report.get('problem')!r}")


def case_seed(ctx):
    def output(seed, tag):
        y_path = ctx.tmp / f"seed-{tag}.npy"
        run_ok(ctx, SMALL.flags() + FAST + ["--seed", seed, "--output", y_path])
        return load_output(y_path, SMALL.shapes()[2])
    first, again, other = output(7, "a"), output(7, "b"), output(8, "c")
    expect(first.tobytes() == again.tobytes(), "--seed 7 twice: outputs differ")
    expect(not np.array_equal(first, other), "--seed 7 and --seed 8 give the same output")


def json_set():
    return ([("json-keys-and-types", case_json_keys),
             ("json-reference-none", case_json_reference_none),
             ("human-report-lines", case_human_report),
             ("reference-direct-speedup", case_reference_direct)] +
            [(f"emit-mlir-{p.name}", emit_case(p)) for p in EMIT_CASES] +
            [("mlir-file-hwcf", case_mlir_file),
             ("mlir-file-dynamic-batch", case_mlir_file_dynamic_batch),
             ("mlir-file-function-select", case_function_select),
             ("seed-reproducible", case_seed)])


# ----------------------------------------------------------------------------------------
# Set "bad-input".
# ----------------------------------------------------------------------------------------

GOOD = ["--input-shape", "1,4,8,8", "--filter-shape", "8,4,3,3"]

# Files the cases refer to as {tmp}/NAME; written by write_bad_input_files.
MALFORMED_MLIR = """\
func.func @conv(%x: tensor<1x6x6x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<1x4x4x4xf32> {
  %y = linalg.frobnicate %x, %w : tensor<1x6x6x3xf32>
  return %y : tensor<1x4x4x4xf32>
}
"""
SCALAR_ARGS_MLIR = """\
func.func @conv(%x: f32, %w: f32) -> f32 {
  %y = arith.mulf %x, %w : f32
  return %y : f32
}
"""
MEMREF_ARGS_MLIR = """\
func.func @conv(%x: memref<1x6x6x3xf32>, %w: memref<3x3x3x4xf32>) -> memref<1x4x4x4xf32> {
  %y = memref.alloc() : memref<1x4x4x4xf32>
  return %y : memref<1x4x4x4xf32>
}
"""


def write_bad_input_files(ctx):
    np.save(ctx.tmp / "x_wrong_shape.npy", np.zeros((1, 4, 8, 9), np.float32))
    np.save(ctx.tmp / "x_float64.npy", np.zeros((1, 4, 8, 8), np.float64))
    np.save(ctx.tmp / "x_fortran.npy", np.asfortranarray(np.zeros((1, 4, 8, 8), np.float32)))
    np.save(ctx.tmp / "b_wrong_shape.npy", np.zeros((4,), np.float32))
    (ctx.tmp / "not_npy.npy").write_text("just text, no NUMPY magic\n")
    # A header claiming 2^62 float32 elements over 16 bytes of data: the byte
    # count must not wrap (it once aborted with std::length_error).
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    (ctx.tmp / "huge_shape.npy").write_bytes(
        b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(16))
    (ctx.tmp / "malformed.mlir").write_text(MALFORMED_MLIR)
    two = [HwcfConv(name, (1, 6, 6, 3), (3, 3, 3, 4)).mlir() for name in ("a", "b")]
    (ctx.tmp / "two_functions.mlir").write_text("\n".join(two))
    (ctx.tmp / "scalar_args.mlir").write_text(SCALAR_ARGS_MLIR)
    (ctx.tmp / "memref_args.mlir").write_text(MEMREF_ARGS_MLIR)


@dataclasses.dataclass(frozen=True)
class BadInput:
    name: str
    args: list               # "{tmp}" stands for the temp dir
    names: tuple             # regexes (case-insensitive) the error line must match
    located: bool = False    # a file:line:col diagnostic comes first (a .mlir parse error)


BAD_INPUTS = [
    # The problem
    BadInput("channels-not-divisible-by-groups",
             ["--input-shape", "1,6,8,8", "--filter-shape", "4,2,3,3", "--groups", "4"],
             (r"C=6|\b6\b", r"divisible")),
    BadInput("filter-input-channel-mismatch",
             ["--input-shape", "1,4,8,8", "--filter-shape", "8,3,3,3"], (r"channel", r"\b3\b")),
    BadInput("filters-not-divisible-by-groups",
             ["--input-shape", "1,4,8,8", "--filter-shape", "6,1,3,3", "--groups", "4"],
             (r"F=6|\b6\b", r"divisible")),
    BadInput("kernel-larger-than-padded-input",
             ["--input-shape", "1,2,4,4", "--filter-shape", "2,2,7,7", "--padding", "1"],
             (r"kernel", r"7x7|\b7\b")),
    BadInput("zero-stride", GOOD + ["--stride", "0"], (r"--stride",)),
    # quantized (--dtype i8, --zero-points) and conv1d shapes
    BadInput("zero-points-without-i8", GOOD + ["--zero-points", "1,2"],
             (r"--zero-points", r"--dtype i8")),
    BadInput("zero-points-out-of-range", GOOD + ["--dtype", "i8", "--zero-points", "300,1"],
             (r"--zero-points", r"-128\.\.127")),
    # bf16 epilogues: float outputs on the CPU route
    BadInput("bf16-output-i8", GOOD + ["--dtype", "i8", "--bf16-output"],
             (r"bf16 output", r"int32")),
    BadInput("bf16-residual-without-residual", GOOD + ["--bf16-residual"],
             (r"bf16 residual", r"--residual")),
    BadInput("bf16-output-on-twin", GOOD + ["--bf16-output", "--target", "cpu-twin"],
             (r"--bf16-output", r"--target cpu")),
    BadInput("zero-points-malformed", GOOD + ["--dtype", "i8", "--zero-points", "1"],
             (r"--zero-points", r"XZ,WZ")),
    BadInput("i8-with-bias", GOOD + ["--dtype", "i8", "--bias"], (r"--bias", r"i8")),
    BadInput("conv1d-with-a-2d-filter", ["--input-shape", "1,4,8", "--filter-shape",
                                          "8,4,3,3"], (r"--filter-shape", r"3 values")),
    BadInput("conv1d-with-two-strides", ["--input-shape", "1,4,8", "--filter-shape",
                                          "8,4,3", "--stride", "1,2"], (r"--stride",)),
    BadInput("negative-dilation", GOOD + ["--dilation=-1"], (r"--dilation",)),
    BadInput("input-shape-rank-6", ["--input-shape", "1,4,8,8,8,8", "--filter-shape",
                                     "8,4,3,3,3,3"], (r"--input-shape", r"3, 4 or 5 values")),
    BadInput("conv3d-grouped", ["--input-shape", "1,4,6,6,6", "--filter-shape", "4,2,3,3,3",
                                "--groups", "2"], (r"3-D", r"--groups 1")),
    BadInput("conv3d-i8", ["--input-shape", "1,4,6,6,6", "--filter-shape", "4,4,3,3,3",
                           "--dtype", "i8"], (r"--dtype i8", r"2-D")),
    BadInput("conv3d-two-strides", ["--input-shape", "1,4,6,6,6", "--filter-shape",
                                    "4,4,3,3,3", "--stride", "1,2"], (r"--stride",)),
    BadInput("conv3d-depth-kernel-too-long", ["--input-shape", "1,4,2,6,6", "--filter-shape",
                                              "4,4,3,3,3"], (r"depth",)),
    BadInput("conv3d-bundle", ["--input-shape", "1,4,6,6,6", "--filter-shape", "4,4,3,3,3",
                               "--emit-bundle", "{tmp}/bundle3d"],
             (r"--emit-bundle", r"2-D")),
    BadInput("padding-3-values", GOOD + ["--padding", "1,1,1"], (r"--padding",)),
    BadInput("unknown-dtype", GOOD + ["--dtype", "f64"], (r"--dtype", r"f64")),
    BadInput("unknown-layout", GOOD + ["--layout", "nchwc"], (r"--layout", r"nchwc")),
    BadInput("unknown-target", GOOD + ["--target", "tpu"], (r"--target", r"tpu")),
    BadInput("emit-bundle-unknown-chip",
             GOOD + ["--emit-bundle", "{tmp}/bundle", "--chip", "sm_75"],
             (r"--chip", r"sm_75")),
    BadInput("emit-bundle-explicit-im2col",
             GOOD + ["--im2col", "explicit", "--emit-bundle", "{tmp}/bundle"],
             (r"explicit", r"bundle")),
    BadInput("problem-flag-with-mlir-file",
             ["{tmp}/two_functions.mlir", "--function", "a", "--residual"],
             (r"--residual", r"two_functions\.mlir", r"function is the problem")),
    BadInput("layout-with-mlir-file", ["{tmp}/two_functions.mlir", "--layout", "nhwc"],
             (r"--layout", r"drop --layout")),
    BadInput("emit-bundle-from-mlir-file",
             ["{tmp}/two_functions.mlir", "--function", "a", "--emit-bundle", "{tmp}/bundle"],
             (r"--emit-bundle", r"flags")),
    BadInput("repeat-0", GOOD + ["--repeat", "0"], (r"--repeat",)),
    BadInput("absurd-stride", GOOD + ["--stride", "9223372036854775807"],
             (r"--stride", r"limited to 1048576")),
    BadInput("absurd-padding", GOOD + ["--padding", "4000000000"],
             (r"--padding", r"limited to 1048576")),
    BadInput("non-integer-groups", GOOD + ["--groups=abc"], (r"--groups", r"abc")),
    BadInput("unknown-option", GOOD + ["--bogus"], (r"--bogus",)),
    BadInput("element-count-overflows",
             ["--input-shape", "4611686018427387904,4,1,1", "--filter-shape", "1,4,1,1"],
             (r"overflow|too large|exceed",)),
    # .npy data
    BadInput("npy-wrong-shape", GOOD + ["--input", "{tmp}/x_wrong_shape.npy"],
             (r"x_wrong_shape\.npy", r"shape")),
    BadInput("npy-float64", GOOD + ["--input", "{tmp}/x_float64.npy"],
             (r"x_float64\.npy", r"dtype|f8|float64")),
    BadInput("npy-fortran-order", GOOD + ["--input", "{tmp}/x_fortran.npy"],
             (r"x_fortran\.npy", r"fortran")),
    BadInput("npy-header-shape-overflows", GOOD + ["--input", "{tmp}/huge_shape.npy"],
             (r"huge_shape\.npy", r"shape")),
    BadInput("not-an-npy-file", GOOD + ["--filter", "{tmp}/not_npy.npy"],
             (r"not_npy\.npy", r"not a \.npy|npy")),
    BadInput("bias-file-wrong-shape", GOOD + ["--bias-file", "{tmp}/b_wrong_shape.npy"],
             (r"b_wrong_shape\.npy", r"shape")),
    # .mlir files
    BadInput("malformed-mlir", ["{tmp}/malformed.mlir"], (r"malformed\.mlir",), located=True),
    BadInput("mlir-two-public-functions-no-conv", ["{tmp}/two_functions.mlir"],
             (r"--function",)),
    BadInput("mlir-function-not-found", ["{tmp}/two_functions.mlir", "--function", "nosuch"],
             (r"nosuch",)),
    BadInput("missing-mlir-file", ["{tmp}/missing.mlir"],
             (r"missing\.mlir",
              r"no such file|could not open|cannot open|not found|does not exist")),
    BadInput("mlir-scalar-arguments", ["{tmp}/scalar_args.mlir"], (r"tensor",)),
    BadInput("mlir-memref-arguments", ["{tmp}/memref_args.mlir"], (r"tensor",)),
    BadInput("mlir-file-and-shape-flags", ["{tmp}/two_functions.mlir"] + GOOD,
             (r"\.mlir|--input-shape",)),
    BadInput("mlir-check-without-reference",
             ["{tmp}/two_functions.mlir", "--function", "a", "--check", "--reference", "none"],
             (r"--reference",)),
]

# Only where no GPU is usable (what CI has): the fix and the CPU twin are named.
if os.environ.get("CONV_LOWER_CUDA_DEVICE") != "1":
    BAD_INPUTS.append(BadInput("target-cuda-without-device", GOOD + ["--target", "cuda"],
                               (r"no usable CUDA device", r"cpu-twin")))

ERROR_PREFIX = "conv-run: error:"


def is_located_diagnostic_line(line, path_name):
    """A diagnostic at file:line:col, or the source line and caret MLIR prints under it."""
    return bool(re.match(rf".*{re.escape(path_name)}:\d+:\d+: ", line)) or line.startswith(" ")


def bad_input_case(case):
    def body(ctx):
        y_path = ctx.tmp / f"{case.name}-y.npy"
        args = [a.replace("{tmp}", str(ctx.tmp)) for a in case.args] + ["--output", y_path]
        r = run_conv_run(ctx, args)
        cmd = command_text(ctx, args)
        stderr = r.stderr.rstrip("\n")
        # The head of stderr: the message, or what crashed before the stack dump.
        expect(r.returncode == 2, f"exit status {r.returncode}, expected 2 from `{cmd}`; "
                                  f"stderr: {stderr[:300]!r}")
        crash = [m for m in CRASH_MARKERS if m in r.stderr]
        expect(not crash, f"crash output ({', '.join(crash)}) from `{cmd}`")
        expect(not y_path.exists(), "--output file written for bad input")
        expect(r.stdout == "", f"stdout not empty: {r.stdout[:200]!r}")
        lines = stderr.splitlines()
        errors = [l for l in lines if l.startswith(ERROR_PREFIX)]
        expect(len(errors) == 1 and lines[-1] == errors[0],
               f"stderr must end with exactly one '{ERROR_PREFIX}' line: {stderr!r}")
        others = lines[:-1]
        if case.located:
            file_name = Path(case.args[0]).name
            expect(any(re.match(rf".*{re.escape(file_name)}:\d+:\d+: error", l) for l in others),
                   f"no {file_name}:line:col: error diagnostic: {stderr!r}")
            stray = [l for l in others if not is_located_diagnostic_line(l, file_name)]
            expect(not stray, f"lines besides the located diagnostic: {stray}")
        else:
            expect(not others, f"{len(others)} line(s) besides the error line: {stderr!r}")
        unnamed = [n for n in case.names if not re.search(n, errors[0], re.IGNORECASE)]
        expect(not unnamed, f"error line does not match {unnamed}: {errors[0]!r}")
        return errors[0][len(ERROR_PREFIX):].strip()
    return body


def bad_input_set():
    return [(c.name, bad_input_case(c)) for c in BAD_INPUTS]


# ----------------------------------------------------------------------------------------

SETS = {"numerics": numerics_set, "winograd": winograd_set,
        "constant-weights": constant_weights_set,
        "quantized": quantized_set,
        "volumetric": volumetric_set, "twin": twin_set,
        "twin-sm90a": twin_sm90a_set, "twin-narrow": twin_narrow_set,
        "json": json_set,
        "bad-input": bad_input_set}
SETUP = {"bad-input": write_bad_input_files}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", required=True, choices=sorted(SETS))
    ap.add_argument("--conv-run", default=str(DEFAULT_CONV_RUN),
                    help="the conv-run binary (default: %(default)s)")
    ap.add_argument("--conv-opt", default="",
                    help="conv-opt, to check which kernel form a case reaches (twin-narrow)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the numpy data")
    ap.add_argument("--keep-temp", action="store_true",
                    help="keep the temp dir (printed) with the .npy/.mlir files")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not os.access(args.conv_run, os.X_OK):
        print(f"error: conv-run not found or not executable: {args.conv_run}")
        return 2
    tmp = Path(tempfile.mkdtemp(prefix=f"conv-run-{args.set}-"))
    ctx = Context(args.conv_run, tmp, args.seed, args.conv_opt)
    try:
        SETUP.get(args.set, lambda ctx: None)(ctx)
        passed, failed = run_cases(SETS[args.set](), ctx)
    finally:
        if args.keep_temp:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
