"""convlower.conv1d/2d/3d on numpy arrays against the float64 reference.

Every form the API takes, on fresh random data (a new seed per run, printed):
strides, dilations, padding as ints, per-dimension ints, (before, after) pairs,
"same" (odd and even kernels) and "valid"; groups and depthwise; bias and the
fused epilogue (ReLU, a residual, a clamp); NCHW and NHWC; f32, f16, int8 with zero points; 1-D, 3-D and
unbatched inputs; then the cache, several Python threads at once, the report,
constant weights packed per Conv, and the bad-input errors (each a BadInputError naming the fault). Tolerances:
max |diff| / max |reference| at f32 1e-5, f16 1e-2, int8 exact.
"""

import concurrent.futures
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import reference  # noqa: E402

import convlower  # noqa: E402

seed = int.from_bytes(os.urandom(4), "little")
print(f"seed {seed}")
rng = np.random.default_rng(seed)
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def data(shape, dtype):
    if dtype == np.int8:
        return rng.integers(-100, 100, size=shape).astype(np.int8)
    return rng.uniform(-1, 1, size=shape).astype(dtype)


def check(name, rank, xshape, wshape, *, dtype=np.float32, bias=False, stride=1,
          padding=0, dilation=1, groups=1, relu=False, layout="nchw",
          zero_points=None, want_padding=None, batched=True, residual=None,
          clamp=None):
    """residual: the output's shape (then random data of the output's dtype)."""
    x, w = data(xshape, dtype), data(wshape, dtype)
    f = wshape[0]
    b = data((f,), dtype) if bias else None
    r = None
    if residual is not None:
        r = (rng.integers(-5000, 5000, size=residual).astype(np.int32) if dtype == np.int8
             else rng.uniform(-2, 2, size=residual).astype(np.float32))
    fn = {1: convlower.conv1d, 2: convlower.conv2d, 3: convlower.conv3d}[rank]
    y = fn(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups,
           relu=relu, layout=layout, target="cpu", zero_points=zero_points,
           residual=r, clamp=clamp)
    per = lambda v: (v,) * rank if isinstance(v, int) else tuple(v)  # noqa: E731
    before, after = want_padding or (per(padding), per(padding))
    xb = x if batched else x[None]
    want = reference.conv(xb, w, b, per(stride), before, after, per(dilation), groups,
                          layout, zero_points or (0, 0), relu,
                          None if r is None else (r if batched else r[None]), clamp)
    if not batched:
        want = want[0]
    key = {np.float32: "f32", np.float16: "f16", np.int8: "i8"}[dtype]
    expect(y.shape == want.shape, f"{name}: shape {y.shape}, want {want.shape}")
    expect(y.dtype == (np.int32 if key == "i8" else np.float32),
           f"{name}: output dtype {y.dtype}")
    if y.shape == want.shape:
        err = reference.relative_error(y, want)
        expect(err <= reference.TOLERANCE[key],
               f"{name}: relative error {err:.3g} > {reference.TOLERANCE[key]}")
        print(f"{name:36} {str(y.shape):22} error {err:.2e}")


check("f32 3x3 pad 1 bias", 2, (2, 8, 9, 11), (16, 8, 3, 3), bias=True, padding=1)
check("f32 stride 2 dilation 2", 2, (1, 4, 13, 12), (8, 4, 3, 3), stride=2, dilation=2,
      padding=(2, 1))
check("f32 padding pairs", 2, (1, 3, 7, 8), (5, 3, 3, 2), padding=((0, 2), (1, 0)),
      want_padding=((0, 1), (2, 0)))
check("f32 same, odd kernel", 2, (1, 4, 9, 9), (4, 4, 5, 3), padding="same",
      want_padding=((2, 1), (2, 1)))
check("f32 same, even kernel", 2, (1, 4, 8, 8), (4, 4, 4, 2), padding="same",
      want_padding=((1, 0), (2, 1)))
check("f32 valid", 2, (1, 4, 8, 8), (4, 4, 3, 3), padding="valid",
      want_padding=((0, 0), (0, 0)))
check("f32 groups 4 relu", 2, (2, 16, 8, 8), (32, 4, 3, 3), groups=4, padding=1, relu=True)
check("f32 depthwise", 2, (1, 24, 10, 10), (24, 1, 3, 3), groups=24, padding=1, bias=True)
check("f32 nhwc bias relu", 2, (2, 7, 9, 12), (16, 3, 3, 12), layout="nhwc", bias=True,
      relu=True, padding=1)
check("f16 nhwc strided", 2, (1, 10, 10, 16), (32, 3, 3, 16), dtype=np.float16,
      layout="nhwc", stride=2, padding=1)
check("f16 nchw pointwise bias", 2, (2, 16, 7, 7), (8, 16, 1, 1), dtype=np.float16,
      bias=True)
check("i8 nhwc zero points", 2, (1, 6, 6, 16), (8, 3, 3, 16), dtype=np.int8,
      layout="nhwc", padding=1, zero_points=(4, -2))
check("f32 conv1d", 1, (2, 6, 33), (10, 6, 5), stride=2, padding=2, bias=True)
check("f32 conv1d groups", 1, (1, 8, 20), (8, 2, 3), groups=4, dilation=3)
check("f32 conv3d", 3, (1, 4, 5, 6, 7), (8, 4, 3, 3, 3), padding=1)
check("f32 unbatched", 2, (3, 8, 8), (4, 3, 3, 3), padding=1, batched=False)
check("f32 nhwc residual relu6", 2, (2, 8, 8, 16), (32, 1, 1, 16), layout="nhwc",
      bias=True, residual=(2, 8, 8, 32), clamp=(0, 0.5))
check("f32 nchw 3x3 residual relu", 2, (1, 16, 9, 9), (16, 16, 3, 3), padding=1,
      residual=(1, 16, 9, 9), relu=True)
check("f32 conv1d hardtanh", 1, (2, 6, 20), (8, 6, 3), clamp=(-0.3, 0.2))
check("i8 nhwc residual", 2, (1, 6, 6, 16), (8, 3, 3, 16), dtype=np.int8,
      layout="nhwc", padding=1, zero_points=(4, -2), residual=(1, 6, 6, 8))
check("f32 unbatched residual", 2, (3, 8, 8), (4, 3, 3, 3), padding=1, batched=False,
      residual=(4, 8, 8))

# The cache: the same problem twice compiles once; another one compiles.
convlower.cache_clear()
x, w = data((1, 4, 8, 8), np.float32), data((4, 4, 3, 3), np.float32)
convlower.conv2d(x, w, padding=1, target="cpu")
size = convlower.cache_size()
convlower.conv2d(x, w, padding=1, target="cpu")
expect(convlower.cache_size() == size == 1,
       f"same problem twice: {convlower.cache_size()} compilations")
convlower.conv2d(x, w, padding=0, target="cpu")
expect(convlower.cache_size() == 2, "another problem did not compile")
c = convlower.Conv(batch=1, in_channels=4, out_channels=4, input_size=(8, 8),
                   kernel_size=(3, 3), pad_before=(1, 1), pad_after=(1, 1), target="cpu")
expect(c.cache_hit, "a Conv of a compiled problem missed the C API's cache")

# A batch of no images: the empty result of the output's shape (torch's answer),
# nothing compiled; int8 gives int32 as it would.
before = convlower.cache_size()
e = convlower.conv2d(np.empty((0, 4, 8, 8), np.float32), w, stride=2, padding=1)
expect(e.shape == (0, 4, 4, 4) and e.dtype == np.float32, f"empty nchw: {e.shape} {e.dtype}")
e = convlower.conv2d(np.empty((0, 8, 8, 4), np.int8), data((6, 3, 3, 4), np.int8),
                     layout="nhwc")
expect(e.shape == (0, 6, 6, 6) and e.dtype == np.int32, f"empty nhwc i8: {e.shape} {e.dtype}")
expect(convlower.cache_size() == before, "an empty batch compiled something")

# The cache's bound (64 by default): past it the least recently used compiled
# problems go, from the C API's cache and from the functions' own (which keeps
# the Conv objects; the C test checks the order of use).
expect(convlower.cache_capacity() == 64, f"capacity {convlower.cache_capacity()}")
convlower.cache_clear()
convlower.set_cache_capacity(2)
for pad in (0, 1, 2):
    convlower.conv2d(x, w, padding=pad, target="cpu")
expect(convlower.cache_size() == 2 and len(convlower._convs) == 2,
       f"capacity 2 keeps {convlower.cache_size()} compiled, {len(convlower._convs)} Convs")
kept = convlower.Conv(batch=1, in_channels=4, out_channels=4, input_size=(8, 8),
                      kernel_size=(3, 3), pad_before=(2, 2), pad_after=(2, 2),
                      target="cpu")
expect(kept.cache_hit, "padding 2, the most recent, was dropped")
dropped = convlower.Conv(batch=1, in_channels=4, out_channels=4, input_size=(8, 8),
                         kernel_size=(3, 3), target="cpu")
expect(not dropped.cache_hit, "padding 0, the least recent, was still cached")
try:
    convlower.set_cache_capacity(0)
    expect(False, "capacity 0 was taken")
except convlower.BadInputError:
    pass
convlower.set_cache_capacity(64)

# Python threads at once (ctypes releases the GIL during the call).
x8 = [data((2, 8, 12, 12), np.float32) for _ in range(8)]
w8 = data((16, 8, 3, 3), np.float32)
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    outs = list(pool.map(lambda x: convlower.conv2d(x, w8, padding=1, target="cpu",
                                                    threads=1), x8))
for i, (xi, yi) in enumerate(zip(x8, outs)):
    err = reference.relative_error(yi, reference.conv(xi, w8, None, (1, 1), (1, 1),
                                                      (1, 1)))
    expect(err <= 1e-5, f"thread {i}: relative error {err:.3g}")

# The report.
y = c(x, w)
err = reference.relative_error(y, reference.conv(x, w, None, (1, 1), (1, 1), (1, 1)))
expect(err <= 1e-5, f"Conv.__call__: relative error {err:.3g}")
r = c.report()
expect(r["target"] == "cpu" and r["im2col"] == "panels" and r["repeat"] >= 1 and
       r["lowered_ms"] > 0 and r["compile_ms"] > 0, f"report: {r}")
expect(c.target == "cpu", f"Conv.target {c.target}")
d = convlower.devices()
expect("devices" in d and "driver_version" in d, f"devices(): {d}")

# Constant weights: two Convs of one problem share the code, each packs its
# own filter (at pack() or its first call) and reads that packed copy, not the
# filter it is later given, until packed again. NHWC 3x3: W^T is packed.
fields = dict(batch=2, in_channels=16, out_channels=24, input_size=(9, 7),
              kernel_size=(3, 3), pad_before=(1, 1), pad_after=(1, 1),
              layout="nhwc", target="cpu", bias=True)
xc = data((2, 9, 7, 16), np.float32)
w1, w2 = data((24, 3, 3, 16), np.float32), data((24, 3, 3, 16), np.float32)
bc = data((24,), np.float32)
ref = {i: reference.conv(xc, w, bc, (1, 1), (1, 1), (1, 1), layout="nhwc")
       for i, w in ((1, w1), (2, w2))}
a = convlower.Conv(constant_weights=True, **fields)
b = convlower.Conv(constant_weights=True, **fields)
expect(b.cache_hit, "a second constant-weights Conv of one problem compiled again")
expect(a.report()["packed_bytes"] is None, "packed before any call")
b.pack(w2)
for name, conv, w, want in (("first call packs", a, w1, 1), ("packed ahead", b, w2, 2),
                            ("packed copy read", a, w2, 1), ("packed again", a, None, 2)):
    if w is None:
        conv.pack(w2)
        w = w2
    err = reference.relative_error(conv(xc, w, bc), ref[want])
    expect(err <= 1e-5, f"constant weights, {name}: relative error {err:.3g}")
    print(f"constant weights: {name:20} error {err:.2e}")
r = a.report()
expect(r["packed_bytes"] == 16 * 9 * 24 * 4 and r["pack_ms"] >= 0,
       f"constant weights report: packed {r['packed_bytes']} bytes, {r['pack_ms']} ms")
print(f"constant weights: packed {r['packed_bytes']} bytes")


def refused(name, call, needle):
    try:
        call()
    except convlower.BadInputError as e:
        expect(needle in str(e), f"{name}: message '{e}' lacks '{needle}'")
        print(f"{name:36} -> {e}")
        return
    except Exception as e:  # noqa: BLE001
        expect(False, f"{name}: {type(e).__name__} instead of BadInputError: {e}")
        return
    expect(False, f"{name}: accepted")


x, w = data((1, 4, 8, 8), np.float32), data((4, 4, 3, 3), np.float32)
refused("float64", lambda: convlower.conv2d(x.astype(np.float64), w), "float64")
refused("mixed dtypes", lambda: convlower.conv2d(x, w.astype(np.float16)), "filter")
refused("channels", lambda: convlower.conv2d(x, w[:, :3]), "channels")
refused("groups", lambda: convlower.conv2d(x, w[:, :1], groups=3), "channels")
refused("bias shape", lambda: convlower.conv2d(x, w, np.zeros(3, np.float32)), "bias")
refused("padding word", lambda: convlower.conv2d(x, w, padding="full"), "padding")
refused("same with stride", lambda: convlower.conv2d(x, w, padding="same", stride=2),
        "stride 1")
refused("kernel too large", lambda: convlower.conv2d(x, data((4, 4, 9, 9), np.float32)),
        "does not fit")
refused("negative padding", lambda: convlower.conv2d(x, w, padding=-1), "padding")
refused("rank", lambda: convlower.conv2d(x[0, 0], w), "rank")
refused("layout", lambda: convlower.conv2d(x, w, layout="nwhc"), "layout")
refused("target", lambda: convlower.conv2d(x, w, target="tpu"), "target")
refused("tf32 on f16", lambda: convlower.conv2d(x.astype(np.float16),
                                                w.astype(np.float16), tf32=True), "tf32")
refused("zero points on f32", lambda: convlower.conv2d(x, w, zero_points=(1, 1)), "int8")
refused("Conv without its bias", lambda: convlower.Conv(
    batch=1, in_channels=4, out_channels=4, input_size=(8, 8), kernel_size=(3, 3),
    bias=True, target="cpu")(x, w), "bias")
refused("Conv with a wrong shape", lambda: c(x[:, :, :7], w), "shape")
refused("residual of a wrong shape", lambda: convlower.conv2d(
    x, w, residual=np.zeros((1, 4, 6, 5), np.float32)), "residual")
refused("residual of a wrong dtype", lambda: convlower.conv2d(
    x, w, residual=np.zeros((1, 4, 6, 6), np.float64)), "residual")
refused("clamp min > max", lambda: convlower.conv2d(x, w, clamp=(1, 0)), "min <= max")
refused("clamp not a pair", lambda: convlower.conv2d(x, w, clamp=6), "clamp")
refused("pack without constant weights", lambda: c.pack(w), "constant weights")
refused("pack a wrong shape", lambda: a.pack(w1[:, :2]), "shape")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all functional checks passed")
