#!/usr/bin/env python3
"""convrt-run --json lines -> one markdown table (problem, dtype, layout, ms,
TFLOP/s, cuDNN ms, vs cuDNN, error, check)."""
import json
import os
import sys


def row(r):
    if "error" in r:
        return f"| {os.path.basename(r.get('source', '?').rstrip('/'))} | error: {r['error']} |||||||||"
    cudnn = r.get("cudnn", {})
    cudnn_ms = f"{cudnn['ms']:.4f}" if cudnn.get("ran") else f"({cudnn.get('reason', 'not run')})"
    vs = f"{r['vs_cudnn']:.2f}" if r.get("vs_cudnn") is not None else "-"
    return (f"| {os.path.basename(r['source'].rstrip('/'))} | {r['problem']} | {r['dtype']} | "
            f"{r['layout']} | {r['ms']:.4f} | {r['tflops']:.2f} | {cudnn_ms} | {vs} | "
            f"{r['rel_l2_error']:.2e} | {'ok' if r['pass'] else 'FAIL'} |")


def main(path):
    print("| bundle | problem | dtype | layout | ms | TFLOP/s | cuDNN ms | vs cuDNN | rel_l2_error | check |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line:
                print(row(json.loads(line)))
    print("\nms are medians (events); vs cuDNN = cuDNN time / ours (above 1: faster than cuDNN).")


if __name__ == "__main__":
    main(sys.argv[1])
