#!/usr/bin/env python3
"""Self-check of table.py's per-model tables on fabricated convrt-run --json
records (no GPU, no bundles): python3 bench/gpu/test_table.py

Covers: totals weighted by each problem's count, the ratio over the layers
both ran, cuDNN missing for one layer and for a whole model, a bundle that
could not run (an "error" record), a problem conv-run refused (index.json),
a problem with no record, a failed check with a NaN error (null in JSON), a
bundle whose shape is not models.json's, and the plain table's row.
"""
import io
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import table  # noqa: E402


def problem(pid, c, h, f, k, count, groups=1, stride=1):
    pad = k // 2
    return {"id": pid, "input": [8, c, h, h], "filter": [f, c // groups, k, k],
            "stride": [stride, stride], "padding": [pad, pad], "dilation": [1, 1],
            "groups": groups, "bias": False, "count": count,
            "layers": [f"layer.{pid}.{i}" for i in range(count)]}


MODELS = {"batch": 8, "image": 224, "models": {
    "netA": {"conv_layers": 6, "problems": [
        problem("l00", 64, 56, 64, 3, 3),   # ours 1.0, cuDNN 2.0
        problem("l01", 64, 56, 256, 1, 2),  # ours 0.5, cuDNN 0.25
        problem("l02", 32, 28, 32, 3, 1, groups=32)]},  # cuDNN not run
    "netB": {"conv_layers": 5, "problems": [
        problem("l00", 16, 14, 16, 1, 1),   # ok, no cuDNN at all
        problem("l01", 16, 14, 32, 1, 1),   # error record
        problem("l02", 16, 14, 64, 1, 1),   # skipped by conv-run (index)
        problem("l03", 16, 14, 96, 1, 1),   # neither a record nor in index.json
        problem("l04", 16, 14, 128, 3, 1)]},  # FAIL, NaN; stale shape
}}


def record(model, p, ms, cudnn_ms=None, ok=True, rel=1e-4, reason="no cuDNN", detail=None):
    n, c, h, w = p["input"]
    f, _, kh, kw = p["filter"]
    ph, pw = p["padding"]
    d = {"n": n, "c": c, "h": h, "w": w, "f": f, "kh": kh, "kw": kw, "stride": p["stride"],
         "dilation": p["dilation"], "padding": [ph, pw, ph, pw], "groups": p["groups"]}
    d.update(detail or {})
    r = {"source": f"/root/bench/gpu/bundles/models/{model}/{p['id']}/", "problem": "x",
         "problem_detail": d, "dtype": "f16", "layout": "nhwc", "ms": ms, "tflops": 1.0,
         "checked": True, "rel_l2_error": rel, "pass": ok, "vs_cudnn": None,
         "cudnn": {"ran": False, "reason": reason}}
    if cudnn_ms is not None:
        r["cudnn"] = {"ran": True, "ms": cudnn_ms, "check": {"pass": True}}
        r["vs_cudnn"] = cudnn_ms / ms
    return r


def main():
    a, b = MODELS["models"]["netA"]["problems"], MODELS["models"]["netB"]["problems"]
    records = [
        record("netA", a[0], 1.0, 2.0),
        record("netA", a[1], 0.5, 0.25),
        record("netA", a[2], 0.1, reason="cuDNN: grouped f16 unsupported"),
        record("netB", b[0], 0.2),
        {"source": "/root/bench/gpu/bundles/models/netB/l01", "error": "CUDA_ERROR_LAUNCH_FAILED"},
        record("netB", b[4], 0.3, ok=False, rel=None, detail={"kh": 1}),
    ]
    index = {"batch": 8, "chip": "sm_90", "dtype": "f16", "layout": "nhwc", "bundles": [
        {"model": m, "id": p["id"], "status": "ok"} for m in ("netA", "netB")
        for p in MODELS["models"][m]["problems"] if (m, p["id"]) not in (("netB", "l02"), ("netB", "l03"))
    ] + [{"model": "netB", "id": "l02", "status": "skipped",
          "reason": "conv-run exit 2: error: not supported"}]}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: os.path.join(tmp, k) for k in ("models.json", "index.json", "r.jsonl")}
        json.dump(MODELS, open(paths["models.json"], "w"))
        json.dump(index, open(paths["index.json"], "w"))
        with open(paths["r.jsonl"], "w") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in records) + "not json\n")
        out = io.StringIO()
        summary = dict((m, t) for m, _, t in table.model_tables(
            paths["models.json"], paths["r.jsonl"], paths["index.json"], out=out))
        text = out.getvalue()
        # Without index.json and without results: still a table, every row "not run".
        empty = io.StringIO()
        table.model_tables(paths["models.json"], os.path.join(tmp, "missing.jsonl"), None, out=empty)
        plain = table.row(records[-1])

    ta, tb = summary["netA"], summary["netB"]
    checks = [
        (abs(ta["ours"] - (3 * 1.0 + 2 * 0.5 + 0.1)) < 1e-9, "netA ours total weighted by count"),
        (abs(ta["cudnn"] - (3 * 2.0 + 2 * 0.25)) < 1e-9, "netA cuDNN total over the layers it ran"),
        (ta["both_layers"] == 5 and ta["cudnn_layers"] == 5 and ta["ours_layers"] == 6, "netA coverage"),
        ("vs cuDNN 1.62 (over the 5 layers both ran)" in text, "netA ratio 6.5/4.0 over both"),
        ("cuDNN not run for 1 layers: cuDNN: grouped f16 unsupported" in text, "netA cuDNN reason"),
        (tb["cudnn_layers"] == 0 and "cuDNN - (not run)" in text, "netB without cuDNN"),
        ("error: CUDA_ERROR_LAUNCH_FAILED" in text, "error record listed"),
        ("skipped: conv-run exit 2: error: not supported" in text, "skip reason from index.json"),
        ("| l03 |" in text and "skipped: no bundle" in text, "problem absent from index listed"),
        ("FAIL (bundle is not this problem: kh 1 != 3)" in text, "stale bundle flagged"),
        (tb["fail"] == 1 and tb["missing"] == 3 and tb["missing_layers"] == 3, "netB counts"),
        ("| netA | 6 | 3 | 6 layers | 4.1000 | 6.5000 (5 layers) | 1.62 | 0 | 0 (0 layers) |" in text,
         "netA totals row"),
        ("| netB | 5 | 5 | 2 layers | 0.5000 | - | - | 1 | 3 (3 layers) |" in text, "netB totals row"),
        (empty.getvalue().count("no result (bundle not run)") == 8, "no results, no index"),
        ("| nan | FAIL |" in plain, "plain table with a NaN error"),
    ]
    bad = [name for ok, name in checks if not ok]
    for name in bad:
        print(f"FAIL: {name}")
    if bad:
        print(text)
        return 1
    print(f"test_table: {len(checks)} checks ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
