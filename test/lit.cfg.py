# -*- Python -*-
# lit configuration of the ConvLower regression suite.

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "CONV_LOWER"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs", "consumer"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.conv_lower_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
# No disk cache of compiled code (DiskCache.h) unless a test asks for one:
# every test compiles what it checks, and nothing lands in the home directory.
config.environment["CONVLOWER_CACHE_DIR"] = "off"
config.substitutions.append(("%python", sys.executable))
llvm_config.use_default_substitutions()

# Our tools first, then LLVM's (FileCheck, not, mlir-opt, mlir-runner).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.conv_lower_tools_dir, append_path=True)
tool_dirs = [config.conv_lower_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["conv-opt", "conv-run"], tool_dirs)

def tool_path(name):
    for d in tool_dirs:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return shutil.which(name) or name

# Longer names first: lit substitutes in order, and %mlir_runner is a prefix
# of %mlir_runner_utils.
for lib in ["mlir_runner_utils", "mlir_c_runner_utils"]:
    config.substitutions.append(
        ("%" + lib, os.path.join(config.llvm_lib_dir, "lib" + lib + ".so")))
config.substitutions.append(("%conv_opt", tool_path("conv-opt")))
config.substitutions.append(("%conv_run", tool_path("conv-run")))
config.substitutions.append(("%conv_lower_obj_root", config.conv_lower_obj_root))
config.substitutions.append(("%conv_lower_src_root",
                             os.path.dirname(config.test_source_root)))
config.substitutions.append(("%convlower_capi_test", tool_path("convlower-capi-test")))
config.substitutions.append(("%conv_lower_cpu_opt", tool_path("conv-lower-cpu-opt")))
# The Python package as the build tree holds it (python_packages/convlower,
# with libConvLowerCAPI.so inside): PYTHONPATH=%convlower_python_path.
config.substitutions.append(
    ("%convlower_python_path", os.path.join(config.conv_lower_obj_root, "python_packages")))
config.substitutions.append(("%mlir_opt", tool_path("mlir-opt")))
config.substitutions.append(("%mlir_runner", tool_path("mlir-runner")))

# ptxas from the CUDA toolkit: tests that assemble cubins say `REQUIRES: ptxas`
# and are reported unsupported, with the reason below, where it is absent.
ptxas = shutil.which("ptxas") or os.path.join(config.cuda_toolkit_dir or "/usr/local/cuda", "bin", "ptxas")
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
    llvm_config.with_environment("PATH", os.path.dirname(ptxas), append_path=True)
else:
    lit_config.note("ptxas not found (no CUDA toolkit in /usr/local/cuda): "
                    "tests that need it are UNSUPPORTED")

# cuobjdump (with nvdisasm beside it) for the SASS structure test: the toolkit's,
# or PyPI's wheels that scripts/setup.sh puts under .cache/cuda-tools.
import glob
repo_root = os.path.dirname(config.test_source_root)
cuobjdump = shutil.which("cuobjdump") or next(
    iter(sorted(glob.glob(os.path.join(
        repo_root, ".cache", "cuda-tools", "lib", "python3*", "site-packages",
        "nvidia", "*", "bin", "cuobjdump")))), None)
if cuobjdump and os.path.exists(cuobjdump):
    config.available_features.add("cuobjdump")
    config.substitutions.append(("%cuobjdump", cuobjdump))
else:
    lit_config.note("cuobjdump not found (scripts/setup.sh installs it from PyPI): "
                    "the SASS test is UNSUPPORTED")

# runtime/'s MLIR GPU ABI library, and the test-only fake libcuda (built with
# the runtime's gtests) that lets the ABI run without a GPU.
obj = config.conv_lower_obj_root
convrt_mlir_cuda = os.path.join(obj, "lib", "libconvrt_mlir_cuda.so")
if os.path.exists(convrt_mlir_cuda):
    config.available_features.add("convrt-runtime")
    config.substitutions.append(("%convrt_mlir_cuda", convrt_mlir_cuda))
fake_libcuda = os.path.join(obj, "runtime", "tests", "fakecuda", "libcuda.so.1")
if os.path.exists(fake_libcuda):
    config.available_features.add("fake-libcuda")
# Substituted even when missing, so that a test using it fails rather than
# being skipped.
config.substitutions.append(("%fake_libcuda", fake_libcuda))

# OpenMP runtimes: threaded CPU code (conv-lower-to-llvm{threads}) calls GCC's
# OpenMP ABI (GOMP_parallel), which LLVM's libomp and GCC's libgomp both export.
libomp = os.path.join(config.llvm_lib_dir, "libomp.so")
if os.path.exists(libomp):
    config.available_features.add("libomp")
    config.substitutions.append(("%libomp", libomp))
def shared_library_path(soname):
    """The file ldconfig's cache gives for `soname`, or None."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        return None
    for line in out.splitlines():
        if line.strip().startswith(soname + " ") and "=>" in line:
            return line.split("=>")[-1].strip()
    return None


# The CPU's matrix and dot-product units: tests that run their code
# (VDPBF16PS, VPDPBUSD) say `REQUIRES: avx512-bf16` or `avx512-vnni`; the IR
# and assembly are checked on every machine.
def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


if "avx512_bf16" in cpu_flags():
    config.available_features.add("avx512-bf16")
if "avx512_vnni" in cpu_flags():
    config.available_features.add("avx512-vnni")
# AMX (tests that run TDPBF16PS and TDPBSSD say `REQUIRES: amx`;
# --amx=emulated runs the same tile program on any AVX512-BF16 and
# AVX512-VNNI CPU).
if {"amx_tile", "amx_bf16", "amx_int8"} <= cpu_flags():
    config.available_features.add("amx")

libgomp = shared_library_path("libgomp.so.1")
if libgomp:
    config.available_features.add("libgomp")
    config.substitutions.append(("%libgomp", libgomp))

# The sanitize preset: our tools and libraries carry ASan/UBSan. A test where
# an uninstrumented host (mlir-runner) loads one of our libraries says
# `UNSUPPORTED: sanitize` (ASan's runtime must come first in a process).
if config.conv_lower_sanitize in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("sanitize")
    # Fatal and with stacks, so a report fails the test that caused it.
    # allow_user_poisoning=0: LLVM's allocator, inlined into our instrumented
    # code, poisons slabs that the uninstrumented libMLIR never unpoisons.
    config.environment["ASAN_OPTIONS"] = ("detect_leaks=1:abort_on_error=0:"
                                          "halt_on_error=1:allow_user_poisoning=0")
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"

# A usable GPU is never assumed: `REQUIRES: cuda-device` tests run in bench/gpu.
if os.environ.get("CONV_LOWER_CUDA_DEVICE") == "1":
    config.available_features.add("cuda-device")

# numpy drives the numerical integration tests.
if subprocess.call([sys.executable, "-c", "import numpy"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("numpy")
else:
    lit_config.note("numpy is not importable by %s: numerical tests are UNSUPPORTED" % sys.executable)

# torch and torchvision (Debian's python3-torch / python3-torchvision, which
# scripts/setup.sh installs) drive the Python package's torch tests and the
# end-to-end model test; setuptools and pip its install test.
for module, feature in (("torch", "torch"), ("torchvision", "torchvision"),
                        ("setuptools, pip", "pip")):
    if subprocess.call([sys.executable, "-c", "import " + module],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
        config.available_features.add(feature)
    else:
        lit_config.note("%s is not importable by %s: tests that need it are "
                        "UNSUPPORTED" % (module, sys.executable))
