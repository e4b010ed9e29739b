"""One thread pool: in a torch process, ConvLower's threads are torch's.

torch runs its parallel operators on an OpenMP runtime (Debian's torch: GCC's
libgomp). ConvLower's threaded code starts its regions through GCC's OpenMP
ABI, bound to the runtime the process already has, so a patched model adds
no thread pool of its own. Before, ConvLower brought LLVM's libomp: two pools
whose idle threads spun on each other's cores (ResNet-50 through patch():
0.52x torch eager on 2 cores). Checked here, with no timing:

1. the runtime ConvLower reports (convlower.openmp_runtime()) is the library
   that defines the GOMP_parallel torch's own calls bind to (the process's
   global scope), whichever that is: libgomp as is, libomp under
   LD_PRELOAD=<libomp> (openmp-runtime.test runs both);
2. a patched forward on 2 threads, after torch's pool is up, starts no
   thread: the process's thread count is unchanged (two runtimes: +1);
3. as is, no second runtime (libomp) is mapped into the process;
4. the patched model's output matches the unpatched one's (1e-4 relative).
"""

import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import reference  # noqa: E402

import convlower  # noqa: E402

failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def mapped_files():
    """(start, end, path) of each file-backed mapping of this process."""
    spans = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5].startswith("/"):
                start, end = (int(a, 16) for a in fields[0].split("-"))
                spans.append((start, end, fields[5]))
    return spans


def file_defining(address):
    for start, end, path in mapped_files():
        if start <= address < end:
            return os.path.realpath(path)
    return None


def threads():
    return len(os.listdir("/proc/self/task"))


torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
torch.set_num_threads(2)
# torch's pool up: a parallel elementwise op over more than its grain size.
big = torch.rand(1 << 22)
for _ in range(3):
    big.add_(1.0)
before = threads()

model = torch.nn.Sequential(
    torch.nn.Conv2d(8, 32, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(32, 32, 1), torch.nn.ReLU(),
    torch.nn.Conv2d(32, 16, 3, stride=2, padding=1)).eval()
x = torch.rand(2, 8, 20, 20) * 2 - 1
with torch.inference_mode():
    want = model(x)
with convlower.patch(model, target="cpu", threads=2), torch.inference_mode():
    for _ in range(3):
        got = model(x)
after = threads()

error = reference.relative_error(got.double().numpy(), want.double().numpy())
expect(error < 1e-4, f"patched output off by {error:.2e} (relative)")

runtime = convlower.openmp_runtime()
gomp_parallel = ctypes.cast(ctypes.CDLL(None).GOMP_parallel, ctypes.c_void_p).value
torchs = file_defining(gomp_parallel)
expect(runtime and os.path.realpath(runtime) == torchs,
       f"ConvLower runs on {runtime!r}, torch's GOMP_parallel is in {torchs!r}")
expect(after == before,
       f"{before} threads before the patched forward, {after} after: a second pool")
if "libgomp" in (torchs or ""):
    libomps = sorted({p for _, _, p in mapped_files() if "libomp" in os.path.basename(p)})
    expect(not libomps, f"libomp mapped next to torch's libgomp: {libomps}")

print(f"OpenMP runtime: {os.path.basename(os.path.realpath(runtime))}; "
      f"torch's: {os.path.basename(torchs or '?')}")
print(f"threads: {before} before the patched forward, {after} after")
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("one OpenMP runtime")
