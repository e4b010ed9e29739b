#!/usr/bin/env python3
"""Writes one ConvLower bundle per distinct conv problem of bench/gpu/models.json
(ResNet-50, MobileNetV2, ResNeXt-50 32x4d) into DIR/<model>/<id>/, with
`conv-run --emit-bundle` (f16 NHWC by default), and DIR/index.json: the batch,
chip, dtype, layout and, per problem, the bundle or the reason conv-run refused
it (such a layer is listed as skipped in the table, never dropped).

Called by make_convlower_bundles.sh (which runs it by default); by hand:

  bench/gpu/make_model_bundles.py --conv-run build/release/bin/conv-run \\
      --out bench/gpu/bundles/models [--chip sm_90] [--batch N] [--jobs J]

Standard library only; no torchvision (models.json is committed, written by
extract_model_layers.py).
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def csv(values):
    return ",".join(str(v) for v in values)


def command(args, p, bundle):
    n, c, h, w = p["input"]
    if args.batch:
        n = args.batch
    return [args.conv_run,
            "--input-shape", csv([n, c, h, w]),
            "--filter-shape", csv(p["filter"]),
            "--stride", csv(p["stride"]),
            "--padding", csv(p["padding"]),
            "--dilation", csv(p["dilation"]),
            "--groups", str(p["groups"]),
            "--dtype", args.dtype, "--layout", args.layout,
            "--chip", args.chip, "--emit-bundle", bundle, "--json"]


def emit(args, model, p):
    bundle = os.path.join(args.out, model, p["id"])
    cmd = command(args, p, bundle)
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    entry = {"model": model, "id": p["id"], "seconds": round(time.monotonic() - start, 2),
             "command": " ".join(cmd[1:])}
    if proc.returncode == 0 and os.path.isfile(os.path.join(bundle, "manifest.json")):
        try:
            report = json.loads(proc.stdout)
            entry.update(status="ok", kernel=report.get("kernel"), tiles=report.get("tiles"))
        except ValueError:
            entry.update(status="ok")
        return entry
    shutil.rmtree(bundle, ignore_errors=True)
    reason = " ".join((proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines())
    if reason.startswith("conv-run: "):
        reason = reason[len("conv-run: "):]
    entry.update(status="skipped", reason=f"conv-run exit {proc.returncode}: {reason}")
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conv-run", required=True)
    ap.add_argument("--out", required=True, help="e.g. bench/gpu/bundles/models (replaced)")
    ap.add_argument("--models", default=os.path.join(HERE, "models.json"))
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--batch", type=int, default=0, help="override models.json's batch N")
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--layout", default="nhwc")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    with open(args.models) as fh:
        doc = json.load(fh)
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    work = [(model, p) for model, m in doc["models"].items() for p in m["problems"]]
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        entries = list(pool.map(lambda mp: emit(args, *mp), work))
    elapsed = time.monotonic() - start
    index = {"models_json": os.path.relpath(os.path.abspath(args.models), HERE),
             "batch": args.batch or doc["batch"], "chip": args.chip, "dtype": args.dtype,
             "layout": args.layout, "seconds": round(elapsed, 1), "bundles": entries}
    with open(os.path.join(args.out, "index.json"), "w") as fh:
        json.dump(index, fh, indent=1)
        fh.write("\n")
    for model in doc["models"]:
        mine = [e for e in entries if e["model"] == model]
        ok = sum(e["status"] == "ok" for e in mine)
        print(f"models: {model}: {ok} of {len(mine)} distinct problems bundled")
        for e in mine:
            if e["status"] != "ok":
                print(f"models:   skipped {model}/{e['id']}: {e['reason']}")
    print(f"models: {len(entries)} problems in {elapsed:.1f} s ({args.jobs} jobs), "
          f"N={index['batch']} {args.dtype} {args.layout} {args.chip} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
