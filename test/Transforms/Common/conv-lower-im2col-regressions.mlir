// Valid convolutions on which the im2col rewrite used to emit invalid IR or
// fail (issue "Reliability"), checked as IR and run to numbers.
//
// The rewrite, then the rewrite decomposed:
// RUN: conv-opt %s --conv-lower-im2col | FileCheck %s
// RUN: conv-opt %s --conv-lower-im2col --conv-lower-decompose | FileCheck %s --check-prefix=DECOMP
//
// Numbers. The reference is the same pipeline without the rewrite (upstream's
// lowering of the linalg convs); the rewrite's route (im2col + GEMM + fold),
// its decomposed form lowered the upstream way, the conv-shaped
// linalg.generic spelling of every conv, and the implicit GEMM's CPU twin
// (which takes the static convs with a constant init, i8 ones on its s8
// MMA; the others stay
// untouched, with a remark, and take the reference lowering) must all print
// the same numbers (buffer addresses stripped before the diff). EXEC holds
// values computed independently (numpy, float64 direct convolution of the
// formula in docs), so the reference is checked too.
// RUN: conv-opt %s --conv-lower-to-llvm=im2col=0 \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | sed -e 's/base@ = [^ ]*//' > %t.ref
// RUN: FileCheck %s --check-prefix=EXEC < %t.ref
// RUN: conv-opt %s --conv-lower-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | sed -e 's/base@ = [^ ]*//' > %t.im2col
// RUN: diff %t.ref %t.im2col
// RUN: conv-opt %s --conv-lower-im2col --conv-lower-decompose \
// RUN: | conv-opt --conv-lower-to-llvm=im2col=0 \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | sed -e 's/base@ = [^ ]*//' > %t.decomposed
// RUN: diff %t.ref %t.decomposed
// RUN: mlir-opt %s --linalg-generalize-named-ops | conv-opt --conv-lower-im2col \
// RUN: | FileCheck %s --check-prefix=GENERIC
// RUN: mlir-opt %s --linalg-generalize-named-ops | conv-opt --conv-lower-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | sed -e 's/base@ = [^ ]*//' > %t.generic
// RUN: diff %t.ref %t.generic
// RUN: conv-opt %s --conv-lower-implicit-gemm="target=cpu-twin emit-remarks" 2>&1 >/dev/null \
// RUN: | FileCheck %s --check-prefix=TWIN-REMARKS
// RUN: conv-opt %s --conv-lower-implicit-gemm=target=cpu-twin | FileCheck %s --check-prefix=TWIN
// RUN: conv-opt %s --conv-lower-implicit-gemm=target=cpu-twin --conv-lower-to-llvm=im2col=0 \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | sed -e 's/base@ = [^ ]*//' > %t.twin
// RUN: diff %t.ref %t.twin

// Defect 1. Grouped forms with a dynamic batch: collapsing the rank-5 image
// made H, W and C dynamic too (kDynamic in the crop's sizes, slices like
// -9223372036854775799 rows). Only the batch may stay dynamic.

// Example of the issue: ngchw_gfchw, N = 2 (dynamic), G = 3, Cg = 1, Fg = 5,
// 5x8 input, 2x1 kernel, stride 2x1. The last input row is never read.
// CHECK-LABEL: func.func @ngchw_gfchw_dynamic_batch
// CHECK: %[[IMG:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<?x3x1x5x8xf32> into tensor<?x3x5x8xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[IMG]], %{{.*}} : tensor<?x3x5x8xf32>
// CHECK: tensor.extract_slice %[[IMG]][0, 0, 0, 0] [%[[N]], 3, 4, 8] [1, 1, 1, 1] : tensor<?x3x5x8xf32> to tensor<?x3x4x8xf32>
// CHECK: conv_lower.im2col {{.*}} kernel = [2, 1] strides = [2, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 3 k_order = chw : tensor<?x3x4x8xf32> -> tensor<3x?x2xf32>
// CHECK: linalg.batch_matmul
// CHECK: conv_lower.fold {{.*}} output_size = [2, 8] : tensor<3x?x5xf32> -> tensor<?x15x2x8xf32>
func.func @ngchw_gfchw_dynamic_batch(%x: tensor<?x3x1x5x8xf32>, %w: tensor<3x5x1x2x1xf32>) -> tensor<?x3x5x2x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x3x1x5x8xf32>
  %one = arith.constant 1.0 : f32
  %e = tensor.empty(%n) : tensor<?x3x5x2x8xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<?x3x5x2x8xf32>) -> tensor<?x3x5x2x8xf32>
  %y = linalg.conv_2d_ngchw_gfchw {strides = dense<[2, 1]> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<?x3x1x5x8xf32>, tensor<3x5x1x2x1xf32>)
         outs(%f : tensor<?x3x5x2x8xf32>) -> tensor<?x3x5x2x8xf32>
  return %y : tensor<?x3x5x2x8xf32>
}

// The same with a static batch, for the implicit GEMM (which shares the
// analysis).
func.func @ngchw_gfchw_static(%x: tensor<2x3x1x5x8xf32>, %w: tensor<3x5x1x2x1xf32>) -> tensor<2x3x5x2x8xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<2x3x5x2x8xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<2x3x5x2x8xf32>) -> tensor<2x3x5x2x8xf32>
  %y = linalg.conv_2d_ngchw_gfchw {strides = dense<[2, 1]> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<2x3x1x5x8xf32>, tensor<3x5x1x2x1xf32>)
         outs(%f : tensor<2x3x5x2x8xf32>) -> tensor<2x3x5x2x8xf32>
  return %y : tensor<2x3x5x2x8xf32>
}

// ngchw_fgchw, dynamic batch, a zero pad (absorbed) and an arbitrary init
// (added back after the fold).
// CHECK-LABEL: func.func @ngchw_fgchw_dynamic_batch
// CHECK-NOT: tensor.pad
// CHECK: conv_lower.im2col {{.*}} kernel = [2, 2] strides = [1, 2] dilations = [1, 1] padding = [1, 0, 0, 0] groups = 2 k_order = chw : tensor<?x4x5x6xf32> -> tensor<2x?x8xf32>
// CHECK: conv_lower.fold {{.*}} output_size = [5, 3] : tensor<2x?x3xf32> -> tensor<?x6x5x3xf32>
// CHECK: linalg.add ins(%{{.*}}, %{{.*}} : tensor<?x2x3x5x3xf32>, tensor<?x2x3x5x3xf32>)
func.func @ngchw_fgchw_dynamic_batch(%x: tensor<?x2x2x5x6xf32>, %w: tensor<3x2x2x2x2xf32>, %init: tensor<?x2x3x5x3xf32>) -> tensor<?x2x3x5x3xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 0, 1, 0] high[0, 0, 0, 0, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index, %e: index):
    tensor.yield %z : f32
  } : tensor<?x2x2x5x6xf32> to tensor<?x2x2x6x7xf32>
  %y = linalg.conv_2d_ngchw_fgchw {strides = dense<[1, 2]> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%p, %w : tensor<?x2x2x6x7xf32>, tensor<3x2x2x2x2xf32>)
         outs(%init : tensor<?x2x3x5x3xf32>) -> tensor<?x2x3x5x3xf32>
  return %y : tensor<?x2x3x5x3xf32>
}

// nhwgc_gfhwc, dynamic batch, dilated columns.
// CHECK-LABEL: func.func @nhwgc_gfhwc_dynamic_batch
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] : tensor<?x5x4x2x3xf32> into tensor<?x5x4x6xf32>
// CHECK: conv_lower.im2col {{.*}} layout = nhwc kernel = [2, 2] strides = [2, 1] dilations = [1, 2] padding = [0, 0, 0, 0] groups = 2 k_order = hwc : tensor<?x4x4x6xf32> -> tensor<2x?x12xf32>
// CHECK: conv_lower.fold {{.*}} output_size = [2, 2] : tensor<2x?x4xf32> -> tensor<?x2x2x8xf32>
func.func @nhwgc_gfhwc_dynamic_batch(%x: tensor<?x5x4x2x3xf32>, %w: tensor<2x4x2x2x3xf32>) -> tensor<?x2x2x2x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x5x4x2x3xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x2x2x2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x2x2x2x4xf32>) -> tensor<?x2x2x2x4xf32>
  %y = linalg.conv_2d_nhwgc_gfhwc {strides = dense<[2, 1]> : tensor<2xi64>, dilations = dense<[1, 2]> : tensor<2xi64>}
         ins(%x, %w : tensor<?x5x4x2x3xf32>, tensor<2x4x2x2x3xf32>)
         outs(%f : tensor<?x2x2x2x4xf32>) -> tensor<?x2x2x2x4xf32>
  return %y : tensor<?x2x2x2x4xf32>
}

// Defect 2. An output smaller than the formula whose kept columns lie in the
// padding: 3 input columns padded 3 left, 1 right, stride 3, one output
// column, which reads padded column 0 only. Trimming the right pad and then
// cropping the input asked for 3 - 5 = -2 columns; the crop now stops at the
// whole input and the rest comes off the left pad.
// CHECK-LABEL: func.func @nhwc_fhwc_window_in_padding
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [3, 8, 0, 13] [1, 1, 1, 1] : tensor<3x11x3x13xi8> to tensor<3x8x0x13xi8>
// CHECK: conv_lower.im2col {{.*}} kernel = [5, 1] strides = [2, 3] dilations = [2, 1] padding = [1, 1, 0, 0] groups = 1 k_order = hwc : tensor<3x8x0x13xi8> -> tensor<3x65xi8>
// DECOMP-LABEL: func.func @nhwc_fhwc_window_in_padding
// DECOMP-NOT: tensor.pad
// DECOMP: %[[E:.*]] = tensor.empty() : tensor<3x9x1x13xi8>
// DECOMP: %[[Z:.*]] = linalg.fill ins(%{{.*}} : i8) outs(%[[E]] : tensor<3x9x1x13xi8>)
// DECOMP: linalg.generic {{.*}} ins(%[[Z]] : tensor<3x9x1x13xi8>)
// DECOMP-LABEL: func.func @nhwc_fhwc_partly_padding
func.func @nhwc_fhwc_window_in_padding(%x: tensor<3x11x3x13xi8>, %w: tensor<12x5x1x13xi8>, %init: tensor<3x1x1x12xi32>) -> tensor<3x1x1x12xi32> {
  %z = arith.constant 0 : i8
  %p = tensor.pad %x low[0, 1, 3, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %z : i8
  } : tensor<3x11x3x13xi8> to tensor<3x13x7x13xi8>
  %y = linalg.conv_2d_nhwc_fhwc {strides = dense<[2, 3]> : tensor<2xi64>, dilations = dense<[2, 1]> : tensor<2xi64>}
         ins(%p, %w : tensor<3x13x7x13xi8>, tensor<12x5x1x13xi8>)
         outs(%init : tensor<3x1x1x12xi32>) -> tensor<3x1x1x12xi32>
  return %y : tensor<3x1x1x12xi32>
}

// Its neighbour with a 2x2 output: the second column reads input column 0.
// CHECK-LABEL: func.func @nhwc_fhwc_partly_padding
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [3, 10, 1, 13] [1, 1, 1, 1] : tensor<3x11x3x13xi8> to tensor<3x10x1x13xi8>
// CHECK: conv_lower.im2col {{.*}} padding = [1, 3, 0, 0] groups = 1 k_order = hwc : tensor<3x10x1x13xi8> -> tensor<12x65xi8>
func.func @nhwc_fhwc_partly_padding(%x: tensor<3x11x3x13xi8>, %w: tensor<12x5x1x13xi8>) -> tensor<3x2x2x12xi32> {
  %z = arith.constant 0 : i8
  %p = tensor.pad %x low[0, 1, 3, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %z : i8
  } : tensor<3x11x3x13xi8> to tensor<3x13x7x13xi8>
  %five = arith.constant 5 : i32
  %e = tensor.empty() : tensor<3x2x2x12xi32>
  %f = linalg.fill ins(%five : i32) outs(%e : tensor<3x2x2x12xi32>) -> tensor<3x2x2x12xi32>
  %y = linalg.conv_2d_nhwc_fhwc {strides = dense<[2, 3]> : tensor<2xi64>, dilations = dense<[2, 1]> : tensor<2xi64>}
         ins(%p, %w : tensor<3x13x7x13xi8>, tensor<12x5x1x13xi8>)
         outs(%f : tensor<3x2x2x12xi32>) -> tensor<3x2x2x12xi32>
  return %y : tensor<3x2x2x12xi32>
}

// The defect-2 shape in f32 with a constant init: the implicit GEMM takes it.
func.func @nhwc_fhwc_window_in_padding_f32(%x: tensor<3x11x3x13xf32>, %w: tensor<12x5x1x13xf32>) -> tensor<3x1x1x12xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 3, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %z : f32
  } : tensor<3x11x3x13xf32> to tensor<3x13x7x13xf32>
  %seven = arith.constant 7.0 : f32
  %e = tensor.empty() : tensor<3x1x1x12xf32>
  %f = linalg.fill ins(%seven : f32) outs(%e : tensor<3x1x1x12xf32>) -> tensor<3x1x1x12xf32>
  %y = linalg.conv_2d_nhwc_fhwc {strides = dense<[2, 3]> : tensor<2xi64>, dilations = dense<[2, 1]> : tensor<2xi64>}
         ins(%p, %w : tensor<3x13x7x13xf32>, tensor<12x5x1x13xf32>)
         outs(%f : tensor<3x1x1x12xf32>) -> tensor<3x1x1x12xf32>
  return %y : tensor<3x1x1x12xf32>
}

// Defect 3. The stride skips every real column: 2 columns, left pad 1,
// 1-wide kernel, stride 3; the one output column reads the pad. The input is
// cropped to nothing; the decomposition used to pad that empty image with a
// tensor.pad whose bufferization inserts it at offset 1 of a 1-wide buffer
// ("offset 3 is out-of-bounds"); it is now a zero fill.
// CHECK-LABEL: func.func @ngchw_fgchw_stride_skips_input
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [2, 6, 4, 0] [1, 1, 1, 1] : tensor<2x6x4x2xf32> to tensor<2x6x4x0xf32>
// CHECK: conv_lower.im2col {{.*}} kernel = [2, 1] strides = [1, 3] dilations = [1, 1] padding = [0, 1, 0, 0] groups = 2 k_order = chw : tensor<2x6x4x0xf32> -> tensor<2x6x6xf32>
// DECOMP-LABEL: func.func @ngchw_fgchw_stride_skips_input
// DECOMP-NOT: tensor.pad
// DECOMP: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x6x4x1xf32>)
// DECOMP-LABEL: func.func @main
func.func @ngchw_fgchw_stride_skips_input(%x: tensor<2x2x3x4x2xf32>, %w: tensor<3x2x3x2x1xf32>) -> tensor<2x2x3x3x1xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 0, 0, 1] high[0, 0, 0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index, %e: index):
    tensor.yield %z : f32
  } : tensor<2x2x3x4x2xf32> to tensor<2x2x3x4x3xf32>
  %q = arith.constant 0.25 : f32
  %e = tensor.empty() : tensor<2x2x3x3x1xf32>
  %f = linalg.fill ins(%q : f32) outs(%e : tensor<2x2x3x3x1xf32>) -> tensor<2x2x3x3x1xf32>
  %y = linalg.conv_2d_ngchw_fgchw {strides = dense<[1, 3]> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%p, %w : tensor<2x2x3x4x3xf32>, tensor<3x2x3x2x1xf32>)
         outs(%f : tensor<2x2x3x3x1xf32>) -> tensor<2x2x3x3x1xf32>
  return %y : tensor<2x2x3x3x1xf32>
}

// Every conv above, spelled as a linalg.generic, is rewritten the same way.
// GENERIC-COUNT-8: conv_lower.im2col
// GENERIC-NOT: conv_lower.im2col

// The twin takes the four static convs with a constant init
// (@ngchw_gfchw_static, @nhwc_fhwc_partly_padding (i8, on the s8 MMA),
// @nhwc_fhwc_window_in_padding_f32, @ngchw_fgchw_stride_skips_input); the
// rest is left untouched with a remark naming why.
// TWIN-REMARKS-COUNT-3: remark: conv-lower-implicit-gemm: left untouched: the kernel needs static shapes
// TWIN-REMARKS-COUNT-1: remark: conv-lower-implicit-gemm: left untouched: the convolution's init must be a constant fill
// TWIN-REMARKS-NOT: remark
// TWIN-LABEL: func.func @ngchw_gfchw_dynamic_batch
// TWIN: linalg.conv_2d_ngchw_gfchw
// TWIN-LABEL: func.func @ngchw_gfchw_static
// TWIN-NOT: linalg.conv
// TWIN-LABEL: func.func @ngchw_fgchw_dynamic_batch
// TWIN: linalg.conv_2d_ngchw_fgchw
// TWIN-LABEL: func.func @nhwgc_gfhwc_dynamic_batch
// TWIN: linalg.conv_2d_nhwgc_gfhwc
// TWIN-LABEL: func.func @nhwc_fhwc_window_in_padding(
// TWIN: linalg.conv_2d_nhwc_fhwc
// TWIN-LABEL: func.func @nhwc_fhwc_partly_padding
// TWIN-NOT: linalg.conv
// TWIN-LABEL: func.func @nhwc_fhwc_window_in_padding_f32
// TWIN-NOT: linalg.conv
// TWIN-LABEL: func.func @ngchw_fgchw_stride_skips_input
// TWIN-NOT: linalg.conv
// TWIN-LABEL: func.func @pattern4

//===----------------------------------------------------------------------===//
// Data and printing
//===----------------------------------------------------------------------===//

// Operands hold ((sum of index * weight) mod m) - s: small integers, exact in
// f32 (and tf32), and not zero. The weights (13, 2, 17, 19, 1) are no multiple
// of any modulus used, so every index changes the value.
#id4 = affine_map<(a, b, c, d) -> (a, b, c, d)>
#id5 = affine_map<(a, b, c, d, e) -> (a, b, c, d, e)>
func.func @pattern4(%init: tensor<?x?x?x?xf32>, %m: i64, %s: i64) -> tensor<?x?x?x?xf32> {
  %r = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       outs(%init : tensor<?x?x?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %c13 = arith.constant 13 : index
    %c2w = arith.constant 2 : index
    %c17 = arith.constant 17 : index
    %a = arith.muli %i0, %c13 : index
    %b = arith.muli %i1, %c2w : index
    %c = arith.muli %i2, %c17 : index
    %ab = arith.addi %a, %b : index
    %abc = arith.addi %ab, %c : index
    %sum = arith.addi %abc, %i3 : index
    %si = arith.index_cast %sum : index to i64
    %mod = arith.remsi %si, %m : i64
    %v = arith.subi %mod, %s : i64
    %fv = arith.sitofp %v : i64 to f32
    linalg.yield %fv : f32
  } -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}
func.func @pattern5(%init: tensor<?x?x?x?x?xf32>, %m: i64, %s: i64) -> tensor<?x?x?x?x?xf32> {
  %r = linalg.generic {indexing_maps = [#id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
       outs(%init : tensor<?x?x?x?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %i4 = linalg.index 4 : index
    %c13 = arith.constant 13 : index
    %c2w = arith.constant 2 : index
    %c17 = arith.constant 17 : index
    %c19 = arith.constant 19 : index
    %a = arith.muli %i0, %c13 : index
    %b = arith.muli %i1, %c2w : index
    %c = arith.muli %i2, %c17 : index
    %d = arith.muli %i3, %c19 : index
    %ab = arith.addi %a, %b : index
    %abc = arith.addi %ab, %c : index
    %abcd = arith.addi %abc, %d : index
    %sum = arith.addi %abcd, %i4 : index
    %si = arith.index_cast %sum : index to i64
    %mod = arith.remsi %si, %m : i64
    %v = arith.subi %mod, %s : i64
    %fv = arith.sitofp %v : i64 to f32
    linalg.yield %fv : f32
  } -> tensor<?x?x?x?x?xf32>
  return %r : tensor<?x?x?x?x?xf32>
}
func.func @toI8(%t: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xi8> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %d0 = tensor.dim %t, %c0 : tensor<?x?x?x?xf32>
  %d1 = tensor.dim %t, %c1 : tensor<?x?x?x?xf32>
  %d2 = tensor.dim %t, %c2 : tensor<?x?x?x?xf32>
  %d3 = tensor.dim %t, %c3 : tensor<?x?x?x?xf32>
  %e = tensor.empty(%d0, %d1, %d2, %d3) : tensor<?x?x?x?xi8>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%t : tensor<?x?x?x?xf32>) outs(%e : tensor<?x?x?x?xi8>) {
  ^bb0(%in: f32, %out: i8):
    %v = arith.fptosi %in : f32 to i8
    linalg.yield %v : i8
  } -> tensor<?x?x?x?xi8>
  return %r : tensor<?x?x?x?xi8>
}
func.func @toI32(%t: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %d0 = tensor.dim %t, %c0 : tensor<?x?x?x?xf32>
  %d1 = tensor.dim %t, %c1 : tensor<?x?x?x?xf32>
  %d2 = tensor.dim %t, %c2 : tensor<?x?x?x?xf32>
  %d3 = tensor.dim %t, %c3 : tensor<?x?x?x?xf32>
  %e = tensor.empty(%d0, %d1, %d2, %d3) : tensor<?x?x?x?xi32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%t : tensor<?x?x?x?xf32>) outs(%e : tensor<?x?x?x?xi32>) {
  ^bb0(%in: f32, %out: i32):
    %v = arith.fptosi %in : f32 to i32
    linalg.yield %v : i32
  } -> tensor<?x?x?x?xi32>
  return %r : tensor<?x?x?x?xi32>
}

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI32(memref<*xi32>) attributes {llvm.emit_c_interface}

func.func @print5(%t: tensor<?x?x?x?x?xf32>) {
  %u = tensor.cast %t : tensor<?x?x?x?x?xf32> to tensor<*xf32>
  %m = bufferization.to_buffer %u : tensor<*xf32> to memref<*xf32>
  call @printMemrefF32(%m) : (memref<*xf32>) -> ()
  return
}
func.func @print4(%t: tensor<?x?x?x?xf32>) {
  %u = tensor.cast %t : tensor<?x?x?x?xf32> to tensor<*xf32>
  %m = bufferization.to_buffer %u : tensor<*xf32> to memref<*xf32>
  call @printMemrefF32(%m) : (memref<*xf32>) -> ()
  return
}
func.func @print4i(%t: tensor<?x?x?x?xi32>) {
  %u = tensor.cast %t : tensor<?x?x?x?xi32> to tensor<*xi32>
  %m = bufferization.to_buffer %u : tensor<*xi32> to memref<*xi32>
  call @printMemrefI32(%m) : (memref<*xi32>) -> ()
  return
}

// The first and last rows of every result (numpy); the rest is diffed
// against the reference route.
// EXEC-LABEL: sizes = [2, 3, 5, 2, 8]
// EXEC-NEXT: {{^\[\[\[\[\[}}11, 11, -3, -3, -3, -3, -3, 11],
// EXEC: {{^ +}}[8, -3, 0, -4, -1, 2, 5, 8]]]]]
// EXEC-LABEL: sizes = [2, 3, 5, 2, 8]
// EXEC-NEXT: {{^\[\[\[\[\[}}11, 11, -3, -3, -3, -3, -3, 11],
// EXEC: {{^ +}}[8, -3, 0, -4, -1, 2, 5, 8]]]]]
// EXEC-LABEL: sizes = [2, 2, 3, 5, 3]
// EXEC-NEXT: {{^\[\[\[\[\[}}-7, -6, -5],
// EXEC: {{^ +}}[9, 1, -7]]]]]
// EXEC-LABEL: sizes = [2, 2, 2, 2, 4]
// EXEC-NEXT: {{^\[\[\[\[\[}}24, -14, 3, -5],
// EXEC: {{^ +}}[-19, -42, 20, -43]]]]]
// The window reads only padding: the init, unchanged.
// EXEC-LABEL: sizes = [3, 1, 1, 12]
// EXEC-NEXT: {{^\[\[\[\[}}-4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, -4]]],
// EXEC: {{^ \[\[\[}}0, 1, 2, 3, 4, 5, 6, -4, -3, -2, -1, 0]]]]
// EXEC-LABEL: sizes = [3, 2, 2, 12]
// EXEC-NEXT: {{^\[\[\[\[}}5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5],
// EXEC: {{^ +}}[32, 5, -2, -24, 14, 32, 5, -2, -24, 14, 32, 5]]]]
// EXEC-LABEL: sizes = [3, 1, 1, 12]
// EXEC-NEXT: {{^\[\[\[\[}}7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]]],
// EXEC: {{^ \[\[\[}}7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]]]]
// EXEC-LABEL: sizes = [2, 2, 3, 3, 1]
// EXEC-COUNT-36: 0.25
// EXEC-NOT: {{[0-9]}}

func.func @main() {
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %c4 = arith.constant 4 : i64
  %c5 = arith.constant 5 : i64
  %c7 = arith.constant 7 : i64
  %c11 = arith.constant 11 : i64

  // Defect 1.
  %x1e = tensor.empty() : tensor<2x3x1x5x8xf32>
  %x1d = tensor.cast %x1e : tensor<2x3x1x5x8xf32> to tensor<?x?x?x?x?xf32>
  %x1p = call @pattern5(%x1d, %c7, %c3) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %x1 = tensor.cast %x1p : tensor<?x?x?x?x?xf32> to tensor<2x3x1x5x8xf32>
  %x1n = tensor.cast %x1p : tensor<?x?x?x?x?xf32> to tensor<?x3x1x5x8xf32>
  %w1e = tensor.empty() : tensor<3x5x1x2x1xf32>
  %w1d = tensor.cast %w1e : tensor<3x5x1x2x1xf32> to tensor<?x?x?x?x?xf32>
  %w1p = call @pattern5(%w1d, %c5, %c2) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %w1 = tensor.cast %w1p : tensor<?x?x?x?x?xf32> to tensor<3x5x1x2x1xf32>
  %y1 = call @ngchw_gfchw_dynamic_batch(%x1n, %w1) : (tensor<?x3x1x5x8xf32>, tensor<3x5x1x2x1xf32>) -> tensor<?x3x5x2x8xf32>
  %y1d = tensor.cast %y1 : tensor<?x3x5x2x8xf32> to tensor<?x?x?x?x?xf32>
  call @print5(%y1d) : (tensor<?x?x?x?x?xf32>) -> ()
  %y1s = call @ngchw_gfchw_static(%x1, %w1) : (tensor<2x3x1x5x8xf32>, tensor<3x5x1x2x1xf32>) -> tensor<2x3x5x2x8xf32>
  %y1sd = tensor.cast %y1s : tensor<2x3x5x2x8xf32> to tensor<?x?x?x?x?xf32>
  call @print5(%y1sd) : (tensor<?x?x?x?x?xf32>) -> ()

  %x2e = tensor.empty() : tensor<2x2x2x5x6xf32>
  %x2d = tensor.cast %x2e : tensor<2x2x2x5x6xf32> to tensor<?x?x?x?x?xf32>
  %x2p = call @pattern5(%x2d, %c11, %c5) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %x2 = tensor.cast %x2p : tensor<?x?x?x?x?xf32> to tensor<?x2x2x5x6xf32>
  %w2e = tensor.empty() : tensor<3x2x2x2x2xf32>
  %w2d = tensor.cast %w2e : tensor<3x2x2x2x2xf32> to tensor<?x?x?x?x?xf32>
  %w2p = call @pattern5(%w2d, %c3, %c1) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %w2 = tensor.cast %w2p : tensor<?x?x?x?x?xf32> to tensor<3x2x2x2x2xf32>
  %i2e = tensor.empty() : tensor<2x2x3x5x3xf32>
  %i2d = tensor.cast %i2e : tensor<2x2x3x5x3xf32> to tensor<?x?x?x?x?xf32>
  %i2p = call @pattern5(%i2d, %c4, %c2) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %i2 = tensor.cast %i2p : tensor<?x?x?x?x?xf32> to tensor<?x2x3x5x3xf32>
  %y2 = call @ngchw_fgchw_dynamic_batch(%x2, %w2, %i2) : (tensor<?x2x2x5x6xf32>, tensor<3x2x2x2x2xf32>, tensor<?x2x3x5x3xf32>) -> tensor<?x2x3x5x3xf32>
  %y2d = tensor.cast %y2 : tensor<?x2x3x5x3xf32> to tensor<?x?x?x?x?xf32>
  call @print5(%y2d) : (tensor<?x?x?x?x?xf32>) -> ()

  %x3e = tensor.empty() : tensor<2x5x4x2x3xf32>
  %x3d = tensor.cast %x3e : tensor<2x5x4x2x3xf32> to tensor<?x?x?x?x?xf32>
  %x3p = call @pattern5(%x3d, %c7, %c2) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %x3 = tensor.cast %x3p : tensor<?x?x?x?x?xf32> to tensor<?x5x4x2x3xf32>
  %w3e = tensor.empty() : tensor<2x4x2x2x3xf32>
  %w3d = tensor.cast %w3e : tensor<2x4x2x2x3xf32> to tensor<?x?x?x?x?xf32>
  %w3p = call @pattern5(%w3d, %c5, %c3) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %w3 = tensor.cast %w3p : tensor<?x?x?x?x?xf32> to tensor<2x4x2x2x3xf32>
  %y3 = call @nhwgc_gfhwc_dynamic_batch(%x3, %w3) : (tensor<?x5x4x2x3xf32>, tensor<2x4x2x2x3xf32>) -> tensor<?x2x2x2x4xf32>
  %y3d = tensor.cast %y3 : tensor<?x2x2x2x4xf32> to tensor<?x?x?x?x?xf32>
  call @print5(%y3d) : (tensor<?x?x?x?x?xf32>) -> ()

  // Defect 2.
  %x4e = tensor.empty() : tensor<3x11x3x13xf32>
  %x4d = tensor.cast %x4e : tensor<3x11x3x13xf32> to tensor<?x?x?x?xf32>
  %x4f = call @pattern4(%x4d, %c7, %c3) : (tensor<?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?xf32>
  %x4i = call @toI8(%x4f) : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xi8>
  %x4 = tensor.cast %x4i : tensor<?x?x?x?xi8> to tensor<3x11x3x13xi8>
  %x4s = tensor.cast %x4f : tensor<?x?x?x?xf32> to tensor<3x11x3x13xf32>
  %w4e = tensor.empty() : tensor<12x5x1x13xf32>
  %w4d = tensor.cast %w4e : tensor<12x5x1x13xf32> to tensor<?x?x?x?xf32>
  %w4f = call @pattern4(%w4d, %c5, %c2) : (tensor<?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?xf32>
  %w4i = call @toI8(%w4f) : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xi8>
  %w4 = tensor.cast %w4i : tensor<?x?x?x?xi8> to tensor<12x5x1x13xi8>
  %w4s = tensor.cast %w4f : tensor<?x?x?x?xf32> to tensor<12x5x1x13xf32>
  %i4e = tensor.empty() : tensor<3x1x1x12xf32>
  %i4d = tensor.cast %i4e : tensor<3x1x1x12xf32> to tensor<?x?x?x?xf32>
  %i4f = call @pattern4(%i4d, %c11, %c4) : (tensor<?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?xf32>
  %i4i = call @toI32(%i4f) : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xi32>
  %i4 = tensor.cast %i4i : tensor<?x?x?x?xi32> to tensor<3x1x1x12xi32>
  %y4 = call @nhwc_fhwc_window_in_padding(%x4, %w4, %i4) : (tensor<3x11x3x13xi8>, tensor<12x5x1x13xi8>, tensor<3x1x1x12xi32>) -> tensor<3x1x1x12xi32>
  %y4d = tensor.cast %y4 : tensor<3x1x1x12xi32> to tensor<?x?x?x?xi32>
  call @print4i(%y4d) : (tensor<?x?x?x?xi32>) -> ()
  %y5 = call @nhwc_fhwc_partly_padding(%x4, %w4) : (tensor<3x11x3x13xi8>, tensor<12x5x1x13xi8>) -> tensor<3x2x2x12xi32>
  %y5d = tensor.cast %y5 : tensor<3x2x2x12xi32> to tensor<?x?x?x?xi32>
  call @print4i(%y5d) : (tensor<?x?x?x?xi32>) -> ()
  %y6 = call @nhwc_fhwc_window_in_padding_f32(%x4s, %w4s) : (tensor<3x11x3x13xf32>, tensor<12x5x1x13xf32>) -> tensor<3x1x1x12xf32>
  %y6d = tensor.cast %y6 : tensor<3x1x1x12xf32> to tensor<?x?x?x?xf32>
  call @print4(%y6d) : (tensor<?x?x?x?xf32>) -> ()

  // Defect 3.
  %x7e = tensor.empty() : tensor<2x2x3x4x2xf32>
  %x7d = tensor.cast %x7e : tensor<2x2x3x4x2xf32> to tensor<?x?x?x?x?xf32>
  %x7p = call @pattern5(%x7d, %c7, %c3) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %x7 = tensor.cast %x7p : tensor<?x?x?x?x?xf32> to tensor<2x2x3x4x2xf32>
  %w7e = tensor.empty() : tensor<3x2x3x2x1xf32>
  %w7d = tensor.cast %w7e : tensor<3x2x3x2x1xf32> to tensor<?x?x?x?x?xf32>
  %w7p = call @pattern5(%w7d, %c5, %c2) : (tensor<?x?x?x?x?xf32>, i64, i64) -> tensor<?x?x?x?x?xf32>
  %w7 = tensor.cast %w7p : tensor<?x?x?x?x?xf32> to tensor<3x2x3x2x1xf32>
  %y7 = call @ngchw_fgchw_stride_skips_input(%x7, %w7) : (tensor<2x2x3x4x2xf32>, tensor<3x2x3x2x1xf32>) -> tensor<2x2x3x3x1xf32>
  %y7d = tensor.cast %y7 : tensor<2x2x3x3x1xf32> to tensor<?x?x?x?x?xf32>
  call @print5(%y7d) : (tensor<?x?x?x?x?xf32>) -> ()
  return
}
