#!/usr/bin/env python3
"""A CPU-only consumer links no GPU code.

For each library named, follows its link closure among ConvLower's own
libraries (the `<lib>.links` files test/CMakeLists.txt generates from each
target's LINK_LIBRARIES) and fails if
  - the closure holds a GPU room library (MLIRConvLowerGPU*), or
  - an archive in the closure defines or references a GPU symbol: the gpu,
    nvgpu or NVVM dialects, or the implicit-GEMM kernels (conv_lower::igemm).
Prints each library of the closure it read.

usage: check_no_gpu.py OBJ_ROOT LIB...
"""

import os
import re
import subprocess
import sys

GPU_SYMBOL = re.compile(
    r"mlir::(NVVM|nvgpu|gpu)::|mlir::conv_lower::igemm::|"
    r"NVVMDialect|NVGPUDialect|GPUDialect")


def links(obj, lib):
    path = os.path.join(obj, "test", "Layering", lib + ".links")
    if not os.path.exists(path):
        return []  # not one of ours (MLIR, LLVM, system libraries)
    return [l for l in open(path).read().strip().split(";") if l]


def main():
    obj = sys.argv[1]
    errors = []
    seen, todo = set(), list(sys.argv[2:])
    while todo:
        lib = todo.pop()
        if lib in seen:
            continue
        seen.add(lib)
        todo.extend(links(obj, lib))
    ours = sorted(l for l in seen if l.startswith("MLIRConvLower"))
    for lib in ours:
        print("closure: " + lib)
        if lib.startswith("MLIRConvLowerGPU"):
            errors.append(f"{lib} is in the link closure")
        archive = os.path.join(obj, "lib", "lib" + lib + ".a")
        if not os.path.exists(archive):
            errors.append(f"{archive} not found")
            continue
        out = subprocess.run(["nm", "-C", archive], capture_output=True,
                             text=True, check=True).stdout
        hits = sorted({line.split(" ", 2)[-1] for line in out.splitlines()
                       if GPU_SYMBOL.search(line)})
        for h in hits[:5]:
            errors.append(f"{lib}: GPU symbol {h}")
    for e in errors:
        print("error: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
