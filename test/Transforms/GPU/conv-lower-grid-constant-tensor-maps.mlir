// RUN: conv-opt %s --split-input-file --pass-pipeline="builtin.module(gpu.module(llvm.func(conv-lower-grid-constant-tensor-maps)))" -verify-diagnostics | FileCheck %s
//
// The last conv_lower.tensor_maps-many arguments of a kernel become 128-byte,
// 64-byte-aligned by-value parameters marked __grid_constant__; the others and
// kernels without maps are left as they are.

// CHECK-LABEL: llvm.func @two_maps
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-LABEL: llvm.func @no_maps
// CHECK-SAME: (%{{.*}}: !llvm.ptr)
// CHECK-NOT: byval
gpu.module @kernels {
  llvm.func @two_maps(%y: !llvm.ptr, %a: !llvm.ptr, %b: !llvm.ptr) attributes {nvvm.kernel, conv_lower.tensor_maps = [#conv_lower.tensor_map<name = "input_im2col", argument = "input", mode = im2col, dtype = "f16", dims = [64, 8, 8, 1], strides_bytes = [128, 1024, 8192], box = [64, 128], element_strides = [1, 1, 1, 1], lower_corner = [-1, -1], upper_corner = [-1, -1], swizzle = "128B">, #conv_lower.tensor_map<name = "filter_tiled", argument = "filter", mode = tiled, dtype = "f16", dims = [576, 64], strides_bytes = [1152], box = [64, 64], element_strides = [1, 1], swizzle = "128B">]} {
    llvm.return
  }
  llvm.func @no_maps(%y: !llvm.ptr) attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @below {{conv-lower-grid-constant-tensor-maps: argument 0 (a tensor map) is not a pointer}}
  llvm.func @not_a_pointer(%a: i64) attributes {nvvm.kernel, conv_lower.tensor_maps = [#conv_lower.tensor_map<name = "input_im2col", argument = "input", mode = im2col, dtype = "f16", dims = [64, 8, 8, 1], strides_bytes = [128, 1024, 8192], box = [64, 128], element_strides = [1, 1, 1, 1], lower_corner = [-1, -1], upper_corner = [-1, -1], swizzle = "128B">]} {
    llvm.return
  }
}
