#!/usr/bin/env python3
"""Numerics of 1-D and batchless convolutions through conv-lower-lift-to-2d.

Each case is a linalg 1-D convolution (conv_1d_nwc_wcf, conv_1d_ncw_fcw, the three
depthwise_conv_1d forms), a batchless linalg.conv_1d or linalg.conv_2d, with seeded
small-integer data (exact in f32 and f16, so every route must agree exactly) and a
zero tensor.pad of its input. It runs through

  upstream   mlir-opt (upstream's loop lowering) | mlir-runner: no ConvLower pass
  decompose  conv-opt --conv-lower-lift-to-2d --conv-lower-im2col --conv-lower-decompose
             | mlir-opt | mlir-runner
  llvm       conv-opt --conv-lower-to-llvm | mlir-runner
  twin       conv-opt --conv-lower-to-llvm=implicit-gemm-twin | mlir-runner (the GPU
             kernel's CPU twin; it fails on a convolution the kernel cannot take)

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
# depthwise channel, w/h output positions (windowed in the input), s/r kernel taps.
FORMS = {
    "conv_1d_nwc_wcf": ("nwc", "scf", "nwf", True),
    "conv_1d_ncw_fcw": ("ncw", "fcs", "nfw", True),
    "depthwise_conv_1d_nwc_wc": ("nwg", "sg", "nwg", True),
    "depthwise_conv_1d_ncw_cw": ("ngw", "gs", "ngw", True),
    "depthwise_conv_1d_nwc_wcm": ("nwg", "sgf", "nwgf", True),
    "conv_1d": ("w", "s", "w", False),
    "conv_2d": ("hw", "rs", "hw", False),
}
KERNEL = {"w": "s", "h": "r"}


class Case:
    def __init__(self, op, sizes, stride=1, dilation=1, pad=(0, 0), elem="f32",
                 twin=False):
        self.op, self.sizes, self.elem, self.twin = op, dict(sizes), elem, twin
        self.x_axes, self.w_axes, self.y_axes, self.attrs = FORMS[op]
        # The windowed dimension of a 1-D op is w; conv_2d's h has stride 1, no pad.
        self.stride = {"w": stride, "h": 1}
        self.dilation = {"w": dilation, "h": 1}
        self.pad = {"w": pad, "h": (0, 0)}
        for d in self.y_axes:
            if d in KERNEL:
                k, (lo, hi) = self.sizes[KERNEL[d]], self.pad[d]
                extent = self.sizes["in_" + d] + lo + hi
                self.sizes[d] = (extent - self.dilation[d] * (k - 1) - 1) // self.stride[d] + 1

    def name(self):
        sz = " ".join(f"{k}{v}" for k, v in sorted(self.sizes.items()))
        return (f"{self.op} {self.elem} {sz} s{self.stride['w']} d{self.dilation['w']} "
                f"p{self.pad['w'][0]},{self.pad['w'][1]}")

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
        loops = sorted(set(self.x_axes + self.w_axes + self.y_axes) - set("hw") |
                       {d for d in self.y_axes if d in KERNEL})
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
                        break
                    xi.append(pos)
                else:
                    xi.append(at[d])
            else:
                y[tuple(at[d] for d in self.y_axes)] += (
                    x[tuple(xi)] * w[tuple(at[d] for d in self.w_axes)])
        return y

    def module(self, x, w):
        xt = ch.tensor_type(self.shape(self.x_axes, windowed=True), self.elem)
        xpt = ch.tensor_type(self.shape(self.x_axes, padded=True, windowed=True), self.elem)
        wt = ch.tensor_type(self.shape(self.w_axes), self.elem)
        yt = ch.tensor_type(self.shape(self.y_axes), "f32")
        memref = yt.replace("tensor", "memref")
        lo = [self.pad[d][0] if d in KERNEL else 0 for d in self.x_axes]
        hi = [self.pad[d][1] if d in KERNEL else 0 for d in self.x_axes]
        idx = ", ".join(f"%i{k}: index" for k in range(len(self.x_axes)))
        attrs = ""
        if self.attrs:
            attrs = (f"{{strides = dense<{self.stride['w']}> : tensor<1xi64>, "
                     f"dilations = dense<{self.dilation['w']}> : tensor<1xi64>}} ")
        return "\n".join([
            "module {",
            f"  func.func @conv(%x: {xt}, %w: {wt}) -> {yt} {{",
            f"    %pz = arith.constant 0.0 : {self.elem}",
            f"    %xp = tensor.pad %x low{lo} high{hi} {{",
            f"    ^bb0({idx}):",
            f"      tensor.yield %pz : {self.elem}",
            f"    }} : {xt} to {xpt}",
            f"    %e = tensor.empty() : {yt}",
            "    %z = arith.constant 0.0 : f32",
            f"    %init = linalg.fill ins(%z : f32) outs(%e : {yt}) -> {yt}",
            f"    %y = linalg.{self.op} {attrs}ins(%xp, %w : {xpt}, {wt})"
            f" outs(%init : {yt}) -> {yt}",
            f"    return %y : {yt}",
            "  }",
            "  func.func private @printMemrefF32(memref<*xf32>)"
            " attributes {llvm.emit_c_interface}",
            "  func.func @main() {",
            f"    %x = arith.constant dense<{ch.dense_literal(x, self.elem)}> : {xt}",
            f"    %w = arith.constant dense<{ch.dense_literal(w, self.elem)}> : {wt}",
            f"    %y = call @conv(%x, %w) : ({xt}, {wt}) -> {yt}",
            f"    %buf = bufferization.to_buffer %y : {yt} to {memref}",
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
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ch.add_tool_arguments(ap)
    ap.add_argument("--seed", type=int, default=14)
    tools = ap.parse_args(argv)
    # conv_harness's routes, and the decompose route with the lift in front.
    routes = {r: ch.route_stages(r, tools) for r in ("upstream", "llvm", "twin")}
    routes["decompose"] = [[tools.conv_opt, "--conv-lower-lift-to-2d",
                            "--conv-lower-im2col", "--conv-lower-decompose"],
                           *ch.route_stages("upstream", tools)]
    passed = failed = 0
    rng = np.random.default_rng(tools.seed)
    for case in CASES:
        # Small integers: exact in f16 and f32, products and sums exact in f32.
        x = rng.integers(-3, 4, case.shape(case.x_axes, windowed=True)).astype(np.float64)
        w = rng.integers(-3, 4, case.shape(case.w_axes)).astype(np.float64)
        ref = case.reference(x, w)
        module = case.module(x, w)
        checks = []
        rewritten = ch.run_tool([tools.conv_opt, "--conv-lower-lift-to-2d",
                                 "--conv-lower-im2col"], module)
        left = re.findall(r"linalg\.\w*conv\w*", rewritten.split("func.func @main")[0])
        checks.append(("rewrite", not left, f"left {left}" if left else ""))
        for route in ["upstream", "decompose", "llvm"] + (["twin"] if case.twin else []):
            try:
                text = module
                for cmd in routes[route]:
                    text = ch.run_tool(cmd, text)
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
