#!/usr/bin/env python3
"""Random differential testing of ConvLower's convolution rewrites.

A seeded generator draws valid 2-D convolutions over every form the rewrites take (the
nine named linalg forms, and linalg.generic spellings of each, with commuted mul/add
bodies and other loop orders), every dtype (f32, f16 and bf16 accumulating in f32, f16
accumulating in f16, i8 -> i32), strides, dilations, asymmetric zero padding through
tensor.pad (also of the rank-4 image before a grouped form splits it), windows that read
only padding, outputs smaller than the formula, groups, static and dynamic batch, and
zero-fill, constant-fill and tensor inits, and the quantized (_q) ops of the i8 forms
that have one, with zero points. conv_harness.py (../CPU) emits each one as an
MLIR module with seeded data, and each is checked through:

  reference  mlir-opt (upstream's loop lowering) | mlir-runner, on the original conv (d)
  im2col     conv-opt --conv-lower-im2col on @conv alone: no convolution may remain
  decompose  conv-opt --conv-lower-im2col --conv-lower-decompose | mlir-opt | mlir-runner (a)
  llvm       conv-opt --conv-lower-to-llvm | mlir-runner                                  (b)
  twin       conv-opt --conv-lower-to-llvm=implicit-gemm-twin | mlir-runner (float and i8,
             static shapes: what the GPU kernel takes; a named "unsupported convolution"
             diagnostic is a skip)                                                       (c)
  amx-emulated  conv-opt --conv-lower-to-llvm="bf16-dot i8-dot amx amx-emulated" |
             mlir-runner (bf16 and i8; the AMX tile program emulated in vector code;
             needs an AVX512-BF16 and AVX512-VNNI host, so only when asked for:
             --checks amx-emulated)

Every numeric route is compared with a float64 numpy convolution written from
docs/design.md, "Convolution semantics" (conv_harness.reference_conv) and with the
reference route's numbers, within conv_harness.DTYPES' bounds (relative to max(1,
max|Y|): f32 and f16/bf16 accumulating in f32 1e-5, as the data are exact in their types;
f16 accumulating in f16 1e-2; i8 exact). conv-opt verifies the IR after every pass
(nested pipelines included), so an invalid IR is a failed conv-opt run. Each check ends as

  pass | skip | mismatch (numbers) | invalid-ir (a pass failed or the verifier rejected
  its output, on valid input) | crash (a signal or LLVM's crash report, at compile or
  run time) | not-rewritten (the rewrite left the convolution) | reference (the
  reference route itself failed: a harness or upstream bug)

and a configuration fails when any of its checks fails. With --xfail-known the failures
that KNOWN_DEFECTS classifies are XFAIL, and a known defect that applies to a
configuration but breaks none of its checks is XPASS (reported, not failed): remove an
entry once its defect is fixed. The last line printed is the summary,
"N passed, N failed, N xfailed, N xpassed (...)", counting configurations; the exit
status is 1 when one failed. Each failure prints its seed, index and configuration and
the path of its reproducer (the runnable module, @conv alone, and the tool's log).

Usage: random_convs.py --count N --seed S [--jobs J] [--keep-failures DIR] [--xfail-known]
       random_convs.py --seed S --index I -v      (re-run one configuration)
"""

import argparse
import concurrent.futures
import dataclasses
import os
import random
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "CPU"))
import conv_harness as ch  # noqa: E402  (the emitters, routes and reference)

# ----------------------------------------------------------------------------------------
# The generator.
# ----------------------------------------------------------------------------------------

NAMED_FORMS = sorted(f for f, spec in ch.FORMS.items() if spec.op != "generic")
GROUPED_FORMS = {"conv_2d_ngchw_fgchw", "conv_2d_ngchw_gfchw", "conv_2d_nhwgc_gfhwc"}
DTYPES = ["f32", "f16", "bf16", "i8", "f16f16"]
TWIN_DTYPES = {"f32", "f16", "bf16", "f16f16", "i8"}    # what the tensor cores take

# Bounds that keep a module's dense literals, and the run, small.
MAX_ELEMENTS = 2000
# i8 products reach 2^14; printMemrefF32 prints integers exactly below 1e6 (conv_harness).
MAX_I8_K = 60
# With zero points in [-4, 4] a factor reaches 132: 132^2 * 40 < 1e6.
MAX_QUANTIZED_K = 40


def small(rng, hi):
    """1..hi, small values likelier (weight 1/v): the edge cases live there."""
    values = np.arange(1, hi + 1)
    weights = 1.0 / values
    return int(rng.choice(values, p=weights / weights.sum()))


def chance(rng, p):
    return bool(rng.random() < p)


def per_group(rng, hi):
    """Channels per group: mostly few, sometimes 8 or 16 (the twin's 16-byte chunks of a
    channels-last row need Cg % 8 == 0)."""
    return int(rng.choice([8, 16])) if chance(rng, 0.2) else small(rng, hi)


def draw_channels(rng, form):
    """(C, F, groups) as conv_harness.Problem takes them (depthwise: F is the multiplier)."""
    spec = ch.FORMS[form]
    if spec.depthwise:
        has_multiplier = "f" in "".join(spec.w)
        return per_group(rng, 6), (small(rng, 3) if has_multiplier else 1), 1
    g = small(rng, 3) if form in GROUPED_FORMS else 1
    return g * per_group(rng, 6 // g), g * per_group(rng, 6 // g), g


def draw_geometry(rng):
    """Kernel, strides, dilations, padding (zero half the time) and the input size."""
    kernel = (small(rng, 4), small(rng, 4))
    stride = (small(rng, 3), small(rng, 3))
    dilation = tuple(1 if chance(rng, 0.5) else int(rng.integers(2, 4)) for _ in range(2))
    pad = (0, 0, 0, 0) if chance(rng, 0.5) else tuple(int(rng.integers(0, 4))
                                                      for _ in range(4))
    image = tuple(small(rng, 10) if chance(rng, 0.5) else int(rng.integers(1, 13))
                  for _ in range(2))
    return kernel, stride, dilation, pad, image


def draw_spelling(rng, p):
    """How the same convolution is written: generic or named, the body's operand order,
    the loop order, the init, a cropped output, a dynamic batch, a split padded image."""
    generic = chance(rng, 0.4)
    loop_order = ""
    if generic and chance(rng, 0.25):
        loop_order = "".join(rng.permutation(ch.generic_loops(p)))
    ho, wo = p.formula_hw()
    out_size = None
    if chance(rng, 0.25):
        out_size = (int(rng.integers(1, ho + 1)), int(rng.integers(1, wo + 1)))
        out_size = None if out_size == (ho, wo) else out_size
    return dataclasses.replace(
        p, generic=generic, loop_order=loop_order,
        commute_mul=generic and chance(rng, 0.25), commute_add=generic and chance(rng, 0.25),
        out_size=out_size, init=str(rng.choice(["zero", "fill", "tensor"], p=[.4, .25, .35])),
        dynamic_batch=chance(rng, 0.25),
        image_input=p.form in GROUPED_FORMS and chance(rng, 0.3))


def fits(p):
    """Valid (conv_harness's checks) and small enough to run quickly and print exactly."""
    try:
        p.validate()
    except ValueError:
        return False
    x, w, y = (ch.shape_of(axes, sz) for axes, sz in
               ((p.spec.x, p.padded_sizes()), (p.spec.w, p.sizes()), (p.spec.y, p.y_sizes())))
    if max(np.prod(x), np.prod(w), np.prod(y)) > MAX_ELEMENTS:
        return False
    sz = p.sizes()
    k_limit = MAX_QUANTIZED_K if p.zero_points else MAX_I8_K
    return p.dtype != "i8" or sz["c"] * sz["r"] * sz["s"] <= k_limit


def draw_zero_points(seed, index, p):
    """Half of the i8 convolutions of a form with a quantized op become that op, with
    zero points in [-4, 4]. Drawn from a stream of their own, so that every other
    configuration of a seed stays what it was before quantized ops were drawn."""
    if p.dtype != "i8" or p.generic or p.form not in ch.QUANTIZED_FORMS:
        return p
    rng = np.random.default_rng([seed, index, 2])
    if not chance(rng, 0.5):
        return p
    q = dataclasses.replace(p, zero_points=(int(rng.integers(-4, 5)),
                                            int(rng.integers(-4, 5))))
    return q if fits(q) else p


def draw_problem(seed, index):
    """Configuration `index` of run `seed`: the same pair always gives the same one."""
    rng = np.random.default_rng([seed, index])
    while True:    # rejection sampling; most draws fit
        form = str(rng.choice(NAMED_FORMS))
        c, f, groups = draw_channels(rng, form)
        (kh, kw), stride, dilation, pad, (h, w) = draw_geometry(rng)
        p = ch.Problem(form, small(rng, 3), c, h, w, f, kh, kw, groups=groups,
                       stride=stride, dilation=dilation, pad=pad,
                       dtype=str(rng.choice(DTYPES)))
        if not fits(p):
            continue
        p = draw_spelling(rng, p)
        if fits(p):
            return draw_zero_points(seed, index, p)


# ----------------------------------------------------------------------------------------
# Known defects: what --xfail-known reports as XFAIL instead of a failure.
# ----------------------------------------------------------------------------------------

def bf16_pointwise_nchw(p):
    """A 1x1, stride-1, unpadded bf16 conv_2d_nchw_fchw (named or generic): the CPU
    pipeline's no-im2col path for it emits bf16 vectors."""
    return (p.dtype == "bf16" and p.form in ("conv_2d_nchw_fchw", "generic_nchw_fchw")
            and (p.kh, p.kw) == (1, 1) and tuple(p.stride) == (1, 1)
            and not any(p.pad) and p.groups == 1)


@dataclasses.dataclass(frozen=True)
class KnownDefect:
    label: str
    applies: object     # Problem -> bool: exactly the configurations the defect breaks
    checks: frozenset   # the checks it breaks there (some, not always all)


# What --xfail-known reports as XFAIL: each defect's classifier, and the checks it breaks.
# A failing check is XFAIL when a defect that applies names it; a defect that applies
# but breaks none of its checks is XPASS (fixed? remove its entry).
KNOWN_DEFECTS = [
    # Issue 15's defects 1-3 (grouped forms with a dynamic batch, a crop past the
    # input's start, an input cropped to nothing) are fixed; their configurations run
    # as plain checks (test/Transforms/Common/conv-lower-im2col-regressions.mlir pins them).
    # Found by this harness, issue 14's "any generic spelling" (a commuted multiply or
    # accumulate, loops in another order) is fixed: the analysis matches generics by
    # their maps and body (ConvAnalysis.cpp, matchGenericConvolution).
    # Found by a 10,000-configuration soak (seed 1714835267, indices 184 and 968): a
    # bf16 1x1 NCHW convolution through --conv-lower-to-llvm reaches LLVM's x86 backend
    # with bf16 vector ops it cannot soft-promote on this AVX-512 host ("LLVM ERROR: Do
    # not know how to soft promote this operator's operand!", also with llc
    # -mcpu=native). Open; the other routes are right.
    KnownDefect("bf16 pointwise NCHW: LLVM x86 cannot soft-promote bf16 vector ops",
                bf16_pointwise_nchw, frozenset({"llvm"})),
]


# ----------------------------------------------------------------------------------------
# Running the checks.
# ----------------------------------------------------------------------------------------

FAILURES = ("mismatch", "invalid-ir", "crash", "not-rewritten", "reference")


@dataclasses.dataclass
class Check:
    name: str           # reference | im2col | decompose | llvm | twin
    status: str         # pass | skip | one of FAILURES; xfail / xpass after classify()
    detail: str = ""
    log: str = ""       # the failing command and its stderr
    known: str = ""     # the KNOWN_DEFECTS label that matched


CRASH_MARKS = ("PLEASE submit a bug report", "Stack dump:", "LLVM ERROR:",
               "Assertion `", "Segmentation fault")


def is_crash(err):
    return (err.returncode is not None and err.returncode < 0) or \
        any(mark in err.stderr for mark in CRASH_MARKS)


def run_step(cmd, text):
    """ch.run_tool, retried when the tool could not start or crashed: other engineers
    relink these binaries; a real crash crashes again."""
    for attempt in range(6):
        try:
            return ch.run_tool(cmd, text)
        except ch.ToolError as err:
            transient = err.returncode is None or (is_crash(err) and attempt == 0)
            if not transient or attempt == 5:
                raise
            time.sleep(5 if err.returncode is None else 1)


def first_error(stderr):
    lines = [ln for ln in stderr.splitlines() if "error:" in ln or "LLVM ERROR" in ln]
    return (lines or stderr.strip().splitlines()[-1:] or ["(no message)"])[0].strip()


def classify_failure(name, stage, err):
    """A failed stage of check `name` as a Check. `stage` is the failing command's tool."""
    log = str(err)
    if name == "reference":
        return Check(name, "reference", f"{stage}: {first_error(err.stderr)}", log)
    if is_crash(err):
        return Check(name, "crash", f"{stage}: {first_error(err.stderr)}", log)
    if stage == "mlir-runner":     # the compiled code failed at run time
        return Check(name, "crash", f"mlir-runner exited {err.returncode}: "
                     f"{first_error(err.stderr)}", log)
    errors = [ln for ln in err.stderr.splitlines() if "error:" in ln]
    unsupported = "conv-lower-implicit-gemm: unsupported convolution:"
    if name == "twin" and errors and all(unsupported in ln for ln in errors):
        return Check(name, "skip", errors[0].split(unsupported)[1].strip())
    return Check(name, "invalid-ir", f"{stage}: {first_error(err.stderr)}", log)


def run_route(name, route, module, tools):
    """(printed output, None) or (None, the failure's Check)."""
    text = module
    for cmd in ch.route_stages(route, tools):
        try:
            text = run_step(cmd, text)
        except ch.ToolError as err:
            return None, classify_failure(name, os.path.basename(cmd[0]), err)
    return text, None


def compare_numbers(name, case, printed, reference):
    """Against numpy, and against the reference route's numbers when there are some."""
    try:
        got = ch.parse_printed_memref(printed, case.ref.shape)
    except ch.ToolError as err:
        return Check(name, "mismatch", f"unreadable output: {str(err)[:200]}")
    vs_numpy = ch.compare(case.p, got, case.ref)
    vs_upstream = ch.compare(case.p, got, reference) if reference is not None else None
    if vs_numpy.ok and (vs_upstream is None or vs_upstream.ok):
        return Check(name, "pass", vs_numpy.detail)
    detail = f"vs numpy: {vs_numpy.detail}"
    if vs_upstream is not None:
        detail += f"; vs upstream: {vs_upstream.detail}"
    status = "reference" if name == "reference" else "mismatch"
    return Check(name, status, detail)


def check_rewrite(case, tools):
    """--conv-lower-im2col alone, on @conv: it must run and leave no convolution."""
    try:
        ir = run_step([tools.conv_opt, "--conv-lower-im2col"], ch.conv_only_module(case.p))
    except ch.ToolError as err:
        return classify_failure("im2col", "conv-opt", err)
    leftovers = ch.im2col_leftovers(case.p, ir)
    if leftovers:
        return Check("im2col", "not-rewritten", "; ".join(leftovers)[:300], ir)
    return Check("im2col", "pass")


# The checks that run a conv_harness route of the same name and compare its numbers.
ROUTE_CHECKS = ("decompose", "llvm", "twin", "amx-emulated")


def twin_eligible(p):
    return p.dtype in TWIN_DTYPES and not p.dynamic_batch


def run_config(p, seed, tools, checks):
    """Every selected check of one configuration, the reference route first."""
    case = ch.Case(p, seed)
    printed, failure = run_route("reference", "upstream", case.module, tools)
    results = [failure or compare_numbers("reference", case, printed, None)]
    reference = None
    if printed is not None and results[0].status == "pass":
        reference = ch.parse_printed_memref(printed, case.ref.shape)
    if "im2col" in checks:
        results.append(check_rewrite(case, tools))
    for name in ROUTE_CHECKS:
        if name not in checks or (name == "twin" and not twin_eligible(p)):
            continue
        # The AMX tiles take the bf16 and i8 GEMMs only.
        if name == "amx-emulated" and p.dtype not in ("bf16", "i8"):
            continue
        printed, failure = run_route(name, name, case.module, tools)
        results.append(failure or compare_numbers(name, case, printed, reference))
    return case, results


def classify(p, results, xfail_known):
    """Marks the failures that a known defect explains xfail; returns the labels of the
    defects that apply to p but broke none of their checks (XPASS)."""
    if not xfail_known:
        return []
    defects = [d for d in KNOWN_DEFECTS if d.applies(p)]
    for r in results:
        label = next((d.label for d in defects if r.name in d.checks), None)
        if label and r.status in FAILURES:
            r.status, r.known = "xfail", label
    ran = {r.name for r in results}
    return [d.label for d in defects if d.checks & ran and
            not any(r.status == "xfail" and r.name in d.checks for r in results)]


def config_status(results, xpassed):
    """A configuration's outcome: its worst check's."""
    statuses = {r.status for r in results}
    if statuses & set(FAILURES):
        return "failed"
    return "xfail" if "xfail" in statuses else "xpass" if xpassed else "passed"


# ----------------------------------------------------------------------------------------
# Reproducers and reporting.
# ----------------------------------------------------------------------------------------

def keep_reproducer(keep_dir, seed, index, case, check):
    """Writes the runnable module, @conv alone (what conv-opt fails on) and the log;
    returns the module's path."""
    os.makedirs(keep_dir, exist_ok=True)
    stem = os.path.join(keep_dir, f"seed{seed}-{index}-{check.name}")
    header = (f"// random_convs.py --seed {seed} --index {index}: {check.name} "
              f"{check.status}\n// {case.p.name()}\n// {check.detail}\n")
    files = {".mlir": header + case.module,
             ".conv.mlir": header + ch.conv_only_module(case.p),
             ".log": f"{case.p!r}\n\n{check.detail}\n\n{check.log}\n"}
    for suffix, text in files.items():
        with open(stem + suffix, "w") as f:
            f.write(text)
    return stem + ".mlir"


def report_config(args, index, case, results, xpassed, secs):
    """The lines to print for one configuration: failures in full, xfail/xpass in one
    line each, passes only with --verbose."""
    lines = []
    tag = f"[seed={args.seed} index={index}] {case.p.name()}"
    for r in results:
        if r.status in FAILURES:
            path = keep_reproducer(args.keep_failures, args.seed, index, case, r)
            lines += [f"FAIL {r.name} {r.status}: {tag}", f"  {r.detail}",
                      f"  reproducer: {path}",
                      f"  rerun: {sys.argv[0]} --seed {args.seed} --index {index} -v"
                      f" --conv-opt {args.conv_opt}"]
        elif r.status == "xfail":
            lines.append(f"XFAIL {r.name} ({r.known}): {tag}")
        elif args.verbose:
            lines.append(f"{r.status.upper()} {r.name}: {tag} {r.detail}")
    lines += [f"XPASS ({label}): {tag}" for label in xpassed]
    if args.verbose:
        lines.append(f"  ({secs:.1f}s)")
    return lines


# ----------------------------------------------------------------------------------------
# Command line.
# ----------------------------------------------------------------------------------------

CHECKS = ("im2col", "decompose", "llvm", "twin", "amx-emulated")
# amx-emulated (the bf16 and i8 GEMMs on emulated AMX tiles, VDPBF16PS and
# VPDPBUSD for the rest) needs an AVX512-BF16 and AVX512-VNNI host: asked for
# by name (--checks), not by default.
DEFAULT_CHECKS = ("im2col", "decompose", "llvm", "twin")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=100, help="configurations to run")
    ap.add_argument("--seed", type=int, help="run seed (default: a fresh one, printed)")
    ap.add_argument("--index", type=int, help="run only configuration INDEX of the seed")
    ap.add_argument("--jobs", "-j", type=int, default=1, help="configurations in parallel")
    ap.add_argument("--keep-failures", metavar="DIR",
                    help="where reproducers go (default: a new temporary directory)")
    ap.add_argument("--xfail-known", action="store_true",
                    help="report failures of KNOWN_DEFECTS as XFAIL, not failures")
    ap.add_argument("--checks", default=",".join(DEFAULT_CHECKS),
                    help="comma-separated subset of " + ",".join(CHECKS) +
                    " (the reference route always runs)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every check")
    ap.add_argument("--list", action="store_true", help="print the configurations only")
    ch.add_tool_arguments(ap)
    args = ap.parse_args(argv)
    args.checks = [c for c in args.checks.split(",") if c]
    if set(args.checks) - set(CHECKS):
        ap.error(f"unknown checks {sorted(set(args.checks) - set(CHECKS))}")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**31)
    missing = [f"--{n.replace('_', '-')} {getattr(args, n)}"
               for n in ("conv_opt", "mlir_opt", "mlir_runner", "runner_utils",
                         "c_runner_utils") if not os.path.isfile(getattr(args, n))]
    if missing and not args.list:
        ap.error("not found: " + ", ".join(missing))
    return args


def run_one(args, index, print_lock, totals):
    p = draw_problem(args.seed, index)
    start = time.monotonic()
    case, results = run_config(p, args.seed, args, set(args.checks))
    xpassed = classify(p, results, args.xfail_known)
    status = config_status(results, xpassed)
    with print_lock:
        if status == "failed" and args.keep_failures is None:
            args.keep_failures = tempfile.mkdtemp(prefix="random-convs-")
        secs = time.monotonic() - start
        for line in report_config(args, index, case, results, xpassed, secs):
            print(line, flush=True)
        totals[status] = totals.get(status, 0) + 1
        for r in results:
            key = ("check", r.name, r.status)
            totals[key] = totals.get(key, 0) + 1


def summary(totals, count, secs):
    """Two lines: what each check did, then the configurations' outcomes (the last
    line, "N passed, N failed, ...", is what scripts read)."""
    per_check = {}
    for key, n in sorted(totals.items(), key=str):
        if isinstance(key, tuple):
            per_check.setdefault(key[1], []).append(f"{n} {key[2]}")
    checks = "; ".join(f"{name}: {', '.join(v)}" for name, v in per_check.items())
    return (f"checks: {checks}\n"
            f"{totals.get('passed', 0)} passed, {totals.get('failed', 0)} failed, "
            f"{totals.get('xfail', 0)} xfailed, {totals.get('xpass', 0)} xpassed "
            f"({count} configurations in {secs:.0f}s)")


def main(argv=None):
    args = parse_args(argv)
    indices = [args.index] if args.index is not None else list(range(args.count))
    print(f"random_convs.py --seed {args.seed} --count {len(indices)}"
          f"{' --xfail-known' if args.xfail_known else ''}", flush=True)
    if args.list:
        for i in indices:
            print(f"{i}: {draw_problem(args.seed, i).name()}")
        return 0
    lock, totals, start = threading.Lock(), {}, time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for future in [pool.submit(run_one, args, i, lock, totals) for i in indices]:
            future.result()      # re-raises a harness bug instead of hiding it
    print(summary(totals, len(indices), time.monotonic() - start))
    return 1 if totals.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
