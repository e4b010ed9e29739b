#!/usr/bin/env python3
"""Chart of a bench_models.py run: per model and batch, torch / ConvLower of each distinct
convolution (standalone, bars from the 1.0 line on a log axis: up where ConvLower is
faster), then the sum over all layers and the end-to-end forward.

Runs under the benchmark's virtual environment (matplotlib from PyPI; Debian's system
python has none here): bench_models.py starts it as `chart_models.py RESULTS.json OUT.png`,
RESULTS.json being what `bench_models.py --json` writes.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")                      # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

LAYER_COLOR, SUM_COLOR, FORWARD_COLOR = "tab:orange", "tab:green", "tab:blue"


def short(p):
    """The problem in a few characters: C->F, HxW, kernel, stride and groups if any."""
    text = f"{p['c']}->{p['f']} {p['h']}² {p['kh']}x{p['kw']}"
    if p["stride"][0] != 1:
        text += f" s{p['stride'][0]}"
    if p["groups"] != 1:
        text += " dw" if p["groups"] == p["c"] == p["f"] else f" g{p['groups']}"
    text += f" ×{p['count']}" if p["count"] > 1 else ""
    # torch's own im2col + GEMM instead of oneDNN: torch, not ConvLower, is the outlier.
    return text + (" *" if p.get("torch_backend") == "Slow2d" else "")


def draw_panel(ax, run):
    problems = run["problems"]
    labels = [short(p) for p in problems] + ["all layers (sum)", "forward (end to end)"]
    values = [p["ratio"] for p in problems] + [run["sum_ratio"], run["forward_ratio"]]
    colors = [LAYER_COLOR] * len(problems) + [SUM_COLOR, FORWARD_COLOR]
    xs = list(range(len(values)))
    shown = [(x, v, c) for x, v, c in zip(xs, values, colors) if v]
    bars = ax.bar([x for x, _, _ in shown], [v - 1 for _, v, _ in shown], 0.75, bottom=1,
                  color=[c for _, _, c in shown])
    ax.bar_label(bars, labels=[f"{v:.2f}" for _, v, _ in shown], fontsize=6, padding=1,
                 rotation=90)
    ax.axhline(1.0, color="black", linewidth=1)
    if run.get("geomean_ratio"):
        ax.axhline(run["geomean_ratio"], color=LAYER_COLOR, linewidth=1, linestyle="--")
    ax.set_yscale("log")                   # 2x faster and 2x slower look the same size
    lo = min(v for _, v, _ in shown)
    hi = max(v for _, v, _ in shown)
    ax.set_ylim(min(lo, 1) / 3, max(hi, 1) * 3)       # room for the labels
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "235" else ""))
    ax.tick_params(axis="y", which="both", labelsize=7)
    ax.set_ylabel("torch time / ConvLower time", fontsize=8)
    ax.set_title(f"{run['model']}, batch {run['batch']}: forward "
                 f"{run['patched_forward_ms']:.0f} ms patched, "
                 f"{run['torch_forward_ms']:.0f} ms torch; logits error "
                 f"{run['logits_err']:.1e}\nabove 1, ConvLower is faster; dashed: geo-mean over "
                 f"the distinct convolutions, {run['geomean_ratio']:.2f}"
                 + ("; *: torch ran Slow2d (its own im2col + GEMM), not oneDNN"
                    if any(p.get("torch_backend") == "Slow2d" for p in run["problems"])
                    else ""), fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_xlim(-0.7, len(values) - 0.3)


def main(results_path, png_path):
    results = json.load(open(results_path))
    runs = [r for r in results["runs"] if "error" not in r]
    if not runs:
        print("chart_models.py: no successful run to draw", file=sys.stderr)
        return 1
    width = max(10, 0.2 * max(len(r["problems"]) for r in runs) + 2.5)
    fig, axes = plt.subplots(len(runs), 1, figsize=(width, 4.6 * len(runs) + 0.6), squeeze=False)
    for ax, run in zip(axes[:, 0], runs):
        draw_panel(ax, run)
    m = results["machine"]
    fig.suptitle(f"ConvLower on torchvision networks, CPU, f32 NCHW: each distinct "
                 f"convolution\nstandalone (×N: layers sharing it), their sum, the whole "
                 f"forward\nConvLower and torch on {m['threads']} thread(s), {m['cpu']}; "
                 f"median of {results['repeat']}; OpenMP environment: "
                 + (", ".join(f"{k}={v}" for k, v in m.get("omp_env", {}).items())
                    or "defaults")
                 + f"\ncommit {m['commit']}, {m['date']}",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.75 / fig.get_figheight()))   # room: suptitle
    fig.savefig(png_path, dpi=100)
    try:                                   # a palette PNG: a third of the bytes
        from PIL import Image
        Image.open(png_path).convert("RGB").quantize(colors=64).save(png_path,
                                                                     optimize=True)
    except ImportError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
