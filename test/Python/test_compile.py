"""convlower.compile(model): torch.fx graphs with fused convolutions, against torch.

Each model is compared with the same model run by torch in float64 (the
reference: a float64 copy of the module, so BatchNorm is computed as torch
computes it, not as the fold computes it), relative to the largest output,
tolerance 1e-4 (f32 with BatchNorm folded in). Random weights and fresh
random BatchNorm statistics (not the default 0/1, which would make the fold
trivial) on every run.

1. BatchNorm folding: conv -> BN (affine and not), conv -> BN -> ReLU (module,
   F.relu, torch.relu, .relu()), 1-D and 3-D, with and without conv bias: one
   ConvLower call each, the BN and ReLU gone from the graph. Linear (with
   and without bias, with its ReLU; on 2-D and 3-D inputs) as a 1x1
   convolution.
2. Residuals and activations: conv -> BN -> + x -> ReLU is one call, the add
   and the ReLU in its compiled epilogue (the compilation takes the
   residual); ReLU6, Hardtanh (module and functional, default and given
   bounds) fuse as a clamp, with and without a residual before them
   (MobileNetV2's projection adds with no activation); a residual that
   broadcasts is added by torch, with the activation after it. What must
   not fuse: a conv whose output is read twice (the conv alone runs on
   ConvLower), a circular-padding conv (left to torch, the report says why).
   Average pooling (nn.AvgPool2d, F.avg_pool2d) counting its padding is a
   depthwise convolution inside the chain, max pooling (nn.MaxPool2d,
   F.max_pool2d) ConvLower's max pooling; other forms stay torch's.
3. The report: which ops ran where (ConvLower, torch) and what each ConvLower
   call computes; profile() times every op of the graph.
4. Refusals: a model in training mode, and a model fx cannot trace (named
   BadInputError pointing to patch()).
5. ResNet-18 and MobileNetV2 (torchvision, random weights, BN statistics
   randomized) at 64x64, batch 2, end to end: channels-last inside (every
   convolution but the first reads its input without a copy) and NCHW; the
   classifier's Linear runs on ConvLower too.
6. Any batch size: a model compiled for batch 2 called with 1, 3, 5, 7, 9,
   2, 3, 3 and 0 images matches torch each time, compiling only 1, 4 and 8
   (chunks) and, on its third call, 3.
7. The direct call (torch to the C API, nothing between) after each layer's
   first call: right results, no general-path call; weights written in place
   go back through the general path and are packed again.
8. precision="bf16": ResNet-18 within 2e-2 of float64 with every layer
   in bfloat16 on the route the CPU has (AMX tiles with AMX, VDPBF16PS
   with AVX512-BF16), direct calls after the first; grouped convolutions and
   large 3x3 ones (float32 Winograd's) stay float32; a precision that is not
   f32 or bf16 is refused.
9. Sequences: MobileNetV2's 52 convolutions as one C call over planned
   buffers (packed and planned by compile()'s example call, which computes
   no layer), bit for bit what the layers compute one by one; hooks and two
   threads (see there).
"""

import os
import sys

import torch
import torch.nn.functional as F
import torchvision

import convlower

seed = int.from_bytes(os.urandom(4), "little")
print(f"seed {seed}")
torch.manual_seed(seed)
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def randomize_batch_norms(model):
    """Running statistics and affine parameters away from their 0/1 defaults."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            if m.affine:
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.5, 0.5)
    return model


def error_against_float64(model, compiled, x):
    import copy
    reference = copy.deepcopy(model).double()
    with torch.inference_mode():
        want = reference(x.double())
        got = compiled(x)
    # (An output ReLU can zero every element of a small random model.)
    return float((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30))


def check(name, model, x, convlower_calls, torch_ops=None, tol=1e-4, layout="nhwc"):
    model = randomize_batch_norms(model).eval()
    compiled = convlower.compile(model, (x,), layout=layout)
    error = error_against_float64(model, compiled, x)
    ours = [op for op in compiled.ops if op.where == "convlower"]
    theirs = [op.what for op in compiled.ops if op.where == "torch"]
    expect(error < tol, f"{name}: error {error:.2e}")
    expect(convlower_calls is None or len(ours) == convlower_calls,
           f"{name}: {len(ours)} ConvLower calls, expected {convlower_calls}")
    if torch_ops is not None:
        expect(sorted(theirs) == sorted(torch_ops),
               f"{name}: torch ran {theirs}, expected {torch_ops}")
    fused = sum(len(op.fused) for op in ours)
    print(f"{name}: {len(ours)} ConvLower calls ({fused} ops fused), torch {theirs}, "
          f"error {error:.1e}")
    return compiled


class Seq(torch.nn.Sequential):
    pass


# 1. Folding and fusion.
check("conv-bn", Seq(torch.nn.Conv2d(5, 12, 3, padding=1), torch.nn.BatchNorm2d(12)),
      torch.rand(2, 5, 9, 9), 1, [])
check("conv-bn-relu no bias",
      Seq(torch.nn.Conv2d(6, 16, 3, stride=2, padding=1, bias=False),
          torch.nn.BatchNorm2d(16), torch.nn.ReLU()), torch.rand(2, 6, 11, 11), 1, [])
check("conv-bn not affine",
      Seq(torch.nn.Conv2d(4, 8, 1), torch.nn.BatchNorm2d(8, affine=False), torch.nn.ReLU()),
      torch.rand(1, 4, 7, 7), 1, [])
check("grouped conv-bn-relu",
      Seq(torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False),
          torch.nn.BatchNorm2d(8), torch.nn.ReLU(inplace=True)),
      torch.rand(2, 8, 10, 10), 1, [])
check("conv1d-bn", Seq(torch.nn.Conv1d(3, 8, 5, padding=2), torch.nn.BatchNorm1d(8)),
      torch.rand(2, 3, 30), 1, [])
check("conv3d-bn-relu", Seq(torch.nn.Conv3d(2, 4, 3, padding=1), torch.nn.BatchNorm3d(4),
                            torch.nn.ReLU()), torch.rand(1, 2, 5, 6, 7), 1, [])


class Functional(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.c = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.c(torch.relu(self.b(F.relu(self.a(x))))).relu()


class Linears(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(24, 40)
        self.b = torch.nn.Linear(40, 16, bias=False)
        self.c = torch.nn.Linear(16, 8)

    def forward(self, x):
        return self.c(self.b(torch.relu(self.a(x))))


linears = check("linear, linear-relu, no bias", Linears(), torch.rand(5, 24), 3, [])
expect([op.fused for op in linears.ops] == [("relu relu",), (), ()],
       f"linears fused {[op.fused for op in linears.ops]}")
# Leading dimensions are rows: [2, 3, 24] runs as 6 rows.
model = Linears().eval()
error = error_against_float64(model, convlower.compile(model), torch.rand(2, 3, 24))
print(f"linear on [2, 3, 24]: error {error:.1e}")
expect(error < 1e-4, f"linear on [2, 3, 24]: error {error:.1e}")
compiled = check("F.relu, torch.relu, .relu()", Functional(), torch.rand(2, 3, 8, 8), 3, [])
expect(all(op.fused and op.fused[0].startswith(("relu", ".relu")) for op in compiled.ops),
       f"relus not fused: {compiled.ops}")


# 2. What must not fuse.
class Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.relu = torch.nn.ReLU()
        self.shared = torch.nn.Conv2d(8, 8, 1)
        self.bn2 = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        y = self.relu(self.bn(self.conv(x)) + x)   # conv + BN + add + ReLU: one call
        z = self.shared(y)                          # read by the BN and the add
        return self.relu(self.bn2(z)) + z           # so z's conv fuses nothing


compiled = check("residual", Residual(), torch.rand(2, 8, 6, 6), 2,
                 ["BatchNorm2d", "ReLU", "add"])
expect([len(op.fused) for op in compiled.ops if op.where == "convlower"] == [3, 0],
       f"residual: fused {[op.fused for op in compiled.ops]}")

def epilogue_of(compiled, index=0):
    """(residual, relu, clamp) of the compiled convlower_<index>'s
    compilation for batch 2 (what its C API description holds)."""
    d = compiled.layer(f"convlower_{index}")._packed[2]["conv"]._desc
    return (d.residual, d.relu, (d.clampMin, d.clampMax) if d.clamp else None)


expect(epilogue_of(compiled) == (True, True, None),
       f"residual: epilogue {epilogue_of(compiled)}, expected the add and the ReLU")
relu6 = check("relu6", Seq(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8),
                           torch.nn.ReLU6()), torch.rand(2, 3, 9, 9) * 8, 1, [])
expect(epilogue_of(relu6) == (False, False, (0.0, 6.0)), f"relu6: {epilogue_of(relu6)}")
hardtanh = check("hardtanh(-0.5, 0.25)", Seq(torch.nn.Conv2d(3, 8, 3),
                                             torch.nn.Hardtanh(-0.5, 0.25)),
                 torch.rand(2, 3, 9, 9), 1, [])
expect(epilogue_of(hardtanh) == (False, False, (-0.5, 0.25)),
       f"hardtanh: {epilogue_of(hardtanh)}")


class Clamps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = (torch.nn.Conv2d(4, 4, 3, padding=1) for _ in range(4))

    def forward(self, x):
        x = F.relu6(self.a(x) * 1)                        # the multiply: torch's
        x = F.hardtanh(self.b(x), -0.3, 0.4)
        x = F.hardtanh(self.c(x), min_val=-0.2, max_val=0.1, inplace=True)
        return F.relu6(self.d(x), inplace=True)


clamps = check("F.relu6, F.hardtanh", Clamps(), torch.randn(2, 4, 7, 7) * 4, 4, ["mul", "relu6"])
expect([epilogue_of(clamps, i)[2] for i in range(1, 4)] ==
       [(-0.3, 0.4), (-0.2, 0.1), (0.0, 6.0)], "F.hardtanh bounds")


class Projection(torch.nn.Module):
    """MobileNetV2's inverted residual's end: conv -> BN -> + x (no activation);
    then a residual with a ReLU6 after it; then one that broadcasts."""

    def __init__(self):
        super().__init__()
        self.project = torch.nn.Conv2d(8, 8, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.expand = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.act = torch.nn.ReLU6()
        self.last = torch.nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        y = self.bn(self.project(x)) + x
        z = self.act(y + self.expand(y))                  # the residual first
        return F.relu(self.last(z) + z.mean((2, 3), keepdim=True))


projection = check("residual projection, relu6, broadcast", Projection(),
                   torch.randn(2, 8, 6, 6) * 3, 3, [".mean()"])
expect([epilogue_of(projection, i) for i in range(3)] ==
       [(True, False, None), (True, False, (0.0, 6.0)), (False, False, None)],
       f"residual epilogues: {[epilogue_of(projection, i) for i in range(3)]}")
# The same graph for the GPU's kernels: on the twin (target "cpu-twin", the
# tensor-core kernel's own body run on the CPU) the conv + BN + add + ReLU and
# the ReLU6 residual fuse as on the CPU, into the kernel's epilogue (tf32
# operands: 1e-3).
for name, model, x, epilogues in (
        ("residual", Residual(), torch.rand(2, 8, 6, 6), [(True, True, None)]),
        ("projection", Projection(), torch.randn(2, 8, 6, 6) * 3,
         [(True, False, None), (True, False, (0.0, 6.0))])):
    model = randomize_batch_norms(model).eval()
    twin = convlower.compile(model, (x,), target="cpu-twin")
    error = error_against_float64(model, twin, x)
    got = [epilogue_of(twin, i) for i in range(len(epilogues))]
    targets = {r["target"] for i in range(len(epilogues))
               for r in twin.layer(f"convlower_{i}").reports()}
    expect(error < 1e-3 and got == epilogues and targets == {"cpu-twin"},
           f"{name} on the twin: error {error:.1e}, epilogues {got}, targets {targets}")
    print(f"{name} on the twin: error {error:.1e}, epilogues {got}")

circular = check("circular padding",
                 Seq(torch.nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular"),
                     torch.nn.BatchNorm2d(4), torch.nn.Conv2d(4, 4, 1), torch.nn.ReLU()),
                 torch.rand(1, 3, 8, 8), 1, ["Conv2d (padding_mode 'circular')",
                                             "BatchNorm2d"])

# 3. The report.
summary = circular.summary()
print(summary)
expect("1 ConvLower calls computing 2 ops of the graph; 2 ops on torch" in summary,
       f"summary: {summary.splitlines()[0]}")

profile = circular.profile(torch.rand(1, 3, 8, 8), repeat=3)
expect(list(profile) == [op.name for op in circular.ops] and
       all(ms > 0 for ms in profile.values()), f"profile: {profile}")
print("profile:", ", ".join(profile))

# 4. Refusals.
try:
    convlower.compile(Seq(torch.nn.Conv2d(1, 1, 1)).train())
    expect(False, "training mode compiled")
except convlower.BadInputError as e:
    print("training mode ->", e)
    expect("model.eval()" in str(e), f"training mode: {e}")


class Dynamic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 1)

    def forward(self, x):
        return self.conv(x) if x.sum() > 0 else x


try:
    convlower.compile(Dynamic().eval())
    expect(False, "data-dependent control flow traced")
except convlower.BadInputError as e:
    print("untraceable ->", str(e).split(";")[0])
    expect("patch(model)" in str(e), f"untraceable: {e}")

# 5. Whole networks, channels-last inside (the default) and NCHW.
def channels_last_inputs(compiled, x):
    """How many of the ConvLower calls got an input they read without a copy
    (channels_last: its NHWC view is contiguous), of how many."""
    seen = []
    hooks = [m.register_forward_pre_hook(
        lambda m, args: seen.append(args[0].permute(0, 2, 3, 1).is_contiguous()))
        for m in compiled.graph_module.modules() if type(m).__name__ == "FusedConv"]
    with torch.inference_mode():
        compiled(x)
    for h in hooks:
        h.remove()
    return sum(seen), len(seen)


for name, convs, layout in (("resnet18", 20, "nhwc"), ("mobilenet_v2", 52, "nhwc"),
                            ("resnet18", 20, "nchw")):
    model = getattr(torchvision.models, name)()
    x = torch.rand(2, 3, 64, 64)
    # + the pooling (with the flatten) and fc; Dropout removed (eval mode);
    # ResNet's max pooling too where channels-last (conv-lower-max-pool-rows).
    pools = 1 if name == "resnet18" and layout == "nhwc" else 0
    compiled = check(f"{name} {layout}", model, x, convs + 2 + pools, layout=layout)
    folded = sum(1 for op in compiled.ops if op.where == "convlower"
                 for f in op.fused if f.startswith("BatchNorm"))
    left = sum(1 for op in compiled.ops if op.what.startswith("BatchNorm"))
    expect(folded == convs and left == 0, f"{name}: {folded} BatchNorms folded, {left} left")
    print(f"{name} {layout}: {folded} BatchNorms folded")
    if layout == "nhwc":
        # Only the image itself arrives in NCHW: every later convolution reads
        # what the one before left, through torch's ops, in place.
        direct, calls = channels_last_inputs(compiled, x)
        # (and the pooling's; the classifier's Linear reads rows, 1x1 images).
        expect((direct, calls) == (convs + 1 + pools, convs + 2 + pools),
               f"{name}: {direct} of {calls} convolutions read channels-last inputs")
        print(f"{name}: {direct} of {calls} convolutions read channels-last inputs in place")

# A channel shuffle: view() of a channels-last activation across its strides,
# which compile() turns into reshape().
class Shuffle(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = self.a(x)
        n, h, w = y.size(0), y.size(2), y.size(3)
        y = y.view(n, 2, 4, h, w).transpose(1, 2).contiguous().view(n, 8, h, w)
        return self.b(y).view(n, -1)


check("channel shuffle (view)", Shuffle(), torch.rand(2, 3, 9, 9), 2, [
    ".size()", ".size()", ".size()", ".reshape()", ".transpose()", ".contiguous()",
    ".reshape()", ".reshape()"])

# 6. Any batch size: compiled for 2 (the example), then called with others.
model = randomize_batch_norms(Seq(
    torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
    torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2), torch.nn.ReLU())).eval()
compiled = convlower.compile(model, (torch.rand(2, 3, 12, 12),))
worst = 0.0
for n in (1, 3, 5, 7, 9, 2, 3, 3, 0):
    x = torch.rand(n, 3, 12, 12)
    with torch.inference_mode():
        got, want = compiled(x), model(x)
    expect(got.shape == want.shape, f"batch {n}: shape {tuple(got.shape)}")
    if n:
        worst = max(worst, float((got - want).abs().max() / want.abs().max()))
layers = [m for m in compiled.graph_module.modules() if type(m).__name__ == "FusedConv"]
batches = [m.compiled_batches for m in layers]
print(f"batches 1, 3, 5, 7, 9, 2, 3, 3, 0: error {worst:.1e}; compiled for {batches[0]}")
expect(worst < 1e-4, f"any batch: error {worst:.1e}")
# 2 (the example), 1, 2, 4, 8 as chunks, then 3 on its third call.
expect(all(b == [1, 2, 3, 4, 8] for b in batches), f"compiled batch sizes {batches}")

# 7. The direct call: after a layer's first call of a batch size, its calls go
# from torch to the C API with nothing between (no convlower._conv), and still
# compute the right thing; a weight written in place sends that layer's next
# call back through the general path, which packs it again.
model = Seq(torch.nn.Conv2d(6, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 8, 1), torch.nn.ReLU()).eval()
compiled = convlower.compile(model, (torch.rand(2, 6, 10, 10),))
general = []
general_conv = convlower._conv
convlower._conv = lambda *a, **k: general.append(1) or general_conv(*a, **k)
try:
    worst = 0.0
    for _ in range(3):
        x = torch.rand(2, 6, 10, 10)
        worst = max(worst, error_against_float64(model, compiled, x))
    direct_general = len(general)
    layers = [m for m in compiled.graph_module.modules() if type(m).__name__ == "FusedConv"]
    last = layers[-1]
    with torch.no_grad():          # the last layer's scaled by 2: the output doubles
        last.weight.mul_(2)
        last.bias.mul_(2)
    x = torch.rand(2, 6, 10, 10)
    with torch.inference_mode():
        doubled = compiled(x)
    scaled_error = float((doubled - 2 * model(x)).abs().max() / doubled.abs().max())
    repacked_general = len(general) - direct_general
finally:
    convlower._conv = general_conv
print(f"direct calls: error {worst:.1e}, general-path calls {direct_general}; "
      f"weights written in place: error {scaled_error:.1e}, general-path calls "
      f"{repacked_general}")
expect(worst < 1e-4 and direct_general == 0,
       f"direct call: error {worst:.1e}, {direct_general} general-path calls")
expect(scaled_error < 1e-5 and repacked_general == 1,
       f"weights written in place: error {scaled_error:.1e}, {repacked_general} "
       "general-path calls")

# 8. precision="bf16": the ungrouped convolutions and Linear compute on
# bfloat16 weights and inputs into float32 (AMX tiles where the CPU has AMX,
# VDPBF16PS where it has AVX512-BF16, else widened), the grouped ones stay float32; ResNet-18 within
# bf16's tolerance of float64, direct calls as in float32.
def cpu_flags():
    with open("/proc/cpuinfo") as f:
        return {flag for line in f if line.startswith("flags")
                for flag in line.split(":", 1)[1].split()}


def has_avx512_bf16():
    return "avx512_bf16" in cpu_flags()


def has_amx_bf16():
    return {"amx_tile", "amx_bf16", "amx_int8"} <= cpu_flags()


# convlower.cpu_units(): the units the C API's routes use, as /proc/cpuinfo
# has them (AMX only where the CPU has it; Linux may still refuse the tile
# data), the same on a second call.
units = convlower.cpu_units()
print(f"cpu units: {sorted(units)}")
expect(units == convlower.cpu_units()
       and ("avx512-bf16" in units) == has_avx512_bf16()
       and ("avx512-vnni" in units) == ("avx512_vnni" in cpu_flags())
       and ("amx" not in units or has_amx_bf16()),
       f"cpu_units() {sorted(units)} against /proc/cpuinfo")

# On a CPU with neither AVX512-BF16 nor AMX, bf16_pays keeps every layer float32
# (bf16 would only be widened back); the bf16 route is checked there all the same,
# with bf16_pays told the CPU has AVX512-BF16: the C API, reading the host itself,
# widens those layers' bfloat16 to float32 FMAs.
real_units = convlower.cpu_units
if not units & {"avx512-bf16", "amx"}:
    convlower.cpu_units = lambda: frozenset({"avx512-bf16"})


model = randomize_batch_norms(torchvision.models.resnet18()).eval()
x = torch.rand(2, 3, 64, 64)
compiled = convlower.compile(model, (x,), precision="bf16")
general = []
convlower._conv = lambda *a, **k: general.append(1) or general_conv(*a, **k)
try:
    error = error_against_float64(model, compiled, x)
finally:
    convlower._conv = general_conv
layers = [m for m in compiled.graph_module.modules()
          if type(m).__name__ == "FusedConv" and not m.pooling]
bf16 = [m for m in layers if m.weight.dtype == torch.bfloat16]
# An AMX CPU takes the tiles where Linux grants the tile data, else the dots.
accepted = (("TDPBF16PS", "VDPBF16PS") if has_amx_bf16()
            else ("VDPBF16PS",) if has_avx512_bf16() else ("widened to f32 FMAs",))
route = accepted[0]
routes = [r["kernel"] for m in bf16 for r in m.reports()]
on_route = all(any(a in r for a in accepted) for r in routes)
print(compiled.summary().splitlines()[2])
print(f"resnet18 bf16: error {error:.1e}, {len(bf16)} of {len(layers)} layers in bf16, "
      f"general-path calls after the first {len(general)}, "
      f"route {route}: {on_route}")
expect(error < 2e-2, f"bf16: error {error:.2e}")
# Every layer (the 7x7 RGB stem's odd K = 147 padded to pairs).
expect(len(bf16) == len(layers) == 21
       and not general and routes and on_route,
       f"bf16: layers {len(bf16)} of {len(layers)}, routes {routes}")
# What stays float32 (convlower.torch.bf16_pays) in layers compiled alone
# (sequences=False): a grouped layer, and a 3x3 stride-1 layer of 64 or
# more 4x4 output tiles (float32 Winograd is faster than VDPBF16PS; not than
# AMX's tiles), the same in a sequence, where the grouped layer's float32
# input keeps the first layer's output float32 (a depthwise layer there
# takes bf16: the MobileNetV2 case below).
winograd_wins = "amx" not in convlower.cpu_units()
bf16, f32 = torch.bfloat16, torch.float32
for label, size, alone, chained in (
        ("9x9", 9, [bf16, f32], [bf16, f32]),
        ("32x32", 32, [f32 if winograd_wins else bf16, f32],
         [f32 if winograd_wins else bf16, f32])):
    mixed = Seq(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(),
                torch.nn.Conv2d(16, 16, 3, padding=1, groups=4)).eval()
    x = torch.rand(1, 8, size, size)
    for sequences, want in ((False, alone), (True, chained)):
        compiled = convlower.compile(mixed, (x,), precision="bf16", sequences=sequences)
        dtypes = [m.weight.dtype for m in compiled.graph_module.modules()
                  if type(m).__name__ == "FusedConv"]
        error = error_against_float64(mixed, compiled, x)
        print(f"{label}{' in a sequence' if sequences else ''}: {dtypes}, error {error:.1e}; "
              f"{compiled.summary().splitlines()[2]}")
        expect(dtypes == want and error < 2e-2,
               f"bf16 {label} sequences={sequences}: {dtypes}, error {error:.1e}")
# bf16_pays asked as on each kind of host: the 56x56 3x3 layer stays float32
# (Winograd) where the GEMMs run on VDPBF16PS, takes bfloat16 on AMX; the
# grouped one stays float32 on both; a 1x1 layer takes bfloat16 on either,
# and none does on a CPU with neither.
dense, grouped = torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.Conv2d(64, 64, 3, groups=2)
pointwise_layer = torch.nn.Conv2d(64, 64, 1)
checked_units = convlower.cpu_units
try:
    for host, want in ((frozenset({"avx512-bf16"}), (False, False, True)),
                       (frozenset({"avx512-bf16", "avx512-vnni", "amx"}), (True, False, True)),
                       (frozenset(), (False, False, False))):
        convlower.cpu_units = lambda host=host: host
        got = tuple(convlower.torch.bf16_pays(m, (1, 64, 56, 56))
                    for m in (dense, grouped, pointwise_layer))
        print(f"bf16_pays with {sorted(host)}: {got}")
        expect(got == want, f"bf16_pays with {sorted(host)}: {got}, expected {want}")
finally:
    convlower.cpu_units = checked_units
# A 1x1 layer with its BatchNorm folded into a bias, in bfloat16: the
# epilogue runs on the GEMM's register tiles, which read the bfloat16 bias
# in its own type (read as float32 the layer failed to compile, and with it
# compile(precision="bf16") of any such model).
pointwise = randomize_batch_norms(
    Seq(torch.nn.Conv2d(64, 128, 1), torch.nn.BatchNorm2d(128), torch.nn.ReLU())).eval()
x = torch.rand(1, 64, 14, 14)
compiled = convlower.compile(pointwise, (x,), precision="bf16")
dtypes = [m.weight.dtype for m in compiled.graph_module.modules()
          if type(m).__name__ == "FusedConv"]
error = error_against_float64(pointwise, compiled, x)
print(f"1x1 + BatchNorm bf16: {dtypes}, error {error:.1e}")
expect(dtypes == [torch.bfloat16] and error < 2e-2,
       f"bf16 1x1 + BatchNorm: {dtypes}, error {error:.1e}")
try:
    convlower.compile(mixed, precision="fp8")
    expect(False, "precision fp8 accepted")
except convlower.BadInputError as e:
    print("precision fp8 ->", e)

# Classifier heads: global average pooling read by flatten(1) alone is one
# ConvLower call (a depthwise convolution whose kernel is the image), the
# module and the functional form; eval-mode Dropout is removed; a pooling
# without the flatten stays torch's, and so does one over more than
# FusedGlobalPool.MAX_IMAGE pixels (computed by torch inside the call).
class Head(torch.nn.Module):
    def __init__(self, functional, flatten=True):
        super().__init__()
        self.functional, self.flatten = functional, flatten
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d((1, 1))
        self.drop = torch.nn.Dropout(0.5)
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, x):
        y = F.relu(self.conv(x))
        if not self.flatten:
            return self.pool(y) + 1
        if self.functional == "mean":
            y = y.mean((2, 3))
        else:
            y = F.adaptive_avg_pool2d(y, 1).flatten(1) if self.functional \
                else torch.flatten(self.pool(y), 1)
        return self.fc(self.drop(y))


check("head (module)", Head(False), torch.rand(2, 3, 9, 9), 3, [])
compiled = check("head (functional)", Head(True), torch.rand(2, 3, 9, 9), 3, [])
print(compiled.summary().splitlines()[0])
# x.mean((2, 3)) (MNASNet's head) is the same pooling and flatten in one op.
check("head (mean)", Head("mean"), torch.rand(2, 3, 9, 9), 3, [])
check("pool without flatten", Head(False, flatten=False), torch.rand(2, 3, 9, 9), 1,
      ["AdaptiveAvgPool2d", "add"])
compiled = check("head on 13x13", Head(False), torch.rand(2, 3, 13, 13), 3, [])
pool = compiled.layer("convlower_1")
print(f"head on 13x13: pooled by ConvLower {len(pool.layers) == 1}")
expect(len(pool.layers) == 1, f"13x13 pooling by torch: {list(pool.layers)}")
compiled = check("head on 40x40", Head(False), torch.rand(1, 3, 40, 40), 3, [])
pool = compiled.layer("convlower_1")
print(f"head on 40x40: pooled by torch {len(pool.layers) == 0}")
expect(len(pool.layers) == 0, f"40x40 pooling compiled: {list(pool.layers)}")

# Average pooling over windows as torch computes it by default (the padding
# counted, sizes rounded down): a depthwise convolution whose kernel is the
# window, one ConvLower call made for the input's shape (the module and the
# functional form), inside the chain with the convolutions around it; with
# count_include_pad=False or ceil_mode=True, whose border windows divide by
# fewer pixels, it stays torch's.
class Pooled(torch.nn.Module):
    def __init__(self, pool=None, functional=None):
        super().__init__()
        self.pool, self.functional = pool, functional
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.proj = torch.nn.Conv2d(16, 8, 1)

    def forward(self, x):
        y = F.relu(self.conv(x))
        y = self.functional(y) if self.functional else self.pool(y)
        return self.proj(y)


def pooling_layers_made(name, compiled, kind, calls):
    """Checks that the pooling (a `kind` module) made one layer for the
    input's shape where it is compiled (3 calls), none where torch pools;
    returns the `kind` modules."""
    pools = [m for m in compiled.graph_module.modules() if type(m).__name__ == kind]
    made = [len(p.layers) for p in pools]
    sequences = [m for m in compiled.graph_module.modules()
                 if type(m).__name__ == "FusedSequence"]
    print(f"{name}: pooling layers made {made}, sequences {len(sequences)}")
    expect(made == ([1] if calls == 3 else []), f"{name}: pooling layers {made}")
    return pools


for name, model, calls, torch_ops in [
        ("AvgPool2d(3, 2, 1)", Pooled(torch.nn.AvgPool2d(3, 2, 1)), 3, []),
        ("AvgPool2d(2)", Pooled(torch.nn.AvgPool2d(2)), 3, []),
        ("F.avg_pool2d(y, (3, 1), 1, (1, 0))",
         Pooled(functional=lambda y: F.avg_pool2d(y, (3, 1), 1, (1, 0))), 3, []),
        ("count_include_pad=False",
         Pooled(torch.nn.AvgPool2d(3, 2, 1, count_include_pad=False)), 2, ["AvgPool2d"]),
        ("ceil_mode=True", Pooled(torch.nn.AvgPool2d(3, 2, ceil_mode=True)), 2, ["AvgPool2d"])]:
    compiled = check(name, model, torch.rand(2, 3, 11, 11), calls, torch_ops)
    pooling_layers_made(name, compiled, "FusedAvgPool", calls)

# Max pooling as torch computes it (the padding -inf, no indices):
# ConvLower's max pooling of the same windows, one call made for the input's
# shape (the module and the functional form, a dilated and a non-square
# window, ceil_mode: a last window reaching past the image, and one torch
# drops because it would start in the padding), inside the chain;
# return_indices=True and the channels-first layout stay torch's.
for name, model, calls, torch_ops, layout in [
        ("MaxPool2d(3, 2, 1)", Pooled(torch.nn.MaxPool2d(3, 2, 1)), 3, [], "nhwc"),
        ("MaxPool2d(2)", Pooled(torch.nn.MaxPool2d(2)), 3, [], "nhwc"),
        ("MaxPool2d(3, 1, 1, dilation=2)",
         Pooled(torch.nn.MaxPool2d(3, 1, 1, dilation=2)), 3, [], "nhwc"),
        ("F.max_pool2d(y, (3, 2), (2, 1), (1, 1))",
         Pooled(functional=lambda y: F.max_pool2d(y, (3, 2), (2, 1), (1, 1))), 3, [], "nhwc"),
        ("max ceil_mode=True", Pooled(torch.nn.MaxPool2d(3, 2, ceil_mode=True)), 3,
         [], "nhwc"),
        ("MaxPool2d(2, ceil_mode=True)", Pooled(torch.nn.MaxPool2d(2, ceil_mode=True)), 3,
         [], "nhwc"),
        ("MaxPool2d(3, 3, 1, ceil_mode=True)",
         Pooled(torch.nn.MaxPool2d(3, 3, 1, ceil_mode=True)), 3, [], "nhwc"),
        ("return_indices=True",
         Pooled(functional=lambda y: F.max_pool2d(y, 3, 2, 1, return_indices=True)[0]), 2,
         ["max_pool2d_with_indices", "getitem"], "nhwc"),
        ("max nchw", Pooled(torch.nn.MaxPool2d(3, 2, 1)), 2, ["MaxPool2d"], "nchw")]:
    x = torch.randn(2, 3, 11, 11)
    compiled = check(name, model, x, calls, torch_ops, layout=layout)
    pools = pooling_layers_made(name, compiled, "FusedMaxPool", calls)
    if calls == 3:
        # Bit for bit what torch's pooling picks from the same values.
        pool = pools[0]
        y = torch.randn(2, 16, 11, 11).contiguous(memory_format=torch.channels_last)
        with torch.inference_mode():
            got, want = pool(y), pool._by_torch(y)
            same = got.shape == want.shape and torch.equal(got, want)
        expect(same, f"{name}: the maxima differ from torch's")

# 9. Sequences: a chain of compiled layers (only its last output read after
# it) runs as one C call, convlowerRunSteps, over buffers planned per input
# shape. MobileNetV2 (64x64, batch 2): its 52 convolutions, the pooling and
# the classifier are one chain; compile()'s example call packs every layer
# and plans the chain without computing a layer (no run call); then one
# convlowerRunSteps call and no call per layer, the layers' outputs in an
# arena under a third of their size, bit for bit what
# the layers compute one by one (compile(sequences=False)) and within 1e-4
# of float64; profile() times each layer inside that call. The arena's
# placement never overlaps values live at once (random plans). A hook on a
# layer sends the chain back to the layers (the hook runs); two threads
# calling the model at once get their own results.
class Counted:
    """Counts the calls of the C API functions named, through the package's
    library object."""

    def __init__(self, *names):
        self.names, self.calls = names, {n: 0 for n in names}

    def __enter__(self):
        lib = convlower._lib
        self.saved = {n: getattr(lib, n) for n in self.names}
        for n, f in self.saved.items():
            def counted(*a, n=n, f=f):
                self.calls[n] += 1
                return f(*a)
            setattr(lib, n, counted)
        return self.calls

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(convlower._lib, n, f)


model = randomize_batch_norms(torchvision.models.mobilenet_v2()).eval()
x = torch.rand(2, 3, 64, 64)
with Counted("convlowerRunSteps", "convlowerConvRun", "convlowerConvRunResidual",
             "convlowerConvPackWeights") as compile_calls:
    compiled = convlower.compile(model, (x,))
# compile()'s example call compiles, packs and plans, and computes nothing.
computed = sum(n for f, n in compile_calls.items() if f != "convlowerConvPackWeights")
print(f"compile(): {compile_calls['convlowerConvPackWeights']} layers packed, "
      f"{computed} computed")
expect(compile_calls["convlowerConvPackWeights"] >= 53 and computed == 0,
       f"compile()'s example call: {compile_calls}")
unchained = convlower.compile(model, (x,), sequences=False)

# An op between the layers that fails on the example call's uninitialised
# outputs (here: on its first call, whatever the values): compile() runs the
# example as a forward instead, and the model still computes right (4 calls:
# the example's two, then the float64 reference's and the compiled model's).
value_checks = []


def check_values(y):
    value_checks.append(1)
    if len(value_checks) == 1:
        raise RuntimeError("uninitialised values")
    return y


torch.fx.wrap("check_values")


class Checked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.b(check_values(F.relu(self.a(x))))


checked = Checked().eval()
xc = torch.rand(2, 3, 8, 8)
compiled_checked = convlower.compile(checked, (xc,))
error = error_against_float64(checked, compiled_checked, xc)
print(f"an op failing on the example call: compile() ran it again as a forward "
      f"({len(value_checks)} calls), error {error:.1e}")
expect(len(value_checks) == 4 and error < 1e-4,
       f"fallback to a forward: {len(value_checks)} calls, error {error:.1e}")
sequences = [m for m in compiled.graph_module.modules()
             if type(m).__name__ == "FusedSequence"]
x = torch.rand(2, 3, 64, 64)
with Counted("convlowerRunSteps", "convlowerConvRun", "convlowerConvRunResidual") as calls:
    error = error_against_float64(model, compiled, x)
with torch.inference_mode():
    same = torch.equal(compiled(x), unchained(x))
plan = next(iter(sequences[0]._plans.values())) if sequences else None
arena = plan.arena.numel() if plan else 0
with torch.inference_mode():
    outputs = sum(v.numel() for v in sequences[0].run_layers((x,))[1:-1])
print(compiled.summary().splitlines()[2])
print(f"mobilenet_v2 sequence: error {error:.1e}, same as one call a layer {same}, "
      f"calls {calls}, arena under a third of the outputs {arena < outputs / 3} "
      f"for {len(sequences[0].names)} layers")
expect(len(sequences) == 1 and len(sequences[0].names) == 54,   # + pooling, Linear
       f"sequences: {[len(m.names) for m in sequences]}")
expect(sequences[0].planned_shapes == [((2, 3, 64, 64),)],
       f"planned after compile(): {sequences[0].planned_shapes}")
expect(error < 1e-4 and same, f"sequence: error {error:.1e}, bitwise {same}")
expect(calls == {"convlowerRunSteps": 1, "convlowerConvRun": 0,
                 "convlowerConvRunResidual": 0}, f"sequence calls {calls}")
expect(0 < arena < outputs / 3, f"arena {arena} floats for outputs of {outputs}")

# The arena's placement: values whose lives overlap never share memory
# (random lives and sizes, every pair checked).
import random
rng = random.Random(seed)
clashes = 0
for _ in range(200):
    n = rng.randint(1, 12)
    lives = {}
    for v in range(n):
        first = rng.randint(0, 10)
        lives[v] = (first, first + rng.randint(0, 4))
    sizes = {v: rng.randint(1, 100) for v in range(n)}
    offsets, total = type(plan)._place(lives, sizes)
    for u in range(n):
        for v in range(u + 1, n):
            live_together = lives[u][0] <= lives[v][1] and lives[v][0] <= lives[u][1]
            apart = (offsets[u] + sizes[u] <= offsets[v]
                     or offsets[v] + sizes[v] <= offsets[u])
            clashes += live_together and not apart
    clashes += any(offsets[v] % 16 or offsets[v] + sizes[v] > total for v in range(n))
print(f"arena placement: {clashes} clashes in 200 random plans")
expect(clashes == 0, f"arena placement: {clashes} clashes")

# profile() times the chain's layers inside its one call (the step times).
with Counted("convlowerRunSteps", "convlowerConvRun") as calls:
    times = compiled.profile(x, repeat=3)
layers = [op for op in compiled.ops if op.sequence]
print(f"profile in the sequence: {len(layers)} layers timed "
      f"{all(times[op.name] > 0 for op in layers)}, calls {calls}")
expect(len(layers) == 54 and all(times[op.name] > 0 for op in layers)
       and calls == {"convlowerRunSteps": 4, "convlowerConvRun": 0},
       f"profile: {len(layers)} layers, calls {calls}")

seen = []
hook = sequences[0].convlower_5.register_forward_pre_hook(lambda m, a: seen.append(1))
with Counted("convlowerRunSteps") as calls, torch.inference_mode():
    hooked = compiled(x)
hook.remove()
print(f"hooked layer: ran {len(seen)} time(s), convlowerRunSteps {calls['convlowerRunSteps']}, "
      f"same {torch.equal(hooked, unchained(x))}")
expect(seen == [1] and calls["convlowerRunSteps"] == 0, f"hook: {seen}, {calls}")

import threading
inputs = [torch.rand(2, 3, 64, 64) for _ in range(6)]
with torch.inference_mode():
    alone = [unchained(i) for i in inputs]
    results = [None] * len(inputs)

    def worker(first):
        with torch.inference_mode():
            for i in range(first, len(inputs), 2):
                results[i] = compiled(inputs[i])

    threads = [threading.Thread(target=worker, args=(t,)) for t in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
together = all(torch.equal(r, a) for r, a in zip(results, alone))
print(f"two threads, one compiled model: every result its own {together}")
expect(together, "two threads: results differ")

# 10. precision="bf16" in a sequence: bf16 activations from layer to layer.
# A value is kept in bfloat16 where every layer reading it takes bf16 (its
# input, or a residual, which any layer adds in float32); the chain's input
# is converted once, its logits stay float32. MobileNetV2 at 64x64: its
# ungrouped layers take bf16 (bf16_pays) and, in a sequence, its depthwise
# ones too, so every output but the last 1x1's (read by the float32
# pooling) and the logits is kept in bf16; one convlowerRunSteps call, bit
# for bit what the layers compute one by one with the same dtypes
# (run_layers), within bf16's tolerance of float64, in an arena under 3/4
# of float32's bytes.
f32_arena_bytes = arena * 4
model = randomize_batch_norms(torchvision.models.mobilenet_v2()).eval()
x = torch.rand(2, 3, 64, 64)
compiled = convlower.compile(model, (x,), precision="bf16")
sequence = [m for m in compiled.graph_module.modules()
            if type(m).__name__ == "FusedSequence"][0]
x = torch.rand(2, 3, 64, 64)
with Counted("convlowerRunSteps", "convlowerConvRun", "convlowerConvRunResidual") as calls:
    error = error_against_float64(model, compiled, x)
with torch.inference_mode():
    same = torch.equal(compiled(x), sequence.run_layers((x,))[-1])
convs = [sequence._conv_of(layer) or layer.layer_for(torch.empty(2, 1280, 2, 2))
         for layer in sequence.layers]
kept = sum(1 for c in convs if c.bf16_output)
readers_bf16 = sum(1 for c in convs if c.bf16_residual)
plan = next(iter(sequence._plans.values()))
arena_bytes = plan.arena.numel() * 4
print(compiled.summary().splitlines()[2])
print(f"mobilenet_v2 bf16 sequence: {kept} of {len(convs)} outputs in bfloat16, "
      f"{readers_bf16} bf16 residuals, error {error:.1e}, same as the layers {same}, "
      f"calls {calls}, arena under 3/4 of float32's {arena_bytes < 0.75 * f32_arena_bytes}")
expect(kept == len(convs) - 2 and readers_bf16 == 10,
       f"bf16 outputs {kept}, residuals {readers_bf16}")
expect(error < 3e-2 and same, f"bf16 sequence: error {error:.1e}, bitwise {same}")
expect(calls == {"convlowerRunSteps": 1, "convlowerConvRun": 0,
                 "convlowerConvRunResidual": 0}, f"bf16 sequence calls {calls}")
expect(0 < arena_bytes < 0.75 * f32_arena_bytes,
       f"bf16 arena {arena_bytes} bytes, float32's {f32_arena_bytes}")
convlower.cpu_units = real_units

# 11. Concatenation along the channels (torch.cat(..., 1)) of compiled
# layers that only it reads: a FusedCat, no step of its own in the chain's
# one C call; each branch writes its channels of the concatenation's buffer
# (the C API's output slices). An Inception-like block (a 1x1 + BatchNorm +
# ReLU branch, a 1x1 -> 3x3 branch, a max pooling branch, concatenated and
# read by a 1x1), channels-last at batch 1 and 3, and channels-first (a 3x3
# branch for the pooling, which is channels-last's) at batch 1 (the slice
# written in place) and 2 (copied per image): one
# convlowerRunSteps call, the slices in the step table, within 1e-4 of
# float64, bit for bit the layers run one by one (torch.cat). A cat whose
# input is read elsewhere too, one along another dim, and one of an input
# ConvLower does not compute stay torch's, each with its reason.
class Inception(torch.nn.Module):
    def __init__(self, shared=False, dim=1, raw=False, pool=True):
        super().__init__()
        self.shared, self.dim, self.raw = shared, dim, raw
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.b1 = torch.nn.Sequential(torch.nn.Conv2d(16, 8, 1), torch.nn.BatchNorm2d(8),
                                      torch.nn.ReLU())
        self.b2 = torch.nn.Sequential(torch.nn.Conv2d(16, 4, 1), torch.nn.ReLU(),
                                      torch.nn.Conv2d(4, 12, 3, padding=1), torch.nn.ReLU())
        self.b3 = torch.nn.MaxPool2d(3, 1, 1) if pool else torch.nn.Conv2d(16, 16, 3, padding=1)
        self.head = torch.nn.Conv2d(36 if dim == 1 else 16, 10, 1)

    def forward(self, x):
        x = self.stem(x)
        a, b, c = self.b1(x), self.b2(x), self.b3(x)
        if self.dim != 1:
            return self.head(torch.cat([c, c + 1, self.b3(c)], self.dim))
        y = torch.cat([a, b, x.tanh() if self.raw else c], 1)
        return self.head(y) + a.sum() if self.shared else self.head(y)


def planned_run(compiled, x):
    """Runs `compiled` (one FusedSequence) on x: the C calls it made, whether
    its output is bit for bit the sequence's layers run one by one, the
    plan's (outputChannels, outputChannelOffset) slices in step order, the
    plan and the sequence."""
    sequence = [m for m in compiled.graph_module.modules()
                if type(m).__name__ == "FusedSequence"][0]
    with Counted("convlowerRunSteps", "convlowerConvRun") as calls, torch.inference_mode():
        y = compiled(x)
    with torch.inference_mode():
        same = torch.equal(y, sequence.run_layers((x,))[-1])
    plan = next(iter(sequence._plans.values()))
    slices = [(plan.steps[i].outputChannels, plan.steps[i].outputChannelOffset)
              for i in range(plan.count) if plan.steps[i].outputChannels]
    return calls, same, slices, plan, sequence


for name, batch, layout in (("inception nhwc", 1, "nhwc"), ("inception nhwc N3", 3, "nhwc"),
                            ("inception nchw", 1, "nchw"), ("inception nchw N2", 2, "nchw")):
    model = randomize_batch_norms(Inception(pool=layout == "nhwc")).eval()
    x = torch.randn(batch, 3, 9, 9)
    compiled = check(name, model, x, 7, [], layout=layout)
    x = torch.randn(batch, 3, 9, 9)
    error = error_against_float64(model, compiled, x)
    calls, same, slices, plan, _ = planned_run(compiled, x)
    print(f"{name}: calls {calls}, {plan.count} steps, slices {slices}, "
          f"error {error:.1e}, same as the layers {same}")
    expect(calls == {"convlowerRunSteps": 1, "convlowerConvRun": 0}
           and slices == [(36, 0), (36, 8), (36, 20)] and plan.count == 6,
           f"{name}: calls {calls}, slices {slices}")
    expect(error < 1e-4 and same, f"{name}: error {error:.1e}, same {same}")

for name, model, reason in (
        ("cat of a shared input", Inception(shared=True), "cat (convlower_1 is read elsewhere too)"),
        ("cat along dim 2", Inception(dim=2), "cat (along dim 2, not the channels)"),
        ("cat of a torch op", Inception(raw=True), "cat (tanh is not a compiled image layer)")):
    compiled = check(name, randomize_batch_norms(model).eval(), torch.randn(2, 3, 9, 9), None)
    theirs = [op.what for op in compiled.ops if op.where == "torch"]
    print(f"{name}: torch runs {[t for t in theirs if t.startswith('cat')]}")
    expect(reason in theirs, f"{name}: torch ran {theirs}")

# A cat inside a cat (Inception v3's last blocks): the inner one's layers
# write their slices of the outer one's buffer, at the sum of the offsets.
class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.b1 = torch.nn.Conv2d(16, 8, 1)
        self.b2 = torch.nn.Conv2d(16, 6, 1)
        self.b2a = torch.nn.Conv2d(6, 10, (1, 3), padding=(0, 1))
        self.b2b = torch.nn.Conv2d(6, 4, (3, 1), padding=(1, 0))
        self.b3 = torch.nn.MaxPool2d(3, 1, 1)
        self.head = torch.nn.Conv2d(38, 10, 1)

    def forward(self, x):
        x = self.stem(x)
        t = F.relu(self.b2(x))
        y = torch.cat([self.b1(x), torch.cat([self.b2a(t), self.b2b(t)], 1), self.b3(x)], 1)
        return self.head(y)


compiled = check("nested cats", Nested().eval(), torch.randn(2, 3, 9, 9), 9, [])
calls, same, slices, plan, _ = planned_run(compiled, torch.randn(2, 3, 9, 9))
print(f"nested cats: calls {calls}, {plan.count} steps, slices {slices}, "
      f"same as the layers {same}")
expect(calls == {"convlowerRunSteps": 1, "convlowerConvRun": 0} and plan.count == 7
       and slices == [(38, 0), (38, 8), (38, 18), (38, 22)] and same,
       f"nested: {calls}, {slices}, same {same}")

# DenseNet's pre-activation, relu(norm(torch.cat(features, 1))), where
# every feature is read by every later layer of its block: a FusedCatNorm,
# per feature a depthwise 1x1 with its channels of the BatchNorm folded in,
# writing its slice of the output (a cat of one feature too). torchvision's
# own DenseNet class, small (growth 8, blocks of 2 and 3 layers): nothing
# on torch, one C call, within 1e-4 of float64, bit for bit the layers run
# one by one; a cat -> BatchNorm without the ReLU too.
model = randomize_batch_norms(torchvision.models.DenseNet(
    growth_rate=8, block_config=(2, 3), num_init_features=16, bn_size=2,
    num_classes=10)).eval()
compiled = check("small densenet", model, torch.rand(2, 3, 32, 32), None, [])
x = torch.rand(2, 3, 32, 32)
calls, same, slices, plan, sequence = planned_run(compiled, x)
norms = [m for m in sequence.layers if type(m).__name__ == "FusedCatNorm"]
parts = len(slices)
print(f"small densenet: {len(norms)} cat + BatchNorm (+ ReLU) layers, {parts} slice steps, "
      f"calls {calls}, same as the layers {same}")
# 5 dense layers read 1, 2, 1, 2, 3 features; the transition 3, the end 4.
expect(len(norms) == 7 and parts == 16 and same
       and calls == {"convlowerRunSteps": 1, "convlowerConvRun": 0},
       f"small densenet: {len(norms)} norms, {parts} parts, {calls}, same {same}")
# profile(): one time per layer and call, a FusedCatNorm's the sum of its
# parts' steps.
times = {}
with torch.inference_mode():
    sequence.profile_run((x,), times)
one_each = sorted(times) == sorted(sequence.names) and all(len(t) == 1 for t in times.values())
print(f"small densenet profile: one time per layer {one_each}")
expect(one_each, f"small densenet profile: {times}")


class CatNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 5, 1)
        self.norm = torch.nn.BatchNorm2d(13)
        self.head = torch.nn.Conv2d(13, 4, 1)

    def forward(self, x):
        a = self.a(x)
        return self.head(self.norm(torch.cat([a, self.b(a)], 1))) + a.mean()


compiled = check("cat + BatchNorm, no ReLU", CatNorm(), torch.rand(2, 3, 9, 9), 4, [".mean()"])
norm = [m for m in compiled.graph_module.modules() if type(m).__name__ == "FusedCatNorm"]
expect(len(norm) == 1 and not norm[0].relu, f"cat + BatchNorm: {norm}")

# SqueezeNet 1.1 (fire modules: two expansions concatenated; ceil_mode max
# poolings) and GoogLeNet (four-branch Inception blocks; ceil_mode
# poolings) at small resolution: nothing left on torch, one C call.
for name, model in (("squeezenet1_1", torchvision.models.squeezenet1_1()),
                    ("googlenet", torchvision.models.googlenet(aux_logits=False,
                                                               init_weights=True))):
    model = randomize_batch_norms(model).eval()
    x = torch.rand(1, 3, 64, 64)
    compiled = convlower.compile(model, (x,))
    x = torch.rand(1, 3, 64, 64)
    with Counted("convlowerRunSteps", "convlowerConvRun") as calls:
        error = error_against_float64(model, compiled, x)
    cats = sum(1 for op in compiled.ops if op.what == "cat (channels)")
    print(f"{name}: {compiled.summary().splitlines()[0]}; {cats} cats compiled, "
          f"calls {calls}, error {error:.1e}")
    expect(error < 1e-4 and calls == {"convlowerRunSteps": 1, "convlowerConvRun": 0}
           and not [op for op in compiled.ops if op.where == "torch"],
           f"{name}: error {error:.1e}, calls {calls}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all compile checks passed")
