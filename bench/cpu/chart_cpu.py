#!/usr/bin/env python3
"""Chart of a bench_cpu.py run: ONNX Runtime, OpenVINO, torch and IREE time over conv-run's
per layer, one panel per layout, a line at 1.0 (above it conv-run is faster).

Runs under the benchmark's virtual environment (matplotlib from PyPI; Debian's system
python has none here): bench_cpu.py starts it as `chart_cpu.py RESULTS.json OUT.png`,
RESULTS.json being what `bench_cpu.py --json` writes.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")                      # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

SERIES = [("ort_ratio", "ONNX Runtime / conv-run", "tab:green"),
          ("ov_ratio", "OpenVINO / conv-run", "tab:purple"),
          ("torch_ratio", "torch / conv-run", "tab:orange"),
          ("iree_ratio", "IREE / conv-run", "tab:blue")]


def draw_panel(ax, layout, rows):
    names = [r["layer"] for r in rows]
    width = 0.8 / len(SERIES)
    for i, (key, label, color) in enumerate(SERIES):
        xs = [j + (i - (len(SERIES) - 1) / 2) * width for j in range(len(rows))]
        values = [r.get(key) for r in rows]
        # Bars grow from the 1.0 line, up where conv-run is faster, down where it is
        # slower; a missing ratio (failed or skipped measurement) leaves a gap.
        shown = [(x, v) for x, v in zip(xs, values) if v]
        bars = ax.bar([x for x, _ in shown], [v - 1 for _, v in shown], width, bottom=1,
                      label=label, color=color)
        ax.bar_label(bars, labels=[f"{v:.2f}" for _, v in shown], fontsize=7, padding=1)
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_yscale("log")                   # 2x faster and 2x slower look the same size
    # Plain numbers (0.5, not 5x10^-1), and of the minor ticks only 2, 3 and 5 per decade.
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "235" else ""))
    ax.tick_params(axis="y", which="both", labelsize=7)
    ax.set_ylabel("time / conv-run time")
    ax.set_title(f"{layout.upper()}: above 1, conv-run is faster", fontsize=10)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def main(results_path, png_path):
    results = json.load(open(results_path))
    layouts = list(dict.fromkeys(r["layout"] for r in results["rows"]))
    fig, axes = plt.subplots(len(layouts), 1, figsize=(max(8, 0.9 * len(results["rows"])
                                                          / max(len(layouts), 1) + 3),
                                                      4.2 * len(layouts)), squeeze=False)
    for ax, layout in zip(axes[:, 0], layouts):
        draw_panel(ax, layout, [r for r in results["rows"] if r["layout"] == layout])
    m = results["machine"]
    fig.suptitle(f"ConvLower CPU benchmark: f32, {m['threads']} thread(s) each, {m['cpu']}"
                 f"\ncommit {m['commit']}, {m['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
