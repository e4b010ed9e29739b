"""The disk cache from Python: a second process compiling the same model
links what the first compiled (every convolution's report says "hit"), the
functions that show and clear the cache, and CONVLOWER_CACHE_DIR.

usage: test_disk_cache.py CACHE_DIR   (runs itself as the two processes)
"""

import json
import os
import subprocess
import sys
import time

if len(sys.argv) > 2:            # one process: compile the model, report
    import torch
    import convlower
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=4), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 8, 1)).eval()
    x = torch.rand(2, 3, 16, 16)
    start = time.perf_counter()
    compiled = convlower.compile(model, (x,))
    seconds = time.perf_counter() - start
    with torch.inference_mode():
        error = float((compiled(x) - model(x)).abs().max() / model(x).abs().max())
    states = [report["disk_cache"] for m in compiled.graph_module.modules()
              if type(m).__name__ == "FusedConv" for report in m.reports()]
    print(json.dumps({"states": states, "seconds": seconds, "error": error,
                      "dir": convlower.disk_cache_dir(),
                      "usage": convlower.disk_cache_usage()}))
    sys.exit(0)

cache = sys.argv[1]
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def process():
    out = subprocess.run([sys.executable, __file__, cache, "child"], capture_output=True,
                         text=True, env=dict(os.environ, CONVLOWER_CACHE_DIR=cache))
    expect(out.returncode == 0, f"child failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


first, second = process(), process()
print(f"first process: {first['states']}; second: {second['states']}")
print(f"entries: {first['usage'][1]} after the first, {second['usage'][1]} after the second")
expect(first["states"] == ["miss"] * 3 and second["states"] == ["hit"] * 3,
       f"states {first['states']} then {second['states']}")
expect(first["usage"][1] == 3 and second["usage"] == first["usage"],
       f"usage {first['usage']} then {second['usage']}")
expect(first["dir"] == cache, f"dir {first['dir']!r}")
expect(max(first["error"], second["error"]) < 1e-4, "outputs")
# Timing is the benchmark's to judge; printed for the log.
print(f"compile(): {first['seconds']:.2f} s, then {second['seconds']:.2f} s")

os.environ["CONVLOWER_CACHE_DIR"] = cache
import convlower  # noqa: E402
expect(convlower.disk_cache_clear() == 3, "clear")
expect(convlower.disk_cache_usage() == (0, 0), f"after clear: {convlower.disk_cache_usage()}")
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("disk cache from Python: all checks passed")
