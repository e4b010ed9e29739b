"""The package's CUDA target without a GPU: runtime/'s test libcuda.

CONVRT_LIBCUDA points at the fake driver (a compute capability 9.0 device that
records every module load, launch and copy into FAKE_CUDA_RECORD and computes
nothing). A Conv compiled for target "cuda" (and "auto", which must choose the
device) is the real tensor-core kernel for sm_90a, the default chip there
(conv-lower-to-nvvm, ptxas; this C = 32 problem takes the TMA + wgmma family
with a gathered A tile, the filter loaded by TMA); the record must show one
cubin load when it is compiled and, per run, one launch with one pointer per
kernel argument and the filter's tensor map by value, the operands uploaded with their
exact byte counts (f16: 2 bytes an element; bias included) and the output's
bytes downloaded: the handle keeps its module and buffers across runs. A
residual add and a clamp are fused into the kernel's epilogue: "auto" keeps
the device, and the residual is one more kernel argument, uploaded per run.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np

import convlower

failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


record = Path(os.environ["FAKE_CUDA_RECORD"])


def events():
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


d = convlower.devices()
expect([x["compute_capability"] for x in d["devices"]] == ["9.0"], f"devices: {d}")

for target in ("cuda", "auto"):
    record.unlink(missing_ok=True)
    conv = convlower.Conv(batch=2, in_channels=32, out_channels=64, input_size=(10, 10),
                          kernel_size=(3, 3), pad_before=(1, 1), pad_after=(1, 1),
                          layout="nhwc", dtype="f16", bias=True, relu=True,
                          target=target)
    r = conv.report()
    expect(conv.target == "cuda" and r["target"] == "cuda" and r["chip"] == "sm_90a" and
           r["pipeline"] == "conv-lower-to-nvvm" and "block" in r.get("kernel", ""),
           f"{target}: report {r}")
    loads = [e for e in events() if e["event"] == "module_load"]
    expect(len(loads) == 1 and loads[0].get("kind") == "cubin",
           f"{target}: module loads at compile time {loads}")
    x = np.ones(conv.input_shape, np.float16)
    w = np.ones(conv.filter_shape, np.float16)
    b = np.ones(64, np.float16)
    for _ in range(3):
        y = conv(x, w, b)
    expect(y.shape == conv.output_shape and y.dtype == np.float32, f"{target}: {y.shape}")
    ev = events()
    launches = [e for e in ev if e["event"] == "launch"]
    expect(len(launches) == 3, f"{target}: {len(launches)} launches for 3 runs")
    expect(all([p.get("size") for p in e.get("params", [])] == [8, 8, 8, 8, 128] and
               e["params"][4].get("tensor_map", {}).get("mode") == "tiled"
               for e in launches),
           f"{target}: launch parameters {[e.get('params') for e in launches]}")
    expect(len([e for e in ev if e["event"] == "module_load"]) == 1,
           f"{target}: the module was loaded again for a run")
    copies = [e for e in ev if e["event"] == "memcpy"]
    up = [e["bytes"] for e in copies if e["direction"] == "htod"]
    down = [e["bytes"] for e in copies if e["direction"] == "dtoh"]
    expect(up == [x.nbytes, w.nbytes, b.nbytes] * 3,
           f"{target}: uploads {up}, want {[x.nbytes, w.nbytes, b.nbytes]} per run")
    expect(down == [y.nbytes] * 3, f"{target}: downloads {down}, want {y.nbytes} per run")
    expect(conv.report()["repeat"] == 3, f"{target}: runs {conv.report()['repeat']}")
    print(f"target {target}: cuda {r['chip']}, {len(launches)} launches, uploads {up[:3]}")

# A residual add and a clamp (ReLU6) are the kernel's epilogue too: auto takes
# the device, the kernel takes the residual after the bias (one more pointer),
# and each run uploads it with its exact bytes (the output's type, f32 here).
record.unlink(missing_ok=True)
conv = convlower.Conv(batch=2, in_channels=32, out_channels=64, input_size=(10, 10),
                      kernel_size=(3, 3), pad_before=(1, 1), pad_after=(1, 1),
                      layout="nhwc", dtype="f16", bias=True, residual=True,
                      clamp=(0, 6), target="auto")
expect(conv.target == "cuda", f"auto with a residual: target {conv.target}, "
                              f"report {conv.report()}")
x = np.ones(conv.input_shape, np.float16)
w = np.ones(conv.filter_shape, np.float16)
b = np.ones(64, np.float16)
r = np.ones(conv.output_shape, np.float32)
for _ in range(2):
    y = conv(x, w, b, r)
ev = events()
launches = [e for e in ev if e["event"] == "launch"]
expect(len(launches) == 2 and
       all([p.get("size") for p in e.get("params", [])] == [8, 8, 8, 8, 8, 128]
           for e in launches),
       f"residual: launch parameters {[e.get('params') for e in launches]}")
up = [e["bytes"] for e in ev if e["event"] == "memcpy" and e["direction"] == "htod"]
expect(up == [x.nbytes, w.nbytes, b.nbytes, r.nbytes] * 2,
       f"residual: uploads {up}, want {[x.nbytes, w.nbytes, b.nbytes, r.nbytes]} per run")
print(f"residual clamp, target auto: {conv.target}, {len(launches)} launches, "
      f"uploads {up[:4]}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all fake-CUDA checks passed")
