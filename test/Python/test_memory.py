"""convlower.retain_freed_memory(): glibc keeps freed memory for reuse.

Each case runs in a fresh python (the policy is process-wide and not undone):
it allocates a 64 MiB block with malloc, touches every page and frees it, five
times, and counts the minor page faults of the last four rounds. glibc's
default serves a block that large with a fresh mapping each time (above its
dynamic mmap threshold's 32 MiB ceiling): 16,384 faults a round. With the
policy, the block comes from the heap and stays there: no fault after the
first round. The cases:

  default     no policy applied: every round faults;
  retain      retain_freed_memory() returns True: no faults;
  opt-out     $CONVLOWER_MALLOC=system: returns False, the policy says why;
  user        the user's MALLOC_TRIM_THRESHOLD_: theirs stands (False);
  compile     convlower.compile() applies it; compile(retain_memory=False)
              does not.
Plus the limit's bounds (ValueError).
"""

import ctypes
import os
import resource
import subprocess
import sys

BLOCK = 64 << 20
PAGES = BLOCK // 4096


def faults_of_reused_blocks():
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    counts = []
    for _ in range(5):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        block = libc.malloc(BLOCK)
        ctypes.memset(block, 1, BLOCK)
        libc.free(block)
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return sum(counts[1:])


def child(case):
    import convlower
    if case == "compile":
        import torch
        plain = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3)).eval()
        convlower.compile(plain, (torch.rand(1, 3, 8, 8),), retain_memory=False)
        print(f"compile(retain_memory=False): {convlower.memory_policy()}")
        convlower.compile(plain, (torch.rand(1, 3, 8, 8),))
        applied = None
    elif case != "default":
        applied = convlower.retain_freed_memory()
    else:
        applied = None
    print(f"{case}: applied {applied}; {convlower.memory_policy()}; "
          f"faults {faults_of_reused_blocks()}")


def run(case, **env):
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith("MALLOC_") and k not in ("GLIBC_TUNABLES",
                                                                "CONVLOWER_MALLOC")}
    environment.update(env)
    out = subprocess.run([sys.executable, __file__, case], env=environment,
                         capture_output=True, text=True)
    if out.returncode:
        print(out.stderr)
        sys.exit(1)
    lines = out.stdout.strip().splitlines()
    faults = int(lines[-1].rsplit(" ", 1)[1])
    return lines, faults


if len(sys.argv) > 1:
    child(sys.argv[1])
    sys.exit(0)

failures = []
results = {}
for case, env in (("default", {}), ("retain", {}),
                  ("opt-out", {"CONVLOWER_MALLOC": "system"}),
                  ("user", {"MALLOC_TRIM_THRESHOLD_": "131072"}),
                  ("compile", {})):
    lines, faults = run(case, **env)
    results[case] = faults
    for line in lines:
        print(line.rsplit("; faults", 1)[0])
    # Retained: the 4 later rounds reuse the heap's block (a few faults for
    # the interpreter's own allocations at most); not: 16,384 faults each.
    retained = faults < PAGES // 4
    expected = case in ("retain", "compile")
    print(f"{case}: later rounds {'reuse the block' if retained else 'fault afresh'}")
    if retained != expected:
        failures.append(f"{case}: {faults} faults in 4 rounds")

import convlower
for bad in (-1, 2**31):
    try:
        convlower.retain_freed_memory(bad)
        failures.append(f"limit {bad} accepted")
    except ValueError as e:
        print("limit", bad, "->", e)

if failures:
    print("FAIL:", "; ".join(failures))
    sys.exit(1)
print("all memory checks passed")
