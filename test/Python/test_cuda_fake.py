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
residual add or a clamp (the CPU routes' epilogue) makes "auto" choose the
CPU, computing the right result, and "cuda" refuse it by name.
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

# A residual add or a clamp is the CPU routes' epilogue, not the kernels':
# auto runs such a layer on the CPU and says why, cuda refuses it by name.
fields = dict(batch=1, in_channels=32, out_channels=32, input_size=(8, 8),
              kernel_size=(1, 1), layout="nhwc", residual=True, relu=True)
record.unlink(missing_ok=True)
conv = convlower.Conv(target="auto", **fields)
expect(conv.target == "cpu" and "residual" in json.dumps(conv.report()),
       f"auto with a residual: target {conv.target}, report {conv.report()}")
expect(not [e for e in events() if e["event"] == "module_load"],
       "auto with a residual loaded a kernel")
x = np.random.default_rng(0).standard_normal(conv.input_shape).astype(np.float32)
w = np.random.default_rng(1).standard_normal(conv.filter_shape).astype(np.float32)
r = np.random.default_rng(2).standard_normal(conv.output_shape).astype(np.float32)
want = np.maximum(np.einsum("nhwc,fc->nhwf", x.astype(np.float64),
                            w[:, 0, 0, :].astype(np.float64)) + r, 0)
got = conv(x, w, None, r)
error = float(np.abs(got - want).max() / np.abs(want).max())
expect(error < 1e-5, f"auto with a residual: error {error:.2e}")
print(f"residual, target auto: {conv.target}, error {error:.1e}")
try:
    convlower.Conv(target="cuda", **dict(fields, residual=False, clamp=(0, 6)))
    expect(False, "cuda took a clamp")
except convlower.BadInputError as e:
    expect("clamp" in str(e), f"cuda with a clamp: {e}")
    print(f"clamp, target cuda -> {e}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all fake-CUDA checks passed")
