#!/usr/bin/env python3
"""convrt-run --json lines -> markdown.

  table.py RESULTS.jsonl
      one table (problem, dtype, layout, ms, TFLOP/s, cuDNN ms, vs cuDNN,
      error, check), a row per bundle;
  table.py --models MODELS.json [--index INDEX.json] RESULTS.jsonl
      the per-model tables of the bundles under bench/gpu/bundles/models/
      (make_model_bundles.py): per model, each distinct conv problem (its
      layers, count, ConvLower ms, cuDNN ms, vs cuDNN, check) and the model's
      total over all its conv layers (each problem's time times its count)
      next to cuDNN's. A problem without a result is listed with the reason
      (INDEX.json: the skips of conv-run --emit-bundle), never dropped.
"""
import argparse
import json
import os
import sys


def sci(value, digits=2):
    """A number in e-notation; convrt-run writes NaN (non-finite output) as null."""
    return f"{value:.{digits}e}" if isinstance(value, (int, float)) else "nan"


def row(r):
    if "error" in r:
        return f"| {os.path.basename(r.get('source', '?').rstrip('/'))} | error: {r['error']} |||||||||"
    cudnn = r.get("cudnn", {})
    cudnn_ms = f"{cudnn['ms']:.4f}" if cudnn.get("ran") else f"({cudnn.get('reason', 'not run')})"
    vs = f"{r['vs_cudnn']:.2f}" if r.get("vs_cudnn") is not None else "-"
    return (f"| {os.path.basename(r['source'].rstrip('/'))} | {r['problem']} | {r['dtype']} | "
            f"{r['layout']} | {r['ms']:.4f} | {r['tflops']:.2f} | {cudnn_ms} | {vs} | "
            f"{sci(r.get('rel_l2_error'))} | {'ok' if r['pass'] else 'FAIL'} |")


def read_jsonl(path):
    records = []
    with open(path) as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except ValueError as e:
                print(f"{path}:{number}: not JSON ({e}), ignored", file=sys.stderr)
    return records


def bundle_key(source):
    """(model, id) of a bundle directory .../models/<model>/<id>[/]."""
    parts = os.path.normpath(source.rstrip("/")).split(os.sep)
    return (parts[-2], parts[-1]) if len(parts) >= 2 else (None, parts[-1])


def shape_mismatch(p, r):
    """Why the bundle's problem is not models.json's (the batch may differ)."""
    d = r.get("problem_detail")
    if not isinstance(d, dict):
        return None
    n, c, h, w = p["input"]
    f, _, kh, kw = p["filter"]
    ph, pw = p["padding"]
    want = {"c": c, "h": h, "w": w, "f": f, "kh": kh, "kw": kw, "stride": p["stride"],
            "dilation": p["dilation"], "padding": [ph, pw, ph, pw], "groups": p["groups"]}
    bad = [k for k, v in want.items() if k in d and d[k] != v]
    return ", ".join(f"{k} {d[k]} != {want[k]}" for k in bad) or None


def problem_text(p, n=None):
    n0, c, h, w = p["input"]
    f, cg, kh, kw = p["filter"]
    text = f"{n or n0}x{c}x{h}x{w} * {f}x{cg}x{kh}x{kw}"
    extra = []
    if p["stride"] != [1, 1]:
        extra.append("s" + ",".join(map(str, sorted(set(p["stride"])))))
    if p["padding"] != [0, 0]:
        extra.append("p" + ",".join(map(str, sorted(set(p["padding"])))))
    if p["dilation"] != [1, 1]:
        extra.append("d" + ",".join(map(str, sorted(set(p["dilation"])))))
    if p["groups"] != 1:
        extra.append(f"g{p['groups']}" + (" (dw)" if p["groups"] == c else ""))
    return text + (" " + " ".join(extra) if extra else "")


def layer_names(p):
    names = p.get("layers", [])
    if not names:
        return "-"
    return names[0] + (f" (+{len(names) - 1})" if len(names) > 1 else "")


def ms(value):
    return f"{value:.4f}" if value is not None else "-"


def ratio(cudnn, ours):
    return f"{cudnn / ours:.2f}" if cudnn and ours else "-"


def model_tables(models_path, results_path, index_path=None, out=sys.stdout):
    """Per-model markdown; returns the summary rows (for tests)."""
    with open(models_path) as fh:
        doc = json.load(fh)
    index = {}
    if index_path and os.path.exists(index_path):
        with open(index_path) as fh:
            index = json.load(fh)
    built = {(e["model"], e["id"]): e for e in index.get("bundles", [])}
    results = {}
    for r in read_jsonl(results_path) if os.path.exists(results_path) else []:
        results[bundle_key(r.get("source", "?"))] = r
    batch = index.get("batch") or doc.get("batch")
    pr = lambda *a: print(*a, file=out)
    pr("# Per-model conv layers: ConvLower vs cuDNN\n")
    pr(f"torchvision {', '.join(doc['models'])} at {doc.get('image', 224)}x{doc.get('image', 224)}, "
       f"batch {batch}, {index.get('dtype', 'f16')} {index.get('layout', 'nhwc')}"
       f"{', ' + index['chip'] if index.get('chip') else ''}; shapes from "
       f"{os.path.basename(models_path)}. ms are medians (CUDA events) of one launch; "
       "vs cuDNN = cuDNN ms / ConvLower ms (above 1: faster than cuDNN); "
       "x count = ms times the layers sharing the problem.\n")
    summary = []
    for model, m in doc["models"].items():
        rows = []
        tot = {"layers": 0, "ours": 0.0, "ours_layers": 0, "cudnn": 0.0, "cudnn_layers": 0,
               "both_ours": 0.0, "both_cudnn": 0.0, "both_layers": 0, "fail": 0, "missing": 0,
               "missing_layers": 0, "distinct": len(m["problems"])}
        cudnn_reasons = set()
        for p in m["problems"]:
            count = p["count"]
            tot["layers"] += count
            r = results.get((model, p["id"]))
            e = built.get((model, p["id"]))
            n = None
            if r is None or "error" in r:
                if r is not None:
                    status = f"error: {r['error']}"
                elif e is not None and e.get("status") != "ok":
                    status = f"skipped: {e.get('reason', '?')}"
                elif index and e is None:
                    status = "skipped: no bundle (not in index.json; models.json newer than the bundles?)"
                else:
                    status = "no result (bundle not run)"
                tot["missing"] += 1
                tot["missing_layers"] += count
                rows.append((p, n, None, None, None, count, status))
                continue
            n = (r.get("problem_detail") or {}).get("n")
            stale = shape_mismatch(p, r)
            ours = r.get("ms")
            cudnn = r.get("cudnn") or {}
            cudnn_ms = cudnn.get("ms") if cudnn.get("ran") else None
            if not cudnn.get("ran"):
                cudnn_reasons.add(cudnn.get("reason", "not run"))
            if stale:
                status = f"FAIL (bundle is not this problem: {stale})"
            elif not r.get("checked", True):
                status = "unchecked"
            else:
                status = "ok" if r.get("pass") else "FAIL"
                if r.get("checked") and "rel_l2_error" in r:
                    status += f" ({sci(r['rel_l2_error'], 1)})"
            if cudnn.get("ran") and "check" in cudnn and not cudnn["check"].get("pass", True):
                status += "; cuDNN's own check FAIL"
            if status.startswith("FAIL") or (r.get("checked") and not r.get("pass")):
                tot["fail"] += 1
            if ours is not None:
                tot["ours"] += ours * count
                tot["ours_layers"] += count
            if cudnn_ms is not None:
                tot["cudnn"] += cudnn_ms * count
                tot["cudnn_layers"] += count
            if ours is not None and cudnn_ms is not None:
                tot["both_ours"] += ours * count
                tot["both_cudnn"] += cudnn_ms * count
                tot["both_layers"] += count
            rows.append((p, n, ours, cudnn_ms, r, count, status))
        n_layers = m.get("conv_layers", tot["layers"])
        pr(f"## {model}\n")
        pr(f"{n_layers} conv layers, {tot['distinct']} distinct problems.\n")
        pr("| id | layers | problem (NxCxHxW * FxC/GxKHxKW) | count | ConvLower ms | cuDNN ms | "
           "vs cuDNN | ConvLower x count | cuDNN x count | check |")
        pr("|---|---|---|---|---|---|---|---|---|---|")
        for p, n, ours, cudnn_ms, r, count, status in rows:
            pr(f"| {p['id']} | {layer_names(p)} | {problem_text(p, n)} | {count} | {ms(ours)} | "
               f"{ms(cudnn_ms)} | {ratio(cudnn_ms, ours)} | "
               f"{ms(ours * count if ours is not None else None)} | "
               f"{ms(cudnn_ms * count if cudnn_ms is not None else None)} | {status} |")
        pr("")
        notes = []
        if tot["missing"]:
            notes.append(f"{tot['missing']} problems ({tot['missing_layers']} layers) without a "
                         "result are left out of both totals")
        if cudnn_reasons:
            notes.append(("cuDNN not run: " if not tot["cudnn_layers"] else
                          f"cuDNN not run for {tot['ours_layers'] - tot['cudnn_layers']} layers: ")
                         + "; ".join(sorted(cudnn_reasons)))
        pr(f"**{model} total** over {tot['ours_layers']} of {n_layers} conv layers: "
           f"ConvLower {ms(tot['ours'])} ms, cuDNN "
           + (f"{ms(tot['cudnn'])} ms over {tot['cudnn_layers']} layers" if tot["cudnn_layers"] else "- (not run)")
           + (f", vs cuDNN {ratio(tot['both_cudnn'], tot['both_ours'])}"
              f" (over the {tot['both_layers']} layers both ran)" if tot["both_layers"] else "")
           + (f"; {tot['fail']} problems FAIL the check" if tot["fail"] else "")
           + "." + ("" if not notes else " " + ". ".join(notes) + "."))
        pr("")
        summary.append((model, n_layers, tot))
    pr("## Totals\n")
    pr("| model | conv layers | distinct | with result | ConvLower ms | cuDNN ms | vs cuDNN | failed checks | no result |")
    pr("|---|---|---|---|---|---|---|---|---|")
    for model, n_layers, tot in summary:
        cudnn_total = ms(tot["cudnn"]) if tot["cudnn_layers"] else "-"
        if tot["cudnn_layers"] and tot["cudnn_layers"] != tot["ours_layers"]:
            cudnn_total += f" ({tot['cudnn_layers']} layers)"
        pr(f"| {model} | {n_layers} | {tot['distinct']} | {tot['ours_layers']} layers | {ms(tot['ours'])} | "
           f"{cudnn_total} | {ratio(tot['both_cudnn'], tot['both_ours'])} | {tot['fail']} | "
           f"{tot['missing']} ({tot['missing_layers']} layers) |")
    pr("\nTotals: sum over the distinct problems of ms x count (the layers sharing it); "
       "vs cuDNN over the layers both ran. Each layer is timed alone (no fusion, no "
       "inter-layer overlap), so these are sums of conv kernels, not a network's latency.")
    return summary


def main_table(path):
    print("| bundle | problem | dtype | layout | ms | TFLOP/s | cuDNN ms | vs cuDNN | rel_l2_error | check |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in read_jsonl(path):
        print(row(r))
    print("\nms are medians (events); vs cuDNN = cuDNN time / ours (above 1: faster than cuDNN).")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="convrt-run --json output")
    ap.add_argument("--models", help="models.json: print the per-model tables instead")
    ap.add_argument("--index", help="bundles/models/index.json (skipped problems and why)")
    args = ap.parse_args(argv)
    if args.models:
        model_tables(args.models, args.results, args.index)
    else:
        main_table(args.results)


if __name__ == "__main__":
    main(sys.argv[1:])
