#!/usr/bin/env python3
"""Numerics of 1-D, 3-D and batchless convolutions (conv_harness.py has the 2-D forms).

Each case is a linalg 1-D convolution (conv_1d_nwc_wcf, conv_1d_ncw_fcw, the three
depthwise_conv_1d forms, lifted to 2-D by conv-lower-lift-to-2d), a 3-D one
(conv_3d_ndhwc_dhwcf, conv_3d_ncdhw_fcdhw, the three depthwise_conv_3d forms and the
quantized conv_3d_ndhwc_dhwcf_q, rewritten as they are), or a batchless linalg.conv_1d,
conv_2d or conv_3d, with seeded small-integer data (exact in f32 and f16, so every route
must agree exactly; i8 with i32 zero points for the quantized op) and a zero tensor.pad
of its input. It runs through

  upstream   mlir-opt (upstream's loop lowering) | mlir-runner: no ConvLower pass
  decompose  conv-opt --conv-lower-lift-to-2d --conv-lower-im2col --conv-lower-decompose
             | mlir-opt | mlir-runner
  llvm       conv-opt --conv-lower-to-llvm | mlir-runner
  twin-small (3-D forms) the twin with 64x32 tiles, 1x2 warps, 2 stages
  transform  (3-D forms) conv_harness's route: transform.conv_lower.im2col from a script
  twin       conv-opt --conv-lower-to-llvm=implicit-gemm-twin | mlir-runner (the GPU
             kernel's CPU twin; it fails on a convolution the kernel cannot take, so
             it runs on the float cases only)

and every result is compared with a float64 numpy convolution written here from the
ops' definitions. Before the numeric routes, conv-opt --conv-lower-lift-to-2d
--conv-lower-im2col must leave no linalg convolution behind. The last line is
"N passed, N failed".
"""

import argparse
import itertools
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_harness as ch  # noqa: E402  (tools, printing, parsing)

# op: (input axes, filter axes, output axes, has strides/dilations). Letters as in
# conv_harness: n batch, c input channel, f filter (depthwise: multiplier m), g the
# depthwise channel, d/h/w output positions (windowed in the input), q/r/s kernel taps.
FORMS = {
    "conv_1d_nwc_wcf": ("nwc", "scf", "nwf", True),
    "conv_1d_ncw_fcw": ("ncw", "fcs", "nfw", True),
    "depthwise_conv_1d_nwc_wc": ("nwg", "sg", "nwg", True),
    "depthwise_conv_1d_ncw_cw": ("ngw", "gs", "ngw", True),
    "depthwise_conv_1d_nwc_wcm": ("nwg", "sgf", "nwgf", True),
    "conv_1d": ("w", "s", "w", False),
    "conv_2d": ("hw", "rs", "hw", False),
    "conv_3d_ndhwc_dhwcf": ("ndhwc", "qrscf", "ndhwf", True),
    "conv_3d_ncdhw_fcdhw": ("ncdhw", "fcqrs", "nfdhw", True),
    "depthwise_conv_3d_ndhwc_dhwc": ("ndhwg", "qrsg", "ndhwg", True),
    "depthwise_conv_3d_ncdhw_cdhw": ("ngdhw", "gqrs", "ngdhw", True),
    "depthwise_conv_3d_ndhwc_dhwcm": ("ndhwg", "qrsgf", "ndhwgf", True),
    "conv_3d_ndhwc_dhwcf_q": ("ndhwc", "qrscf", "ndhwf", True),
    "conv_3d": ("dhw", "qrs", "dhw", False),
}
KERNEL = {"w": "s", "h": "r", "d": "q"}


def per_axis(value, default):
    """A stride, dilation or pad for w (a 1-D op's one windowed axis), or a dict of them
    by windowed axis; the axes not given get `default`."""
    given = value if isinstance(value, dict) else {"w": value}
    return {d: given.get(d, default) for d in KERNEL}


class Case:
    def __init__(self, op, sizes, stride=1, dilation=1, pad=(0, 0), elem="f32",
                 twin=False, zero_points=None):
        self.op, self.sizes, self.elem, self.twin = op, dict(sizes), elem, twin
        self.zero_points = zero_points     # (zx, zw) of a quantized (_q) op
        self.x_axes, self.w_axes, self.y_axes, self.attrs = FORMS[op]
        self.out_elem = "i32" if elem == "i8" else "f32"
        # Per windowed axis; the batchless ops have unit strides, no pad.
        self.stride = per_axis(stride, 1)
        self.dilation = per_axis(dilation, 1)
        self.pad = per_axis(pad, (0, 0))
        self.spatial = [d for d in self.y_axes if d in KERNEL]
        for d in self.y_axes:
            if d in KERNEL:
                k, (lo, hi) = self.sizes[KERNEL[d]], self.pad[d]
                extent = self.sizes["in_" + d] + lo + hi
                self.sizes[d] = (extent - self.dilation[d] * (k - 1) - 1) // self.stride[d] + 1

    def name(self):
        sz = " ".join(f"{k}{v}" for k, v in sorted(self.sizes.items()))
        per = lambda f: "x".join(f(d) for d in self.spatial)
        name = (f"{self.op} {self.elem} {sz} s{per(lambda d: str(self.stride[d]))} "
                f"d{per(lambda d: str(self.dilation[d]))} "
                f"p{per(lambda d: '%d,%d' % self.pad[d])}")
        return name + (f" zp{self.zero_points[0]},{self.zero_points[1]}"
                       if self.zero_points else "")

    def shape(self, axes, padded=False, windowed=False):
        out = []
        for d in axes:
            if windowed and d in KERNEL:
                lo, hi = self.pad[d] if padded else (0, 0)
                out.append(self.sizes["in_" + d] + lo + hi)
            else:
                out.append(self.sizes[d])
        return out

    def reference(self, x, w):
        """Y = sum over the reductions of X[window] * W, in float64, from the axes."""
        loops = sorted(set(self.x_axes + self.w_axes + self.y_axes) - set(KERNEL) |
                       set(self.spatial))
        zx, zw = self.zero_points or (0, 0)
        # A quantized op subtracts the zero points from the padded input (the pad is a
        # 0 there, so it reads as -zx) and from the filter.
        y = np.zeros(self.shape(self.y_axes))
        ranges = [range(self.sizes[d]) for d in loops]
        for idx in itertools.product(*ranges):
            at = dict(zip(loops, idx))
            xi = []
            for d in self.x_axes:
                if d in KERNEL:
                    pos = (at[d] * self.stride[d] + at[KERNEL[d]] * self.dilation[d]
                           - self.pad[d][0])
                    if not 0 <= pos < self.sizes["in_" + d]:
                        xi = None
                        break
                    xi.append(pos)
                else:
                    xi.append(at[d])
            xv = x[tuple(xi)] if xi is not None else 0.0
            y[tuple(at[d] for d in self.y_axes)] += (
                (xv - zx) * (w[tuple(at[d] for d in self.w_axes)] - zw))
        return y

    def module(self, x, w):
        xt = ch.tensor_type(self.shape(self.x_axes, windowed=True), self.elem)
        xpt = ch.tensor_type(self.shape(self.x_axes, padded=True, windowed=True), self.elem)
        wt = ch.tensor_type(self.shape(self.w_axes), self.elem)
        y_shape = self.shape(self.y_axes)
        yt = ch.tensor_type(y_shape, self.out_elem)
        ft = ch.tensor_type(y_shape, "f32")
        memref = ft.replace("tensor", "memref")
        lo = [self.pad[d][0] if d in KERNEL else 0 for d in self.x_axes]
        hi = [self.pad[d][1] if d in KERNEL else 0 for d in self.x_axes]
        idx = ", ".join(f"%i{k}: index" for k in range(len(self.x_axes)))
        attrs = ""
        if self.attrs:
            rank = len(self.spatial)
            dense = lambda v: (f"dense<[{', '.join(str(v[d]) for d in self.spatial)}]>"
                               f" : tensor<{rank}xi64>")
            attrs = (f"{{strides = {dense(self.stride)}, "
                     f"dilations = {dense(self.dilation)}}} ")
        ins, types = "%xp, %w", f"{xpt}, {wt}"
        zero_points = []
        if self.zero_points:
            zero_points = [f"    %zx = arith.constant {self.zero_points[0]} : i32",
                           f"    %zw = arith.constant {self.zero_points[1]} : i32"]
            ins, types = ins + ", %zx, %zw", types + ", i32, i32"
        widen, yf = ch.emit_to_f32("%y", y_shape, self.out_elem)
        return "\n".join([
            "module {",
            f"  func.func @conv(%x: {xt}, %w: {wt}) -> {yt} {{",
            f"    %pz = arith.constant {ch.zero_literal(self.elem)}",
            f"    %xp = tensor.pad %x low{lo} high{hi} {{",
            f"    ^bb0({idx}):",
            f"      tensor.yield %pz : {self.elem}",
            f"    }} : {xt} to {xpt}",
            f"    %e = tensor.empty() : {yt}",
            f"    %z = arith.constant {ch.zero_literal(self.out_elem)}",
            f"    %init = linalg.fill ins(%z : {self.out_elem}) outs(%e : {yt}) -> {yt}",
            *zero_points,
            f"    %y = linalg.{self.op} {attrs}ins({ins} : {types})"
            f" outs(%init : {yt}) -> {yt}",
            f"    return %y : {yt}",
            "  }",
            "  func.func private @printMemrefF32(memref<*xf32>)"
            " attributes {llvm.emit_c_interface}",
            "  func.func @main() {",
            f"    %x = arith.constant dense<{ch.dense_literal(x, self.elem)}> : {xt}",
            f"    %w = arith.constant dense<{ch.dense_literal(w, self.elem)}> : {wt}",
            f"    %y = call @conv(%x, %w) : ({xt}, {wt}) -> {yt}",
            *("    " + line for line in widen),
            f"    %buf = bufferization.to_buffer {yf} : {ft} to {memref}",
            f"    %u = memref.cast %buf : {memref} to memref<*xf32>",
            "    call @printMemrefF32(%u) : (memref<*xf32>) -> ()",
            "    return",
            "  }",
            "}", ""])


CASES = [
    Case("conv_1d_nwc_wcf", dict(n=2, in_w=11, c=3, f=4, s=3), stride=2, pad=(1, 2)),
    Case("conv_1d_nwc_wcf", dict(n=1, in_w=9, c=8, f=16, s=3), pad=(1, 1), elem="f16",
         twin=True),
    Case("conv_1d_ncw_fcw", dict(n=1, c=5, in_w=9, f=3, s=2), dilation=2, twin=True),
    Case("depthwise_conv_1d_nwc_wc", dict(n=2, in_w=8, g=4, s=3), pad=(1, 1), twin=True),
    Case("depthwise_conv_1d_ncw_cw", dict(n=1, g=3, in_w=10, s=2), stride=3, pad=(2, 0)),
    Case("depthwise_conv_1d_nwc_wcm", dict(n=1, in_w=7, g=2, f=3, s=3), dilation=2,
         pad=(0, 1)),
    Case("conv_1d", dict(in_w=12, s=4), pad=(1, 1)),
    Case("conv_2d", dict(in_h=6, in_w=7, r=3, s=2), twin=True),
    # 3-D: strides, dilations and pads per dim (d, h, w); on the twin too (i8 on the s8 MMA).
    Case("conv_3d_ndhwc_dhwcf", dict(n=2, in_d=5, in_h=6, in_w=5, c=3, f=4, q=3, r=2, s=3),
         stride=dict(d=1, h=2, w=1), dilation=dict(d=1, h=1, w=2),
         pad=dict(d=(1, 1), h=(0, 1), w=(2, 0)), twin=True),
    Case("conv_3d_ndhwc_dhwcf", dict(n=1, in_d=4, in_h=4, in_w=4, c=4, f=3, q=1, r=1, s=1),
         twin=True),
    # Channels in 16-byte chunks (f16, C = 8): the twin's vectorized A and B loads.
    Case("conv_3d_ndhwc_dhwcf", dict(n=1, in_d=4, in_h=5, in_w=5, c=8, f=16, q=2, r=3, s=3),
         stride=dict(d=2, h=1, w=1), pad=dict(d=(1, 0), h=(1, 1), w=(1, 1)), elem="f16",
         twin=True),
    Case("conv_3d_ncdhw_fcdhw", dict(n=1, c=3, in_d=6, in_h=5, in_w=5, f=4, q=2, r=3, s=3),
         stride=dict(d=2, h=1, w=1), pad=dict(d=(0, 1), h=(1, 1), w=(0, 0)), elem="f16",
         twin=True),
    Case("conv_3d_ncdhw_fcdhw", dict(n=2, c=3, in_d=3, in_h=4, in_w=5, f=2, q=1, r=1, s=1),
         twin=True),
    Case("depthwise_conv_3d_ndhwc_dhwc", dict(n=1, in_d=5, in_h=5, in_w=6, g=3, q=2, r=3, s=2),
         dilation=dict(d=2, h=1, w=1), pad=dict(d=(0, 0), h=(1, 1), w=(1, 0)), twin=True),
    Case("depthwise_conv_3d_ncdhw_cdhw", dict(n=2, g=2, in_d=4, in_h=5, in_w=4, q=3, r=2, s=2),
         stride=dict(d=1, h=2, w=2), pad=dict(d=(1, 1), h=(0, 0), w=(0, 1)), twin=True),
    Case("depthwise_conv_3d_ndhwc_dhwcm", dict(n=1, in_d=4, in_h=4, in_w=5, g=2, f=3, q=2,
                                                r=2, s=3), pad=dict(d=(0, 1), h=(1, 0), w=(0, 0)),
         twin=True),
    Case("conv_3d_ndhwc_dhwcf_q", dict(n=1, in_d=4, in_h=5, in_w=4, c=3, f=4, q=2, r=3, s=2),
         pad=dict(d=(1, 0), h=(1, 1), w=(0, 1)), elem="i8", zero_points=(3, -2), twin=True),
    # i8 channels in 16-byte chunks (C = 16): the s8 kernel's cp.async path in 3-D.
    Case("conv_3d_ndhwc_dhwcf_q", dict(n=2, in_d=3, in_h=4, in_w=5, c=16, f=8, q=2, r=2, s=3),
         pad=dict(d=(0, 1), h=(1, 0), w=(1, 1)), elem="i8", zero_points=(-4, 5), twin=True),
    Case("conv_3d", dict(in_d=5, in_h=6, in_w=4, q=2, r=3, s=2), twin=True),
]


def conv_left(ir):
    """The linalg convolutions left in @conv of `ir`."""
    return re.findall(r"linalg\.\w*conv\w*", ir.split("func.func @main")[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ch.add_tool_arguments(ap)
    ap.add_argument("--seed", type=int, default=14)
    tools = ap.parse_args(argv)
    # conv_harness's routes, and the decompose route with the lift in front.
    routes = {r: ch.route_stages(r, tools)
              for r in ("upstream", "llvm", "twin", "twin-small", "transform")}
    routes["decompose"] = [[tools.conv_opt, "--conv-lower-lift-to-2d",
                            "--conv-lower-im2col", "--conv-lower-decompose"],
                           *ch.route_stages("upstream", tools)]
    passed = failed = 0
    rng = np.random.default_rng(tools.seed)
    for case in CASES:
        # Small integers: exact in f16 and f32, products and sums exact in f32 (and,
        # with zero points, in i32).
        x = rng.integers(-3, 4, case.shape(case.x_axes, windowed=True)).astype(np.float64)
        w = rng.integers(-3, 4, case.shape(case.w_axes)).astype(np.float64)
        ref = case.reference(x, w)
        module = case.module(x, w)
        checks = []
        rewritten = ch.run_tool([tools.conv_opt, "--conv-lower-lift-to-2d",
                                 "--conv-lower-im2col"], module)
        left = conv_left(rewritten)
        checks.append(("rewrite", not left, f"left {left}" if left else ""))
        # The transform script takes the named forms as they are (no lift): 3-D.
        named_3d = "_3d_" in case.op
        # 3-D on the twin: the heuristic's tiles and other ones (several CTA tiles
        # along M and N, 2 stages).
        twin = ["twin"] + (["twin-small"] if named_3d else []) if case.twin else []
        for route in (["upstream", "decompose", "llvm"] + twin +
                      (["transform"] if named_3d else [])):
            try:
                text = module
                for step, cmd in enumerate(routes[route]):
                    text = ch.run_tool(cmd, text)
                    if route == "transform" and step == 0 and conv_left(text):
                        raise ch.ToolError(f"the script left {conv_left(text)}")
                got = ch.parse_printed_memref(text, ref.shape)
                err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
                checks.append((route, err == 0.0, f"max|got-ref| {err:g}"))
            except ch.ToolError as e:
                checks.append((route, False, str(e)[-1500:]))
        for route, ok, detail in checks:
            print(f"{'PASS' if ok else 'FAIL'} route={route} case=[{case.name()}] {detail}",
                  flush=True)
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
