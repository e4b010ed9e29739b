"""convlower.patch(model): a torch model's convolutions through ConvLower.

    import torch, torchvision, convlower
    model = torchvision.models.resnet50().eval()
    with convlower.patch(model), torch.inference_mode():
        logits = model(x)

Every nn.Conv1d/Conv2d/Conv3d module (not the transposed ones) gets a forward
that calls convlower.conv{1,2,3}d with the module's weight, bias, stride,
padding (zeros; other padding modes are applied with torch's F.pad first, as
torch itself does), dilation and groups, and casts the float32 result back to
the input's dtype. ConvLower computes inference only: a call that needs
gradients is refused (strict) or left to torch (strict=False), as is anything
else ConvLower does not take (float64, say); Patch.layers says which.
"""

import time

import torch
import torch.nn.functional as F

import convlower

_CONV_TYPES = {torch.nn.Conv1d: 1, torch.nn.Conv2d: 2, torch.nn.Conv3d: 3}


class LayerRecord:
    """One patched layer: its problem and route, calls, and time in ConvLower."""

    def __init__(self, name, module, rank):
        self.name, self.module, self.rank = name, module, rank
        self.calls = 0
        self.ms = 0.0            # time in the compiled convolution, all calls
        self.fallbacks = 0       # calls left to torch (strict=False)
        self.fallback_reason = ""
        self.input_shape = None
        self.conv = None         # the compiled convolution of the last call
        self.constant = None     # constant_weights: the layer's Conv and packing
        self.bf16 = None         # precision "bf16": (stamp, weight, bias) in bf16
        self.direct = None       # the direct call of the last compiled shape

    @property
    def report(self):
        """The compiled convolution's report (conv-run's JSON keys), or None."""
        return self.conv.report() if self.conv else None

    @property
    def description(self):
        m = self.module
        return (f"{type(m).__name__}({m.in_channels}, {m.out_channels}, "
                f"k={m.kernel_size}, s={m.stride}, p={m.padding}, d={m.dilation}, "
                f"g={m.groups}) on {self.input_shape}")

    def __repr__(self):
        return f"<LayerRecord {self.name}: {self.description}, {self.calls} calls>"


class Patch:
    """The patched model's layers; a context manager that restores on exit."""

    def __init__(self, model, layers):
        self.model, self.layers = model, layers

    def restore(self):
        """Gives the modules torch's forward back; the records stay readable."""
        for record in self.layers:
            record.module.__dict__.pop("forward", None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()
        return False

    def summary(self):
        lines = [f"{'layer':32} {'calls':>5} {'run ms':>9} {'compile ms':>10}  route"]
        for r in self.layers:
            report = r.report
            route = (f"{report['target']}/{report['im2col']}" if report
                     else f"torch ({r.fallback_reason})" if r.fallbacks else "-")
            compile_ms = report["compile_ms"] if report else 0.0
            lines.append(f"{r.name:32} {r.calls:>5} {r.ms:>9.3f} {compile_ms:>10.1f}"
                         f"  {route}")
        return "\n".join(lines)


def _refusal(module, x):
    """Why ConvLower cannot run this call, or ''."""
    if torch.is_grad_enabled() and (x.requires_grad or module.weight.requires_grad):
        return ("ConvLower computes inference only: run the model under "
                "torch.inference_mode() or torch.no_grad()")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return f"dtype {x.dtype} (ConvLower takes float32, float16 and bfloat16)"
    if module.weight.dtype != x.dtype:
        return f"input {x.dtype} with weight {module.weight.dtype}"
    return ""


def bf16_pays(conv, input_shape):
    """Whether precision "bf16" computes this float32 layer on bfloat16
    operands: an ungrouped convolution (or Linear, as a 1x1 one), its GEMM
    on AVX512-BF16's dot product (K = C * kernel in pairs; an odd K, the 7x7
    RGB stem's 147, padded to the next), unless float32 Winograd is faster:
    3x3 stride-1 layers with 64 or more 4x4 output tiles an image (measured
    on Zen 4, compile() forward: 56x56 64 channels 0.51 ms f32 Winograd
    against 0.74 ms bf16; 28x28 128 even; 14x14 256 1.17 against 0.79).
    Where the GEMMs run on AMX tiles (convlower.cpu_units()) there is no
    such exception: TDPBF16PS does 8x VDPBF16PS's work a cycle, twice
    Winograd's 4x saving over f32 FMAs. Depthwise and grouped layers run
    directly on f32 vectors, which bf16 operands only widen. On a CPU with
    neither unit no layer does: its GEMMs would widen bfloat16 to float32
    FMAs, the conversions on top of float32's work (ResNet-50 N1 under
    compile(precision="bf16") took 379 ms against float32's 55 on an AVX2
    Zen 3, bench/models/results-2026-12-06e.md), so they stay float32, as
    OpenVINO's bf16 hint keeps the model there (a compiled chain's
    depthwise layers, float32 vectors either way, still read bf16: see
    FusedConv.bf16_wanted)."""
    if conv.groups != 1:
        return False
    units = convlower.cpu_units()
    if "amx" in units:
        return True
    if "avx512-bf16" not in units:
        return False
    kernel = tuple(conv.kernel_size)
    spatial = tuple(input_shape[2:])
    if (kernel == (3, 3) and tuple(conv.stride) == (1, 1)
            and tuple(conv.dilation) == (1, 1) and len(spatial) == 2):
        padding = conv.padding if isinstance(conv.padding, tuple) else (0, 0)
        out = [spatial[d] + 2 * padding[d] - 2 for d in range(2)]
        if -(-out[0] // 4) * -(-out[1] // 4) >= 64:
            return False
    return True


def _check_precision(precision):
    """compile()'s and patch()'s precision argument, or BadInputError."""
    if precision not in ("f32", "bf16"):
        raise convlower.BadInputError(
            f"precision {precision!r}: expected 'f32' or 'bf16'")


def _bf16_operands(record, module):
    """The layer's weight and bias in bfloat16, converted again only when the
    weight has changed (its storage or version)."""
    stamp = convlower._weights_stamp(module.weight)
    if record.bf16 is None or record.bf16[0] != stamp:
        bias = module.bias.detach().to(torch.bfloat16) if module.bias is not None else None
        record.bf16 = (stamp, module.weight.detach().to(torch.bfloat16), bias)
    return record.bf16[1], record.bf16[2]


class _DirectCall:
    """A compiled layer's call with nothing between torch and the C API: the
    input's and output's storage handed over as they are (compile()'s layers
    and patch()'s). The general path
    (convlower._conv: operand checks, numpy views, the padding rules, the
    cache key) costs about 0.1 ms a call, which is most of a small layer's
    time (a MobileNetV2 forward makes 52 calls of 0.05-0.3 ms). Taken only
    for what the first call established: a float32 (or, precision "bf16",
    bfloat16) CPU tensor of the compiled shape and the weights it packed."""

    # The C API's operand dtype: torch's input dtype, output dtype (16-bit
    # inputs accumulate into a float32 output).
    _DTYPES = {"f32": (torch.float32, torch.float32),
               "bf16": (torch.bfloat16, torch.float32)}

    @classmethod
    def of(cls, conv, x, weight, bias):
        """The direct call of `conv` after a general call with `x`, or None
        where it does not apply (another dtype, a device tensor, an unbatched
        input)."""
        dtype, out_dtype = cls._DTYPES.get(conv.dtype, (None, None))
        if conv.bf16_output:
            out_dtype = torch.bfloat16
        residual_dtype = torch.bfloat16 if conv.bf16_residual else out_dtype
        if (dtype is None or not isinstance(x, torch.Tensor) or x.dtype != dtype
                or x.device.type != "cpu" or tuple(x.shape) != conv.input_shape
                or weight.dtype != dtype or (bias is not None and bias.dtype != dtype)):
            return None
        return cls(conv, dtype, out_dtype, weight, bias if conv.has_bias else None,
                   residual_dtype)

    def __init__(self, conv, dtype, out_dtype, weight, bias, residual_dtype=None):
        self.conv, self.dtype, self.out_dtype = conv, dtype, out_dtype
        self.residual_dtype = residual_dtype or out_dtype
        self.input_shape, self.output_shape = conv.input_shape, conv.output_shape
        self.weight_stamp = convlower._weights_stamp(weight)
        self.weight, self.bias = weight, bias

    def takes(self, x, weight, residual):
        """Whether the call is the compiled one: the input's dtype and shape,
        the packed weights, and a residual (contiguous, of the output's shape
        and the compiled residual dtype) exactly when the compilation adds
        one."""
        if residual is not None and not (
                residual.dtype == self.residual_dtype and residual.shape == self.output_shape
                and residual.is_contiguous()):
            return False
        return (x.dtype == self.dtype and x.device.type == "cpu"
                and x.shape == self.input_shape and weight is self.weight
                and (residual is not None) == self.conv.has_residual
                and convlower._weights_stamp(weight) == self.weight_stamp)

    def __call__(self, x, residual):
        x = x.detach().contiguous()     # what the general path reads too
        y = torch.empty(self.output_shape, dtype=self.out_dtype)
        bias = self.bias.data_ptr() if self.bias is not None else None
        lib = convlower._lib
        if residual is None:
            status = lib.convlowerConvRun(self.conv._handle, x.data_ptr(),
                                          self.weight.data_ptr(), bias, y.data_ptr())
        else:
            status = lib.convlowerConvRunResidual(
                self.conv._handle, x.data_ptr(), self.weight.data_ptr(), bias,
                residual.data_ptr(), y.data_ptr())
        convlower._raise_for(status, "running")
        return y


def _forward(record, target, threads, strict, tf32, precision):
    module = record.module
    torch_forward = type(module).forward

    def forward(x):
        reason = _refusal(module, x)
        if reason:
            if strict:
                raise convlower.BadInputError(f"{record.name}: {reason}")
            record.fallbacks += 1
            record.fallback_reason = reason
            return torch_forward(module, x)
        padding = module.padding
        if module.padding_mode != "zeros":
            x = F.pad(x, module._reversed_padding_repeated_twice,
                      mode=module.padding_mode)
            padding = 0
        record.input_shape = tuple(x.shape)
        weight, bias, xin = module.weight, module.bias, x
        # precision "bf16": float32 ungrouped layers on bfloat16 operands,
        # accumulated into a float32 output (compile()'s rule).
        if (precision == "bf16" and x.dtype == torch.float32
                and bf16_pays(module, x.shape)):
            weight, bias = _bf16_operands(record, module)
            xin = x.to(torch.bfloat16)
        direct = record.direct
        if direct is not None and direct.takes(xin, weight, None):
            start = time.perf_counter()
            y = direct(xin, None)
            record.ms += (time.perf_counter() - start) * 1e3
            record.calls += 1
            return y.to(x.dtype) if y.dtype != x.dtype else y
        try:
            y, conv, ms = convlower._conv(
                record.rank, xin, weight, bias, module.stride,
                padding, module.dilation, module.groups, relu=False,
                layout="nchw", target=target, threads=threads,
                tf32=tf32 and x.dtype == torch.float32, zero_points=None,
                chip=None, constant_layer=record.constant)
        except convlower.BadInputError as e:
            if strict:
                raise convlower.BadInputError(f"{record.name}: {e}") from None
            record.fallbacks += 1
            record.fallback_reason = str(e)
            return torch_forward(module, x)
        # An empty batch compiles nothing: the record keeps its last convolution.
        if conv is not None:
            record.conv = conv
            # Later calls of this shape skip the general path (its operand
            # checks and numpy views cost about 0.1 ms a call).
            record.direct = _DirectCall.of(conv, xin, weight, bias)
        record.ms += ms
        record.calls += 1
        return y.to(x.dtype) if y.dtype != x.dtype else y

    return forward


def patch(model, *, target="auto", threads=0, strict=True, tf32=False,
          constant_weights=True, precision="f32", retain_memory=True):
    """Patches every nn.Conv1d/2d/3d of `model` in place and returns a Patch.

    target, threads: as convlower.conv2d. strict: refuse (BadInputError) a call
    ConvLower cannot take, naming the layer and why; strict=False leaves such
    calls to torch and counts them in the layer's record. tf32: float32 layers
    use tf32 math on a GPU. constant_weights (the default, as an inference
    engine freezes its weights at load): each layer packs its weight once
    (convlower.Conv's constant_weights) and again when the weight tensor is
    replaced or written in place (torch's version counter; a write through
    `weight.data`, or into an inference tensor, escapes it: patch again after
    one, or pass constant_weights=False, which reads the weights on every
    call, for a model whose weights change that way). After a layer's first
    call of an input shape, its calls hand torch's storage straight to the C
    API. precision: "f32", or "bf16": float32 layers compute on bfloat16
    inputs and weights (converted once per weight version) into float32
    outputs, on AMX tiles or the CPU's AVX512-BF16 dot product where it has
    them, where
    that pays (bf16_pays: not grouped layers, nor large 3x3 layers that
    float32 Winograd computes faster, nor any layer on a CPU with neither).
    retain_memory: keep the process's freed memory for reuse
    (convlower.retain_freed_memory).
    """
    _check_precision(precision)
    if retain_memory:
        convlower.retain_freed_memory()
    layers = []
    for name, module in model.named_modules():
        rank = _CONV_TYPES.get(type(module))
        if rank is None:
            continue
        record = LayerRecord(name or type(module).__name__, module, rank)
        if constant_weights:
            record.constant = {}
        module.forward = _forward(record, target, threads, strict, tf32, precision)
        layers.append(record)
    return Patch(model, layers)
