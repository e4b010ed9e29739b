// The CPU twin with the fused epilogue (bias add + ReLU after a strided,
// padded NHWC f16 convolution with 48 filters): conv-run runs the twin and
// checks it against the reference lowering of the same function (upstream's
// linalg lowering of the conv, the bias generic and the ReLU generic).
// RUN: conv-run %s --target cpu-twin --check --repeat 1 | FileCheck %s
// CHECK: target    : cpu-twin
// CHECK: compile   : {{.*}} (conv-lower-to-llvm{implicit-gemm-twin}, im2col implicit)
// CHECK: check     : PASS {{.*}} against the reference lowering (no im2col)
// CHECK: memory    : input {{.*}}, im2col 0.00 MB (implicit)
//
// The GPU pipeline fuses the same ops: one kernel, no linalg op left.
// RUN: conv-opt %s --conv-lower-implicit-gemm --canonicalize | FileCheck %s --check-prefix=GPU
// GPU-NOT: linalg.
// GPU: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<5400xf16>, %{{.*}}: memref<3456xf16>, %{{.*}}: memref<48xf16>, %{{.*}}: memref<3840xf32>)
// GPU-NOT: linalg.

#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
#ch = affine_map<(n, h, w, c) -> (c)>
func.func @conv(%x: tensor<2x15x15x12xf16>, %w: tensor<48x3x2x12xf16>, %b: tensor<48xf16>) -> tensor<2x8x5x48xf32> {
  %c0 = arith.constant 0.0 : f16
  %p = tensor.pad %x low[0, 2, 1, 0] high[0, 1, 0, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %c0 : f16
  } : tensor<2x15x15x12xf16> to tensor<2x18x16x12xf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x5x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x8x5x48xf32>) -> tensor<2x8x5x48xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<[2, 3]> : tensor<2xi64>}
    ins(%p, %w : tensor<2x18x16x12xf16>, tensor<48x3x2x12xf16>) outs(%f : tensor<2x8x5x48xf32>) -> tensor<2x8x5x48xf32>
  %yb = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y, %b : tensor<2x8x5x48xf32>, tensor<48xf16>) outs(%y : tensor<2x8x5x48xf32>) {
  ^bb0(%a: f32, %bb: f16, %o: f32):
    %bf = arith.extf %bb : f16 to f32
    %s = arith.addf %a, %bf : f32
    linalg.yield %s : f32
  } -> tensor<2x8x5x48xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%yb : tensor<2x8x5x48xf32>) outs(%e : tensor<2x8x5x48xf32>) {
  ^bb0(%a: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x8x5x48xf32>
  return %r : tensor<2x8x5x48xf32>
}
