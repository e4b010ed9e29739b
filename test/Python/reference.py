"""An independent float64 convolution for the Python package's tests (numpy only).

docs/design.md, "Convolution semantics": zero padding (before, after) per
spatial dimension, strides, dilations, groups; an int8 problem subtracts its
zero points (a padded position reads as zx, so it adds 0). NCHW operands are
[N, C, *S] / [F, C/G, *K], NHWC ones [N, *S, C] / [F, *K, C/G].
"""

import itertools

import numpy as np


def conv(x, w, bias=None, stride=None, pad_before=None, pad_after=None,
         dilation=None, groups=1, layout="nchw", zero_points=(0, 0), relu=False,
         residual=None, clamp=None):
    """The epilogue after the bias: + residual (in the output's layout), ReLU,
    clamp (min, max)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    rank = w.ndim - 2
    stride = stride or (1,) * rank
    dilation = dilation or (1,) * rank
    pad_before = pad_before or (0,) * rank
    pad_after = pad_after or (0,) * rank
    if layout == "nhwc":
        x, w = np.moveaxis(x, -1, 1), np.moveaxis(w, -1, 1)
    x = x - zero_points[0]
    w = w - zero_points[1]
    x = np.pad(x, [(0, 0), (0, 0)] + list(zip(pad_before, pad_after)))
    n, c = x.shape[:2]
    f, cg = w.shape[:2]
    kernel = w.shape[2:]
    fg = f // groups
    out = [(x.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
           for i in range(rank)]
    y = np.zeros([n, f] + out)
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg]
        wg = w[g * fg:(g + 1) * fg]
        for tap in itertools.product(*[range(k) for k in kernel]):
            window = tuple(slice(tap[i] * dilation[i],
                                 tap[i] * dilation[i] + stride[i] * (out[i] - 1) + 1,
                                 stride[i]) for i in range(rank))
            patch = xg[(slice(None), slice(None)) + window]
            y[:, g * fg:(g + 1) * fg] += np.einsum(
                "nc...,fc->nf...", patch, wg[(slice(None), slice(None)) + tap])
    if bias is not None:
        y += np.asarray(bias, np.float64).reshape([1, f] + [1] * rank)
    if layout == "nhwc":
        y = np.moveaxis(y, 1, -1)
    if residual is not None:
        y = y + np.asarray(residual, np.float64)
    if relu:
        y = np.maximum(y, 0)
    if clamp is not None:
        y = np.clip(y, *clamp)
    return y


def relative_error(got, want):
    """max |got - want| / max |want| (inf for NaN or a zero reference)."""
    got = np.asarray(got, np.float64)
    scale = np.max(np.abs(want))
    if not np.all(np.isfinite(got)) or scale == 0:
        return float("inf")
    return float(np.max(np.abs(got - want)) / scale)


TOLERANCE = {"f32": 1e-5, "tf32": 1e-3, "f16": 1e-2, "bf16": 1e-2, "i8": 0.0}
