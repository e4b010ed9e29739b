"""convlower on torch tensors and convlower.patch on torch models, against torch.

1. convlower.conv1d/2d/3d on torch tensors against torch.nn.functional.conv*d
   in float64 on the same (dtype-rounded) values: f32 and bf16, strides,
   padding "same", dilation, groups, bias; the result is a torch tensor.
2. patch(model) on a small model with every nn.Conv kind the patch takes
   (plain, strided grouped, reflect padding, depthwise "same", no bias, 1-D and
   3-D models): under inference_mode its output matches the unpatched model's
   within 1e-4 relative, every conv layer ran through ConvLower once, and
   restore() undoes it. Constant weights (the default) are packed once and
   again after an in-place write or a replaced tensor; after each layer's
   first call no call takes the general path; constant_weights=False sees a
   write through .data.
3. A batch of no images gets torch's empty result (functions and patch).
4. What ConvLower refuses: a call that needs gradients (strict: BadInputError
   naming the layer; strict=False: torch runs it and the record says why) and
   float64 layers.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import reference  # noqa: E402

import convlower  # noqa: E402

seed = int.from_bytes(os.urandom(4), "little")
print(f"seed {seed}")
torch.manual_seed(seed)
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def rel(got, want):
    return reference.relative_error(got.double().numpy(), want.double().numpy())


FUNCTIONS = {1: (convlower.conv1d, F.conv1d), 2: (convlower.conv2d, F.conv2d),
             3: (convlower.conv3d, F.conv3d)}


def check(name, rank, xshape, wshape, dtype=torch.float32, bias=False, tol=1e-5, **kw):
    x = (torch.rand(xshape) * 2 - 1).to(dtype)
    w = (torch.rand(wshape) * 2 - 1).to(dtype)
    b = (torch.rand(wshape[0]) * 2 - 1).to(dtype) if bias else None
    ours, theirs = FUNCTIONS[rank]
    y = ours(x, w, b, target="cpu", **kw)
    want = theirs(x.double(), w.double(), None if b is None else b.double(), **kw)
    expect(isinstance(y, torch.Tensor), f"{name}: returned {type(y).__name__}")
    expect(tuple(y.shape) == tuple(want.shape), f"{name}: shape {tuple(y.shape)}")
    if tuple(y.shape) == tuple(want.shape):
        err = rel(y, want)
        expect(err <= tol, f"{name}: relative error {err:.3g} > {tol}")
        print(f"{name:34} {str(tuple(y.shape)):20} error {err:.2e}")


check("f32 3x3 bias", 2, (2, 8, 10, 10), (16, 8, 3, 3), bias=True, padding=1)
check("f32 stride 2 groups 2", 2, (1, 8, 11, 9), (8, 4, 3, 3), stride=2, groups=2,
      padding=(1, 2))
check("f32 same dilation 2", 2, (1, 4, 9, 9), (6, 4, 3, 3), padding="same", dilation=2)
check("f32 depthwise 5x5", 2, (1, 16, 12, 12), (16, 1, 5, 5), groups=16, padding=2)
check("bf16 3x3", 2, (1, 16, 8, 8), (16, 16, 3, 3), dtype=torch.bfloat16, bias=True,
      padding=1, tol=1e-2)
check("f32 conv1d", 1, (2, 4, 30), (8, 4, 3), stride=3, padding=1)
check("f32 conv3d", 3, (1, 3, 6, 6, 6), (4, 3, 3, 3, 3), padding=1, bias=True)


def torch_model_output(model, x):
    """The model's output through torch's own forwards (patched or not)."""
    convs = [m for m in model.modules() if "forward" in vars(m)]
    saved = {m: vars(m).pop("forward") for m in convs}
    try:
        with torch.inference_mode():
            return model(x)
    finally:
        for m, f in saved.items():
            m.forward = f


def run_model(name, model, x, tol=1e-4):
    model.eval()
    with torch.inference_mode():
        want = model(x)
    with convlower.patch(model, target="cpu") as p, torch.inference_mode():
        got = model(x)
        layers = list(p.layers)
        convs = [m for m in model.modules() if isinstance(m, (torch.nn.Conv1d,
                 torch.nn.Conv2d, torch.nn.Conv3d))]
        expect(len(layers) == len(convs), f"{name}: patched {len(layers)} of {len(convs)}")
        for r in layers:
            expect(r.calls == 1 and r.fallbacks == 0,
                   f"{name}: layer {r.name} ran {r.calls} times in ConvLower, "
                   f"{r.fallbacks} in torch ({r.fallback_reason})")
            expect(r.report and r.report["target"] == "cpu", f"{name}: {r.name} report")
        print(p.summary())
    err = rel(got, want)
    expect(err <= tol, f"{name}: relative error {err:.3g} > {tol}")
    print(f"{name}: output {tuple(got.shape)}, error {err:.2e} against torch")
    # Restored: torch's forward again, no ConvLower calls recorded.
    with torch.inference_mode():
        model(x)
    expect(all(r.calls == 1 for r in layers), f"{name}: still patched after restore")
    return layers


model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 3, padding=1, bias=False),
    torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
    torch.nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=4),
    torch.nn.ReLU(),
    torch.nn.Conv2d(32, 32, 3, padding=1, padding_mode="reflect"),
    torch.nn.Conv2d(32, 32, 3, groups=32, padding="same"),
    torch.nn.Conv2d(32, 8, 1),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10))
x = torch.rand(2, 3, 20, 20)
run_model("2-D model", model, x)
run_model("1-D model", torch.nn.Sequential(
    torch.nn.Conv1d(4, 8, 5, padding=2), torch.nn.ReLU(),
    torch.nn.Conv1d(8, 8, 3, stride=2, groups=2, padding_mode="circular", padding=1)),
    torch.rand(1, 4, 40))
run_model("3-D model", torch.nn.Sequential(
    torch.nn.Conv3d(2, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv3d(4, 4, 1)),
    torch.rand(1, 2, 5, 6, 7))

# Constant weights: each layer packs its weight once and again when the weight
# is written in place (torch's version counter) or replaced.
cw = torch.nn.Sequential(torch.nn.Conv2d(8, 24, 3, padding=1), torch.nn.ReLU(),
                         torch.nn.Conv2d(24, 16, 3, stride=2, padding=1, groups=2)).eval()
xc = torch.rand(1, 8, 14, 14)
with convlower.patch(cw, target="cpu", constant_weights=True) as p, \
        torch.inference_mode():
    first = cw(xc)
    expect(rel(first, torch_model_output(cw, xc)) <= 1e-5, "constant weights: first call")
    packed = [r.report["packed_bytes"] for r in p.layers]
    expect(all(b is not None for b in packed), f"constant weights: packed {packed}")
    with torch.no_grad():
        cw[0].weight.mul_(-2)             # in place: the version counter moves
        cw[2].weight = torch.nn.Parameter(torch.rand_like(cw[2].weight))  # replaced
    again = cw(xc)
    err = rel(again, torch_model_output(cw, xc))
    expect(err <= 1e-5, f"constant weights after the weights changed: error {err:.3g}")
    print(f"constant weights: packed {packed} bytes, re-packed after a change, "
          f"error {err:.2e}")

# The package's defaults: constant weights, and after each layer's first call
# the direct call (no general-path call); a write through .data is the one
# change the version counter misses, and constant_weights=False sees it.
general = []
general_conv = convlower._conv
convlower._conv = lambda *a, **k: general.append(1) or general_conv(*a, **k)
try:
    with convlower.patch(cw, target="cpu") as p, torch.inference_mode():
        cw(xc)
        first_calls = len(general)
        for _ in range(3):
            out = cw(xc)
        later_calls = len(general) - first_calls
        err = rel(out, torch_model_output(cw, xc))
        defaults_packed = all(r.report.get("packed_bytes") is not None for r in p.layers)
    expect(first_calls == 2 and later_calls == 0 and defaults_packed and err <= 1e-5,
           f"patch defaults: {first_calls} general-path calls first, {later_calls} "
           f"after, packed {defaults_packed}, error {err:.3g}")
    print(f"patch defaults: packed once, general-path calls after the first "
          f"{later_calls}, error {err:.2e}")
    with torch.no_grad():
        cw[0].weight.data.mul_(0.25)      # escapes the version counter
    with convlower.patch(cw, target="cpu", constant_weights=False) as p, \
            torch.inference_mode():
        err = rel(cw(xc), torch_model_output(cw, xc))
        cw(xc)
    expect(err <= 1e-5, f"constant_weights=False after a .data write: error {err:.3g}")
finally:
    convlower._conv = general_conv

# precision "bf16": the ungrouped layer on bfloat16 operands (float32 out,
# within bf16's tolerance), the grouped one in float32; a weight written in
# place is converted again. On a CPU with neither AVX512-BF16 nor AMX
# (bf16_pays keeps such a CPU's layers float32) with bf16_pays told it has
# the first: the C API widens the bfloat16 itself.
real_units = convlower.cpu_units
if not real_units() & {"avx512-bf16", "amx"}:
    convlower.cpu_units = lambda: frozenset({"avx512-bf16"})
try:
    with convlower.patch(cw, target="cpu", precision="bf16") as p, torch.inference_mode():
        got = cw(xc)
        err = rel(got, torch_model_output(cw, xc))
        dtypes = [r.conv.dtype for r in p.layers]
        with torch.no_grad():
            cw[0].weight.mul_(0.5)
        err_after = rel(cw(xc), torch_model_output(cw, xc))
finally:
    convlower.cpu_units = real_units
expect(err <= 2e-2 and err_after <= 2e-2 and dtypes == ["bf16", "f32"],
       f"patch bf16: error {err:.3g}, after a change {err_after:.3g}, dtypes {dtypes}")
print(f"patch bf16: dtypes {dtypes}, error {err:.2e}, after a weight change {err_after:.2e}")

# A batch of no images: torch's empty result, of the output's shape, from the
# functions and through patch() (nothing compiled; a window that does not fit is
# still refused).
empty = convlower.conv2d(torch.rand(0, 8, 14, 14), cw[0].weight, cw[0].bias, padding=1)
expect(isinstance(empty, torch.Tensor) and tuple(empty.shape) == (0, 24, 14, 14),
       f"empty batch: {type(empty).__name__} {tuple(empty.shape)}")
with convlower.patch(cw, target="cpu") as p, torch.inference_mode():
    y0 = cw(torch.rand(0, 8, 14, 14))
    want = torch_model_output(cw, torch.rand(0, 8, 14, 14))
    expect(tuple(y0.shape) == tuple(want.shape) == (0, 16, 7, 7),
           f"empty batch through patch: {tuple(y0.shape)}, torch {tuple(want.shape)}")
    expect(all(r.calls == 1 for r in p.layers), "empty batch: a layer did not run")
try:
    convlower.conv2d(torch.rand(0, 8, 2, 2), torch.rand(4, 8, 3, 3))
    expect(False, "empty batch: a 3x3 window on a 2x2 image was taken")
except convlower.BadInputError as e:
    print(f"empty batch, window too large -> {e}")

# Gradients: refused by name in strict mode, left to torch otherwise.
model.eval()
with convlower.patch(model, target="cpu"):
    try:
        model(x)
        expect(False, "a call needing gradients ran through ConvLower")
    except convlower.BadInputError as e:
        expect("inference" in str(e) and "0" in str(e), f"gradient refusal: {e}")
        print("strict refusal ->", e)
with convlower.patch(model, target="cpu", strict=False) as p:
    got = model(x)
    expect(got.requires_grad, "the fallback lost torch's autograd")
    expect(all(r.fallbacks == 1 and "inference" in r.fallback_reason for r in p.layers),
           "fallbacks not recorded")
double = torch.nn.Conv2d(3, 4, 3).double()
with convlower.patch(double, target="cpu", strict=False) as p, torch.inference_mode():
    double(torch.rand(1, 3, 8, 8, dtype=torch.float64))
    expect(p.layers[0].fallbacks == 1 and "float64" in p.layers[0].fallback_reason,
           f"float64: {p.layers[0].fallback_reason!r}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all torch checks passed")
