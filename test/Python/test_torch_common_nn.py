"""PyTorch's own nn.Conv1d/2d/3d test configurations (torch.testing._internal.common_nn:
module_tests and new_module_tests, as torch 1.13 ships them) through convlower.patch,
each against the unpatched module on the same random input: every padding mode, no
bias, dilation, strides, 1x1x1, and the zero-size batches, which get torch's empty
result. Where this torch has no common_nn, says so and checks nothing (SKIP line)."""

import os
import sys
import types

import torch

import convlower

# common_utils imports expecttest (a torch test dependency, not a runtime one) for
# its accept flag only; the configurations need nothing from it.
if "expecttest" not in sys.modules:
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.ACCEPT = False
        stub.TestCase = object
        sys.modules["expecttest"] = stub
try:
    import torch.testing._internal.common_nn as common_nn
except Exception as e:  # noqa: BLE001: any import failure means "not here"
    print(f"SKIP: torch {torch.__version__} has no usable common_nn ({e})")
    sys.exit(0)

seed = int.from_bytes(os.urandom(4), "little")
print(f"seed {seed}")
torch.manual_seed(seed)

configs = [t for t in common_nn.module_tests + common_nn.new_module_tests
           if t.get("module_name") in ("Conv1d", "Conv2d", "Conv3d")]
failures, passed, empty = [], 0, 0
for t in configs:
    name = f"{t['module_name']} {t.get('desc', '') or 'plain'}"
    args = t.get("constructor_args", ())
    module = getattr(torch.nn, t["module_name"])(*args).eval()
    x = torch.rand(*t["input_size"]) * 2 - 1
    with torch.inference_mode():
        want = module(x)
    try:
        with convlower.patch(module, target="cpu") as p, torch.inference_mode():
            got = module(x)
    except convlower.ConvLowerError as e:
        failures.append(f"{name}: {e}")
        continue
    if tuple(got.shape) != tuple(want.shape):
        failures.append(f"{name}: shape {tuple(got.shape)}, torch {tuple(want.shape)}")
        continue
    if p.layers[0].calls != 1:
        failures.append(f"{name}: ConvLower ran {p.layers[0].calls} times")
        continue
    if want.numel() == 0:
        empty += 1
    else:
        err = ((got - want).abs().max() / want.abs().max().clamp_min(1e-12)).item()
        if err > 1e-5:
            failures.append(f"{name}: max error {err:.2e} relative to max |y|")
            continue
    passed += 1
    print(f"PASS {name}")

print(f"{passed} of {len(configs)} torch Conv configurations through patch() "
      f"({empty} zero-size batches)")
for f in failures:
    print("FAIL", f)
if failures or not configs:
    sys.exit(1)
print("all common_nn conv checks passed")
