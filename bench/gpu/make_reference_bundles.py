#!/usr/bin/env python3
"""Builds bundles of the naive reference kernel with nvcc (runtime/tests/
kernels/naive_conv.cu, the kernel of the runtime's real-device test).

One bundle per problem: kernel.cubin (for --arch), kernel.ptx, manifest.json
in runtime/'s bundle format. They let bench/gpu check the runtime, the bundle
path and the cuDNN comparison on a real GPU; they are a floor, not ConvLower's
kernels (those come from `conv-run --emit-bundle`).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# name, N, C, H, W, F, KH, KW, stride, pad, groups: the seed layer and the
# ResNet-50 3x3 layers (batch 32 keeps the naive kernel and the host float64
# check quick), plus a grouped, dilated one.
PROBLEMS = [
    ("seed_n16_c64_56_f128", 16, 64, 56, 56, 128, 3, 3, 1, 1, 1, 1),
    ("r50_c64_56_n32", 32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1),
    ("r50_c128_28_n32", 32, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1),
    ("r50_c256_14_n32", 32, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1),
    ("r50_c512_7_n32", 32, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1),
    ("grouped_dilated", 4, 64, 30, 30, 64, 3, 3, 1, 2, 4, 2),
]


def out_size(size, pad, k, stride, dilation):
    return (size + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def build(problem, out_dir, nvcc, arch):
    name, n, c, h, w, f, kh, kw, stride, pad, groups, dil = problem
    ho, wo = out_size(h, pad, kh, stride, dil), out_size(w, pad, kw, stride, dil)
    bundle = os.path.join(out_dir, name)
    os.makedirs(bundle, exist_ok=True)
    defines = dict(N_=n, C_=c, H_=h, W_=w, F_=f, KH_=kh, KW_=kw, SH_=stride,
                   SW_=stride, DH_=dil, DW_=dil, PT_=pad, PL_=pad, PB_=pad,
                   PR_=pad, G_=groups)
    flags = [f"-D{k}={v}" for k, v in defines.items()]
    src = os.path.join(HERE, "..", "..", "runtime", "tests", "kernels", "naive_conv.cu")
    subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-O3", *flags, "-o",
                    os.path.join(bundle, "kernel.cubin"), src], check=True)
    subprocess.run([nvcc, "-ptx", f"-arch=compute_{arch.split('_')[1]}", "-O3",
                    *flags, "-o", os.path.join(bundle, "kernel.ptx"), src],
                   check=True)
    block = 256
    outputs = n * f * ho * wo
    manifest = {
        "format_version": 1,
        "generator": "bench/gpu/make_reference_bundles.py (naive CUDA kernel)",
        "kernel": {"name": "naive_conv", "binary": "kernel.cubin",
                   "ptx": "kernel.ptx", "grid": [(outputs + block - 1) // block, 1, 1],
                   "block": [block, 1, 1], "shared_memory_bytes": 0, "chip": arch},
        "arguments": [
            {"name": "input", "role": "input", "dtype": "f32", "shape": [n, c, h, w]},
            {"name": "filter", "role": "filter", "dtype": "f32",
             "shape": [f, c // groups, kh, kw]},
            {"name": "bias", "role": "bias", "dtype": "f32", "shape": [f]},
            {"name": "output", "role": "output", "dtype": "f32", "shape": [n, f, ho, wo]},
        ],
        "problem": {"layout": "nchw", "filter_layout": "fchw", "n": n, "c": c,
                    "h": h, "w": w, "f": f, "kh": kh, "kw": kw,
                    "stride": [stride, stride], "dilation": [dil, dil],
                    "padding": [pad, pad, pad, pad], "groups": groups,
                    "dtype": "f32", "accumulate": "f32"},
    }
    with open(os.path.join(bundle, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=2)
    return bundle


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, help="directory for the bundles")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--only", default="", help="comma-separated problem names")
    args = ap.parse_args()
    wanted = set(filter(None, args.only.split(",")))
    for p in PROBLEMS:
        if not wanted or p[0] in wanted:
            print(build(p, args.out, args.nvcc, args.arch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
