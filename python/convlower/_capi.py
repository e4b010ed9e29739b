"""ctypes bindings of ConvLower's C API (include/ConvLower-c/ConvLower.h).

Mirrors the header one to one; the public, Pythonic layer is convlower/__init__.py.
The library is found, in order, at $CONVLOWER_LIBRARY, next to this file (the
build tree's python_packages/convlower and an installed package both keep it
there), or through the dynamic loader's search path.
"""

import ctypes
import ctypes.util
import os

API_VERSION = 10

STATUS_OK, STATUS_BAD_INPUT, STATUS_FAILED = 0, 1, 2
LAYOUTS = {"nchw": 0, "nhwc": 1}
DTYPES = {"f32": 0, "tf32": 1, "f16": 2, "bf16": 3, "i8": 4}
TARGETS = {"auto": 0, "cpu": 1, "cpu-twin": 2, "cuda": 3}
POOLINGS = {"none": 0, "max": 1}
CPU_UNITS = {"avx512-bf16": 1, "avx512-vnni": 2, "amx": 4}
TARGET_NAMES = {v: k for k, v in TARGETS.items()}

_Int64x3 = ctypes.c_int64 * 3


class ConvDesc(ctypes.Structure):
    """struct ConvLowerConvDesc."""
    _fields_ = [
        ("spatialRank", ctypes.c_int32),
        ("batch", ctypes.c_int64),
        ("inChannels", ctypes.c_int64),
        ("outChannels", ctypes.c_int64),
        ("inputSize", _Int64x3),
        ("kernelSize", _Int64x3),
        ("stride", _Int64x3),
        ("dilation", _Int64x3),
        ("padBefore", _Int64x3),
        ("padAfter", _Int64x3),
        ("groups", ctypes.c_int64),
        ("layout", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("inputZeroPoint", ctypes.c_int64),
        ("filterZeroPoint", ctypes.c_int64),
        ("bias", ctypes.c_bool),
        ("residual", ctypes.c_bool),
        ("relu", ctypes.c_bool),
        ("clamp", ctypes.c_bool),
        ("clampMin", ctypes.c_double),
        ("clampMax", ctypes.c_double),
        ("target", ctypes.c_int),
        ("threads", ctypes.c_int32),
        ("chip", ctypes.c_char_p),
        ("constantWeights", ctypes.c_bool),
        ("bf16Output", ctypes.c_bool),
        ("bf16Residual", ctypes.c_bool),
        ("pooling", ctypes.c_int),
    ]


class ConvHandle(ctypes.Structure):
    """struct ConvLowerConv."""
    _fields_ = [("ptr", ctypes.c_void_p)]


class Step(ctypes.Structure):
    """struct ConvLowerStep: one layer of a convlowerRunSteps sequence."""
    _fields_ = [
        ("conv", ConvHandle),
        ("filter", ctypes.c_void_p),
        ("bias", ctypes.c_void_p),
        ("input", ctypes.c_int32),
        ("residual", ctypes.c_int32),
        ("output", ctypes.c_int32),
        ("outputChannels", ctypes.c_int32),
        ("outputChannelOffset", ctypes.c_int32),
    ]


class StringRef(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_char)), ("length", ctypes.c_size_t)]


StringCallback = ctypes.CFUNCTYPE(None, StringRef, ctypes.c_void_p)

LIBRARY_NAMES = ("libConvLowerCAPI.so.10", "libConvLowerCAPI.so")


def _candidates():
    env = os.environ.get("CONVLOWER_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name in LIBRARY_NAMES:
        yield os.path.join(here, name)
    found = ctypes.util.find_library("ConvLowerCAPI")
    if found:
        yield found


def load_library():
    errors = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
            continue
        _declare(lib)
        if lib.convlowerGetApiVersion() != API_VERSION:
            raise ImportError(
                f"{path} implements ConvLower C API version "
                f"{lib.convlowerGetApiVersion()}, this package needs {API_VERSION}: "
                "rebuild (ninja -C build/release convlower-python)")
        return lib, path
    raise ImportError(
        "cannot load libConvLowerCAPI.so (" + "; ".join(errors) + "): build it with "
        "`ninja -C build/release convlower-python` and use PYTHONPATH=build/release/"
        "python_packages, pip-install that directory, or set CONVLOWER_LIBRARY to "
        "the library's path")


def _declare(lib):
    c = ctypes
    desc_p = c.POINTER(ConvDesc)
    sig = {
        "convlowerGetApiVersion": (c.c_int, []),
        "convlowerConvDescInit": (None, [desc_p]),
        "convlowerConvDescOutputSize": (c.c_int, [desc_p, c.POINTER(c.c_int64)]),
        "convlowerConvCreate": (c.c_int, [desc_p, c.POINTER(ConvHandle),
                                          c.POINTER(c.c_bool)]),
        "convlowerConvDestroy": (None, [ConvHandle]),
        "convlowerConvRun": (c.c_int, [ConvHandle, c.c_void_p, c.c_void_p,
                                       c.c_void_p, c.c_void_p]),
        "convlowerConvRunResidual": (c.c_int, [ConvHandle, c.c_void_p, c.c_void_p,
                                               c.c_void_p, c.c_void_p, c.c_void_p]),
        "convlowerRunSteps": (c.c_int, [c.POINTER(Step), c.c_int64,
                                         c.POINTER(c.c_void_p), c.c_int64,
                                         c.POINTER(c.c_double)]),
        "convlowerConvPackWeights": (c.c_int, [ConvHandle, c.c_void_p]),
        "convlowerConvGetSizes": (c.c_int, [ConvHandle] + [c.POINTER(c.c_int64)] * 4),
        "convlowerConvGetTarget": (c.c_int, [ConvHandle]),
        "convlowerConvPrintReport": (c.c_int, [ConvHandle, StringCallback, c.c_void_p]),
        "convlowerGetLastErrorMessage": (c.c_char_p, []),
        "convlowerCacheSize": (c.c_size_t, []),
        "convlowerCacheClear": (None, []),
        "convlowerCacheCapacity": (c.c_size_t, []),
        "convlowerCacheSetCapacity": (None, [c.c_size_t]),
        "convlowerPrintDevices": (None, [StringCallback, c.c_void_p]),
        "convlowerGetOpenMPRuntimePath": (c.c_char_p, []),
        "convlowerGetCpuUnits": (c.c_uint32, []),
        "convlowerDiskCacheDirectory": (c.c_char_p, []),
        "convlowerDiskCacheUsage": (c.c_uint64, [c.POINTER(c.c_size_t)]),
        "convlowerDiskCacheClear": (c.c_size_t, []),
    }
    for name, (restype, argtypes) in sig.items():
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes


def collect_string(call, *args):
    """Calls a C function that reports a string through a callback."""
    parts = []

    def callback(ref, _):
        parts.append(ctypes.string_at(ref.data, ref.length).decode())

    cb = StringCallback(callback)
    result = call(*args, cb, None)
    return result, "".join(parts)
