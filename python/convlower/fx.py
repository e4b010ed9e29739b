"""convlower.compile(model): a torch model's graph with its convolutions fused.

    import torch, torchvision, convlower
    model = torchvision.models.resnet50().eval()
    compiled = convlower.compile(model, (torch.rand(1, 3, 224, 224),))
    with torch.inference_mode():
        logits = compiled(x)
    print(compiled.summary())        # which ops run where

torch.fx traces the model (torch 1.13's symbolic tracing) and the graph is
rewritten: each convolution (nn.Conv1d/2d/3d with zero padding) becomes one
ConvLower call that also computes

- the eval-mode BatchNorm that reads it alone, folded into the convolution's
  weight and bias when compile() runs (w * g / sqrt(v + eps), (b - m) * g /
  sqrt(v + eps) + beta);
- the bias, a residual add that reads it alone (ResNet's conv -> BN -> + x
  -> ReLU, MobileNetV2's projection + x) and the activation that reads that
  alone (ReLU, ReLU6, Hardtanh: a clamp), all in the compiled convolution's
  epilogue, one pass over the output;

with its weight packed once (the CPU routes' constant-weight mode: filter
panels, Winograd's U), on the first call of each input shape. Each float32
nn.Linear (with the ReLU that reads it alone) becomes a 1x1 convolution of
its rows the same way, global average pooling read by flatten(1) alone
(the classification heads; x.mean((2, 3)) too) as a depthwise convolution
whose kernel is the image, average pooling counting its padding (nn.AvgPool2d, F.avg_pool2d by
default) as one whose kernel is the window, max pooling (nn.MaxPool2d,
F.max_pool2d without indices, ceil_mode too; channels-last on the CPU) as
ConvLower's max pooling of the same windows, torch.cat along the channels
of compiled layers that only it reads (Inception's branches, SqueezeNet's
fire modules) as those layers writing their channels of one buffer
(FusedCat), relu(batch_norm(torch.cat(features, 1))) (DenseNet's
pre-activation, every feature read by every later layer) as each
feature's own scale, shift and ReLU writing its channels (FusedCatNorm),
and eval-mode Dropout is removed. Every other op runs as torch
ran it, between them. The 2-D convolutions
compute on channels-last buffers (layout="nhwc", the default) and hand
torch channels_last tensors, which torch's pooling, adds and activations
keep: the activations are converted once, at the first convolution
(layout="nchw": torch's default layout throughout). Each chain of compiled
layers whose only output read after it is the last runs as one C call over
buffers planned per input shape (FusedSequence).

The graph computes what the model computes, with BatchNorm's running
statistics: compile() refuses a model in training mode. A model fx cannot
trace (data-dependent control flow) gets BadInputError naming
convlower.patch(model), which needs no tracing.
"""

import collections
import contextlib
import contextvars
import ctypes
import math
import operator
import threading
import time
import types

import torch
import torch.fx
import torch.nn.functional as F

import convlower
from convlower.torch import bf16_pays as _bf16_pays
from convlower.torch import _check_precision, _DirectCall
from convlower import _capi

_CONV_RANK = {torch.nn.Conv1d: 1, torch.nn.Conv2d: 2, torch.nn.Conv3d: 3}
_BATCH_NORMS = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)
_RELUS = {F.relu, torch.relu}
_HARDTANHS = {F.relu6: (0.0, 6.0), F.hardtanh: (-1.0, 1.0)}
_ADDS = {operator.add, torch.add}

# Set during compile()'s example call (_compiling_only): each layer compiles
# and packs its weights, and each chain plans its buffers, but no layer
# computes: the outputs are uninitialised tensors of the right shapes and
# dtypes, which the torch ops between the layers pass on. A second process
# whose compilations come from the disk cache then spends its compile() on
# loading and packing, not on a forward pass (ResNeXt-50 at batch 8: 0.45 s
# of 0.83; docs/performance-journal.md).
_COMPILING_ONLY = contextvars.ContextVar("convlower_compiling_only", default=False)


@contextlib.contextmanager
def _compiling_only():
    token = _COMPILING_ONLY.set(True)
    try:
        yield
    finally:
        _COMPILING_ONLY.reset(token)


class FusedConv(torch.nn.Module):
    """A convolution with its BatchNorm folded in and its ReLU fused, run by
    ConvLower with its weight packed once per input shape.

    layout "nhwc" (2-D convolutions of batched images): ConvLower computes on
    channels-last buffers, which is torch's channels_last memory format seen
    through a permute. The output is returned as that view (logical NCHW,
    channels_last strides), which torch's pooling, adds and activations keep,
    so the next convolution reads its input without a copy: the activations
    are converted once, at the first convolution."""

    pooling = False       # FusedGlobalPool's mean (not a layer of the model's)
    pool = None           # "max": FusedMaxPool's layer, the maximum of each window

    # Batch sizes: the first one a layer sees (compile()'s example) is compiled
    # as it is; another runs as chunks of power-of-two batches up to 32, each
    # compiled once, until it has come REPEATS times, when it gets its own
    # compilation (at most EXACT of those a layer). Any mix of batch sizes
    # then costs at most 6 + 1 + EXACT compilations a layer.
    CHUNK_MAX = 32
    REPEATS = 3
    EXACT = 4

    def __init__(self, conv, batch_norm, relu, target, threads, layout,
                 residual=False, precision="f32", clamp=None):
        super().__init__()
        weight = conv.weight.detach().double()
        bias = (conv.bias.detach().double() if conv.bias is not None
                else torch.zeros(conv.out_channels, dtype=torch.float64))
        if batch_norm is not None:
            scale = batch_norm.weight.detach().double() if batch_norm.affine else 1.0
            shift = batch_norm.bias.detach().double() if batch_norm.affine else 0.0
            inv_std = torch.rsqrt(batch_norm.running_var.double() + batch_norm.eps)
            factor = scale * inv_std
            weight = weight * factor.reshape(-1, *([1] * (weight.dim() - 1)))
            bias = (bias - batch_norm.running_mean.double()) * factor + shift
        dtype = conv.weight.dtype
        # precision "bf16": a float32 layer's weights (BatchNorm folded in
        # float64 first) and inputs in bfloat16, accumulated in float32 (the
        # output stays float32), decided at the first call, from its input's
        # shape (convlower.torch.bf16_pays).
        self.compute_dtype = None
        self._bf16_asked = precision == "bf16" and dtype == torch.float32
        self._bf16_undecided = self._bf16_asked
        # The output rounded to bfloat16 (float32 math before): set by a
        # FusedSequence where every layer reading it takes bf16 (its
        # _decide_dtypes). Otherwise the output is the weights' dtype.
        self.bf16_output = False
        self.bf16_residual = False     # the residual read in bfloat16
        self._dtype = dtype
        # What bf16_pays reads of the convolution (not the module itself,
        # which would become a submodule).
        self._conv_shape = types.SimpleNamespace(
            groups=conv.groups, in_channels=conv.in_channels,
            kernel_size=conv.kernel_size, stride=conv.stride,
            dilation=conv.dilation, padding=conv.padding)
        self.rank = _CONV_RANK[type(conv)]
        self.layout = layout if self.rank == 2 else "nchw"
        if self.layout == "nhwc":
            weight = weight.permute(0, 2, 3, 1)      # [F, kh, kw, C/G]
        self.register_buffer("weight", weight.to(dtype).contiguous())
        self.register_buffer("bias", bias.to(dtype).contiguous()
                             if conv.bias is not None or batch_norm is not None else None)
        self.stride, self.padding = conv.stride, conv.padding
        self.dilation, self.groups = conv.dilation, conv.groups
        self.kernel_size = conv.kernel_size
        # The epilogue after the bias: + residual (the forward's second
        # operand), max(y, 0), min(max(y, lo), hi); a residual that is not
        # the output's shape and float32 is added by torch, with the
        # activation after it.
        self.residual, self.relu, self.clamp = residual, relu, clamp
        self.target, self.threads = target, threads
        self._packed = {}          # per batch size: its compilation and packed weight
        self._seen = {}            # batch size: calls
        self._exact = set()        # sizes compiled for themselves (not chunks)
        self._direct = {}          # per batch size: its _DirectCall (or None)
        self._output_shapes = {}   # input shape: output shape

    def chunks(self, n):
        """The batch sizes a batch of `n` runs as."""
        self._seen[n] = self._seen.get(n, 0) + 1
        if n == 0 or n in self._packed or not self._packed or (
                self._seen[n] >= self.REPEATS and len(self._exact) < self.EXACT):
            if n not in self._packed and n & (n - 1):
                self._exact.add(n)
            return [n]
        sizes = []
        while n > 0:
            size = 1 << min(n.bit_length() - 1, self.CHUNK_MAX.bit_length() - 1)
            sizes.append(size)
            n -= size
        return sizes

    def _run(self, x, n, residual, epilogue):
        compute = not _COMPILING_ONLY.get()
        direct = self._direct.get(n)
        if compute and direct is not None and direct.takes(x, self.weight, residual):
            return direct(x, residual)
        relu, clamp = epilogue
        y, conv, _ = convlower._conv(
            self.rank, x, self.weight, self.bias, self.stride, self.padding,
            self.dilation, self.groups, relu=relu, layout=self.layout,
            target=self.target, threads=self.threads, tf32=False, zero_points=None,
            chip=None, constant_layer=self._packed.setdefault(n, {}) if n else {},
            residual=residual, clamp=clamp, bf16_output=self.bf16_output,
            bf16_residual=self.bf16_residual, compute=compute, pooling=self.pool)
        if n and conv is not None:
            self._direct[n] = _DirectCall.of(conv, x, self.weight, self.bias)
        return y

    def _output_shape(self, x_shape):
        """The output's (logical NCHW) shape for a batched input's, worked
        out once per input shape (forward asks on every call)."""
        shape = self._output_shapes.get(x_shape)
        if shape is None:
            before, after = convlower._padding(self.padding, self.rank,
                                               self.kernel_size, self.stride,
                                               self.dilation)
            spatial = convlower._output_spatial(x_shape[2:], self.kernel_size,
                                                self.stride, self.dilation,
                                                before, after)
            shape = self._output_shapes[x_shape] = (x_shape[0], self.weight.shape[0],
                                                    *spatial)
        return shape

    @property
    def output_dtype(self):
        """What the C API writes: bfloat16 (bf16_output) or float32."""
        return torch.bfloat16 if self.bf16_output else torch.float32

    @property
    def residual_dtype(self):
        """The residual's dtype as the C API reads it."""
        return torch.bfloat16 if self.bf16_residual else self.output_dtype

    def _fusable_residual(self, x, residual):
        """The residual as the C API reads it (the output's memory layout),
        or None where torch adds it: not of residual_dtype (float32, or
        bfloat16 with bf16_output or bf16_residual) on the CPU, or not of the
        output's shape (a broadcast)."""
        if (residual is None or not isinstance(residual, torch.Tensor)
                or residual.dtype != self.residual_dtype or residual.device.type != "cpu"
                or x.dim() != self.rank + 2
                or tuple(residual.shape) != self._output_shape(tuple(x.shape))):
            return None
        r = residual.permute(0, 2, 3, 1) if self.layout == "nhwc" else residual
        return r.detach().contiguous()

    def forward(self, x, residual=None):
        nhwc = self.layout == "nhwc"
        if nhwc and x.dim() != 4:
            raise convlower.BadInputError(
                f"a 2-D convolution compiled for batched images got a {x.dim()}-D input")
        if self._bf16_undecided:
            self._decide_bf16(x.shape)
        rs = self._fusable_residual(x, residual)
        # Without a residual, or with one the epilogue adds, the activation
        # is the epilogue's too; a residual torch adds comes before it.
        in_epilogue = residual is None or rs is not None
        epilogue = (self.relu, self.clamp) if in_epilogue else (False, None)
        xs = x.permute(0, 2, 3, 1) if nhwc else x
        if self.compute_dtype is not None and xs.dtype == torch.float32:
            xs = xs.to(self.compute_dtype)
        sizes = self.chunks(xs.shape[0]) if xs.dim() == self.rank + 2 else [None]
        if len(sizes) == 1:
            y = self._run(xs, sizes[0], rs, epilogue)
        else:
            starts = [sum(sizes[:i]) for i in range(len(sizes))]
            y = torch.cat([self._run(xs[s:s + b], b,
                                     None if rs is None else rs[s:s + b], epilogue)
                           for s, b in zip(starts, sizes)])
        if nhwc:
            y = y.permute(0, 3, 1, 2)
        if not in_epilogue:
            # The output is ours (fresh): add in place where the shapes match.
            y = y.add_(residual) if residual.shape == y.shape else y + residual
            if self.relu:
                y = y.relu_()
            if self.clamp is not None:
                y = y.clamp_(*self.clamp)
        # A bf16 output goes to the layers that read bf16; otherwise the
        # model's dtype (a float16 model's layers compute into float32).
        if self.bf16_output or y.dtype == self._dtype:
            return y
        return y.to(self._dtype)

    def bf16_wanted(self, input_shape, in_sequence=False):
        """precision "bf16": whether this layer computes on bfloat16 for
        this input shape (decided, or what _decide_bf16 would decide). In a
        sequence a depthwise layer takes bf16 too where its input can be
        bf16: it computes in float32 vectors either way, and reading bf16
        lets the layer before it write bf16 (MobileNetV2's expansions, its
        largest activations: batch 1 even, batch 8 23.9 against 25.0 ms in
        one process). Other grouped layers stay float32: ResNeXt-50's gained
        nothing (24.9 against 24.6 ms; docs/performance-journal.md)."""
        if not self._bf16_undecided:
            return self.compute_dtype is not None
        if (in_sequence and self._bf16_asked and self.groups != 1
                and self.groups == self._conv_shape.in_channels):
            return True
        return _bf16_pays(self._conv_shape, input_shape)

    def _decide_bf16(self, input_shape):
        """precision "bf16": the weights (and bias) become bfloat16 where
        bf16_pays for this input shape; the layer stays float32 otherwise."""
        self.use_bf16(_bf16_pays(self._conv_shape, input_shape))

    def use_bf16(self, bf16):
        """precision "bf16": decides the layer's compute dtype (once)."""
        self._bf16_undecided = False
        if not bf16:
            return
        self.compute_dtype = torch.bfloat16
        # Not inference tensors (compile()'s example runs in inference mode):
        # without a version counter, a write into them would go unseen.
        with torch.inference_mode(False):
            self.weight = self.weight.to(torch.bfloat16)
            if self.bias is not None:
                self.bias = self.bias.to(torch.bfloat16)

    def reports(self):
        """The reports (conv-run's JSON keys) of this layer's compilations,
        one per batch size it was compiled for."""
        return [layer["conv"].report() for n, layer in sorted(
            self._packed.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)) if layer]

    @property
    def compiled_batches(self):
        """The batch sizes this layer has a compilation for."""
        return sorted(n for n, layer in self._packed.items() if layer and n is not None)


class FusedLinear(torch.nn.Module):
    """nn.Linear, and the ReLU that reads it alone, as a 1x1 convolution of
    [rows, 1, 1, in_features] channels-last images: ConvLower's GEMM with the
    weight packed once and the bias (and ReLU) in its epilogue. The leading
    dimensions of the input are its rows (the batch chunks and direct calls
    of FusedConv apply to them). torch's own Linear is a reference BLAS call
    in Debian's torch 1.13 (ResNet-50's 2048 -> 1000 at batch 1: 1.7 ms)."""

    def __init__(self, linear, relu, target, threads, precision="f32"):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        with torch.no_grad():
            conv = torch.nn.Conv2d(self.in_features, self.out_features, 1,
                                   bias=linear.bias is not None,
                                   dtype=linear.weight.dtype)
            conv.weight.copy_(linear.weight.detach().reshape(conv.weight.shape))
            if linear.bias is not None:
                conv.bias.copy_(linear.bias.detach())
        self.conv = FusedConv(conv, None, relu, target, threads, "nhwc",
                              precision=precision)

    def forward(self, x):
        lead = x.shape[:-1]
        rows = x.reshape(-1, self.in_features)
        # [rows, 1, 1, in] channels-last, seen as NCHW: what FusedConv takes.
        images = rows.reshape(rows.shape[0], 1, 1, self.in_features).permute(0, 3, 1, 2)
        return self.conv(images).reshape(*lead, self.out_features)


class FusedGlobalPool(torch.nn.Module):
    """Global average pooling and the flatten after it (the classification
    heads' adaptive_avg_pool2d(x, 1) -> flatten(x, 1)): [N, C, H, W] ->
    [N, C], computed by ConvLower as a depthwise convolution whose kernel is
    the whole image, every weight 1 / (H W). Its layer is made at the first
    call of each (C, H, W) (the traced graph has no shapes); an input of
    another rank or dtype, or an image of more than MAX_IMAGE pixels, is
    pooled by torch."""

    # The whole image as one window: 13x13 (SqueezeNet's head at 224) to
    # 56x56 compile in 130-190 ms and run at 2-8 GFLOP/s (conv-run, 2 Zen 3
    # cores; docs/performance-journal.md), where over 100 pixels used to
    # fall back to torch and cut the chain's plan.
    MAX_IMAGE = 32 * 32
    # A window of more (FusedAvgPool): the depthwise kernel unrolls its taps.
    MAX_PIXELS = 100
    SHAPES = 4           # (C, H, W)s with a layer kept, least recently used dropped

    def __init__(self, target, threads, layout):
        super().__init__()
        self.target, self.threads, self.layout = target, threads, layout
        self.layers = torch.nn.ModuleDict()
        self.bf16_output = False     # the layers' (FusedConv.bf16_output)

    @staticmethod
    def _key(x):
        if x.dim() != 4 or x.dtype != torch.float32 or \
                x.shape[2] * x.shape[3] > FusedGlobalPool.MAX_IMAGE:
            return None
        return "x".join(str(d) for d in x.shape[1:])

    def layer_for(self, x):
        """The compiled layer pooling `x`, if one was made for its shape."""
        key = self._key(x)
        return self.layers[key] if key is not None and key in self.layers else None

    def output_shape(self, shape):
        """The pooled shape of an input of `shape` (None: not an image batch)."""
        return tuple(shape[:2]) if len(shape) == 4 else None

    def _by_torch(self, x):
        return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)

    def _mean(self, channels, height, width):
        """The depthwise convolution averaging each channel's window."""
        return torch.nn.Conv2d(channels, channels, (height, width),
                               groups=channels, bias=False)

    def _finish(self, y):
        return y.flatten(1)

    def forward(self, x):
        key = self._key(x)
        if key is None:
            return self._by_torch(x)
        if key not in self.layers:
            layer = self._layer(*x.shape[1:])
            layer.pooling = True
            layer.bf16_output = self.bf16_output
            self.layers[key] = layer
            while len(self.layers) > self.SHAPES:
                del self.layers[next(iter(self.layers))]
        return self._finish(self.layers[key](x))

    def _layer(self, channels, height, width):
        """The compiled layer pooling a (channels, height, width) image."""
        with torch.no_grad():
            mean = self._mean(channels, height, width)
            mean.weight.fill_(1.0 / mean.weight[0, 0].numel())
        return FusedConv(mean, None, False, self.target, self.threads, self.layout)


class FusedMean(FusedGlobalPool):
    """x.mean((2, 3)) (MNASNet's head): global average pooling and its
    flatten in one op, the same layer as FusedGlobalPool's; torch's mean
    where that layer does not apply."""

    def _by_torch(self, x):
        return x.mean((2, 3))


class FusedAvgPool(FusedGlobalPool):
    """Average pooling over windows (nn.AvgPool2d, F.avg_pool2d) as torch
    computes it by default: the zero padding counted in every window's
    divisor (count_include_pad), output sizes rounded down, no divisor
    override. That is a depthwise convolution whose kernel is the window,
    every weight 1 / (kh kw), over the zero-padded image, which ConvLower
    computes (channels-last in, channels-last out, in a chain like any
    layer). Its layer is made at the first call of each (C, H, W); an input
    of another rank or dtype, or a window of more than MAX_PIXELS pixels, is
    pooled by torch."""

    def __init__(self, kernel, stride, padding, target, threads, layout):
        super().__init__(target, threads, layout)
        self.kernel, self.stride, self.padding = kernel, stride, padding

    def _key(self, x):
        if x.dim() != 4 or x.dtype != torch.float32 or \
                self.kernel[0] * self.kernel[1] > self.MAX_PIXELS:
            return None
        shape = self.output_shape(tuple(x.shape))
        if min(shape) <= 0:
            return None
        return "x".join(str(d) for d in x.shape[1:])

    def output_shape(self, shape):
        if len(shape) != 4:
            return None
        sizes = tuple((size + 2 * pad - k) // step + 1 for size, k, step, pad in
                      zip(shape[2:], self.kernel, self.stride, self.padding))
        return tuple(shape[:2]) + sizes

    def _by_torch(self, x):
        return F.avg_pool2d(x, self.kernel, self.stride, self.padding)

    def _mean(self, channels, height, width):
        return torch.nn.Conv2d(channels, channels, self.kernel, stride=self.stride,
                               padding=self.padding, groups=channels, bias=False)

    def _finish(self, y):
        return y


class FusedMaxPool(FusedAvgPool):
    """Max pooling (nn.MaxPool2d, F.max_pool2d) with no indices returned:
    ConvLower's max pooling over the same windows (the padding -inf, as in
    torch), channels-last in and out, in a chain like any layer. ceil_mode
    (sizes rounded up, GoogLeNet's and SqueezeNet's poolings) is more
    padding after the image, where torch's last window may reach past it.
    Its layer is made at the first call of each (C, H, W); an input of
    another rank or dtype, or a window of more than MAX_PIXELS pixels, is
    pooled by torch."""

    def __init__(self, kernel, stride, padding, dilation, ceil_mode, target, threads,
                 layout):
        super().__init__(kernel, stride, padding, target, threads, layout)
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def _size(self, size, k, step, pad, d):
        """torch's output size along one dimension (its pooling_output_shape):
        rounded up under ceil_mode, the last window starting inside the
        image or its padding before."""
        span = size + 2 * pad - d * (k - 1) - 1
        if not self.ceil_mode:
            return span // step + 1
        out = -(-span // step) + 1
        return out - 1 if (out - 1) * step >= size + pad else out

    def output_shape(self, shape):
        if len(shape) != 4:
            return None
        sizes = tuple(self._size(*dim) for dim in zip(shape[2:], self.kernel, self.stride,
                                                       self.padding, self.dilation))
        return tuple(shape[:2]) + sizes

    def _by_torch(self, x):
        return F.max_pool2d(x, self.kernel, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode)

    def _layer(self, channels, height, width):
        # A depthwise convolution's shape; its weight is never read.
        window = torch.nn.Conv2d(channels, channels, self.kernel, stride=self.stride,
                                 padding=self.padding, dilation=self.dilation,
                                 groups=channels, bias=False)
        layer = FusedConv(window, None, False, self.target, self.threads, self.layout)
        layer.pool = "max"
        # (before, after) per dimension: after, what the last window reaches
        # past the image (ceil_mode), at least the padding asked for.
        out = self.output_shape((1, channels, height, width))[2:]
        layer.padding = tuple(
            (pad, max(pad, (o - 1) * step + d * (k - 1) + 1 - size - pad))
            for o, size, k, step, pad, d in zip(out, (height, width), self.kernel,
                                                self.stride, self.padding, self.dilation))
        return layer


def _uninitialised_cat(xs):
    """What torch.cat(xs, 1) returns, uninitialised (compile()'s example
    call, _COMPILING_ONLY): its shape, dtype and memory format (a
    concatenation of DenseNet's features at batch 8 spent 0.45 s of the
    second process's 2.5 s compile() copying and faulting in values nobody
    reads)."""
    shape = FusedCat.output_shape([tuple(x.shape) for x in xs])
    if shape is None:
        return torch.cat(xs, 1)
    last = xs[0].is_contiguous(memory_format=torch.channels_last)
    return torch.empty(shape, dtype=xs[0].dtype, memory_format=torch.channels_last
                       if last else torch.contiguous_format)


class FusedCat(torch.nn.Module):
    """torch.cat along the channels of compiled layers' outputs that only
    the concatenation reads (Inception's and GoogLeNet's branches,
    SqueezeNet's fire modules). Inside a FusedSequence's one C call it is no
    step: each layer writes its channels of the concatenation's buffer (the
    C API's output slices, ConvLowerStep.outputChannelOffset), and the
    layers after it read that buffer. Run as a module (outside a sequence,
    or where the sequence has no plan for the shape) it is torch.cat, the
    same values."""

    def forward(self, *xs):
        if _COMPILING_ONLY.get():
            return _uninitialised_cat(xs)
        return torch.cat(xs, 1)

    @staticmethod
    def output_shape(shapes):
        """The concatenation's shape for its inputs' (None: not images of
        one size)."""
        if any(s is None or len(s) != 4 or s[:1] + s[2:] != shapes[0][:1] + shapes[0][2:]
               for s in shapes):
            return None
        return (shapes[0][0], sum(s[1] for s in shapes)) + tuple(shapes[0][2:])


class FusedCatNorm(torch.nn.Module):
    """relu(batch_norm(torch.cat(xs, 1))): DenseNet's pre-activation of the
    features concatenated so far, each of which every later layer of the
    block reads too. BatchNorm and ReLU act channel by channel, so this is
    the concatenation of each input's own scale, shift and ReLU: per input a
    depthwise 1x1 convolution with its channels of the BatchNorm folded in
    (FusedConv), which in a FusedSequence's one C call writes its channels of
    the output (output slices): the features are read once and nothing is
    concatenated first. The layers are made at the first call of each split
    of the channels (the traced graph has no shapes); inputs that are not
    float32 images of one size, or a split that does not add up to the
    BatchNorm's channels, run as torch ran them."""

    SPLITS = 4           # channel splits with layers kept, least recently used dropped

    def __init__(self, batch_norm, relu, target, threads, layout):
        super().__init__()
        self.batch_norm, self.relu = batch_norm, relu
        self.target, self.threads, self.layout = target, threads, layout
        self.splits = torch.nn.ModuleDict()

    @staticmethod
    def output_shape(shapes):
        return FusedCat.output_shape(shapes)

    def parts_for(self, xs):
        """The FusedConv of each input (made at the first call of a split),
        or None where torch computes the op."""
        shapes = [tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in xs]
        out = self.output_shape(shapes)
        if out is None or out[1] != self.batch_norm.num_features \
                or any(x.dtype != torch.float32 for x in xs):
            return None
        key = "_".join(str(s[1]) for s in shapes)
        if key not in self.splits:
            self.splits[key] = torch.nn.ModuleList(self._parts([s[1] for s in shapes]))
            while len(self.splits) > self.SPLITS:
                del self.splits[next(iter(self.splits))]
        return list(self.splits[key])

    def _parts(self, channels):
        bn, start, parts, ones = self.batch_norm, 0, [], {}
        for c in channels:
            # The identity depthwise 1x1 each part folds its channels of the
            # BatchNorm into (FusedConv reads and copies it), one per
            # channel count; the BatchNorm's channels as what FusedConv
            # reads of one. (nn.Module constructors cost 0.4 ms each:
            # DenseNet-121's 597 parts spent 0.5 s of a second process's
            # compile() in them.)
            if c not in ones:
                ones[c] = torch.nn.utils.skip_init(torch.nn.Conv2d, c, c, 1, groups=c,
                                                   bias=False)
                with torch.no_grad():
                    ones[c].weight.fill_(1.0)
            channels_of = slice(start, start + c)
            piece = types.SimpleNamespace(
                affine=bn.affine, eps=bn.eps,
                weight=bn.weight[channels_of] if bn.affine else None,
                bias=bn.bias[channels_of] if bn.affine else None,
                running_mean=bn.running_mean[channels_of],
                running_var=bn.running_var[channels_of])
            parts.append(FusedConv(ones[c], piece, self.relu, self.target, self.threads,
                                   self.layout))
            start += c
        return parts

    def forward(self, *xs):
        parts = self.parts_for(xs)
        if parts is None:
            y = self.batch_norm(torch.cat(xs, 1))
            return F.relu(y) if self.relu else y
        ys = [part(x) for part, x in zip(parts, xs)]
        return _uninitialised_cat(ys) if _COMPILING_ONLY.get() else torch.cat(ys, 1)


class FusedSequence(torch.nn.Module):
    """A chain of compiled layers (FusedConv, FusedGlobalPool, FusedAvgPool,
    FusedMaxPool, FusedLinear, FusedCat, FusedCatNorm) of the graph, each
    reading the chain's inputs or earlier layers' outputs, only the last
    one's output read after the chain: MobileNetV2, ResNet-50, GoogLeNet
    and DenseNet-121 from their first convolution to their logits.

    Run as one C call (convlowerRunSteps) once each layer has a direct call
    for the input's shape: the layers' handles and weights in a table, the
    activations at offsets of one arena planned once per input shape,
    memory reused as soon as the layers reading it are done, so the chain
    works in memory that stays in cache (MobileNetV2 at batch 1: 6.0 MB,
    instead of 54 fresh outputs, 22 MB, and a torch call each; only the
    last output is a fresh tensor, the caller's). Under precision "bf16" the
    values between layers are bfloat16 where every layer reading them takes
    it (_decide_dtypes), half the bytes. Where no plan can run (the first call of a
    shape, a batch that runs as chunks, hooks on a layer,
    a weight written or replaced since the plan, another thread inside the
    chain) the layers run as modules, one after the other, which is what
    the plan computes, bit for bit."""

    # Input shapes whose plan (and buffers) is kept; the least recently
    # used is dropped beyond that.
    PLANS = 4

    def __init__(self, names, layers, refs, inputs):
        super().__init__()
        self.names = list(names)
        for name, layer in zip(names, layers):
            self.add_module(name, layer)
        # Per layer: the values it reads (its input and residual, or a
        # FusedCat's inputs), as indices into [the chain's inputs..., the
        # layers' outputs...].
        self.refs = [tuple(r) for r in refs]
        self.inputs = inputs           # how many inputs the chain takes
        self._plans = collections.OrderedDict()
        self._lock = threading.Lock()
        # precision "bf16": the layers' dtypes are decided together, at the
        # first call (_decide_dtypes).
        self._undecided = any(getattr(self._conv_of(layer), "_bf16_undecided", False)
                              for layer in layers)
        # The chain's inputs converted to bfloat16 at its start (float32
        # inputs whose readers all take bf16).
        self._bf16_inputs = set()

    @staticmethod
    def _conv_of(layer):
        """The FusedConv computing `layer` (None: a pooling, whose layers
        are made per shape and compute float32)."""
        return layer.conv if isinstance(layer, FusedLinear) else (
            layer if isinstance(layer, FusedConv) else None)

    def _shapes(self, inputs):
        """Each value's shape for these inputs, worked out without running
        (None past a value whose shape is not that of a batched image or a
        Linear's rows)."""
        shapes = [tuple(t.shape) if isinstance(t, torch.Tensor) else None
                  for t in inputs]
        for layer, refs in zip(self.layers, self.refs):
            s = shapes[refs[0]]
            if s is None:
                out = None
            elif isinstance(layer, _CONCATENATING):
                out = layer.output_shape([shapes[v] for v in refs])
            elif isinstance(layer, FusedGlobalPool):
                out = layer.output_shape(s)
            elif isinstance(layer, FusedLinear):
                out = s[:-1] + (layer.out_features,)
            else:
                out = layer._output_shape(s) if len(s) == layer.rank + 2 else None
            shapes.append(out)
        return shapes

    def _decide_dtypes(self, inputs):
        """precision "bf16": which layers compute on bfloat16 (bf16_pays)
        and which outputs are kept in bfloat16, so that the chain passes bf16
        activations from layer to layer (half the bytes, and no conversion
        before a bf16 layer) and runs as one C call: a value is bf16 where
        every layer reading it takes bf16 as its input or adds it as its
        residual (any layer can: bf16_residual); a chain's input is
        converted once at its start, its output (the caller's) stays
        float32. A layer that would take bf16 but reads a float32 value
        computes float32."""
        self._undecided = False
        shapes = self._shapes(inputs)
        n_in, count = self.inputs, len(self.names)
        convs = [self._conv_of(layer) for layer in self.layers]
        if None in shapes:
            return          # each layer decides at its first call, as alone

        def rows_shape(step):
            s = shapes[self.refs[step][0]]
            if isinstance(self.layers[step], FusedLinear):
                return (math.prod(s[:-1]), s[-1], 1, 1)
            return s

        wants = [conv is not None and conv.bf16_wanted(rows_shape(step), in_sequence=True)
                 for step, conv in enumerate(convs)]
        readers = collections.defaultdict(list)
        for step, refs in enumerate(self.refs):
            for v, role in zip(refs, self._roles(step)):
                readers[v].append((step, role))
        # The chain's inputs and the values its layers produce, but not its
        # output; a concatenation's stays float32 (its layers write float32
        # slices), and so do its inputs (they take no bf16).
        bf16 = {v: True for v in range(n_in + count - 1)
                if v < n_in or not isinstance(self.layers[v - n_in], _CONCATENATING)}
        changed = True
        while changed:
            changed = False
            for v in [v for v, b in bf16.items() if b]:
                if not all(wants[s] or role == "residual" and convs[s] is not None
                           for s, role in readers[v]):
                    bf16[v], changed = False, True
            for step, refs in enumerate(self.refs):
                if wants[step] and not bf16.get(refs[0], False):
                    wants[step], changed = False, True
        for step, (layer, conv) in enumerate(zip(self.layers, convs)):
            if conv is not None and conv._bf16_undecided:
                conv.use_bf16(wants[step])
            out_bf16 = bf16.get(n_in + step, False)
            if conv is not None:
                conv.bf16_output = out_bf16
                r = self._residual(step)
                conv.bf16_residual = r is not None and bf16[r]
            elif out_bf16:
                layer.bf16_output = True
        self._bf16_inputs = {v for v in range(n_in) if bf16[v]}

    def _roles(self, step):
        """What each value `step` reads is to it: "input", "residual", or
        "concat" (a FusedCat's or FusedCatNorm's)."""
        if isinstance(self.layers[step], _CONCATENATING):
            return ["concat"] * len(self.refs[step])
        return ["input", "residual"][:len(self.refs[step])]

    def _residual(self, step):
        """The value layer `step` adds as its residual, or None."""
        refs = self.refs[step]
        return refs[1] if len(refs) > 1 and not isinstance(
            self.layers[step], _CONCATENATING) else None

    @property
    def layers(self):
        return [getattr(self, name) for name in self.names]

    def forward(self, *inputs):
        if self._undecided:
            self._decide_dtypes(inputs)
        key = self._key(inputs)
        y = None if _COMPILING_ONLY.get() else self._run_planned(key, inputs)
        if y is not None:
            return y
        values = self.run_layers(inputs)
        plan = self._plans.get(key)
        if plan is None or not plan.valid() or any(plan.hooks):
            self._plans.pop(key, None)
            plan = _SequencePlan.of(self, values)
            if plan is not None:
                self._plans[key] = plan
                while len(self._plans) > self.PLANS:
                    self._plans.popitem(last=False)
        return values[-1]

    def profile_run(self, inputs, times):
        """forward(), each layer's time added to times ({layer name: [ms,
        ...]}): inside the one C call where the input's shape has a plan
        (convlowerRunSteps' step times), else timed around each layer."""
        if self._undecided:
            self._decide_dtypes(inputs)
        y = self._run_planned(self._key(inputs), inputs, times)
        return y if y is not None else self.run_layers(inputs, times)[-1]

    @staticmethod
    def _key(inputs):
        return tuple(tuple(t.shape) if isinstance(t, torch.Tensor) else None
                     for t in inputs)

    def _run_planned(self, key, inputs, times=None):
        """The chain's output from its plan for `key` in one C call, or None
        where none can run (no plan, hooks, weights changed since it was
        made, another thread inside it, an input not as planned). times:
        as profile_run's."""
        plan = self._plans.get(key)
        if plan is None or any(plan.hooks) or not plan.valid() \
                or not self._lock.acquire(blocking=False):
            return None
        try:
            step_ms = (ctypes.c_double * plan.count)() if times is not None else None
            y = plan.run(inputs, step_ms)
            if y is not None:
                self._plans.move_to_end(key)
                # A layer of several steps (FusedCatNorm's parts): their sum.
                layer_ms = {}
                for name, ms in zip(plan.step_names, step_ms or ()):
                    layer_ms[name] = layer_ms.get(name, 0.0) + ms
                for name, ms in layer_ms.items():
                    times.setdefault(name, []).append(ms)
            return y
        finally:
            self._lock.release()

    def run_layers(self, inputs, times=None):
        """The layers as modules, one after the other: every value of the
        chain, its inputs first. times: {layer name: [ms, ...]} to add each
        layer's time to (CompiledModel.profile)."""
        values = [v.to(torch.bfloat16) if i in self._bf16_inputs and isinstance(v, torch.Tensor)
                  and v.dtype == torch.float32 else v for i, v in enumerate(inputs)]
        for name, layer, refs in zip(self.names, self.layers, self.refs):
            args = tuple(values[v] for v in refs)
            start = time.perf_counter()
            values.append(layer(*args))
            if times is not None:
                times.setdefault(name, []).append((time.perf_counter() - start) * 1e3)
        return values

    @property
    def planned_shapes(self):
        """The input shapes that run as one C call (the plans kept)."""
        return list(self._plans)


# One step of a _SequencePlan: the FusedConv and its direct call, the
# values it reads (x, and r: its residual or None) and writes (out, at
# channel `offset` of it or None: all of it), its layer's name.
_Step = collections.namedtuple("_Step", "conv call x r out offset name")

# The layers that concatenate along the channels.
_CONCATENATING = (FusedCat, FusedCatNorm)


class _SequencePlan:
    """A FusedSequence's one C call for one input shape: the steps table,
    the buffers table (the chain's inputs, its output, then each value in
    between at its offset in the arena) and what must still hold for the
    table to be right."""

    @staticmethod
    def _compiled(layer, x):
        """The FusedConv that computes `layer` on `x` (itself, the pooling's
        layer for x's shape, a Linear's 1x1 convolution of 2-D rows)."""
        if isinstance(layer, FusedGlobalPool):
            return layer.layer_for(x)
        if isinstance(layer, FusedLinear):
            return layer.conv if x.dim() == 2 else None
        return layer if x.dim() == layer.rank + 2 else None

    @classmethod
    def of(cls, sequence, values):
        """The plan of the layers' direct calls after a run that produced
        `values`, or None where one layer has none (see FusedSequence)."""
        specs = []
        # What each of the chain's inputs is converted to (run_layers' values
        # hold them as converted).
        input_dtypes = [values[i].dtype for i in range(sequence.inputs)]
        slices = {}
        for step, (layer, refs) in enumerate(zip(sequence.layers, sequence.refs)):
            out = sequence.inputs + step
            name = sequence.names[step]
            if isinstance(layer, FusedCat):
                found = cls._slices(sequence, step, values)
                if found is None:
                    return None
                slices.update(found)
                continue
            if isinstance(layer, FusedCatNorm):
                parts = layer.parts_for([values[v] for v in refs])
                if parts is None:
                    return None
                offset = 0
                for part, v in zip(parts, refs):
                    spec = cls._spec(part, values, v, None, out, name, offset)
                    if spec is None:
                        return None
                    specs.append(spec)
                    offset += values[v].shape[1]
                continue
            spec = cls._spec(cls._compiled(layer, values[refs[0]]), values, refs[0],
                             sequence._residual(step), out, name)
            if spec is None:
                return None
            specs.append(spec)
        if values[-1].dtype != torch.float32 or not all(
                d in (torch.float32, torch.bfloat16) for d in input_dtypes):
            return None
        # The images' layout (a Linear's rows read the same either way).
        layouts = {layer.layout for layer in sequence.layers
                   if not isinstance(layer, (FusedLinear, FusedCat))}
        if len(layouts) > 1:
            return None
        return cls(sequence, specs, values, layouts != {"nchw"}, input_dtypes, slices)

    @staticmethod
    def _spec(conv, values, x, r, out, name, offset=None):
        """One step: `conv` (a FusedConv, or None) reading values[x] (and
        values[r]) into `out` (at channel `offset` of it: a FusedCatNorm's
        part), through its direct call; None where it has none that fits."""
        direct = conv._direct.get(values[x].shape[0]) if conv is not None else None
        takes = torch.bfloat16 if conv is not None and conv.compute_dtype else torch.float32
        if (direct is None or direct.dtype != takes
                or direct.out_dtype != conv.output_dtype
                or direct.weight is not conv.weight
                or direct.conv.has_residual != (r is not None)
                or (r is not None and values[r].dtype != direct.residual_dtype)
                or values[x].dtype != takes):
            return None
        return _Step(conv, direct, x, r, out, offset, name)

    @staticmethod
    def _slices(sequence, step, values):
        """For the FusedCat at `step`: {value: (the concatenation's value,
        its channel offset there)} for each value it concatenates, each one
        a float32 image that a layer of the chain (or a concatenation of
        them: Inception v3's nested cats) writes and only this
        concatenation reads; None where one is not."""
        inputs, out = sequence.inputs, sequence.inputs + step
        found, offset = {}, 0
        for v in sequence.refs[step]:
            readers = [s for s, refs in enumerate(sequence.refs) if v in refs]
            if (v < inputs or readers != [step] or v in found
                    or values[v].dtype != torch.float32 or values[v].dim() != 4):
                return None
            found[v] = (out, offset)
            offset += values[v].shape[1]
        return found if offset == values[out].shape[1] else None

    def __init__(self, sequence, specs, values, nhwc, input_dtypes, slices):
        self.nhwc = nhwc
        self.input_dtypes = input_dtypes
        self.calls = [spec.call for spec in specs]      # keeps the handles alive
        # Hooks on any of the chain's modules send it back to the layers
        # (the sequence's own run either way).
        self.hooks = [d for m in sequence.modules() if m is not sequence
                      for d in (m._forward_hooks, m._forward_pre_hooks)]
        layers, inputs = len(sequence.layers), sequence.inputs
        self.step_names = [spec.name for spec in specs]
        count = len(specs)
        # What each input must be (its shape as the C API reads it).
        stored = [self._stored(v) for v in values]
        self.input_shapes = [tuple(v.shape) for v in stored[:inputs]]
        self.output_shape = tuple(stored[-1].shape)
        # A slice of a concatenation that is itself a slice (nested cats)
        # is one of the outer one's, at the sum of the offsets.
        slices = dict(slices)
        for v in slices:
            slices[v] = self._root(slices, v, 0)
        # Each value's life in layers: from the first layer writing it (a
        # concatenation's: its first slice) to the last reading it.
        first_write = {v: v - inputs for v in range(inputs, inputs + layers)}
        for v, (cat, _) in slices.items():
            first_write[cat] = min(first_write[cat], first_write[v])
        last_read = {}
        for layer, refs in enumerate(sequence.refs):
            for v in refs:
                last_read[v] = layer
        # Buffers: 0..inputs-1 the inputs, `inputs` the output, then one for
        # each value in between that has memory of its own, at its offset
        # in the arena.
        internal = [v for v in range(inputs, inputs + layers - 1) if v not in slices]
        # Sizes in 4-byte words (a bf16 value takes half its elements).
        offsets, elements = self._place(
            {v: (first_write[v], last_read.get(v, first_write[v])) for v in internal},
            {v: -(-stored[v].numel() * stored[v].element_size() // 4) for v in internal})
        # Written once here, when the plan is made (compile()'s example
        # call), so that its pages are mapped before the first forward: an
        # untouched arena made that call fault them in (ResNet-50 at batch
        # 8: 15.6K page faults on the first call after compile(), 1.6-2.8K
        # with the arena written, none on later calls).
        self.arena = torch.zeros(elements, dtype=torch.float32)
        slot_of = {i: i for i in range(inputs)}
        slot_of[inputs + layers - 1] = inputs
        slot_of.update({v: inputs + 1 + k for k, v in enumerate(internal)})
        slot_of.update({v: slot_of[cat] for v, (cat, _) in slices.items()})
        steps = (_capi.Step * count)()
        for step, spec in enumerate(specs):
            steps[step].conv = spec.call.conv._handle
            steps[step].filter = spec.call.weight.data_ptr()
            steps[step].bias = spec.call.bias.data_ptr() if spec.call.bias is not None else None
            steps[step].input = slot_of[spec.x]
            steps[step].residual = -1 if spec.r is None else slot_of[spec.r]
            steps[step].output = slot_of[spec.out]
            if spec.out in slices or spec.offset is not None:
                cat, offset = self._root(slices, spec.out, spec.offset or 0)
                steps[step].outputChannels = values[cat].shape[1]
                steps[step].outputChannelOffset = offset
        self.steps, self.count = steps, count
        base = self.arena.data_ptr()
        self.table = (ctypes.c_void_p * (inputs + 1 + len(internal)))(
            *([None] * (inputs + 1)), *[base + 4 * offsets[v] for v in internal])
        # What the direct calls check on every call: the weights are the
        # ones packed (the same tensor, not written since; an inference
        # tensor has no version counter). Read from each layer's buffers
        # dict: nn.Module's attribute lookup costs ~0.5 us a layer.
        self.stamps = [(spec.conv._buffers, spec.call.weight, spec.call.weight.data_ptr(),
                        not spec.call.weight.is_inference(),
                        self._version(spec.call.weight)) for spec in specs]

    @staticmethod
    def _root(slices, v, offset):
        """(the outermost concatenation `v` is a slice of, the channel
        offset there of `v`'s channel `offset`)."""
        while v in slices:
            v, offset = slices[v][0], offset + slices[v][1]
        return v, offset

    @staticmethod
    def _place(lives, sizes):
        """Offsets (in floats) in one arena for values that live from step
        a to step b (lives: {value: (a, b)}, b its last reader) of `sizes`
        floats (4-byte words): two values live at the same step never overlap (a step's
        output and its inputs included), others may share memory. Largest
        first, each at the lowest offset clear of those placed whose lives
        overlap its own (MobileNetV2 at batch 1: 6.0 MB, where a buffer per
        size class reused took 9.8, the layers' own outputs 22). Returns (offsets,
        the arena's floats); each offset a multiple of 16 floats (64 bytes)."""
        placed, offsets = [], {}
        for v in sorted(sizes, key=lambda v: -sizes[v]):
            size = -(-sizes[v] // 16) * 16
            first, last = lives[v]
            offset = 0
            for start, end in sorted((o, e) for o, e, a, b in placed
                                     if a <= last and first <= b):
                if offset + size <= start:
                    break
                offset = max(offset, end)
            offsets[v] = offset
            placed.append((offset, offset + size, first, last))
        return offsets, max((e for _, e, _, _ in placed), default=0)

    @staticmethod
    def _version(w):
        return None if w.is_inference() else w._version

    def _stored(self, v):
        """A value as the C API reads it: channels last for "nhwc"."""
        return v.permute(0, 2, 3, 1) if self.nhwc and v.dim() == 4 else v

    def valid(self):
        for buffers, w, pointer, versioned, version in self.stamps:
            if buffers["weight"] is not w or w.data_ptr() != pointer or (
                    versioned and w._version != version):
                return False
        return True

    def run(self, inputs, step_ms=None):
        """The chain's output, or None where an input is not what the plan
        was made for (the caller runs the layers instead). step_ms: a
        ctypes array of self.count doubles to receive each layer's ms."""
        held = []
        for i, (t, shape) in enumerate(zip(inputs, self.input_shapes)):
            if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 \
                    or t.device.type != "cpu":
                return None
            v = self._stored(t)
            if tuple(v.shape) != shape:
                return None
            if self.input_dtypes[i] == torch.float32:
                v = v.detach().contiguous()
            else:   # converted and made contiguous in one copy
                v = torch.empty(shape, dtype=self.input_dtypes[i]).copy_(v.detach())
            held.append(v)
            self.table[i] = v.data_ptr()
        y = torch.empty(self.output_shape, dtype=torch.float32)
        self.table[len(inputs)] = y.data_ptr()
        status = convlower._lib.convlowerRunSteps(self.steps, self.count, self.table,
                                                  len(self.table), step_ms)
        convlower._raise_for(status, "running")
        return y.permute(0, 3, 1, 2) if self.nhwc and y.dim() == 4 else y


class OpRecord:
    """One op of the rewritten graph: what it computes and where it runs
    ("convlower", "torch", or "removed": the identity in eval mode, no longer
    in the graph); `fused`: the ops of the traced graph a
    ConvLower call also computes (BatchNorm2d bn1, ReLU relu, ...)."""

    def __init__(self, name, what, where, fused=()):
        self.name, self.what, self.where, self.fused = name, what, where, tuple(fused)
        self.node = name          # its node in the rewritten graph (a layer of
        self.sequence = None      # a FusedSequence: its name there, and the sequence's)

    def __repr__(self):
        fused = f" + {' + '.join(self.fused)}" if self.fused else ""
        return f"<{self.name}: {self.what}{fused} on {self.where}>"


class CompiledModel(torch.nn.Module):
    """The rewritten graph (a torch.fx GraphModule) and what runs where."""

    def __init__(self, graph_module, ops):
        super().__init__()
        self.graph_module = graph_module
        self.ops = ops

    def forward(self, *args, **kwargs):
        return self.graph_module(*args, **kwargs)

    def layer(self, name):
        """The compiled layer (FusedConv, FusedLinear, FusedGlobalPool,
        FusedAvgPool, FusedMaxPool, FusedCat, FusedCatNorm) the graph calls
        `name` (convlower_<i>), a
        submodule of the graph or of a FusedSequence."""
        for path, module in self.graph_module.named_modules():
            if path.rsplit(".", 1)[-1] == name:
                return module
        raise KeyError(f"no compiled layer {name!r}")

    @property
    def code(self):
        """The rewritten graph as Python (torch.fx's code)."""
        return self.graph_module.code

    def profile(self, *inputs, repeat=5):
        """Runs the graph `repeat` times (after one warm-up) node by node and
        returns {op name (as in .ops): median ms} in graph order: where the
        time goes. The node-by-node run (torch.fx's Interpreter) adds a few
        microseconds per op over forward(); a FusedSequence's layers are
        timed inside its one C call where it has a plan for the input's
        shape (as forward() runs them), else one by one as modules."""
        import statistics
        times = {}

        class Timed(torch.fx.Interpreter):
            def run_node(self, node):
                start = time.perf_counter()
                result = super().run_node(node)
                if node.op not in ("placeholder", "output", "get_attr"):
                    times.setdefault(node.name, []).append(
                        (time.perf_counter() - start) * 1e3)
                return result

            def call_module(self, target, args, kwargs):
                module = self.fetch_attr(target)
                if isinstance(module, FusedSequence):
                    return module.profile_run(args, times)
                return super().call_module(target, args, kwargs)

        with torch.inference_mode():
            Timed(self.graph_module).run(*inputs)
            times.clear()
            for _ in range(repeat):
                Timed(self.graph_module).run(*inputs)
        return {op.name: statistics.median(times[op.node]) if op.node in times else 0.0
                for op in self.ops}       # (0: removed from the graph)

    def summary(self):
        ours = [op for op in self.ops if op.where == "convlower"]
        theirs = [op for op in self.ops if op.where == "torch"]
        removed = sum(1 for op in self.ops if op.where == "removed")
        lines = [f"{len(ours)} ConvLower calls computing "
                 f"{len(ours) + sum(len(op.fused) for op in ours)} ops of the graph; "
                 f"{len(theirs)} ops on torch"
                 + (f"; {removed} removed (the identity in eval mode)" if removed else ""),
                 f"freed memory: {convlower.memory_policy()}"]
        precision = self._precision_line()
        if precision:
            lines.append(precision)
        sequences = [m for m in self.graph_module.modules() if isinstance(m, FusedSequence)]
        if sequences:
            planned = sum(1 for m in sequences if m.planned_shapes)
            lines.append(f"{len(sequences)} sequence(s) of "
                         f"{sum(len(m.names) for m in sequences)} ConvLower calls, "
                         f"{planned} run as one C call over planned buffers "
                         "(planned by a shape's first call: compile()'s example, "
                         "or the first call of a new shape)")
        for op in self.ops:
            fused = f" + {', '.join(op.fused)}" if op.fused else ""
            where = f" [{op.sequence[len('convlower_'):]}]" if op.sequence else ""
            lines.append(f"  {op.name:32} {op.where:9} {op.what}{fused}{where}")
        return "\n".join(lines)

    def _precision_line(self):
        """precision "bf16": how many layers run in bfloat16 and on what (the
        compiled convolutions' reports say: AMX tiles, VDPBF16PS, or widened
        to f32 on a CPU without AVX512-BF16); None for a float32 model."""
        layers = [m for m in self.graph_module.modules()
                  if isinstance(m, FusedConv) and not m.pooling]
        asked = [m for m in layers if m._bf16_asked]
        if not asked:
            return None
        bf16 = [m for m in asked if m.compute_dtype is not None]
        kernels = [r.get("kernel", "") for m in bf16 for r in m.reports()]
        no_units = not convlower.cpu_units() & {"avx512-bf16", "amx"}
        route = ("AMX tiles (TDPBF16PS)" if any("TDPBF16PS" in k for k in kernels)
                 else "AVX512-BF16's VDPBF16PS" if any("VDPBF16PS" in k for k in kernels)
                 else "widened to f32 FMAs (no AVX512-BF16)" if kernels
                 else "this CPU has neither AVX512-BF16 nor AMX" if no_units
                 else "not compiled yet")
        undecided = sum(1 for m in asked if m._bf16_undecided)
        kept = sum(1 for m in self.graph_module.modules()
                   if isinstance(m, FusedConv) and m.bf16_output)
        return (f"precision bf16: {len(bf16)} of {len(layers)} layers in bfloat16 "
                f"({route})" + (f", {undecided} not called yet" if undecided else "")
                + ("; the others float32 (convlower.torch.bf16_pays)"
                   if len(bf16) < len(layers) else "")
                + (f"; {kept} outputs kept in bfloat16 for the next layers" if kept else ""))


def _only_user(node):
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _module(graph_module, node):
    if node is None or node.op != "call_module":
        return None
    return graph_module.get_submodule(node.target)


def _clamp_bounds(graph_module, node):
    """(min, max) if `node` is a clamp of one tensor and nothing else
    (nn.ReLU6, nn.Hardtanh, F.relu6, F.hardtanh with constant bounds), else
    None."""
    if node is None or not node.args:
        return None
    if node.op == "call_module" and len(node.args) == 1:
        module = _module(graph_module, node)
        if isinstance(module, torch.nn.Hardtanh):        # ReLU6 is one
            return float(module.min_val), float(module.max_val)
        return None
    if node.op != "call_function" or node.target not in _HARDTANHS:
        return None
    low, high = _HARDTANHS[node.target]
    names = ("min_val", "max_val", "inplace") if node.target is F.hardtanh else ("inplace",)
    values = dict(zip(names, node.args[1:]), **node.kwargs)
    if len(node.args) > 1 + len(names) or not set(values) <= set(names):
        return None
    low, high = values.get("min_val", low), values.get("max_val", high)
    if not all(isinstance(v, (int, float)) for v in (low, high)) or low > high:
        return None
    return float(low), float(high)


def _is_plain_relu(graph_module, node):
    """A ReLU of one tensor and nothing else (F.relu(x, inplace=True) too:
    the fused result is a new tensor either way)."""
    if node is None or len(node.args) != 1:
        return False
    if node.op == "call_module":
        return isinstance(_module(graph_module, node), torch.nn.ReLU)
    if node.op == "call_function":
        return node.target in _RELUS and set(node.kwargs) <= {"inplace"}
    return node.op == "call_method" and node.target in ("relu", "relu_") and not node.kwargs


def _residual_of(node, chain_end):
    """The other operand if `node` adds a tensor to `chain_end` (a + b, torch.add
    without alpha), else None."""
    if node is None or node.op != "call_function" or node.target not in _ADDS or \
            node.kwargs or len(node.args) != 2:
        return None
    a, b = node.args
    other = b if a is chain_end else a if b is chain_end else None
    return other if isinstance(other, torch.fx.Node) and other is not chain_end else None


def _folding_batch_norm(graph_module, node, conv):
    """The eval-mode BatchNorm module `node` calls, if it can fold into `conv`."""
    bn = _module(graph_module, node)
    if isinstance(bn, _BATCH_NORMS) and not bn.training and bn.track_running_stats \
            and bn.running_mean is not None and bn.num_features == conv.out_channels \
            and len(node.args) == 1 and not node.kwargs:
        return bn
    return None


def _refusal(conv):
    """Why this convolution module stays torch's, or ''."""
    if conv.padding_mode != "zeros":
        return f"padding_mode {conv.padding_mode!r}"
    if conv.weight.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return f"dtype {conv.weight.dtype}"
    return ""


def _describe(graph_module, node):
    if node.op == "call_module":
        return type(_module(graph_module, node)).__name__
    if node.op == "call_function":
        return getattr(node.target, "__name__", str(node.target))
    return f".{node.target}()"


def _trace(model):
    try:
        return torch.fx.symbolic_trace(model)
    except Exception as e:  # fx raises TraceError, TypeError, ... on dynamic code
        raise convlower.BadInputError(
            f"torch.fx cannot trace {type(model).__name__} ({type(e).__name__}: {e}); "
            "convlower.patch(model) runs its convolutions through ConvLower without "
            "tracing") from None


def _replace_chain(graph_module, chain, fused, args, index):
    """Puts `fused` in the graph as submodule convlower_<index>, called with
    `args` where the chain's last node was, and removes the chain; returns
    what it folded (every node after the first, described)."""
    graph = graph_module.graph
    folded = [f"{_describe(graph_module, n)} {n.name}" for n in chain[1:]]
    name = f"convlower_{index}"
    graph_module.add_submodule(name, fused)
    with graph.inserting_after(chain[-1]):
        replacement = graph.call_module(name, args=args)
    chain[-1].replace_all_uses_with(replacement)
    for dead in reversed(chain):
        graph.erase_node(dead)
    return folded


def _fuse_chain(graph_module, node, conv, target, threads, layout, precision, index):
    """conv [-> BatchNorm] [-> + residual] [-> ReLU | ReLU6 | Hardtanh], each
    read by the next alone, as one FusedConv call; returns its record and the
    nodes it replaced."""
    chain, relu, clamp, residual = [node], False, None, None
    follower = _only_user(node)
    batch_norm = _folding_batch_norm(graph_module, follower, conv)
    if batch_norm is not None:
        chain.append(follower)
        follower = _only_user(follower)
    residual = _residual_of(follower, chain[-1])
    if residual is not None:
        chain.append(follower)
        follower = _only_user(follower)
    if _is_plain_relu(graph_module, follower):
        relu = True
        chain.append(follower)
    else:
        clamp = _clamp_bounds(graph_module, follower)
        if clamp is not None:
            chain.append(follower)
    fused = FusedConv(conv, batch_norm, relu, target, threads, layout,
                      residual=residual is not None, precision=precision,
                      clamp=clamp)
    args = (node.args[0],) if residual is None else (node.args[0], residual)
    folded = _replace_chain(graph_module, chain, fused, args, index)
    return OpRecord(node.name, type(conv).__name__, "convlower", folded), chain


def _fuse_linear(graph_module, node, linear, target, threads, precision, index):
    """linear [-> ReLU], the ReLU read alone, as one FusedLinear call."""
    chain = [node]
    follower = _only_user(node)
    relu = _is_plain_relu(graph_module, follower)
    if relu:
        chain.append(follower)
    fused = FusedLinear(linear, relu, target, threads, precision)
    folded = _replace_chain(graph_module, chain, fused, (node.args[0],), index)
    return OpRecord(node.name, "Linear", "convlower", folded), chain


def _is_global_pool(graph_module, node):
    """Whether `node` averages each channel to 1x1: nn.AdaptiveAvgPool2d(1)
    or F.adaptive_avg_pool2d(x, 1), of one tensor ((1, 1) as well)."""
    ones = (1, (1, 1), [1, 1])
    if node.op == "call_module":
        module = _module(graph_module, node)
        return (type(module) is torch.nn.AdaptiveAvgPool2d and module.output_size in ones
                and len(node.args) == 1 and not node.kwargs)
    if node.op != "call_function" or node.target is not F.adaptive_avg_pool2d:
        return False
    args = dict(zip(("input", "output_size"), node.args), **node.kwargs)
    return (set(args) == {"input", "output_size"} and args["output_size"] in ones
            and isinstance(args["input"], torch.fx.Node))


def _is_spatial_mean(node):
    """Whether `node` is x.mean((2, 3)) or torch.mean(x, (2, 3)) of one
    tensor, not keeping the dims and of no other dtype."""
    if not ((node.op == "call_method" and node.target == "mean")
            or (node.op == "call_function" and node.target is torch.mean)):
        return False
    args = dict(zip(("input", "dim", "keepdim"), node.args), **node.kwargs)
    dims = args.get("dim")
    return (set(args) <= {"input", "dim", "keepdim"} and isinstance(args.get("input"), torch.fx.Node)
            and isinstance(dims, (tuple, list)) and sorted(dims) == [2, 3]
            and args.get("keepdim", False) is False)


def _is_flatten_from_1(node, source):
    """Whether `node` is torch.flatten(source, 1) or source.flatten(1)."""
    if node is None or not node.args or node.args[0] is not source or not (
            (node.op == "call_function" and node.target is torch.flatten)
            or (node.op == "call_method" and node.target == "flatten")):
        return False
    dims = dict(zip(("start_dim", "end_dim"), node.args[1:]), **node.kwargs)
    return (len(node.args) <= 3 and set(dims) <= {"start_dim", "end_dim"}
            and dims.get("start_dim", 0) == 1 and dims.get("end_dim", -1) == -1)


def _fuse_global_pool(graph_module, node, target, threads, layout, index):
    """global average pooling -> flatten(1), the flatten read alone, as one
    FusedGlobalPool call; None where the flatten is not there."""
    follower = _only_user(node)
    if not _is_flatten_from_1(follower, node):
        return None
    chain = [node, follower]
    fused = FusedGlobalPool(target, threads, layout)
    folded = _replace_chain(graph_module, chain, fused, (node.args[0],), index)
    return OpRecord(node.name, _describe(graph_module, node) if node.op != "call_module"
                    else "AdaptiveAvgPool2d", "convlower", folded), chain


def _pair(v):
    """A pooling's size argument as an (H, W) pair of ints (None: not one)."""
    v = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    return v if len(v) == 2 and all(type(e) is int for e in v) else None


def _pool_args(graph_module, node, module_type, function, names):
    """The arguments of a pooling of one tensor, the module (`module_type`,
    its attributes `names` after "input") or the functional form
    (`function`, by position or keyword), as {name: value}; None for any
    other node."""
    if node.op == "call_module":
        module = _module(graph_module, node)
        if type(module) is not module_type or len(node.args) != 1 or node.kwargs:
            return None
        return {name: getattr(module, name) for name in names[1:]}
    if node.op != "call_function" or node.target is not function \
            or len(node.args) > len(names):
        return None
    args = dict(zip(names, node.args), **node.kwargs)
    if not set(args) <= set(names) or not isinstance(args.get("input"), torch.fx.Node) \
            or "kernel_size" not in args:
        return None
    return args


def _pool_window(args, dilated=False):
    """The (kernel, stride, padding[, dilation]) pairs of a pooling's
    arguments, torch's defaults filled in (stride: the kernel); None where
    one is not an int pair, or the padding is over half the window (torch
    refuses it)."""
    pairs = [_pair(args["kernel_size"]), _pair(args.get("stride") or args["kernel_size"]),
             _pair(args.get("padding", 0))]
    if dilated:
        pairs.append(_pair(args.get("dilation", 1)))
    if any(p is None for p in pairs):
        return None
    kernel, stride, padding = pairs[:3]
    if min(kernel + stride + (pairs[3] if dilated else ())) < 1 or min(padding) < 0 \
            or any(2 * p > k for p, k in zip(padding, kernel)):
        return None
    return tuple(pairs)


def _avg_pool_window(graph_module, node):
    """The (kernel, stride, padding) pairs of an average pooling of one
    tensor that FusedAvgPool computes: nn.AvgPool2d or F.avg_pool2d with the
    padding counted, sizes rounded down, no divisor override; None for any
    other node (those run on torch)."""
    args = _pool_args(graph_module, node, torch.nn.AvgPool2d, F.avg_pool2d,
                      ("input", "kernel_size", "stride", "padding", "ceil_mode",
                       "count_include_pad", "divisor_override"))
    if args is None or args.get("ceil_mode", False) \
            or not args.get("count_include_pad", True) \
            or args.get("divisor_override") is not None:
        return None
    return _pool_window(args)


def _max_pool_window(graph_module, node):
    """The (kernel, stride, padding, dilation) pairs and ceil_mode of a max
    pooling of one tensor that FusedMaxPool computes: nn.MaxPool2d or
    F.max_pool2d with no indices returned; None for any other node (those
    run on torch)."""
    args = _pool_args(graph_module, node, torch.nn.MaxPool2d, F.max_pool2d,
                      ("input", "kernel_size", "stride", "padding", "dilation",
                       "ceil_mode", "return_indices"))
    if args is None or args.get("return_indices", False) \
            or type(args.get("ceil_mode", False)) is not bool:
        return None
    window = _pool_window(args, dilated=True)
    return None if window is None else window + (args.get("ceil_mode", False),)


def _fuse_max_pool(graph_module, node, window, target, threads, layout, index):
    """A max pooling (_max_pool_window) as one FusedMaxPool call."""
    fused = FusedMaxPool(*window, target, threads, layout)
    folded = _replace_chain(graph_module, [node], fused, (node.args[0],), index)
    return OpRecord(node.name, "MaxPool2d" if node.op == "call_module"
                    else _describe(graph_module, node), "convlower", folded), [node]


def _fuse_avg_pool(graph_module, node, window, target, threads, layout, index):
    """An average pooling (_avg_pool_window) as one FusedAvgPool call."""
    fused = FusedAvgPool(*window, target, threads, layout)
    folded = _replace_chain(graph_module, [node], fused, (node.args[0],), index)
    return OpRecord(node.name, "AvgPool2d" if node.op == "call_module"
                    else _describe(graph_module, node), "convlower", folded), [node]


_CATS = {torch.cat, torch.concat}
# The compiled layers whose output a FusedCat takes: images, computed on
# the CPU through the C API (a FusedLinear's rows are no channels).
_IMAGE_LAYERS = (FusedConv, FusedAvgPool, FusedMaxPool)


def _cat_args(node):
    """(tensors, dim) of a torch.cat / torch.concat node (dim 0 where not
    given; tensors None where it has other arguments), else None."""
    if node.op != "call_function" or node.target not in _CATS:
        return None
    args = dict(zip(("tensors", "dim"), node.args), **node.kwargs)
    if set(args) - {"tensors", "dim"}:
        return None, None
    return args.get("tensors"), args.get("dim", 0)


def _cat_inputs(graph_module, node):
    """For a torch.cat node: the nodes it concatenates where FusedCat takes
    them (along dim 1, two or more, each a compiled image layer's output or
    a FusedCat's, read by this concatenation alone), else why not (a
    string); None for any other node."""
    args = _cat_args(node)
    if args is None:
        return None
    tensors, dim = args
    if not isinstance(tensors, (list, tuple)):
        return "its arguments"
    if dim != 1:
        return f"along dim {dim}, not the channels"
    if len(tensors) < 2 or len(set(tensors)) != len(tensors):
        return "fewer than two distinct inputs"
    for t in tensors:
        module = _module(graph_module, t) if isinstance(t, torch.fx.Node) \
            and t.op == "call_module" else None
        if not isinstance(module, _IMAGE_LAYERS + (FusedCat,)) or (
                isinstance(module, FusedConv) and module.rank != 2):
            return f"{getattr(t, 'name', t)} is not a compiled image layer"
        if len(t.users) != 1:
            return f"{t.name} is read elsewhere too"
    return list(tensors)


def _cat_norm(graph_module, node):
    """For torch.cat(tensors, 1) read alone by an eval-mode BatchNorm2d,
    itself read alone by a ReLU or not (DenseNet's norm1 / relu1 of the
    features so far, its transitions' and its last norm): (tensors, the
    BatchNorm's node, its module, the ReLU's node or None); None for any
    other node."""
    args = _cat_args(node)
    if args is None:
        return None
    tensors, dim = args
    if dim != 1 or not isinstance(tensors, (list, tuple)) or not tensors \
            or not all(isinstance(t, torch.fx.Node) for t in tensors):
        return None
    follower = _only_user(node)
    bn = _module(graph_module, follower) if follower is not None \
        and follower.op == "call_module" else None
    if (type(bn) is not torch.nn.BatchNorm2d or bn.training or not bn.track_running_stats
            or bn.running_mean is None or len(follower.args) != 1 or follower.kwargs
            or bn.weight is not None and bn.weight.dtype != torch.float32):
        return None
    relu = _only_user(follower)
    return tensors, follower, bn, relu if _is_plain_relu(graph_module, relu) else None


def _fuse_cat_norm(graph_module, node, tensors, bn_node, bn, relu_node, target, threads,
                   layout, index):
    """A concatenation, its BatchNorm and ReLU (_cat_norm) as one
    FusedCatNorm call."""
    chain = [node, bn_node] + ([relu_node] if relu_node is not None else [])
    fused = FusedCatNorm(bn, relu_node is not None, target, threads, layout)
    folded = _replace_chain(graph_module, chain, fused, tuple(tensors), index)
    return OpRecord(node.name, "cat (channels)", "convlower", folded), chain


def _fuse_cat(graph_module, node, tensors, index):
    """A concatenation (_cat_inputs) as one FusedCat call."""
    _replace_chain(graph_module, [node], FusedCat(), tuple(tensors), index)
    return OpRecord(node.name, "cat (channels)", "convlower"), [node]


def _fuse_mean(graph_module, node, target, threads, layout, index):
    """x.mean((2, 3)) (_is_spatial_mean) as one FusedMean call."""
    _replace_chain(graph_module, [node], FusedMean(target, threads, layout),
                   (node.args[0],), index)
    return OpRecord(node.name, _describe(graph_module, node), "convlower"), [node]


_DROPOUTS = (torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d,
             torch.nn.Dropout3d, torch.nn.AlphaDropout, torch.nn.FeatureAlphaDropout)


def _remove_dropouts(graph_module):
    """Removes every call of a Dropout module in eval mode (the identity);
    returns their records."""
    removed = []
    for node in list(graph_module.graph.nodes):
        module = _module(graph_module, node)
        if isinstance(module, _DROPOUTS) and not module.training \
                and len(node.args) == 1 and not node.kwargs:
            node.replace_all_uses_with(node.args[0])
            graph_module.graph.erase_node(node)
            removed.append(OpRecord(node.name, type(module).__name__, "removed"))
    return removed


def _fuse(graph_module, target, threads, layout, precision):
    """Rewrites every convolution chain, Linear, global average pooling and
    average pooling (and removes eval-mode Dropout); returns the records of
    the graph's ops in order."""
    order = {node.name: i for i, node in enumerate(graph_module.graph.nodes)}
    removed = _remove_dropouts(graph_module)
    records, erased = {}, set()
    index = 0
    for node in list(graph_module.graph.nodes):
        if node in erased:
            continue
        # (DenseNet's cat -> BatchNorm is a FusedCatNorm whatever its inputs.)
        norm = _cat_norm(graph_module, node) if target in ("cpu", "auto") else None
        concatenated = _cat_inputs(graph_module, node) if norm is None else None
        window = _avg_pool_window(graph_module, node)
        max_window = _max_pool_window(graph_module, node)
        module = _module(graph_module, node)
        if norm is not None:
            record, replaced = _fuse_cat_norm(graph_module, node, *norm, target, threads,
                                              layout, index)
        elif isinstance(concatenated, str):
            records[node.name] = OpRecord(node.name, f"cat ({concatenated})", "torch")
            continue
        elif concatenated is not None:
            record, replaced = _fuse_cat(graph_module, node, concatenated, index)
        elif _is_spatial_mean(node):
            record, replaced = _fuse_mean(graph_module, node, target, threads, layout, index)
        elif _is_global_pool(graph_module, node):
            fused = _fuse_global_pool(graph_module, node, target, threads, layout, index)
            if fused is None:
                continue             # no flatten after it: torch's
            record, replaced = fused
        elif window is not None:
            record, replaced = _fuse_avg_pool(graph_module, node, window, target,
                                              threads, layout, index)
        elif max_window is not None and target in ("cpu", "auto") and layout == "nhwc":
            # The CPU route's vectorized pooling is channels-last's
            # (conv-lower-max-pool-rows); "nchw" and the GPU keep torch's.
            record, replaced = _fuse_max_pool(graph_module, node, max_window, target,
                                              threads, layout, index)
        elif len(node.args) != 1 or node.kwargs:
            continue                 # not one input
        elif type(module) is torch.nn.Linear and module.weight.dtype == torch.float32:
            record, replaced = _fuse_linear(graph_module, node, module, target, threads,
                                            precision, index)
        elif type(module) in _CONV_RANK:
            reason = _refusal(module)
            if reason:
                records[node.name] = OpRecord(
                    node.name, f"{type(module).__name__} ({reason})", "torch")
                continue
            record, replaced = _fuse_chain(graph_module, node, module, target, threads,
                                           layout, precision, index)
        else:
            continue
        erased.update(replaced)
        records[f"convlower_{index}"] = record
        index += 1
    ops = []
    for node in graph_module.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        record = records.get(node.name) or \
            OpRecord(node.name, _describe(graph_module, node), "torch")
        record.node = node.name
        ops.append(record)
    ops.extend(removed)
    ops.sort(key=lambda op: order.get(op.name, len(order)))
    return ops


def _layer_chains(graph_module):
    """Runs of FusedConv calls next to each other in the graph, cut so that
    only a run's last node is read after it: the chains FusedSequence runs
    (two layers or more)."""
    runs, run = [], []
    for node in graph_module.graph.nodes:
        if (node.op == "call_module"
                and type(_module(graph_module, node)) in (FusedConv, FusedGlobalPool, FusedMean,
                                                          FusedAvgPool, FusedMaxPool,
                                                          FusedLinear, FusedCat,
                                                          FusedCatNorm)
                and all(isinstance(a, torch.fx.Node) for a in node.args)
                and not node.kwargs):
            run.append(node)
            continue
        runs.append(run)
        run = []
    runs.append(run)
    chains, work = [], [r for r in runs if len(r) > 1]
    while work:
        chain = work.pop()
        members = set(chain)
        read_after = next((i for i, n in enumerate(chain[:-1])
                           if any(u not in members for u in n.users)), None)
        if read_after is None:
            chains.append(chain)
        else:        # each piece is cut again: the second one reads the first
            work += [p for p in (chain[:read_after + 1], chain[read_after + 1:])
                     if len(p) > 1]
    order = {node: i for i, node in enumerate(graph_module.graph.nodes)}
    return sorted(chains, key=lambda c: order[c[0]])


def _sequence(graph_module, ops):
    """Puts each chain of _layer_chains in the graph as one FusedSequence
    call (submodule convlower_sequence_<i>, the layers its submodules under
    their names); returns how many."""
    graph = graph_module.graph
    records = {op.node: op for op in ops}
    chains = _layer_chains(graph_module)
    for index, chain in enumerate(chains):
        members = {node: i for i, node in enumerate(chain)}
        inputs = []
        for node in chain:
            for a in node.args:
                if a not in members and a not in inputs:
                    inputs.append(a)
        value = {a: i for i, a in enumerate(inputs)}
        value.update({node: len(inputs) + i for i, node in enumerate(chain)})
        refs = [tuple(value[a] for a in n.args) for n in chain]
        names = [node.target for node in chain]
        layers = [graph_module.get_submodule(name) for name in names]
        name = f"convlower_sequence_{index}"
        graph_module.add_submodule(name, FusedSequence(names, layers, refs, len(inputs)))
        with graph.inserting_after(chain[-1]):
            call = graph.call_module(name, args=tuple(inputs))
        chain[-1].replace_all_uses_with(call)
        for node in reversed(chain):
            graph.erase_node(node)
        for layer_name in names:
            graph_module.delete_submodule(layer_name)
            records[layer_name].sequence = name
    return len(chains)


def _views_to_reshapes(graph_module):
    """x.view(shape) -> x.reshape(shape). The activations are channels_last
    tensors here, and view() refuses a shape that crosses their strides
    (ShuffleNet's channel shuffle: [N, C, H, W] -> [N, g, C/g, H, W]), where
    reshape() copies; where view() would succeed, reshape() returns the same
    view. view(dtype) is left alone."""
    for node in graph_module.graph.nodes:
        if (node.op == "call_method" and node.target == "view" and not node.kwargs
                and not (len(node.args) == 2 and isinstance(node.args[1], torch.dtype))):
            node.target = "reshape"


def compile(model, example_inputs=None, *, target="cpu", threads=0, layout="nhwc",
            precision="f32", retain_memory=True, sequences=True):
    """Traces `model` with torch.fx and returns a CompiledModel whose
    convolutions (with their BatchNorm and ReLU) run through ConvLower.

    example_inputs: a tuple of tensors the model takes; when given, the
    graph runs once on them without computing its convolutions (their
    outputs are left uninitialised; the torch ops between them run), so
    that every convolution is compiled and its weights packed, and every
    chain's buffers planned, before compile() returns (otherwise on the
    first call of each input shape); where an op between the layers fails
    on those outputs, the example runs as a forward instead. target,
    threads: as convlower.conv2d (target "cpu" by default: inference on this
    process's cores). layout: what the 2-D convolutions compute on and hand
    on, "nhwc" (channels-last: torch's channels_last memory format between
    them) or "nchw". precision: "f32", or "bf16": float32 convolutions and
    Linear layers compute on bfloat16 weights and inputs with float32
    accumulation and epilogue (AMX tiles where the CPU has AMX, else its
    AVX512-BF16 dot product where it has one; on a CPU with neither the
    GEMMs stay float32), where convlower.torch.bf16_pays; inside a
    sequence the activations that only bf16 layers read are rounded to
    bfloat16 by the layer writing them and passed on as they are (the logits
    stay float32; within about 1e-2 of float32's). The model must be in eval
    mode. The weights (BatchNorm folded in) are read when compile() runs:
    compile again after changing the model's. retain_memory: keep the process's freed memory for reuse
    (convlower.retain_freed_memory: without it, glibc hands each forward's
    activations fresh pages, a page fault every 4 KiB). sequences: run each
    chain of compiled layers (only its last output read after it) as one C
    call over buffers planned per input shape (FusedSequence); False: one
    call per layer, each into a fresh output.
    """
    if model.training:
        raise convlower.BadInputError(
            f"{type(model).__name__} is in training mode: compile() folds BatchNorm "
            "with its running statistics; call model.eval() first")
    graph_module = _trace(model)
    if layout not in ("nchw", "nhwc"):
        raise convlower.BadInputError(f"layout {layout!r}: expected 'nhwc' or 'nchw'")
    _check_precision(precision)
    if retain_memory:
        convlower.retain_freed_memory()
    if layout == "nhwc":
        _views_to_reshapes(graph_module)
    ops = _fuse(graph_module, target, threads, layout, precision)
    if sequences:
        _sequence(graph_module, ops)
    graph_module.graph.lint()
    graph_module.recompile()
    compiled = CompiledModel(graph_module, ops)
    if example_inputs is not None:
        with torch.inference_mode():
            try:
                with _compiling_only():
                    compiled(*example_inputs)
            except Exception:
                # An op between the layers that checks the values it gets
                # (an index taken from a convolution's output) can fail on
                # the uninitialised outputs: the example then runs as a
                # forward, which raises again where the error is real.
                compiled(*example_inputs)
    return compiled
