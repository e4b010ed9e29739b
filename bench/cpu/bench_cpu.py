#!/usr/bin/env python3
"""CPU benchmark of conv-run against torch and upstream MLIR's naive lowering.

For each layer (the seed layer and ResNet-50 convolutions at CPU-sized batches):
  conv-run   lowered_ms of `conv-run --json --repeat R --warmup 1` (the im2col + GEMM JIT
             code, single-threaded), checked against conv-run's float64 reference (--check)
  torch      torch.nn.functional.conv2d (Debian's python3-torch), median of R after
             warm-up, with 1 thread and with N threads
  naive      conv-run's reference_ms with `--reference direct --reference-repeat 1`: the
             same pipeline without the im2col rewrite, i.e. upstream's loop lowering of
             the linalg conv. Rows whose projected naive time would overrun
             --naive-budget-s are skipped (marked "skipped" and listed under the table).

Prints a markdown table and the machine it ran on. Not a test: numbers vary by machine.

Usage: bench_cpu.py [--quick] [--out FILE] [--conv-run PATH] [--repeat R]
                    [--naive-budget-s S]
"""

import argparse
import dataclasses
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONV_RUN = REPO_ROOT / "build" / "release" / "bin" / "conv-run"


@dataclasses.dataclass(frozen=True)
class Layer:
    name: str
    n: int
    c: int
    hw: int        # square input
    f: int
    k: int         # square kernel
    stride: int = 1
    pad: int = 0

    def out_hw(self):
        return (self.hw + 2 * self.pad - self.k) // self.stride + 1

    def gflop(self):
        return 2 * self.n * self.f * self.out_hw() ** 2 * self.c * self.k ** 2 / 1e9

    def conv_run_flags(self):
        return ["--input-shape", f"{self.n},{self.c},{self.hw},{self.hw}",
                "--filter-shape", f"{self.f},{self.c},{self.k},{self.k}",
                "--stride", str(self.stride), "--padding", str(self.pad)]


def resnet50_layers(n):
    """ResNet-50's 3x3 convolutions of each stage and its first 1x1 reduction."""
    return [Layer(f"r50 3x3 64 56x56 N{n}", n, 64, 56, 64, 3, pad=1),
            Layer(f"r50 3x3 128 28x28 N{n}", n, 128, 28, 128, 3, pad=1),
            Layer(f"r50 3x3 256 14x14 N{n}", n, 256, 14, 256, 3, pad=1),
            Layer(f"r50 3x3 512 7x7 N{n}", n, 512, 7, 512, 3, pad=1),
            Layer(f"r50 1x1 256->64 56x56 N{n}", n, 256, 56, 64, 1)]


SEED = Layer("seed N16 C64 56x56 F128 3x3", 16, 64, 56, 128, 3, pad=1)
FULL = [SEED] + resnet50_layers(1) + resnet50_layers(8)
QUICK = [SEED, resnet50_layers(1)[0], resnet50_layers(1)[4]]

# Until a naive run has been measured, project its time from this rate (MAC/s): slow
# enough that the first projection errs on the side of skipping.
ASSUMED_NAIVE_MACS_PER_S = 0.5e9


# ----------------------------------------------------------------------------------------
# Measurements.
# ----------------------------------------------------------------------------------------

@dataclasses.dataclass
class Row:
    layer: Layer
    conv_run_ms: float = None
    torch1_ms: float = None
    torchn_ms: float = None
    conv_run_n_ms: float = None
    naive_ms: float = None
    note: str = ""


def run_conv_run(conv_run, layer, repeat, naive, threads=1):
    """(lowered_ms, reference_ms or None); raises RuntimeError with conv-run's error."""
    reference = ["--reference", "direct", "--reference-repeat", "1"] if naive else \
                ["--reference", "none"]
    cmd = [conv_run] + layer.conv_run_flags() + reference + \
          ["--repeat", str(repeat), "--warmup", "1", "--check", "--json",
           "--num-threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"conv-run exit {r.returncode}: {r.stderr.strip()[:300]}")
    report = json.loads(r.stdout)
    return report["lowered_ms"], report["reference_ms"]


def time_torch(torch, layer, threads, repeat):
    """Median ms of F.conv2d over `repeat` runs after two warm-ups, on `threads` threads."""
    torch.set_num_threads(threads)
    x = torch.randn(layer.n, layer.c, layer.hw, layer.hw)
    w = torch.randn(layer.f, layer.c, layer.k, layer.k)
    conv = lambda: torch.nn.functional.conv2d(x, w, stride=layer.stride, padding=layer.pad)
    times = []
    with torch.no_grad():
        for _ in range(2):
            conv()
        for _ in range(repeat):
            start = time.perf_counter()
            conv()
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


class NaiveBudget:
    """Decides which rows get a naive run: its projected time (MACs at the slowest rate
    measured so far) must fit in what is left of the budget."""

    def __init__(self, seconds):
        self.left = seconds
        self.rates = []        # MAC/s of the naive runs so far

    def allows(self, layer):
        rate = min(self.rates, default=ASSUMED_NAIVE_MACS_PER_S)
        return layer.gflop() / 2 * 1e9 / rate <= self.left

    def spend(self, layer, ms):
        self.left -= ms / 1e3
        self.rates.append(layer.gflop() / 2 * 1e9 / (ms / 1e3))


def measure_conv_run(layer, args, threads, budget):
    row = Row(layer)
    naive = budget.allows(layer)
    try:
        row.conv_run_ms, row.naive_ms = run_conv_run(args.conv_run, layer, args.repeat, naive)
    except RuntimeError as e:
        row.note = str(e)
    if row.naive_ms is not None:
        budget.spend(layer, row.naive_ms)
    if threads > 1 and row.conv_run_ms is not None:
        try:
            row.conv_run_n_ms, _ = run_conv_run(args.conv_run, layer, args.repeat, False,
                                                threads)
        except RuntimeError as e:
            row.note = str(e)
    return row


def measure_torch(row, args, torch, threads):
    row.torch1_ms = time_torch(torch, row.layer, 1, args.repeat)
    row.torchn_ms = time_torch(torch, row.layer, threads, args.repeat)


# ----------------------------------------------------------------------------------------
# Report.
# ----------------------------------------------------------------------------------------

def fmt(v, digits=2):
    return "—" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def table(rows, threads):
    head = ["layer", "GFLOP", "conv-run ms", "GFLOP/s", "torch 1-thr ms",
            "torch1/conv-run", f"conv-run {threads}-thr ms", f"torch {threads}-thr ms",
            f"torch{threads}/conv-run{threads}", "naive ms", "naive/conv-run"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        g = r.layer.gflop()
        naive = fmt(r.naive_ms, 1) if r.naive_ms is not None else \
            ("skipped" if r.conv_run_ms is not None else "—")
        cells = [r.layer.name, fmt(g, 3), fmt(r.conv_run_ms), fmt(ratio(g * 1e3, r.conv_run_ms), 1),
                 fmt(r.torch1_ms), fmt(ratio(r.torch1_ms, r.conv_run_ms)),
                 fmt(r.conv_run_n_ms), fmt(r.torchn_ms), fmt(ratio(r.torchn_ms, r.conv_run_n_ms)),
                 naive, fmt(ratio(r.naive_ms, r.conv_run_ms), 1)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def command_output(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT).stdout.strip()
    except OSError:
        return ""


def machine_lines(conv_run, torch, threads, default_threads):
    cpu = next((l.split(":", 1)[1].strip() for l in command_output(["lscpu"]).splitlines()
                if l.startswith("Model name")), "unknown")
    rev = command_output(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    if command_output(["git", "status", "--porcelain"]):
        rev += " (plus uncommitted changes)"
    version = command_output([conv_run, "--version"]).splitlines()
    torch_text = (f"torch {torch.__version__}, default {default_threads} thread(s); "
                  f"N-thread column uses {threads}") if torch else "torch not importable"
    return [f"- machine: {cpu}, {os.cpu_count()} cores (`lscpu`, `os.cpu_count()`)",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
            f"- commit: `{rev}`",
            f"- conv-run: {version[-1].strip() if version else conv_run}",
            f"- {torch_text}"]


def import_torch():
    try:
        import torch
        return torch
    except ImportError:
        print("torch is not importable: `apt-get install -y python3-torch` "
              "(the torch columns stay empty)", file=sys.stderr)
        return None


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the seed layer and 2 small layers")
    ap.add_argument("--out", help="also write the markdown to this file")
    ap.add_argument("--conv-run", default=str(DEFAULT_CONV_RUN))
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per measurement")
    ap.add_argument("--naive-budget-s", type=float, default=120.0,
                    help="total seconds allowed for naive runs (default %(default)s)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not os.access(args.conv_run, os.X_OK):
        print(f"error: conv-run not found or not executable: {args.conv_run} "
              "(build it, or pass --conv-run)", file=sys.stderr)
        return 2
    torch = import_torch()
    default_threads = torch.get_num_threads() if torch else 1
    # torch's default may be 1 (Debian's OpenMP build here); the N-thread column is meant
    # to show what every core gives, so it uses at least the core count.
    threads = max(default_threads, len(os.sched_getaffinity(0)))
    budget = NaiveBudget(args.naive_budget_s)
    rows = []
    start = time.monotonic()
    # Every conv-run measurement first, torch's after: torch's OpenMP threads keep
    # spinning after each call and would take the cores from conv-run's threads.
    for layer in QUICK if args.quick else FULL:
        rows.append(measure_conv_run(layer, args, threads, budget))
        print(f"  {layer.name}: conv-run done ({time.monotonic() - start:.0f}s)",
              file=sys.stderr, flush=True)
    if torch is not None:
        for row in rows:
            measure_torch(row, args, torch, threads)
    skipped = [r.layer.name for r in rows if r.naive_ms is None and r.conv_run_ms is not None]
    failed = [f"{r.layer.name}: {r.note}" for r in rows if r.note]
    text = "\n".join(
        ["# ConvLower CPU benchmark" + (" (--quick)" if args.quick else ""), ""] +
        machine_lines(args.conv_run, torch, threads, default_threads) +
        ["", table(rows, threads), "",
         "conv-run ms: one thread; conv-run N-thr: --num-threads N (the GEMM row blocks in parallel, the im2col copy and fold still on one thread); ms are medians of "
         f"{args.repeat} runs after warm-up. naive = `--reference direct "
         "--reference-repeat 1`: one run, no warm-up (machine code is generated before "
         "timing; caches are cold)."] +
        ([f"Naive skipped (budget {args.naive_budget_s:.0f} s): {', '.join(skipped)}."]
         if skipped else []) +
        ([f"conv-run failed: {'; '.join(failed)}"] if failed else []) +
        [f"Total wall time {time.monotonic() - start:.0f} s."])
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
