#!/usr/bin/env python3
"""The main loop of each kernel in cubins, from their SASS: a structure check, not a timing.

  sass_mainloop.py [--cuobjdump PATH] [--bounds FILE] NAME=CUBIN ...

For each cubin, `cuobjdump -sass` (with nvdisasm beside it or on PATH; both are on PyPI as
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm, which scripts/setup.sh installs) gives the
SASS of its kernel. The main loop is the backward branch whose body holds the most MMAs
(HMMA/IMMA, HGMMA for wgmma): the K loop, everything else is prologue and epilogue (in an
sm_90a kernel the consumers' loop). In it the script counts

  instructions  everything between the branch target and the branch
  mma           HMMA / IMMA / HGMMA
  other/mma     (instructions - mma) / mma: the integer and memory work per MMA
  ldg           global loads (LDG), the element gathers
  ldgsts        cp.async (LDGSTS)
  sts           shared stores (STS)
  ldsm          ldmatrix (LDSM)
  sts_before_ldsm  shared stores between the loop's first barrier and its first LDSM:
                a gathered element stored there waits for its global load before the
                stage's MMAs can start (register-staged prefetch stores after them)
  spills        local memory traffic (LDL/STL) anywhere in the kernel
  stg, stg128   global stores anywhere in the kernel (the epilogue's), and how many of
                them are 16-byte (STG.E.128: the staged epilogue's vectors)

and, in an sm_90a kernel whose producer warpgroup gathers A, its loop (the backward
branch with no MMA whose body holds the most shared stores):

  producer      its instructions per K tile
  producer_uniform  those on the uniform datapath (U*: the tap table's ULDC among them)
  producer_ldg  its global loads (the gathered elements)

and prints one row per kernel (--json: one object per line). With --bounds, a JSON file
{"NAME": {"metric": [min, max], ...}, ...}, every named kernel must lie inside its bounds
(regression bounds: a change that makes a loop worse fails; one that makes it better
fails too until the bounds are tightened, so the improvement is recorded); exit 1
otherwise, naming the metric.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH_TARGET = re.compile(r"\bBRA\b.*?0x([0-9a-f]+)")


def opcode(text):
    """The opcode of one SASS instruction, without its predicate and modifiers."""
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def disassemble(cuobjdump, cubin):
    env = dict(os.environ)
    # cuobjdump calls nvdisasm: the PyPI wheels put them in sibling packages.
    nvdisasm = shutil.which("nvdisasm")
    if not nvdisasm:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(cuobjdump))))
        for dirpath, _, files in os.walk(root):
            if "nvdisasm" in files:
                env["PATH"] = dirpath + os.pathsep + env.get("PATH", "")
                break
    proc = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True,
                          env=env)
    if proc.returncode != 0:
        raise SystemExit(f"sass_mainloop.py: {cuobjdump} -sass {cubin} failed: "
                         f"{proc.stderr.strip()}")
    instructions = []
    for line in proc.stdout.splitlines():
        m = INSTRUCTION.match(line)
        if m:
            instructions.append((int(m.group(1), 16), m.group(2)))
    if not instructions:
        raise SystemExit(f"sass_mainloop.py: no SASS in {cubin}")
    return instructions


def main_loop(instructions):
    """The body [target, branch] of the backward branch holding the most MMAs."""
    best, best_mma = None, -1
    for index, (address, text) in enumerate(instructions):
        if opcode(text) != "BRA":
            continue
        m = BRANCH_TARGET.search(text)
        if not m or int(m.group(1), 16) >= address:
            continue
        target = int(m.group(1), 16)
        body = [t for a, t in instructions[:index + 1] if a >= target]
        # An mbarrier wait's retry block sits past the end of the kernel and
        # branches back to the wait: its "body" holds an EXIT.
        if any(opcode(t) == "EXIT" for t in body):
            continue
        mma = sum(opcode(t) in MMA_OPCODES for t in body)
        if mma > best_mma:
            best, best_mma = body, mma
    return best


MMA_OPCODES = ("HMMA", "IMMA", "HGMMA")


def producer_loop(instructions):
    """The body of the backward branch with no MMA and the most shared stores."""
    best, best_sts = None, 0
    for index, (address, text) in enumerate(instructions):
        m = BRANCH_TARGET.search(text) if opcode(text) == "BRA" else None
        if not m or int(m.group(1), 16) >= address:
            continue
        body = [t for a, t in instructions[:index + 1] if a >= int(m.group(1), 16)]
        ops = [opcode(t) for t in body]
        if any(o in MMA_OPCODES for o in ops):
            continue
        if ops.count("STS") > best_sts:
            best, best_sts = body, ops.count("STS")
    return best


def producer_metrics(instructions):
    body = producer_loop(instructions)
    if not body:
        return {"producer": None, "producer_uniform": None, "producer_ldg": None}
    ops = [opcode(t) for t in body]
    return {"producer": len(ops),
            "producer_uniform": sum(o.startswith("U") for o in ops),
            "producer_ldg": ops.count("LDG")}


def kernel_wide(instructions):
    """What is counted over the whole kernel: spills and the global stores."""
    stores = [t for _, t in instructions if opcode(t) == "STG"]
    return {**producer_metrics(instructions),
            "spills": sum(opcode(t) in ("LDL", "STL") for _, t in instructions),
            "stg": len(stores),
            "stg128": sum(".128" in t.split()[1 if t.startswith("@") else 0]
                          for t in stores)}


def measure(instructions):
    body = main_loop(instructions)
    if not body:
        # A K that fits one tile (depthwise 3x3): the loop was unrolled away.
        return {"instructions": None, "mma": 0, "other_per_mma": None, "ldg": None,
                "ldgsts": None, "sts": None, "ldsm": None, "sts_before_ldsm": None,
                **kernel_wide(instructions)}
    ops = [opcode(t) for t in body]
    mma = sum(o in MMA_OPCODES for o in ops)
    first_barrier = next((i for i, o in enumerate(ops) if o == "BAR"), 0)
    first_ldsm = next((i for i, o in enumerate(ops) if o == "LDSM"), len(ops))
    return {
        "instructions": len(ops),
        "mma": mma,
        "other_per_mma": round((len(ops) - mma) / mma, 2) if mma else None,
        "ldg": ops.count("LDG"),
        "ldgsts": ops.count("LDGSTS"),
        "sts": ops.count("STS"),
        "ldsm": ops.count("LDSM"),
        "sts_before_ldsm": ops[first_barrier:first_ldsm].count("STS"),
        **kernel_wide(instructions),
    }


def find_cuobjdump(given):
    if given:
        return given
    return shutil.which("cuobjdump") or "cuobjdump"


def check_bounds(name, metrics, bounds):
    problems = []
    for metric, (low, high) in bounds.items():
        value = metrics.get(metric)
        if value is None or not (low <= value <= high):
            problems.append(f"{name}: {metric} = {value}, bounds [{low}, {high}]")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernels", nargs="+", metavar="NAME=CUBIN")
    ap.add_argument("--cuobjdump")
    ap.add_argument("--bounds", help="JSON file of per-kernel [min, max] bounds")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cuobjdump = find_cuobjdump(args.cuobjdump)
    bounds = json.load(open(args.bounds)) if args.bounds else {}
    problems = []
    if not args.json:
        print(f"{'kernel':<28} {'instr':>6} {'mma':>4} {'other/mma':>9} {'ldg':>4} "
              f"{'ldgsts':>6} {'sts':>4} {'ldsm':>4} {'sts<ldsm':>8} {'spills':>6} "
              f"{'stg':>4} {'stg128':>6} {'producer':>8}")
    for item in args.kernels:
        name, _, cubin = item.partition("=")
        metrics = measure(disassemble(cuobjdump, cubin))
        if args.json:
            print(json.dumps({"kernel": name, **metrics}))
        else:
            m = metrics
            producer = ("-" if m["producer"] is None else
                        f"{m['producer']} ({m['producer_uniform']} U, "
                        f"{m['producer_ldg']} ldg)")
            if m["instructions"] is None:
                print(f"{name:<28} no K loop (one K tile: unrolled) {'':>30} "
                      f"{m['spills']:>6} {m['stg']:>4} {m['stg128']:>6} {producer:>8}")
            else:
                print(f"{name:<28} {m['instructions']:>6} {m['mma']:>4} "
                      f"{m['other_per_mma']:>9} {m['ldg']:>4} {m['ldgsts']:>6} "
                      f"{m['sts']:>4} {m['ldsm']:>4} {m['sts_before_ldsm']:>8} "
                      f"{m['spills']:>6} {m['stg']:>4} {m['stg128']:>6} {producer:>8}")
        if name in bounds:
            problems += check_bounds(name, metrics, bounds[name])
    missing = sorted(set(bounds) - {k.partition("=")[0] for k in args.kernels})
    problems += [f"{name}: has bounds but was not given" for name in missing]
    for p in problems:
        print(f"sass_mainloop.py: out of bounds: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
