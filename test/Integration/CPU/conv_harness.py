#!/usr/bin/env python3
"""Numerics harness for ConvLower's im2col + matmul + fold rewrite of 2-D convolutions.

Each case is a small convolution problem. The harness emits an MLIR module that runs the
convolution on seeded random data, executes it through one or more routes, and compares
what mlir-runner prints against a float64 numpy direct convolution written from the
formula in docs/design.md ("Convolution semantics"), never from the code under test:

  upstream   mlir-opt UPSTREAM_PIPELINE | mlir-runner          (the original linalg conv)
  decompose  conv-opt --conv-lower-im2col --conv-lower-decompose | mlir-opt UPSTREAM_PIPELINE
             | mlir-runner
  llvm       conv-opt --conv-lower-to-llvm | mlir-runner
  twin       conv-opt --conv-lower-to-llvm=implicit-gemm-twin | mlir-runner
             (the GPU implicit-GEMM kernel's block body as host loops; it fails on a
             convolution the kernel cannot take)
  twin-explicit  the same with twin-explicit-im2col: the im2col kernel's loop stores
             X_col first and the GEMM reads it (the kernels' explicit mode)
  twin-small, twin-deep  the twin with tiles overridden (64x32, 1x2 warps, 2 stages;
             128x64, 4x2 warps, 4 stages)
  transform  conv-opt --transform-interpreter with im2col-transform-script.mlir (the
             rewrite as transform.conv_lower.im2col) --conv-lower-decompose | mlir-opt
             UPSTREAM_PIPELINE | mlir-runner; no convolution may be left by the script

The upstream route checks the harness itself (the emitted MLIR and the reference); the
other two check ConvLower. Before the conv-opt routes, `conv-opt --conv-lower-im2col` alone
must leave no convolution behind (see check_im2col_rewrite).

Usage: conv_harness.py --set forms [--routes upstream,decompose,llvm] [tool paths]
       conv_harness.py --list
"""

import argparse
import dataclasses
import math
import os
import re
import subprocess
import sys
import time
import zlib

import numpy as np

# ----------------------------------------------------------------------------------------
# Layouts as data.
#
# Every form is the grouped convolution of docs/design.md ("Convolution semantics")
# written over logical dimensions:
#   n batch, g group, c input channel within a group, f output channel within a group
#   (the multiplier M for depthwise_conv_2d_nhwc_hwcm), h/w rows/columns (the input's in
#   X, the output's in Y), r/s filter rows/columns.
# A layout lists a tensor's axes outer to inner; an axis of several letters is those
# dimensions merged row-major (the NCHW channel axis "gc" has index g*Cg + c). A dimension a
# form does not mention has extent 1 (no "g": one group; no "c"/"f": depthwise).
# The reference works on the canonical orders below and converts through these tables, so a
# wrong entry shows up as a mismatch on the upstream route.
# ----------------------------------------------------------------------------------------

CANON_X = "ngchw"   # X[n, g, c, h, w]
CANON_W = "gfcrs"   # W[g, f, c, r, s]
CANON_Y = "ngfhw"   # Y[n, g, f, oh, ow]


@dataclasses.dataclass(frozen=True)
class Form:
    op: str                # linalg op name; "generic" means a linalg.generic built from the maps
    x: tuple               # input axes
    w: tuple               # filter axes
    y: tuple               # output axes
    depthwise: bool = False
    loops: str = ""        # the op's loop order, where it is not the output's layout order
                           # followed by the filter's reductions (see generic_loops)


def _form(op, x, w, y, depthwise=False, loops=""):
    return Form(op, tuple(x.split()), tuple(w.split()), tuple(y.split()), depthwise, loops)


# Operand orders from LinalgNamedStructuredOps.yamlgen.td (their indexing maps).
FORMS = {
    "conv_2d_nchw_fchw": _form("conv_2d_nchw_fchw", "n c h w", "f c r s", "n f h w"),
    "conv_2d_nhwc_hwcf": _form("conv_2d_nhwc_hwcf", "n h w c", "r s c f", "n h w f"),
    "conv_2d_nhwc_fhwc": _form("conv_2d_nhwc_fhwc", "n h w c", "f r s c", "n h w f"),
    "conv_2d_ngchw_fgchw": _form("conv_2d_ngchw_fgchw", "n g c h w", "f g c r s", "n g f h w"),
    "conv_2d_ngchw_gfchw": _form("conv_2d_ngchw_gfchw", "n g c h w", "g f c r s", "n g f h w"),
    "conv_2d_nhwgc_gfhwc": _form("conv_2d_nhwgc_gfhwc", "n h w g c", "g f r s c", "n h w g f"),
    # Loops (n, oh, ow, c, kh, kw), as `mlir-opt --linalg-generalize-named-ops` writes it.
    "depthwise_conv_2d_nchw_chw": _form("depthwise_conv_2d_nchw_chw", "n g h w", "g r s",
                                        "n g h w", depthwise=True, loops="nhwgrs"),
    "depthwise_conv_2d_nhwc_hwc": _form("depthwise_conv_2d_nhwc_hwc", "n h w g", "r s g",
                                        "n h w g", depthwise=True),
    "depthwise_conv_2d_nhwc_hwcm": _form("depthwise_conv_2d_nhwc_hwcm", "n h w g", "r s g f",
                                         "n h w g f", depthwise=True),
    # The same convolutions as torch-mlir writes them: a linalg.generic with a mul/add body.
    "generic_nchw_fchw": _form("generic", "n c h w", "f c r s", "n f h w"),
    "generic_nhwc_hwcf": _form("generic", "n h w c", "r s c f", "n h w f"),
}

# The forms with a quantized twin (linalg.<op>_q: the same maps, and two i32 scalars, the
# input's and the filter's zero points, subtracted before the multiply).
QUANTIZED_FORMS = ("conv_2d_nchw_fchw", "conv_2d_nhwc_hwcf", "conv_2d_nhwc_fhwc",
                   "conv_2d_ngchw_gfchw", "conv_2d_nhwgc_gfhwc",
                   "depthwise_conv_2d_nhwc_hwc", "depthwise_conv_2d_nhwc_hwcm")


@dataclasses.dataclass(frozen=True)
class DType:
    elem_in: str     # MLIR element type of X and W
    elem_out: str    # MLIR element type of Y (the accumulator)
    rtol: float      # bound on max|got - ref| / max(1, max|ref|); 0 means exact


DTYPES = {
    # Inputs are exactly representable and products of two f16/bf16 values are exact in
    # f32, so every float32-accumulating dtype gets the same bound: f32 summation order
    # plus printMemrefF32's 6 significant digits (<= 5e-6 relative) fit well inside 1e-5.
    "f32": DType("f32", "f32", 1e-5),
    "f16": DType("f16", "f32", 1e-5),
    "bf16": DType("bf16", "f32", 1e-5),
    # Integer accumulation is exact (values kept below 1e6 so that printing is exact too).
    "i8": DType("i8", "i32", 0.0),
    # f16 accumulation rounds every partial sum to 11 bits.
    "f16f16": DType("f16", "f16", 1e-2),
}


# ----------------------------------------------------------------------------------------
# Problems.
# ----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Problem:
    form: str
    n: int
    c: int                   # input channels (all groups)
    h: int
    w: int
    f: int                   # output channels (all groups); depthwise: the multiplier M
    kh: int
    kw: int
    groups: int = 1          # ignored by depthwise forms, where it is C
    stride: tuple = (1, 1)
    dilation: tuple = (1, 1)
    pad: tuple = (0, 0, 0, 0)  # top, left, bottom, right
    dtype: str = "f32"
    dynamic_batch: bool = False
    note: str = ""           # where the case comes from, printed with it
    # Other spellings of the same convolution (random_convs.py draws them; the defaults
    # are what the fixed sets below use, and leave their names and data unchanged).
    out_size: tuple = None   # (Ho, Wo) below the formula: linalg keeps the top-left outputs
    init: str = "zero"       # zero: fill 0; fill: fill FILL_VALUE; tensor: an argument
    generic: bool = False    # a linalg.generic instead of the named op
    commute_mul: bool = False  # generic body: mul(w, x) instead of mul(x, w)
    commute_add: bool = False  # generic body: add(prod, acc) instead of add(acc, prod)
    loop_order: str = ""     # generic loops as dimension letters; "" is the named op's order
    image_input: bool = False  # grouped forms: X is the rank-4 image, padded, then split
    zero_points: tuple = None  # (zx, zw): the quantized op, sum (x - zx) * (w - zw)
    pad_zero_point: bool = False  # the padding reads zx (torch's quantized conv), not 0

    @property
    def spec(self):
        return FORMS[self.form]

    def out_hw(self):
        """The output's spatial size: out_size, or the formula's."""
        return tuple(self.out_size) if self.out_size else self.formula_hw()

    def formula_hw(self):
        (sh, sw), (dh, dw) = self.stride, self.dilation
        pt, pl, pb, pr = self.pad
        oh = (self.h + pt + pb - dh * (self.kh - 1) - 1) // sh + 1
        ow = (self.w + pl + pr - dw * (self.kw - 1) - 1) // sw + 1
        return oh, ow

    def sizes(self):
        """Extents of the logical dimensions; h/w are the input's (see y_sizes)."""
        g = self.c if self.spec.depthwise else self.groups
        cg = self.c // g
        fg = self.f if self.spec.depthwise else self.f // g
        return dict(n=self.n, g=g, c=cg, f=fg, h=self.h, w=self.w, r=self.kh, s=self.kw)

    def y_sizes(self):
        oh, ow = self.out_hw()
        return dict(self.sizes(), h=oh, w=ow)

    def padded_sizes(self):
        pt, pl, pb, pr = self.pad
        return dict(self.sizes(), h=self.h + pt + pb, w=self.w + pl + pr)

    def validate(self):
        if self.form not in FORMS or self.dtype not in DTYPES:
            raise ValueError(f"unknown form or dtype in {self}")
        spec, sz = self.spec, self.sizes()
        if not spec.depthwise and (self.c % self.groups or self.f % self.groups):
            raise ValueError(f"groups={self.groups} must divide C={self.c} and F={self.f}")
        used = set("".join(spec.x + spec.w + spec.y))
        for dim, extent in sz.items():
            if dim not in used and extent != 1:
                raise ValueError(f"{self.form} has no '{dim}' axis but {dim}={extent}")
        if min(self.out_hw()) < 1:
            raise ValueError(f"empty output for {self}")
        if any(o > f for o, f in zip(self.out_hw(), self.formula_hw())):
            raise ValueError(f"out_size above the formula's {self.formula_hw()} in {self}")
        if self.init not in ("zero", "fill", "tensor"):
            raise ValueError(f"unknown init {self.init!r}")
        if self.loop_order and sorted(self.loop_order) != sorted(generic_loops(self)):
            raise ValueError(f"loop_order must permute {''.join(generic_loops(self))}")
        if self.image_input and image_axes(spec) == spec.x:
            raise ValueError(f"{self.form}: image_input needs separate g and c axes")
        if self.zero_points and (self.form not in QUANTIZED_FORMS or self.generic or
                                 not DTYPES[self.dtype].elem_out.startswith("i")):
            raise ValueError(f"{self.form} {self.dtype}: no quantized op")
        if self.pad_zero_point and not (self.zero_points and any(self.pad)):
            raise ValueError("pad_zero_point needs zero points and padding")

    def name(self):
        p = self
        parts = [p.form, p.dtype, f"N{p.n}{'?' if p.dynamic_batch else ''}",
                 f"C{p.c}", f"H{p.h}", f"W{p.w}", f"{'M' if p.spec.depthwise else 'F'}{p.f}",
                 f"K{p.kh}x{p.kw}"]
        if p.groups != 1 and not p.spec.depthwise:
            parts.append(f"G{p.groups}")
        if p.stride != (1, 1):
            parts.append(f"s{p.stride[0]}x{p.stride[1]}")
        if p.dilation != (1, 1):
            parts.append(f"d{p.dilation[0]}x{p.dilation[1]}")
        if any(p.pad):
            parts.append("p" + ",".join(map(str, p.pad)))
        if p.out_size:
            parts.append(f"out{p.out_size[0]}x{p.out_size[1]}")
        if p.init != "zero":
            parts.append(f"init={p.init}")
        if p.generic and p.spec.op != "generic":
            parts.append("generic")
        if p.commute_mul or p.commute_add:
            parts.append("body=" + ("w*x" if p.commute_mul else "x*w") +
                         (",p+acc" if p.commute_add else ",acc+p"))
        if p.loop_order:
            parts.append(f"loops={p.loop_order}")
        if p.image_input:
            parts.append("image")
        if p.zero_points:
            parts.append(f"zp{p.zero_points[0]},{p.zero_points[1]}")
        if p.pad_zero_point:
            parts.append("pad=zx")
        return " ".join(parts)


def shape_of(axes, sizes):
    return [math.prod(sizes[d] for d in axis) for axis in axes]


def image_axes(spec):
    """X's axes with a separate g and c merged into the rank-4 image's channel axis "gc"
    (what a frontend splits with expand_shape); the axes unchanged when there are none."""
    axes = list(spec.x)
    if "g" in axes and "c" in axes and axes.index("c") == axes.index("g") + 1:
        i = axes.index("g")
        axes[i:i + 2] = ["gc"]
    return tuple(axes)


def expand_reassociation(spec):
    """The expand_shape groups that split image_axes(spec) into spec.x."""
    groups, i = [], 0
    for axis in image_axes(spec):
        groups.append(list(range(i, i + len(axis))))
        i += len(axis)
    return groups


# ----------------------------------------------------------------------------------------
# Layout conversion and the float64 reference.
# ----------------------------------------------------------------------------------------

def to_canonical(arr, axes, sizes, canon):
    """A tensor in layout `axes` -> the canonical order `canon` (missing dims get extent 1)."""
    order = "".join(axes)
    arr = arr.reshape([sizes[d] for d in order])
    arr = arr.transpose([order.index(d) for d in canon if d in order])
    return arr.reshape([sizes[d] if d in order else 1 for d in canon])


def from_canonical(arr, axes, sizes, canon):
    """Inverse of to_canonical: drop the extent-1 dims the layout lacks, permute, merge."""
    order = "".join(axes)
    present = [d for d in canon if d in order]
    arr = arr.reshape([sizes[d] for d in present])
    arr = arr.transpose([present.index(d) for d in order])
    return arr.reshape(shape_of(axes, sizes))


def reference_conv(p, x, w):
    """Y in p's output layout, float64, straight from docs/design.md's formula:
    Y[n,g,f,oh,ow] = sum_{c,r,s} W[g,f,c,r,s] * X[n,g,c, oh*sh - pt + r*dh, ow*sw - pl + s*dw]
    with X zero outside its bounds (done by padding, so the padded row is oh*sh + r*dh).
    A quantized case subtracts the zero points from the padded X and from W first, as
    linalg's _q ops do (the padding is a 0 of the padded tensor, so it reads as -zx;
    with pad_zero_point it is zx, which reads as 0)."""
    spec = p.spec
    xc = to_canonical(x.astype(np.float64), spec.x, p.sizes(), CANON_X)
    wc = to_canonical(w.astype(np.float64), spec.w, p.sizes(), CANON_W)
    pt, pl, pb, pr = p.pad
    pad_value = p.zero_points[0] if p.pad_zero_point else 0
    xc = np.pad(xc, [(0, 0), (0, 0), (0, 0), (pt, pb), (pl, pr)],
                constant_values=pad_value)
    if p.zero_points:
        xc, wc = xc - p.zero_points[0], wc - p.zero_points[1]
    (sh, sw), (dh, dw) = p.stride, p.dilation
    oh, ow = p.out_hw()
    yc = np.zeros([p.n, xc.shape[1], wc.shape[1], oh, ow])
    for r in range(p.kh):
        for s in range(p.kw):
            window = xc[:, :, :, r * dh: r * dh + sh * (oh - 1) + 1: sh,
                        s * dw: s * dw + sw * (ow - 1) + 1: sw]
            yc += np.einsum("ngchw,gfc->ngfhw", window, wc[:, :, :, r, s])
    return from_canonical(yc, spec.y, p.y_sizes(), CANON_Y)


# ----------------------------------------------------------------------------------------
# Random data, exactly representable in the input type.
# ----------------------------------------------------------------------------------------

def round_to_bf16(a):
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32."""
    bits = a.astype(np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


def random_tensor(rng, shape, elem):
    """Nonzero values: magnitudes in [1/16, 1] for floats, the full range for i8."""
    if elem == "i8":
        v = rng.integers(-128, 127, size=shape, endpoint=True)
        v[v == 0] = 1
        return v.astype(np.int8)
    v = rng.uniform(1.0 / 16, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    if elem == "f16":
        return v.astype(np.float16)
    if elem == "bf16":
        return round_to_bf16(v.astype(np.float32))
    return v.astype(np.float32)


def case_inputs(p, seed):
    """Seeded by the case's name, so every case gets its own, reproducible data."""
    rng = np.random.default_rng([seed, zlib.crc32(p.name().encode())])
    elem = DTYPES[p.dtype].elem_in
    x = random_tensor(rng, shape_of(p.spec.x, p.sizes()), elem)
    w = random_tensor(rng, shape_of(p.spec.w, p.sizes()), elem)
    return x, w


# The constant of init="fill": exact in every output type, and not zero, so that a
# rewrite which drops the fill shows.
FILL_VALUE = 3


def case_init(p, seed):
    """The output's initial value (linalg convolutions accumulate into it): None for a
    zero fill, a scalar for a constant fill, else a seeded tensor of the output type."""
    if p.init == "zero":
        return None
    if p.init == "fill":
        return np.float64(FILL_VALUE)
    rng = np.random.default_rng([seed, zlib.crc32(p.name().encode()), 1])
    elem = DTYPES[p.dtype].elem_out
    values = random_tensor(rng, shape_of(p.spec.y, p.y_sizes()),
                           "i8" if elem.startswith("i") else elem)
    return values.astype(np.int32) if elem.startswith("i") else values


# ----------------------------------------------------------------------------------------
# MLIR emission.
# ----------------------------------------------------------------------------------------

def tensor_type(shape, elem, dynamic_dim=None):
    dims = ["?" if i == dynamic_dim else str(d) for i, d in enumerate(shape)]
    return f"tensor<{'x'.join(dims + [elem])}>"


def format_value(v, elem):
    # repr of the exact float64 rounds back to the same value in any narrower type that
    # holds it (a shortest float32 string could double-round through f64).
    return str(int(v)) if elem.startswith("i") else repr(float(v))


def dense_literal(arr, elem):
    if arr.ndim == 0:
        return format_value(arr, elem)
    return "[" + ", ".join(dense_literal(sub, elem) for sub in arr) + "]"


def zero_literal(elem):
    return f"0 : {elem}" if elem.startswith("i") else f"0.0 : {elem}"


def quoted(words):
    return ", ".join(f'"{w}"' for w in words)


def affine_map(num_dims, results):
    dims = ", ".join(f"d{i}" for i in range(num_dims))
    return f"affine_map<({dims}) -> ({', '.join(results)})>"


def generic_maps(p):
    """Indexing maps of the convolution as a linalg.generic, loops in p.loop_order or
    else in the order of the matching named op (generic_loops)."""
    spec, sz = p.spec, p.sizes()
    out_dims = [d for axis in spec.y for d in axis]
    loops = list(p.loop_order) if p.loop_order else generic_loops(p)
    loop = {d: f"d{i}" for i, d in enumerate(loops)}
    (sh, sw), (dh, dw) = p.stride, p.dilation
    window = {"h": ("h", sh, "r", dh), "w": ("w", sw, "s", dw)}

    def term(var, k):
        return loop[var] if k == 1 else f"{loop[var]} * {k}"

    def index(axis, windowed):
        if windowed and axis in window:
            o, st, k, dl = window[axis]
            return f"{term(o, st)} + {term(k, dl)}"
        # One dimension, or several merged row-major.
        expr, stride = [], 1
        for d in reversed(axis):
            expr.insert(0, term(d, stride))
            stride *= sz[d]
        return " + ".join(expr)

    maps = [affine_map(len(loops), [index(a, windowed) for a in axes])
            for axes, windowed in ((spec.x, True), (spec.w, False), (spec.y, False))]
    kinds = ["parallel" if d in out_dims else "reduction" for d in loops]
    return maps, kinds


def generic_loops(p):
    """The named op's loop order: mostly the output's dimensions in its layout order,
    then the reductions in the filter's order."""
    if p.spec.loops:
        return list(p.spec.loops)
    out_dims = [d for axis in p.spec.y for d in axis]
    return out_dims + [d for axis in p.spec.w for d in axis if d not in out_dims]


def mac_body(elem_in, elem_out, a, b, acc, commute_mul=False, commute_add=False):
    """Lines of a multiply-accumulate region body; returns (lines, result name).
    commute_mul/commute_add swap the operands of the multiply / the accumulate."""
    lines = []
    if elem_in.startswith("i"):
        ext, mul, add = "arith.extsi", "arith.muli", "arith.addi"
    else:
        ext, mul, add = "arith.extf", "arith.mulf", "arith.addf"
    if elem_in != elem_out:
        lines += [f"%ea = {ext} {a} : {elem_in} to {elem_out}",
                  f"%eb = {ext} {b} : {elem_in} to {elem_out}"]
        a, b = "%ea", "%eb"
    if commute_mul:
        a, b = b, a
    summands = ("%prod", acc) if commute_add else (acc, "%prod")
    lines += [f"%prod = {mul} {a}, {b} : {elem_out}",
              f"%sum = {add} {summands[0]}, {summands[1]} : {elem_out}"]
    return lines, "%sum"


def emit_conv_op(p, xp_name, xp_type, w_type, init_type):
    dt = DTYPES[p.dtype]
    ins = f"ins({xp_name}, %w : {xp_type}, {w_type}) outs(%init : {init_type})"
    if p.zero_points:
        zx, zw = p.zero_points
        attrs = (f"dilations = dense<[{p.dilation[0]}, {p.dilation[1]}]> : tensor<2xi64>, "
                 f"strides = dense<[{p.stride[0]}, {p.stride[1]}]> : tensor<2xi64>")
        return [f"%zx = arith.constant {zx} : i32",
                f"%zw = arith.constant {zw} : i32",
                f"%y = linalg.{p.spec.op}_q {{{attrs}}}",
                f"    ins({xp_name}, %w, %zx, %zw : {xp_type}, {w_type}, i32, i32)"
                f" outs(%init : {init_type}) -> {init_type}"]
    if p.spec.op != "generic" and not p.generic:
        attrs = (f"dilations = dense<[{p.dilation[0]}, {p.dilation[1]}]> : tensor<2xi64>, "
                 f"strides = dense<[{p.stride[0]}, {p.stride[1]}]> : tensor<2xi64>")
        return [f"%y = linalg.{p.spec.op} {{{attrs}}}",
                f"    {ins} -> {init_type}"]
    maps, kinds = generic_maps(p)
    body, result = mac_body(dt.elem_in, dt.elem_out, "%a", "%b", "%acc",
                            p.commute_mul, p.commute_add)
    return ([f"%y = linalg.generic {{indexing_maps = [{', '.join(maps)}],",
             f"    iterator_types = [{quoted(kinds)}]}}",
             f"    {ins} {{",
             f"^bb0(%a: {dt.elem_in}, %b: {dt.elem_in}, %acc: {dt.elem_out}):"]
            + ["  " + line for line in body]
            + [f"  linalg.yield {result} : {dt.elem_out}", f"}} -> {init_type}"])


def emit_conv_func(p):
    """@conv(%x, %w[, %init]): optional tensor.pad (of the rank-4 image, then split into
    groups, for image_input), the init (a fill, or the %init argument), the convolution.
    Returns the lines and the types of X (as @conv takes it), W and Y."""
    spec, dt = p.spec, DTYPES[p.dtype]
    x_axes = image_axes(spec) if p.image_input else spec.x
    batch_axis = x_axes.index("n")       # the batch is an axis of its own in every form
    dyn = batch_axis if p.dynamic_batch else None
    x_type = tensor_type(shape_of(x_axes, p.sizes()), dt.elem_in, dyn)
    w_type = tensor_type(shape_of(spec.w, p.sizes()), dt.elem_in)
    y_type = tensor_type(shape_of(spec.y, p.y_sizes()), dt.elem_out,
                         spec.y.index("n") if p.dynamic_batch else None)
    init_arg = f", %init: {y_type}" if p.init == "tensor" else ""
    lines = [f"func.func @conv(%x: {x_type}, %w: {w_type}{init_arg}) -> {y_type} {{"]
    if p.dynamic_batch:
        lines += [f"  %c{batch_axis} = arith.constant {batch_axis} : index",
                  f"  %n = tensor.dim %x, %c{batch_axis} : {x_type}"]
    xp_lines, xp_name, xp_type = emit_conv_input(p, x_axes, x_type, dyn)
    lines += ["  " + line for line in xp_lines]
    lines += ["  " + line for line in emit_init(p, y_type)]
    lines += ["  " + line for line in emit_conv_op(p, xp_name, xp_type, w_type, y_type)]
    lines += [f"  return %y : {y_type}", "}"]
    return lines, x_type, w_type, y_type


def emit_conv_input(p, x_axes, x_type, dyn):
    """The convolution's input from %x: zero-padded when p.pad is set, and split from
    the rank-4 image into groups for image_input. Returns (lines, name, type)."""
    spec, dt = p.spec, DTYPES[p.dtype]
    lines, name, typ = [], "%x", x_type
    if any(p.pad):
        pt, pl, pb, pr = p.pad
        low = [{"h": pt, "w": pl}.get(a, 0) for a in x_axes]
        high = [{"h": pb, "w": pr}.get(a, 0) for a in x_axes]
        typ = tensor_type(shape_of(x_axes, p.padded_sizes()), dt.elem_in, dyn)
        idx = ", ".join(f"%i{k}: index" for k in range(len(x_axes)))
        value = (f"{p.zero_points[0]} : {dt.elem_in}" if p.pad_zero_point
                 else zero_literal(dt.elem_in))
        lines += [f"%pad_value = arith.constant {value}",
                  f"%xp = tensor.pad %x low{low} high{high} {{",
                  f"^bb0({idx}):",
                  f"  tensor.yield %pad_value : {dt.elem_in}",
                  f"}} : {x_type} to {typ}"]
        name = "%xp"
    if p.image_input:
        shape = shape_of(spec.x, p.padded_sizes())
        out_shape = ["%n" if p.dynamic_batch and a == "n" else str(d)
                     for a, d in zip(spec.x, shape)]
        groups = tensor_type(shape, dt.elem_in, spec.x.index("n") if dyn is not None
                             else None)
        lines += [f"%xg = tensor.expand_shape {name} {expand_reassociation(spec)}"
                  f" output_shape [{', '.join(out_shape)}] : {typ} into {groups}"]
        name, typ = "%xg", groups
    return lines, name, typ


def emit_init(p, y_type):
    """%init: a zero or FILL_VALUE linalg.fill of an empty tensor, or @conv's argument."""
    if p.init == "tensor":
        return []          # @conv's argument %init
    elem = DTYPES[p.dtype].elem_out
    empty = "%n" if p.dynamic_batch else ""
    value = zero_literal(elem) if p.init == "zero" else (
        f"{FILL_VALUE} : {elem}" if elem.startswith("i") else f"{FILL_VALUE}.0 : {elem}")
    return [f"%empty = tensor.empty({empty}) : {y_type}",
            f"%zero = arith.constant {value}",
            f"%init = linalg.fill ins(%zero : {elem}) outs(%empty : {y_type})"
            f" -> {y_type}"]


def emit_to_f32(y_name, shape, elem):
    """printMemrefF32 needs f32: widen the result elementwise (a no-op for f32)."""
    if elem == "f32":
        return [], y_name
    src, dst = tensor_type(shape, elem), tensor_type(shape, "f32")
    ident = affine_map(len(shape), [f"d{i}" for i in range(len(shape))])
    cast = "arith.sitofp" if elem.startswith("i") else "arith.extf"
    return ([f"%yf_init = tensor.empty() : {dst}",
             f"%yf = linalg.generic {{indexing_maps = [{ident}, {ident}],",
             f"    iterator_types = [{quoted(['parallel'] * len(shape))}]}}",
             f"    ins({y_name} : {src}) outs(%yf_init : {dst}) {{",
             f"^bb0(%v: {elem}, %unused: f32):",
             f"  %vf = {cast} %v : {elem} to f32",
             "  linalg.yield %vf : f32",
             f"}} -> {dst}"], "%yf")


def emit_module(p, x, w, init=None):
    """@conv, and @main calling it on x, w (and init, for init="tensor") as constants
    and printing the result as f32."""
    spec, dt = p.spec, DTYPES[p.dtype]
    conv_lines, x_dyn_type, w_type, y_dyn_type = emit_conv_func(p)
    if p.image_input:
        x = x.reshape(shape_of(image_axes(spec), p.sizes()))
    x_type = tensor_type(x.shape, dt.elem_in)
    y_shape = shape_of(spec.y, p.y_sizes())
    y_type = tensor_type(y_shape, dt.elem_out)
    f32_type = tensor_type(y_shape, "f32")
    memref = f32_type.replace("tensor", "memref")
    body = [f"%x = arith.constant dense<{dense_literal(x, dt.elem_in)}> : {x_type}",
            f"%w = arith.constant dense<{dense_literal(w, dt.elem_in)}> : {w_type}"]
    args, types = ["%x", "%w"], [x_type, w_type]
    if p.init == "tensor":
        body += [f"%i = arith.constant dense<{dense_literal(init, dt.elem_out)}>"
                 f" : {y_type}"]
        args, types = args + ["%i"], types + [y_type]
    if p.dynamic_batch:
        # @conv sees a dynamic batch; its operands are cast to and from it here.
        dyn_types = [x_dyn_type, w_type, y_dyn_type][:len(args)]
        for k in ([0, 2] if p.init == "tensor" else [0]):
            body += [f"{args[k]}d = tensor.cast {args[k]} : {types[k]} to {dyn_types[k]}"]
            args[k] += "d"
        body += [f"%yd = call @conv({', '.join(args)}) : ({', '.join(dyn_types)})"
                 f" -> {y_dyn_type}",
                 f"%y = tensor.cast %yd : {y_dyn_type} to {y_type}"]
    else:
        body += [f"%y = call @conv({', '.join(args)}) : ({', '.join(types)}) -> {y_type}"]
    widen, yf = emit_to_f32("%y", y_shape, dt.elem_out)
    body += widen
    body += [f"%buf = bufferization.to_buffer {yf} : {f32_type} to {memref}",
             f"%unranked = memref.cast %buf : {memref} to memref<*xf32>",
             "call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()",
             "return"]
    return "\n".join(
        [f"// {p.name()}", "module {"]
        + ["  " + line for line in conv_lines]
        + ["  func.func private @printMemrefF32(memref<*xf32>)"
           " attributes {llvm.emit_c_interface}",
           "  func.func @main() {"]
        + ["    " + line for line in body]
        + ["  }", "}", ""])


# ----------------------------------------------------------------------------------------
# Routes.
# ----------------------------------------------------------------------------------------

# Upstream lowering of a tensor-level linalg module to the LLVM dialect (MLIR 22):
# bufferize across function boundaries with identity layouts (so @conv's memrefs match
# bufferization.to_buffer's), linalg to scf loops, strided metadata (tensor.pad's subview)
# and affine to arith, then everything to LLVM.
UPSTREAM_PIPELINE = [
    "--one-shot-bufferize=bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map",
    "--convert-linalg-to-loops",
    "--expand-strided-metadata",
    "--lower-affine",
    "--convert-scf-to-cf",
    "--convert-to-llvm",
    "--reconcile-unrealized-casts",
]

ROUTES = ("upstream", "decompose", "llvm", "twin", "twin-explicit", "twin-small",
          "twin-deep", "transform", "amx-emulated")
# The twin takes only what the GPU kernel takes (static shapes, float types): it
# runs where asked (conv-twin.test), not on every set.
DEFAULT_ROUTES = ("upstream", "decompose", "llvm")


class ToolError(Exception):
    """A tool that did not run cleanly: the command, its exit status (None when it
    could not start; negative for a signal) and its stderr, for callers that classify."""

    def __init__(self, message, cmd=None, returncode=None, stderr=""):
        super().__init__(message)
        self.cmd, self.returncode, self.stderr = cmd, returncode, stderr


def run_tool(cmd, stdin_text):
    try:
        proc = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True)
    except OSError as err:   # e.g. a tool being relinked: fail this case, not the run
        raise ToolError(f"`{' '.join(cmd)}` could not start: {err}", cmd) from err
    if proc.returncode != 0:
        raise ToolError(f"`{' '.join(cmd)}` exited with {proc.returncode}:\n"
                        f"{proc.stderr.strip()[-4000:]}", cmd, proc.returncode, proc.stderr)
    return proc.stdout


TRANSFORM_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "im2col-transform-script.mlir")


def transform_stage(tools):
    """conv-opt applying TRANSFORM_SCRIPT (transform.conv_lower.im2col on every conv)."""
    return [tools.conv_opt,
            f"--transform-preload-library=transform-library-paths={TRANSFORM_SCRIPT}",
            "--transform-interpreter"]


def route_stages(route, tools):
    """The commands of a route, each reading the previous one's stdout."""
    mlir_opt = [tools.mlir_opt, *UPSTREAM_PIPELINE]
    runner = [tools.mlir_runner, "-e", "main", "-entry-point-result=void",
              f"-shared-libs={tools.runner_utils},{tools.c_runner_utils}"]
    return {
        "upstream": [mlir_opt, runner],
        "decompose": [[tools.conv_opt, "--conv-lower-im2col", "--conv-lower-decompose"],
                      mlir_opt, runner],
        "llvm": [[tools.conv_opt, "--conv-lower-to-llvm"], runner],
        "twin": [[tools.conv_opt, "--conv-lower-to-llvm=implicit-gemm-twin"], runner],
        # The bf16 and i8 GEMMs on AMX tiles, each tile operation emulated in vector
        # code (conv-run --amx=emulated); the tiles AMX does not take run on VDPBF16PS
        # and VPDPBUSD.
        "amx-emulated": [[tools.conv_opt, "--conv-lower-to-llvm=bf16-dot i8-dot amx "
                          "amx-emulated threads=1"], runner],
        "transform": [transform_stage(tools), [tools.conv_opt, "--conv-lower-decompose"],
                      mlir_opt, runner],
        "twin-explicit": [[tools.conv_opt, "--conv-lower-to-llvm=implicit-gemm-twin "
                           "twin-explicit-im2col"], runner],
        # Other tile shapes than the heuristic's: the generator must stay right for
        # every configuration it accepts.
        "twin-small": [[tools.conv_opt, "--conv-lower-implicit-gemm=target=cpu-twin "
                        "block-m=64 block-n=32 warps-m=1 warps-n=2 stages=2",
                        "--conv-lower-to-llvm=im2col=0"], runner],
        "twin-deep": [[tools.conv_opt, "--conv-lower-implicit-gemm=target=cpu-twin "
                       "block-m=128 block-n=64 warps-m=4 warps-n=2 stages=4",
                       "--conv-lower-to-llvm=im2col=0"], runner],
    }[route]


def run_route(route, module_text, tools):
    text = module_text
    for cmd in route_stages(route, tools):
        text = run_tool(cmd, text)
    return text


_NUMBER = re.compile(r"[-+]?(?:nan|inf|\d+\.?\d*(?:[eE][-+]?\d+)?)", re.IGNORECASE)


def parse_printed_memref(text, shape):
    """printMemrefF32's output -> numpy array of `shape`."""
    header = re.search(r"sizes = \[([^\]]*)\].*?data =", text, re.DOTALL)
    if not header:
        raise ToolError(f"no printMemrefF32 output in:\n{text[:2000]}")
    sizes = [int(s) for s in header.group(1).split(",") if s.strip()]
    if sizes != list(shape):
        raise ToolError(f"printed sizes {sizes}, expected {list(shape)}")
    values = [float(v) for v in _NUMBER.findall(text[header.end():])]
    if len(values) != math.prod(shape):
        raise ToolError(f"parsed {len(values)} values, expected {math.prod(shape)}")
    return np.array(values, dtype=np.float64).reshape(shape)


# A convolution's input map indexes a window: a sum of two loop dimensions, each optionally
# scaled (oh*sh + kh*dh). The rewrite's own ops (im2col, fold, matmul) have no such map.
_WINDOW_SUM = re.compile(r"\bd\d+(?: \* \d+)? \+ d\d+\b")
# Up to the ")>" that closes the results: "[^>]*" would stop at the map's own "->".
_AFFINE_MAP = re.compile(r"affine_map<.*?\)>")


def conv_only_module(p):
    """@conv alone: what the rewrite checks run on, and a short reproducer."""
    return "\n".join(["module {", *emit_conv_func(p)[0], "}", ""])


def im2col_leftovers(p, ir):
    """What `conv-opt --conv-lower-im2col` output `ir` still holds that the rewrite should
    have replaced: a list of reasons, empty when the convolution became im2col (or, for a
    1x1 filter, reshapes)."""
    problems = []
    left = re.findall(r"linalg\.(?:depthwise_)?conv_\w+", ir)
    if left:
        problems.append(f"convolution ops left: {sorted(set(left))}")
    windows = [m for m in _AFFINE_MAP.findall(ir) if _WINDOW_SUM.search(m.split("->")[-1])]
    if windows:
        problems.append(f"conv-shaped indexing maps left: {sorted(set(windows))}")
    pointwise = p.kh == 1 and p.kw == 1
    if "conv_lower.im2col" not in ir and not (pointwise and "_shape" in ir):
        problems.append("neither conv_lower.im2col nor (for a 1x1 filter) a reshape appears")
    return problems


def check_im2col_rewrite(p, tools):
    """`conv-opt --conv-lower-im2col` must replace the convolution by im2col (or, for a
    1x1 filter, by reshapes): returns None or the reason it did not. It runs on @conv
    alone so that the IR shown on failure is not buried under @main's constants."""
    ir = run_tool([tools.conv_opt, "--conv-lower-im2col"], conv_only_module(p))
    problems = im2col_leftovers(p, ir)
    return None if not problems else "; ".join(problems) + "\n--- IR ---\n" + ir


# ----------------------------------------------------------------------------------------
# Comparison and driver.
# ----------------------------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
    ok: bool
    detail: str
    log: str = ""


def compare(p, got, ref):
    """Pass iff max|got - ref| <= rtol * max(1, max|ref|) (exact equality when rtol = 0)."""
    if not np.all(np.isfinite(got)):
        return Outcome(False, "non-finite values in the result")
    max_abs = float(np.max(np.abs(got - ref)))
    scale = max(1.0, float(np.max(np.abs(ref))))
    rel = max_abs / scale
    rtol = DTYPES[p.dtype].rtol
    detail = f"max_abs={max_abs:.3g} rel={rel:.3g} tol={rtol:g}"
    if rel > rtol:
        worst = np.unravel_index(np.argmax(np.abs(got - ref)), ref.shape)
        detail += (f" worst at {tuple(int(i) for i in worst)}:"
                   f" got {got[worst]!r} ref {ref[worst]!r}")
    return Outcome(rel <= rtol, detail)


class Case:
    """One problem's data, reference and module, shared by all of its routes."""

    def __init__(self, p, seed):
        p.validate()
        self.p = p
        self.x, self.w = case_inputs(p, seed)
        self.init = case_init(p, seed)
        self.ref = reference_conv(p, self.x, self.w)
        if self.init is not None:     # linalg convolutions accumulate into their init
            self.ref = self.ref + self.init
        if DTYPES[p.dtype].elem_out == "i32" and np.max(np.abs(self.ref)) >= 1e6:
            raise ValueError(f"{p.name()}: |Y| reaches 1e6; printMemrefF32's 6 digits "
                             "would round it")
        self.module = emit_module(p, self.x, self.w, self.init)
        self._rewrite_problem = None

    def rewrite_problem(self, tools):
        """check_im2col_rewrite, run once for all conv-opt routes."""
        if self._rewrite_problem is None:
            try:
                self._rewrite_problem = check_im2col_rewrite(self.p, tools) or ""
            except ToolError as err:
                self._rewrite_problem = f"conv-opt --conv-lower-im2col failed\n{err}"
        return self._rewrite_problem

    def run(self, route, tools):
        """The numeric check, plus the rewrite check on conv-opt routes. Both always run,
        so that a failure says whether the numbers, the rewrite or both are wrong."""
        try:
            printed = run_route(route, self.module, tools)
            outcome = compare(self.p, parse_printed_memref(printed, self.ref.shape), self.ref)
        except ToolError as err:
            outcome = Outcome(False, "tool failed", str(err))
        problem = self.rewrite_problem(tools) if route != "upstream" else ""
        if route == "transform" and not problem:
            # The script must rewrite what the pass rewrites.
            try:
                left = im2col_leftovers(
                    self.p, run_tool(transform_stage(tools), conv_only_module(self.p)))
                problem = "; ".join(f"transform script: {reason}" for reason in left)
            except ToolError as err:
                problem = f"the transform script failed\n{err}"
        if problem:
            outcome = Outcome(False, outcome.detail + "; " + problem.splitlines()[0],
                              "\n".join(filter(None, [outcome.log, problem])))
        return outcome


def keep_module(keep_dir, p, route, module, log):
    os.makedirs(keep_dir, exist_ok=True)
    # "?" marks a dynamic batch; spell it out so that it cannot collide with the static case.
    stem = re.sub(r"[^A-Za-z0-9_.,-]+", "_", p.name().replace("?", "dyn")) + f".{route}"
    with open(os.path.join(keep_dir, stem + ".mlir"), "w") as f:
        f.write(module)
    if log:
        with open(os.path.join(keep_dir, stem + ".log"), "w") as f:
            f.write(log)
    return os.path.join(keep_dir, stem + ".mlir")


# ----------------------------------------------------------------------------------------
# Case sets.
# ----------------------------------------------------------------------------------------

def P(form, n, c, h, w, f, kh, kw, **kw_args):
    return Problem(form, n, c, h, w, f, kh, kw, **kw_args)


def set_forms():
    """Every form in f32, mixing stride, dilation, asymmetric padding, groups and batch."""
    return [
        P("conv_2d_nchw_fchw", 1, 3, 7, 6, 4, 3, 3),
        P("conv_2d_nchw_fchw", 3, 4, 9, 8, 5, 3, 2, stride=(2, 1), dilation=(1, 2),
          pad=(1, 0, 2, 1)),
        P("conv_2d_nhwc_hwcf", 1, 3, 7, 6, 4, 3, 3, pad=(1, 1, 1, 1)),
        P("conv_2d_nhwc_hwcf", 3, 5, 10, 9, 3, 2, 3, stride=(2, 2), dilation=(2, 1),
          pad=(0, 2, 1, 0)),
        P("conv_2d_nhwc_fhwc", 1, 4, 8, 8, 6, 3, 3, stride=(1, 2)),
        P("conv_2d_nhwc_fhwc", 3, 3, 9, 7, 2, 2, 2, dilation=(2, 2), pad=(2, 1, 0, 1)),
        P("conv_2d_ngchw_fgchw", 1, 4, 7, 7, 6, 3, 3, groups=2, pad=(1, 0, 1, 2)),
        P("conv_2d_ngchw_fgchw", 3, 8, 9, 8, 8, 3, 2, groups=4, stride=(2, 1),
          dilation=(1, 2)),
        P("conv_2d_nhwgc_gfhwc", 1, 4, 8, 7, 6, 3, 3, groups=2, stride=(2, 2),
          pad=(0, 1, 2, 1)),
        P("conv_2d_nhwgc_gfhwc", 3, 8, 7, 9, 4, 2, 3, groups=4, dilation=(2, 1)),
        P("depthwise_conv_2d_nchw_chw", 1, 4, 8, 8, 1, 3, 3, pad=(1, 2, 0, 1)),
        P("depthwise_conv_2d_nchw_chw", 3, 3, 9, 10, 1, 3, 2, stride=(2, 1), dilation=(1, 2)),
        P("depthwise_conv_2d_nhwc_hwc", 1, 5, 8, 7, 1, 3, 3, stride=(2, 2), pad=(1, 1, 2, 0)),
        P("depthwise_conv_2d_nhwc_hwc", 3, 4, 9, 9, 1, 2, 3, dilation=(2, 2)),
        P("depthwise_conv_2d_nhwc_hwcm", 1, 3, 7, 8, 2, 3, 3, pad=(0, 1, 1, 2)),
        P("depthwise_conv_2d_nhwc_hwcm", 3, 4, 9, 7, 3, 2, 2, stride=(1, 2), dilation=(2, 1)),
        P("generic_nchw_fchw", 1, 3, 8, 7, 4, 3, 3, stride=(2, 1), pad=(1, 1, 0, 2)),
        P("generic_nchw_fchw", 3, 2, 8, 8, 3, 2, 3, dilation=(2, 2)),
        P("generic_nhwc_hwcf", 1, 4, 7, 7, 3, 3, 3, dilation=(1, 2), pad=(2, 0, 1, 1)),
        P("generic_nhwc_hwcf", 3, 3, 9, 8, 5, 3, 2, stride=(2, 2)),
    ]


def set_dtypes():
    """Every non-f32 dtype on the two common layouts and on a grouped and a depthwise form."""
    shapes = [
        P("conv_2d_nchw_fchw", 2, 4, 8, 7, 5, 3, 3, stride=(2, 1), pad=(1, 0, 1, 2)),
        P("conv_2d_nhwc_hwcf", 2, 3, 7, 8, 4, 3, 2, dilation=(2, 1), pad=(0, 1, 2, 1)),
        P("conv_2d_ngchw_fgchw", 2, 4, 7, 7, 4, 3, 3, groups=2, pad=(1, 1, 1, 1)),
        P("depthwise_conv_2d_nhwc_hwc", 2, 4, 8, 8, 1, 3, 3, stride=(2, 2), pad=(1, 0, 1, 2)),
    ]
    return [dataclasses.replace(p, dtype=d) for d in ("f16", "bf16", "i8", "f16f16")
            for p in shapes]


def set_dynamic():
    return [
        P("conv_2d_nchw_fchw", 3, 3, 7, 7, 4, 3, 3, pad=(1, 0, 1, 1), dynamic_batch=True),
        P("conv_2d_nhwc_hwcf", 2, 4, 8, 6, 3, 3, 2, stride=(2, 1), dynamic_batch=True),
        P("depthwise_conv_2d_nhwc_hwc", 3, 4, 7, 8, 1, 3, 3, dilation=(2, 1),
          pad=(0, 1, 2, 1), dynamic_batch=True),
    ]


def set_upstream_img2col():
    """The cases of llvm-project mlir/test/Dialect/Linalg/convert-conv2d-to-img2col.mlir,
    with the same shapes unless noted (all stride 1, dilation 1, no padding)."""
    u = "convert-conv2d-to-img2col.mlir"
    return [
        # @conv_non_static: tensor<?x?x?x?xf32> input, 3x3x4x16 filter. The harness makes
        # only the batch dynamic; H, W, C come from @conv_16433136.
        P("conv_2d_nhwc_hwcf", 1, 4, 16, 16, 16, 3, 3, dynamic_batch=True,
          note=f"{u} @conv_non_static"),
        P("conv_2d_nhwc_hwcf", 1, 4, 16, 16, 16, 3, 3, note=f"{u} @conv_16433136"),
        # @depthwise_conv_hwc_114x16x3: 1x114x114x16 input is 208k elements (200k outputs),
        # too large for a dense literal and printMemrefF32; H and W shrunk to 18.
        P("depthwise_conv_2d_nhwc_hwc", 1, 16, 18, 18, 1, 3, 3,
          note=f"{u} @depthwise_conv_hwc_114x16x3 (H, W 114 -> 18)"),
        P("conv_2d_nhwc_hwcf", 8, 4, 16, 16, 16, 3, 3, note=f"{u} @batch_nhwc_conv"),
        P("conv_2d_nchw_fchw", 8, 4, 16, 16, 16, 3, 3, note=f"{u} @batch_nchw_conv"),
        P("conv_2d_nhwc_fhwc", 1, 4, 16, 16, 16, 3, 3, note=f"{u} @conv_2d_nhwc_fhwc"),
        P("conv_2d_nhwc_hwcf", 1, 4, 16, 16, 16, 3, 3, dtype="i8",
          note=f"{u} @conv_integer_extend"),
        # @conv_complex, @conv_complex_extended, @conv_complex_f16_extended use complex
        # element types, which the harness (and printMemrefF32) does not cover.
    ]


def set_quantized():
    """Every quantized form (linalg's _q ops), i8 data and i32 zero points of both signs,
    with padding (read as 0 - zx), strides, dilations, groups, a pointwise case, a fill
    init and a dynamic batch: the zero-point expansion must be exact."""
    q = dict(dtype="i8")
    return [
        P("conv_2d_nchw_fchw", 2, 3, 7, 6, 4, 3, 3, pad=(1, 0, 2, 1), zero_points=(5, -3),
          **q),
        P("conv_2d_nchw_fchw", 1, 6, 5, 7, 4, 1, 1, zero_points=(-7, 11), **q),
        P("conv_2d_nhwc_hwcf", 2, 4, 8, 7, 5, 3, 2, stride=(2, 1), dilation=(1, 2),
          pad=(0, 1, 1, 2), zero_points=(-2, 4), **q),
        P("conv_2d_nhwc_hwcf", 3, 3, 6, 6, 4, 3, 3, pad=(1, 1, 1, 1), zero_points=(9, 0),
          init="fill", **q),
        P("conv_2d_nhwc_fhwc", 1, 4, 8, 8, 6, 3, 3, stride=(2, 2), pad=(2, 1, 0, 1),
          zero_points=(0, -6), **q),
        P("conv_2d_nhwc_fhwc", 2, 5, 6, 6, 3, 1, 1, zero_points=(3, 3), **q),
        P("conv_2d_ngchw_gfchw", 1, 4, 7, 7, 6, 3, 3, groups=2, pad=(1, 0, 1, 2),
          zero_points=(4, -1), **q),
        P("conv_2d_nhwgc_gfhwc", 2, 8, 7, 6, 4, 2, 3, groups=4, dilation=(2, 1),
          zero_points=(-5, 2), **q),
        P("depthwise_conv_2d_nhwc_hwc", 1, 5, 8, 7, 1, 3, 3, stride=(2, 2),
          pad=(1, 1, 2, 0), zero_points=(6, -4), **q),
        P("depthwise_conv_2d_nhwc_hwcm", 2, 3, 7, 8, 2, 3, 3, pad=(0, 1, 1, 2),
          zero_points=(-3, 8), **q),
        P("conv_2d_nhwc_hwcf", 2, 4, 7, 7, 3, 3, 3, pad=(1, 1, 1, 1), zero_points=(2, -5),
          dynamic_batch=True, **q),
        # Channels in 16-byte chunks (the kernel's cp.async path for A), with zero
        # padding and with torch's padding by zx (which the kernel fills itself).
        P("conv_2d_nhwc_fhwc", 2, 16, 6, 7, 24, 3, 3, pad=(1, 2, 1, 0), zero_points=(7, -2),
          **q),
        P("conv_2d_nhwc_fhwc", 2, 32, 6, 6, 40, 3, 3, stride=(2, 1), pad=(1, 1, 2, 1),
          zero_points=(-9, 3), pad_zero_point=True, **q),
        P("conv_2d_nchw_fchw", 1, 5, 7, 6, 6, 3, 3, pad=(2, 1, 0, 1), zero_points=(4, 5),
          pad_zero_point=True, **q),
        P("depthwise_conv_2d_nhwc_hwc", 2, 16, 6, 6, 1, 3, 3, pad=(1, 1, 1, 1),
          zero_points=(-6, 1), pad_zero_point=True, **q),
    ]


def set_pointwise():
    return [
        P("conv_2d_nchw_fchw", 2, 6, 5, 7, 4, 1, 1),
        P("conv_2d_nhwc_hwcf", 2, 5, 6, 6, 7, 1, 1),
        P("conv_2d_nhwc_fhwc", 3, 4, 5, 5, 6, 1, 1),
        P("conv_2d_nchw_fchw", 2, 4, 9, 8, 5, 1, 1, stride=(2, 2)),
    ]


def set_twin():
    """What the implicit-GEMM kernel takes, for its CPU twin: every form, the pointwise
    cases, every dtype (i8 on the s8 MMA) and the static quantized cases (the zero
    points folded into the epilogue); shapes are static."""
    # Depthwise layers whose channels fill 16-byte vectors: the direct kernel's
    # vector loads of the image and of the (contiguous HWC) filter; the smaller ones
    # above take its one-channel path, tile overrides the GEMM kernel.
    direct = [
        P("depthwise_conv_2d_nhwc_hwc", 2, 16, 8, 9, 1, 3, 3, stride=(2, 1),
          pad=(1, 1, 1, 0), dtype="f16"),
        P("depthwise_conv_2d_nhwc_hwc", 1, 8, 7, 7, 1, 3, 2, dilation=(1, 2),
          pad=(1, 1, 1, 1)),
        P("depthwise_conv_2d_nhwc_hwc", 2, 24, 6, 6, 1, 3, 3, pad=(1, 1, 1, 1),
          dtype="bf16"),
    ]
    return (set_forms() + set_pointwise() + set_dtypes() + direct +
            [p for p in set_quantized() if not p.dynamic_batch])


def set_amx():
    """The AMX route (emulated where the host has none). bf16: the forms and pointwise
    cases and two dynamic batches, the GEMMs in K pairs, K often odd (padded to pairs)
    and the tiles' edges everywhere. i8 (signed quads, TDPBSSD): the quantized set,
    whose K is below one tile (the edges' signed dots on VPDPBUSD), and GEMMs of whole
    16 x 16 tiles, K 64 and 72 (a 2-quad edge), with and without zero points. Their
    outputs stay far below printMemrefF32's exact 1e6 (sums of 64-72 products of
    random bytes: a few 1e5 at most)."""
    cases = [dataclasses.replace(p, dtype="bf16") for p in set_forms() + set_pointwise()]
    cases += [dataclasses.replace(p, dtype="bf16") for p in set_dynamic()[:2]]
    q = dict(dtype="i8")
    whole_tiles = [
        P("conv_2d_nhwc_fhwc", 1, 64, 8, 8, 32, 1, 1, zero_points=(3, -2), **q),
        P("conv_2d_nhwc_hwcf", 1, 8, 8, 8, 32, 3, 3, pad=(1, 1, 1, 1), **q),
        P("conv_2d_nchw_fchw", 2, 8, 9, 9, 24, 3, 3, pad=(1, 1, 1, 1),
          zero_points=(-5, 4), **q),
        P("conv_2d_nhwc_hwcf", 2, 8, 6, 6, 32, 3, 3, pad=(1, 1, 1, 1),
          dynamic_batch=True, **q),
    ]
    return cases + set_quantized() + whole_tiles


SETS = {
    "twin": set_twin,
    "forms": set_forms,
    "dtypes": set_dtypes,
    "dynamic": set_dynamic,
    "upstream-img2col": set_upstream_img2col,
    "pointwise": set_pointwise,
    "amx": set_amx,
    "quantized": set_quantized,
}


# ----------------------------------------------------------------------------------------
# Command line.
# ----------------------------------------------------------------------------------------

def add_tool_arguments(ap):
    """The tools every harness runs (--conv-opt, --mlir-opt, --mlir-runner and the
    runner libraries), with Debian's LLVM 22 and build/release as defaults."""
    llvm = "/usr/lib/llvm-22"
    ap.add_argument("--conv-opt", default="build/release/bin/conv-opt")
    ap.add_argument("--mlir-opt", default=f"{llvm}/bin/mlir-opt")
    ap.add_argument("--mlir-runner", default=f"{llvm}/bin/mlir-runner")
    ap.add_argument("--runner-utils", default=f"{llvm}/lib/libmlir_runner_utils.so")
    ap.add_argument("--c-runner-utils", default=f"{llvm}/lib/libmlir_c_runner_utils.so")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=sorted(SETS), action="append",
                    help="case set to run (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the sets and their cases")
    ap.add_argument("--routes", default=",".join(DEFAULT_ROUTES),
                    help="comma-separated subset of " + ",".join(ROUTES) +
                    " (default: " + ",".join(DEFAULT_ROUTES) + ")")
    add_tool_arguments(ap)
    ap.add_argument("--seed", type=int, default=0, help="mixed with each case's name")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the .mlir (and tool log) of every failing case here")
    args = ap.parse_args(argv)
    args.routes = [r for r in args.routes.split(",") if r]
    bad = [r for r in args.routes if r not in ROUTES]
    if bad:
        ap.error(f"unknown route(s) {bad}; choose from {ROUTES}")
    if not args.set and not args.list:
        ap.error("give --set NAME or --list")
    if args.set:
        # A wrong path otherwise surfaces as an obscure JIT "symbols not found" per case.
        needed = ["mlir_runner", "runner_utils", "c_runner_utils"]
        needed += ["mlir_opt"] if {"upstream", "decompose"} & set(args.routes) else []
        needed += (["conv_opt"] if set(args.routes) - {"upstream"} else [])
        missing = [f"--{n.replace('_', '-')} {getattr(args, n)}" for n in needed
                   if not os.path.isfile(getattr(args, n))]
        if missing:
            ap.error("not found: " + ", ".join(missing))
    return args


def list_sets(names):
    for name in names:
        print(f"{name}:")
        for p in SETS[name]():
            print(f"  {p.name()}" + (f"   [{p.note}]" if p.note else ""))


def main(argv=None):
    args = parse_args(argv)
    names = args.set or sorted(SETS)
    if args.list:
        list_sets(names)
        return 0
    passed = failed = 0
    for name in names:
        for p in SETS[name]():
            case = Case(p, args.seed)
            for route in args.routes:
                start = time.monotonic()
                outcome = case.run(route, args)
                secs = time.monotonic() - start
                status = "PASS" if outcome.ok else "FAIL"
                print(f"{status} route={route} form={p.form} dtype={p.dtype} "
                      f"case=[{p.name()}] {outcome.detail} ({secs:.2f}s)", flush=True)
                if outcome.ok:
                    passed += 1
                    continue
                failed += 1
                if outcome.log:
                    print("  " + outcome.log.replace("\n", "\n  "))
                if args.keep:
                    kept = keep_module(args.keep, p, route, case.module, outcome.log)
                    print(f"  kept {kept}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
