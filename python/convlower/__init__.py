"""ConvLower from Python: convolutions compiled by ConvLower's MLIR pipelines.

    import convlower
    y = convlower.conv2d(x, w, bias, stride=1, padding=1)   # numpy or torch
    convlower.patch(model)       # a torch model's nn.Conv1d/2d/3d through ConvLower
    fast = convlower.compile(model, (x,))  # its fx graph: conv + BatchNorm + ReLU fused

conv1d/conv2d/conv3d take torch's arguments and semantics (zero padding, strides,
dilation, groups; padding "same"/"valid", per-dimension ints or (before, after)
pairs) on numpy arrays or torch tensors, batched or not. Each distinct problem is
compiled once (the C API's cache) for its target: "auto" (a CUDA device where one
is usable and the kernel takes the problem, else the CPU JIT), "cpu", "cpu-twin"
(the GPU kernel's loop nest on the CPU) or "cuda". Data types: float32 (tf32=True:
tf32 tensor-core math on a GPU), float16, bfloat16 (torch) and int8 with
zero_points=(zx, zw); the output is float32 (int32 for int8) in the input's layout.

Layouts: "nchw" takes torch's [N, C, *spatial] images with [F, C/G, *kernel]
filters; "nhwc" takes [N, *spatial, C] with [F, *kernel, C/G].
"""

import collections
import functools
import json
import threading
import time

import numpy as np

from . import _capi
from .memory import memory_policy, retain_freed_memory

__all__ = [
    "Conv", "ConvLowerError", "BadInputError", "conv1d", "conv2d", "conv3d",
    "patch", "compile", "devices", "cache_size", "cache_clear", "cache_capacity",
    "set_cache_capacity", "library_path", "disk_cache_dir", "disk_cache_usage",
    "disk_cache_clear",
    "openmp_runtime", "cpu_units", "retain_freed_memory", "memory_policy",
]

_lib, library_path = _capi.load_library()


class ConvLowerError(RuntimeError):
    """Compiling or running failed (a driver error, a compiler defect)."""


class BadInputError(ConvLowerError, ValueError):
    """The convolution or its operands are wrong: nothing ran."""


def _raise_for(status, what):
    if status == _capi.STATUS_OK:
        return
    message = _lib.convlowerGetLastErrorMessage().decode()
    cls = BadInputError if status == _capi.STATUS_BAD_INPUT else ConvLowerError
    raise cls(f"{what}: {message}")


class Conv:
    """One compiled convolution, run on arrays as often as wanted.

    Conv(**fields) takes the C API's description (ConvLowerConvDesc) as keyword
    arguments: spatial_rank, batch, in_channels, out_channels, input_size,
    kernel_size, stride, dilation, pad_before, pad_after (sequences of
    spatial_rank ints, outermost first), groups, layout, dtype ("f32", "tf32",
    "f16", "bf16", "i8"), zero_points, bias, residual, relu, clamp ((min, max)
    or None), target, threads, chip, constant_weights, bf16_output,
    bf16_residual, pooling ("none", "max").

    The epilogue after the bias, in this order: residual=True adds an operand
    of the output's shape (a ResNet block's identity), relu=True takes
    max(y, 0), clamp=(lo, hi) takes min(max(y, lo), hi) (ReLU6: (0, 6)); all
    fused with the bias: one pass over the output on the CPU, the store of
    the tensor-core kernel on cuda. conv1d/2d/3d build one from their
    arguments; use Conv directly to keep a layer's compilation at hand.

    constant_weights=True: the filter is the same on every call (inference).
    The CPU routes compute what depends on it alone (the transposed filter,
    Winograd's U) once, at pack(w) or else at the first call, and later calls
    read that copy, not the w they are given: pack(w) again after changing it.
    Each Conv has its own packed weights (the compiled code is shared).

    pooling="max": max pooling over the same windows instead of the
    convolution (torch's max_pool2d: the padding -inf, at most half the
    window): in_channels = out_channels = groups, float data, no bias, the
    CPU route; the filter (of the depthwise shape) is not read.

    bf16_output=True (float convolutions on the CPU): the output, after the
    epilogue computed in float32, is rounded to bfloat16, returned (and a
    residual taken) as int16 words: a network's activations kept in bf16
    from one layer to the next bf16 layer, which reads them as they are.
    bf16_residual=True: the residual is bfloat16 (int16 words, added in
    float32) whatever the output's dtype.
    """

    def __init__(self, *, spatial_rank=2, batch=1, in_channels=1, out_channels=1,
                 input_size=(1, 1), kernel_size=(1, 1), stride=None, dilation=None,
                 pad_before=None, pad_after=None, groups=1, layout="nchw",
                 dtype="f32", zero_points=(0, 0), bias=False, residual=False,
                 relu=False, clamp=None, target="auto", threads=0, chip=None,
                 constant_weights=False, bf16_output=False, bf16_residual=False,
                 pooling="none"):
        if layout not in _capi.LAYOUTS:
            raise BadInputError(f"layout {layout!r}: expected 'nchw' or 'nhwc'")
        if dtype not in _capi.DTYPES:
            raise BadInputError(f"dtype {dtype!r}: expected one of {sorted(_capi.DTYPES)}")
        if target not in _capi.TARGETS:
            raise BadInputError(f"target {target!r}: expected one of {list(_capi.TARGETS)}")
        if pooling not in _capi.POOLINGS:
            raise BadInputError(f"pooling {pooling!r}: expected one of {list(_capi.POOLINGS)}")
        r = spatial_rank
        d = _capi.ConvDesc()
        _lib.convlowerConvDescInit(d)
        d.spatialRank = r
        d.batch, d.inChannels, d.outChannels = batch, in_channels, out_channels
        for field, values in (("inputSize", input_size), ("kernelSize", kernel_size),
                              ("stride", stride or (1,) * r),
                              ("dilation", dilation or (1,) * r),
                              ("padBefore", pad_before or (0,) * r),
                              ("padAfter", pad_after or (0,) * r)):
            values = tuple(int(v) for v in values)
            if len(values) != r or not 1 <= r <= 3:
                raise BadInputError(f"{field}: {values} for a {r}-D convolution")
            getattr(d, field)[:r] = values
        d.groups, d.layout = groups, _capi.LAYOUTS[layout]
        d.dtype, d.target, d.threads = _capi.DTYPES[dtype], _capi.TARGETS[target], threads
        d.inputZeroPoint, d.filterZeroPoint = zero_points
        d.bias, d.residual, d.relu = bias, bool(residual), relu
        if clamp is not None:
            d.clampMin, d.clampMax = _clamp_pair(clamp)
            d.clamp = True
        d.chip = chip.encode() if chip else None
        d.constantWeights = bool(constant_weights)
        d.bf16Output = bool(bf16_output)
        d.bf16Residual = bool(bf16_residual)
        d.pooling = _capi.POOLINGS[pooling]
        self._desc = d
        self.pooling = pooling
        self.constant_weights = bool(constant_weights)
        self.layout, self.dtype, self.has_bias = layout, dtype, bias
        self.has_residual = bool(residual)
        self.bf16_output = bool(bf16_output)
        self.bf16_residual = bool(bf16_residual)
        self._handle = _capi.ConvHandle()
        hit = _capi.ctypes.c_bool(False)
        _raise_for(_lib.convlowerConvCreate(d, self._handle, hit), "compiling")
        self.cache_hit = hit.value
        self.target = _capi.TARGET_NAMES[_lib.convlowerConvGetTarget(self._handle)]
        out = (_capi.ctypes.c_int64 * 3)()
        _raise_for(_lib.convlowerConvDescOutputSize(d, out), "output size")
        self.output_spatial = tuple(out[:r])
        spatial = tuple(input_size)
        n, c, f = batch, in_channels, out_channels
        if layout == "nchw":
            self.input_shape = (n, c) + spatial
            self.filter_shape = (f, c // groups) + tuple(kernel_size)
            self.output_shape = (n, f) + self.output_spatial
        else:
            self.input_shape = (n,) + spatial + (c,)
            self.filter_shape = (f,) + tuple(kernel_size) + (c // groups,)
            self.output_shape = (n,) + self.output_spatial + (f,)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is not None and handle.ptr and _lib is not None:
            _lib.convlowerConvDestroy(handle)

    def _operand(self, name, a, shape):
        """`a` as the C API reads it: C-contiguous, the compiled dtype and shape."""
        want = _STORAGE[self.dtype]
        a = np.ascontiguousarray(a)
        if a.dtype not in want:
            raise BadInputError(f"{name}: dtype {a.dtype}, compiled for {self.dtype} "
                                f"({' or '.join(str(np.dtype(t)) for t in want)})")
        if tuple(a.shape) != tuple(shape):
            raise BadInputError(f"{name}: shape {tuple(a.shape)}, compiled for {tuple(shape)}")
        return a

    def __call__(self, x, w, bias=None, residual=None):
        """Runs on numpy arrays (the dtype's storage: float32, float16, int8, or
        int16/uint16 words for bf16) of exactly the compiled shapes; returns the
        float32 (int32 for i8; bf16_output: bfloat16 as int16 words) output.
        `residual` (compiled with residual=True) is of the output's shape and
        dtype."""
        out_dtype = self.output_dtype
        operands = [("input", x, self.input_shape), ("filter", w, self.filter_shape)]
        if self.has_bias:
            if bias is None:
                raise BadInputError("this convolution was compiled with a bias: pass it")
            operands.append(("bias", bias, (self.output_shape[1 if self.layout == "nchw" else -1],)))
        elif bias is not None:
            raise BadInputError("this convolution was compiled without a bias")
        buffers = [self._operand(*o) for o in operands]
        ptrs = [b.ctypes.data for b in buffers] + [None] * (3 - len(buffers))
        y = np.empty(self.output_shape, out_dtype)
        if not self.has_residual:
            if residual is not None:
                raise BadInputError("this convolution was compiled without a residual")
            _raise_for(_lib.convlowerConvRun(self._handle, *ptrs, y.ctypes.data),
                       "running")
            return y
        if residual is None:
            raise BadInputError("this convolution was compiled with a residual: pass it")
        r = np.ascontiguousarray(residual)
        want = self.residual_dtype
        if want == np.int16 and r.dtype == np.uint16:
            r = r.view(np.int16)
        if r.dtype != want or tuple(r.shape) != tuple(self.output_shape):
            raise BadInputError(
                f"residual: {r.dtype} {tuple(r.shape)}, expected "
                f"{np.dtype(want)} {tuple(self.output_shape)}")
        _raise_for(_lib.convlowerConvRunResidual(self._handle, *ptrs, r.ctypes.data,
                                                 y.ctypes.data), "running")
        return y

    @property
    def output_dtype(self):
        """The output's numpy dtype: float32, int32 (i8), int16 (bf16 words)."""
        if self.bf16_output:
            return np.dtype(np.int16)
        return np.dtype(np.int32 if self.dtype == "i8" else np.float32)

    @property
    def residual_dtype(self):
        """The residual's numpy dtype: the output's, or int16 (bf16 words)
        with bf16_residual."""
        return np.dtype(np.int16) if self.bf16_residual else self.output_dtype

    def pack(self, w):
        """constant_weights: packs the filter `w` now for this Conv's calls (else
        the first call packs the w it is given); again after changing w."""
        w = self._operand("filter", w, self.filter_shape)
        _raise_for(_lib.convlowerConvPackWeights(self._handle, w.ctypes.data), "packing")

    def report(self):
        """The report as a dict (conv-run's JSON keys): target, pipeline, im2col,
        kernel, kernel_family, chip (cuda, cpu-twin), threads, compile_ms, lowered_ms
        (last run), repeat (runs), gflops, input_bytes, im2col_bytes; with
        constant_weights, once packed, pack_ms and packed_bytes."""
        status, text = _capi.collect_string(_lib.convlowerConvPrintReport, self._handle)
        _raise_for(status, "report")
        return json.loads(text)


_STORAGE = {"f32": (np.float32,), "tf32": (np.float32,), "f16": (np.float16,),
            "bf16": (np.int16, np.uint16), "i8": (np.int8,)}

# The functions' Conv objects, least recently used first; bounded like the C API's
# cache (each holds its compiled code alive).
_convs = collections.OrderedDict()
_convs_lock = threading.Lock()


def _trim_convs():
    capacity = _lib.convlowerCacheCapacity()
    while len(_convs) > capacity:
        _convs.popitem(last=False)


def _compiled(key_fields):
    key = tuple(sorted(key_fields.items()))
    with _convs_lock:
        conv = _convs.get(key)
        if conv is not None:
            _convs.move_to_end(key)
    if conv is None:
        conv = Conv(**key_fields)
        with _convs_lock:
            conv = _convs.setdefault(key, conv)
            _convs.move_to_end(key)
            _trim_convs()
    return conv


def cache_size():
    """Compiled convolutions held by the C API's cache."""
    return _lib.convlowerCacheSize()


def cache_clear():
    """Drops every compiled convolution (live Conv objects keep theirs)."""
    with _convs_lock:
        _convs.clear()
    _lib.convlowerCacheClear()


def cache_capacity():
    """The most compiled convolutions kept (default 64, or $CONVLOWER_CACHE_ENTRIES):
    past it the least recently used are dropped."""
    return _lib.convlowerCacheCapacity()


def set_cache_capacity(entries):
    """Bounds the cache to `entries` (at least 1) compiled convolutions, dropping the
    least recently used ones past it now; live Conv objects keep theirs."""
    entries = int(entries)
    if entries < 1:
        raise BadInputError(f"cache capacity must be at least 1, got {entries}")
    with _convs_lock:
        _lib.convlowerCacheSetCapacity(entries)
        _trim_convs()


def disk_cache_dir():
    """The directory where compiled CPU code is kept for later processes
    ($CONVLOWER_CACHE_DIR, default $XDG_CACHE_HOME/convlower or
    ~/.cache/convlower), '' when CONVLOWER_CACHE_DIR=off. A process that
    compiles what an earlier one did (same convolution and pipeline, same CPU
    and ConvLower build) links the earlier one's object file instead."""
    return _lib.convlowerDiskCacheDirectory().decode()


def disk_cache_usage():
    """(bytes, entries) of the disk cache; bounded by $CONVLOWER_CACHE_BYTES
    (default 256 MiB), least recently used entries removed first."""
    entries = _capi.ctypes.c_size_t(0)
    size = _lib.convlowerDiskCacheUsage(_capi.ctypes.byref(entries))
    return int(size), entries.value


def disk_cache_clear():
    """Removes every entry of the disk cache; returns how many."""
    return _lib.convlowerDiskCacheClear()


def openmp_runtime():
    """The OpenMP library ConvLower's threaded CPU code runs on: the one the
    process already has (torch's libgomp, or a libomp started with
    LD_PRELOAD), so that torch and ConvLower share one thread pool; in a
    process with none, LLVM's libomp, loaded by this call or by the first
    threaded convolution. '' when there is none to be had."""
    return _lib.convlowerGetOpenMPRuntimePath().decode()


@functools.lru_cache(maxsize=None)
def cpu_units():
    """The CPU's units the CPU route's bfloat16 and int8 GEMMs run on in this
    process, a frozenset of "avx512-bf16" (VDPBF16PS), "avx512-vnni"
    (VPDPBUSD) and "amx" (the tiles: the CPU has AMX and Linux granted this
    process the tile data, requested by this call). Without them bfloat16 is
    widened to float32 and int8 to int32 (conv-run --doctor says the same)."""
    bits = _lib.convlowerGetCpuUnits()
    return frozenset(name for name, bit in _capi.CPU_UNITS.items() if bits & bit)


def devices():
    """The CUDA devices target "auto" would use, with the driver version and,
    when there are none, why (conv-run --doctor's diagnosis)."""
    _, text = _capi.collect_string(_lib.convlowerPrintDevices)
    return json.loads(text)


# ---------------------------------------------------------------------------
# torch-style functions on numpy arrays and torch tensors


def _is_torch(a):
    return type(a).__module__.split(".")[0] == "torch"


def _to_numpy(a):
    """A C-contiguous numpy view of the operand's storage, and its dtype name."""
    if _is_torch(a):
        import torch
        t = a.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy(), "bf16"
        names = {torch.float32: "f32", torch.float16: "f16", torch.int8: "i8"}
        if t.dtype not in names:
            raise BadInputError(f"dtype {t.dtype}: ConvLower takes float32, float16, "
                                "bfloat16 and int8 (cast first)")
        return t.numpy(), names[t.dtype]
    a = np.ascontiguousarray(a)
    names = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
             np.dtype(np.int8): "i8"}
    if a.dtype not in names:
        raise BadInputError(f"dtype {a.dtype}: ConvLower takes float32, float16 and "
                            "int8 arrays (bfloat16 as torch tensors; cast first)")
    return a, names[a.dtype]


def _per_dim(value, rank, name):
    if isinstance(value, int):
        return (value,) * rank
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * rank
    if len(value) != rank:
        raise BadInputError(f"{name}: {value} for a {rank}-D convolution")
    return value


def _padding(padding, rank, kernel, stride, dilation):
    """(before, after) per dimension from torch's forms."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * rank, (0,) * rank
        if padding != "same":
            raise BadInputError(f"padding {padding!r}: expected 'same', 'valid' or ints")
        if any(s != 1 for s in stride):
            raise BadInputError("padding 'same' needs stride 1 (as in torch)")
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        # torch puts the odd element after.
        return tuple(t // 2 for t in total), tuple(t - t // 2 for t in total)
    if isinstance(padding, int):
        return (padding,) * rank, (padding,) * rank
    padding = tuple(padding)
    if all(isinstance(p, (tuple, list)) for p in padding) and len(padding) == rank:
        return tuple(int(p[0]) for p in padding), tuple(int(p[1]) for p in padding)
    p = _per_dim(padding, rank, "padding")
    return p, p


def _clamp_pair(clamp):
    """clamp=(min, max) as two floats."""
    try:
        low, high = (float(v) for v in clamp)
    except (TypeError, ValueError):
        raise BadInputError(f"clamp: {clamp!r}, expected (min, max)") from None
    return low, high


def _weights_stamp(w):
    """What changes when a filter's values may have: torch's storage and its
    version counter (bumped by every in-place write except through .data; an
    inference tensor has none), or a numpy array's buffer."""
    if _is_torch(w):
        # An inference tensor (made in inference_mode) has no version counter;
        # asking raises, and a torch exception costs about 1 ms (measured:
        # each direct call of a layer whose weight was one).
        version = None if w.is_inference() else w._version
        return (w.data_ptr(), version, str(w.dtype), str(w.device))
    return (id(w), np.asarray(w).ctypes.data)


def _layer_conv(layer, fields, w, wa):
    """The Conv of one layer whose weights are constant (`layer`, a dict the
    caller keeps per layer): its own packed weights, packed again when the
    weights' stamp says they changed."""
    if layer.get("fields") != fields:
        layer.clear()
        layer["conv"] = Conv(constant_weights=True, **fields)
        layer["fields"] = fields
    conv = layer["conv"]
    stamp = _weights_stamp(w)
    if layer.get("stamp") != stamp:
        conv.pack(wa)
        layer["stamp"] = stamp
    return conv


def _output_spatial(spatial, kernel, stride, dilation, before, after):
    """The output's size per spatial dimension (docs/design.md's formula)."""
    return [(size + b + a - d * (k - 1) - 1) // s + 1 for size, k, s, d, b, a in
            zip(spatial, kernel, stride, dilation, before, after)]


def _empty_result(rank, n, f, spatial, kernel, stride, dilation, before, after,
                  layout, dtype, unbatched, torch_x, bf16_output=False):
    """torch's answer to a batch of no images (or no filters): an empty result of the
    output's shape, nothing compiled or run (the C API takes positive sizes only).
    A window that does not fit is still an error, as in torch."""
    out = _output_spatial(spatial, kernel, stride, dilation, before, after)
    if any(o < 1 for o in out):
        raise BadInputError(
            f"the {'x'.join(map(str, kernel))} kernel (dilation "
            f"{'x'.join(map(str, dilation))}) does not fit the "
            f"{'x'.join(map(str, spatial))} input padded by {before} before and "
            f"{after} after")
    shape = [n, f, *out] if layout == "nchw" else [n, *out, f]
    if unbatched:
        shape = shape[1:]
    y = np.empty(shape, np.int16 if bf16_output else
                 np.int32 if dtype == "i8" else np.float32)
    if torch_x is not None:
        import torch
        y = torch.from_numpy(y)
        y = (y.view(torch.bfloat16) if bf16_output else y).to(torch_x.device)
    return y, None, 0.0


def _conv(rank, x, w, bias, stride, padding, dilation, groups, relu, layout,
          target, threads, tf32, zero_points, chip, constant_layer=None,
          residual=None, clamp=None, bf16_output=False, bf16_residual=False,
          compute=True, pooling=None):
    """The functions' and the torch layers' convolution (pooling="max": the
    max pooling of its windows, w of the depthwise shape and not read):
    returns the output, the Conv and the run's milliseconds. compute=False compiles (and, for a
    constant layer, packs) without running: the output is uninitialised
    (compile()'s example call, convlower.fx)."""
    torch_in = _is_torch(x)
    device = x.device if torch_in else None
    xa, dtype = _to_numpy(x)
    wa, wdtype = _to_numpy(w)
    if wdtype != dtype:
        raise BadInputError(f"input is {dtype} but the filter is {wdtype}")
    unbatched = xa.ndim == rank + 1
    if unbatched:
        xa = xa[None]
    if xa.ndim != rank + 2 or wa.ndim != rank + 2:
        raise BadInputError(
            f"conv{rank}d: input of rank {rank + 1} or {rank + 2} and a filter of rank "
            f"{rank + 2} expected, got {np.ndim(x)} and {wa.ndim}")
    nchw = layout == "nchw"
    if layout not in ("nchw", "nhwc"):
        raise BadInputError(f"layout {layout!r}: expected 'nchw' or 'nhwc'")
    n = xa.shape[0]
    c, spatial = (xa.shape[1], xa.shape[2:]) if nchw else (xa.shape[-1], xa.shape[1:-1])
    f, cg, kernel = ((wa.shape[0], wa.shape[1], wa.shape[2:]) if nchw
                     else (wa.shape[0], wa.shape[-1], wa.shape[1:-1]))
    if cg * groups != c:
        raise BadInputError(f"the filter has {cg} input channels per group, but the "
                            f"input has {c} channels in {groups} group(s)")
    if tf32:
        if dtype != "f32":
            raise BadInputError("tf32=True takes float32 operands")
        dtype = "tf32"
    if zero_points is not None and dtype != "i8":
        raise BadInputError("zero_points are for int8 operands")
    stride = _per_dim(stride, rank, "stride")
    dilation = _per_dim(dilation, rank, "dilation")
    before, after = _padding(padding, rank, kernel, stride, dilation)
    ba = None
    if bias is not None:
        if _is_torch(bias) and _is_torch(x):
            bias = bias.to(x.dtype)
        elif not _is_torch(bias):
            bias = np.asarray(bias).astype(xa.dtype if dtype != "bf16" else np.float32)
            if dtype == "bf16":
                import torch
                bias = torch.from_numpy(bias).to(torch.bfloat16)
        ba, _ = _to_numpy(bias)
        if ba.shape != (f,):
            raise BadInputError(f"bias: shape {ba.shape}, expected ({f},)")
    if n == 0 or f == 0:
        return _empty_result(rank, n, f, spatial, kernel, stride, dilation, before,
                             after, layout, dtype, unbatched, x if torch_in else None,
                             bf16_output)
    fields = dict(
        spatial_rank=rank, batch=n, in_channels=c, out_channels=f,
        input_size=tuple(spatial), kernel_size=tuple(kernel), stride=stride,
        dilation=dilation, pad_before=before, pad_after=after, groups=groups,
        layout=layout, dtype=dtype, zero_points=tuple(zero_points or (0, 0)),
        bias=ba is not None, residual=residual is not None, relu=relu,
        clamp=None if clamp is None else _clamp_pair(clamp),
        target=target, threads=threads, chip=chip)
    if bf16_output:
        fields["bf16_output"] = True
    if pooling is not None:
        fields["pooling"] = pooling
    if bf16_residual and residual is not None:
        fields["bf16_residual"] = True
    ra = None
    if residual is not None:
        ra, _ = _to_numpy(residual) if _is_torch(residual) else (np.asarray(residual), None)
        if unbatched:
            ra = ra[None]
    conv = (_compiled(fields) if constant_layer is None
            else _layer_conv(constant_layer, fields, w, wa))
    start = time.perf_counter()
    y = conv(xa, wa, ba, ra) if compute else np.empty(conv.output_shape, conv.output_dtype)
    run_ms = (time.perf_counter() - start) * 1e3
    if unbatched:
        y = y[0]
    if torch_in:
        import torch
        y = torch.from_numpy(y)
        if bf16_output:
            y = y.view(torch.bfloat16)
        if device is not None and device.type != "cpu":
            y = y.to(device)
    return y, conv, run_ms


def _make(rank):
    def conv(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
             relu=False, layout="nchw", target="auto", threads=0, tf32=False,
             zero_points=None, chip=None, residual=None, clamp=None):
        return _conv(rank, x, w, bias, stride, padding, dilation, groups, relu,
                     layout, target, threads, tf32, zero_points, chip,
                     residual=residual, clamp=clamp)[0]
    conv.__name__ = conv.__qualname__ = f"conv{rank}d"
    conv.__doc__ = (
        f"torch.nn.functional.conv{rank}d through ConvLower.\n\n"
        f"x: [N, C, *{rank} spatial] (or unbatched [C, ...]; layout='nhwc': channels "
        "last), w: [F, C/groups, *kernel] (nhwc: [F, *kernel, C/groups]), bias: [F].\n"
        "padding: int, per-dimension ints, (before, after) pairs, 'same' or 'valid'.\n"
        "residual (the output's shape and dtype: float32, int32 for int8) is "
        "added after the bias, relu=True then fuses max(y, 0), clamp=(lo, hi) "
        "min(max(y, lo), hi) (ReLU6: (0, 6)), fused on every target. target: 'auto', 'cpu', 'cpu-twin' or 'cuda'; "
        "threads: CPU threads (0: all cores). Returns float32 (int32 for int8), a "
        "numpy array or a torch tensor like x. Raises BadInputError for a problem "
        "or operands ConvLower does not take, ConvLowerError when compiling or "
        "running fails.")
    return conv


conv1d = _make(1)
conv2d = _make(2)
conv3d = _make(3)


def compile(model, example_inputs=None, **options):
    """Traces a torch model with torch.fx and returns a module whose
    convolutions, with the eval-mode BatchNorm folded in and a residual add
    and a ReLU (or ReLU6, Hardtanh) after each fused into the epilogue, run
    through ConvLower with weights packed once; the other ops stay torch's. .summary() says which ops run where. See convlower.fx."""
    from .fx import compile as _compile
    return _compile(model, example_inputs, **options)


def patch(model, **options):
    """Routes every nn.Conv1d/2d/3d forward of a torch model through ConvLower,
    weights packed once by default; returns a Patch (its .layers record each
    layer's calls and time, .restore() undoes it). See convlower.torch.patch
    for the options."""
    from .torch import patch as _patch
    return _patch(model, **options)
