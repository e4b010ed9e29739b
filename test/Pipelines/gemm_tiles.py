#!/usr/bin/env python3
"""Numerics of the CPU GEMM micro-kernel across tile shapes.

conv-lower-tile-and-vectorize picks tile sizes, shrinks them to divisors,
peels dynamic extents, drops unit loops and specializes generic tiles: each
of those decides how a tile is vectorized. This runs GEMMs in the layouts the
im2col rewrite emits (B as [K, N], as [N, K] through matmul maps and through
a linalg.generic, and a grouped generic with a unit group tile) through
conv-run with several tile sizes, and compares with numpy in float64.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

# (name, A shape, B shape, C shape, MLIR maps of A, B, C over (m, n, k) or (g, m, n, k)).
CASES = [
    ("matmul_kn", (36, 27), (27, 6), (36, 6), "named", "(m, n, k) -> (m, k)", "(m, n, k) -> (k, n)", "(m, n, k) -> (m, n)"),
    ("matmul_nk", (36, 27), (6, 27), (36, 6), "named", "(m, n, k) -> (m, k)", "(m, n, k) -> (n, k)", "(m, n, k) -> (m, n)"),
    ("generic_nk", (16, 36), (3, 36), (16, 3), "generic", "(m, n, k) -> (m, k)", "(m, n, k) -> (n, k)", "(m, n, k) -> (m, n)"),
    ("generic_kn", (40, 20), (20, 24), (40, 24), "generic", "(m, n, k) -> (m, k)", "(m, n, k) -> (k, n)", "(m, n, k) -> (m, n)"),
    ("grouped_fgk", (2, 16, 36), (3, 2, 36), (2, 16, 3), "generic4",
     "(g, m, n, k) -> (g, m, k)", "(g, m, n, k) -> (n, g, k)", "(g, m, n, k) -> (g, m, n)"),
    ("pointwise_fc_ncp", (8, 12), (2, 12, 20), (2, 8, 20), "generic4",
     "(b, m, n, k) -> (m, k)", "(b, m, n, k) -> (b, k, n)", "(b, m, n, k) -> (b, m, n)"),
]
# (6, 16, 8) is AVX2's default; it and (7, 16, 8) peel a static M remainder
# where no divisor is near the tile (16 rows: 6 + 6 + 4; 40 rows: 5 x 7 + 5).
TILES = [(8, 32, 8), (6, 16, 8), (7, 16, 8), (4, 16, 4), (3, 5, 7), (1, 1, 1)]


def tensor(shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def module(kind, a, b, c, ma, mb, mc):
    iters = '"parallel", "parallel", "reduction"' if kind != "generic4" else \
        '"parallel", "parallel", "parallel", "reduction"'
    maps = f"[affine_map<{ma}>, affine_map<{mb}>, affine_map<{mc}>]"
    if kind == "named":
        body = (f"  %r = linalg.matmul indexing_maps = {maps} ins(%a, %b : {tensor(a)}, {tensor(b)}) "
                f"outs(%c : {tensor(c)}) -> {tensor(c)}\n")
    else:
        body = (f"  %r = linalg.generic {{indexing_maps = {maps}, iterator_types = [{iters}]}}\n"
                f"      ins(%a, %b : {tensor(a)}, {tensor(b)}) outs(%c : {tensor(c)}) {{\n"
                "  ^bb0(%x: f32, %y: f32, %acc: f32):\n"
                "    %p = arith.mulf %x, %y : f32\n    %s = arith.addf %acc, %p : f32\n"
                f"    linalg.yield %s : f32\n  }} -> {tensor(c)}\n")
    return (f"func.func @conv(%a: {tensor(a)}, %b: {tensor(b)}) -> {tensor(c)} {{\n"
            "  %z = arith.constant 0.0 : f32\n"
            f"  %e = tensor.empty() : {tensor(c)}\n"
            f"  %c = linalg.fill ins(%z : f32) outs(%e : {tensor(c)}) -> {tensor(c)}\n"
            + body + f"  return %r : {tensor(c)}\n}}\n")


def reference(name, a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    if name in ("matmul_kn", "generic_kn"):
        return a @ b
    if name in ("matmul_nk", "generic_nk"):
        return a @ b.T
    if name == "grouped_fgk":
        return np.einsum("gmk,ngk->gmn", a, b)
    return np.einsum("mk,bkn->bmn", a, b)  # pointwise: W[f, c] . X[n, c, p]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conv-run", default="build/release/bin/conv-run")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, a_shape, b_shape, c_shape, kind, ma, mb, mc in CASES:
            path = os.path.join(tmp, name + ".mlir")
            with open(path, "w") as f:
                f.write(module(kind, a_shape, b_shape, c_shape, ma, mb, mc))
            a = rng.uniform(-1, 1, a_shape).astype(np.float32)
            b = rng.uniform(-1, 1, b_shape).astype(np.float32)
            np.save(os.path.join(tmp, "a.npy"), a)
            np.save(os.path.join(tmp, "b.npy"), b)
            want = reference(name, a, b)
            for tm, tn, tk in TILES:
                out = os.path.join(tmp, "y.npy")
                if os.path.exists(out):
                    os.remove(out)
                cmd = [args.conv_run, path, "--input", os.path.join(tmp, "a.npy"),
                       "--filter", os.path.join(tmp, "b.npy"), "--output", out,
                       "--reference", "none", "--repeat", "1", "--warmup", "0",
                       "--tile-m", str(tm), "--tile-n", str(tn), "--tile-k", str(tk)]
                run = subprocess.run(cmd, capture_output=True, text=True)
                label = f"{name} tiles {tm}x{tn}x{tk}"
                if run.returncode != 0:
                    print(f"FAIL {label}: exit {run.returncode}: {run.stderr.strip()}")
                    failed += 1
                    continue
                err = np.abs(np.load(out) - want).max() / max(1.0, np.abs(want).max())
                ok = err <= 1e-5
                print(f"{'PASS' if ok else 'FAIL'} {label}: max error {err:.2e} (tolerance 1e-5 of max|ref|)")
                passed += ok
                failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
