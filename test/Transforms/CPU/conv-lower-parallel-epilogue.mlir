// RUN: conv-opt %s --pass-pipeline='builtin.module(func.func(conv-lower-parallel-epilogue{threads=2}))' | FileCheck %s
// RUN: conv-opt %s --pass-pipeline='builtin.module(func.func(conv-lower-parallel-epilogue{threads=2 min-elements=0}))' | FileCheck %s --check-prefix=ZERO
// RUN: conv-opt %s --pass-pipeline='builtin.module(func.func(conv-lower-parallel-epilogue{threads=1}))' | FileCheck %s --check-prefix=ONE
// RUN: not conv-opt %s --pass-pipeline='builtin.module(func.func(conv-lower-parallel-epilogue{threads=0}))' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: conv-lower-parallel-epilogue: threads must be positive and min-elements not negative

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>

// A convolution's bias add (in place on its output) and ReLU (a fresh init),
// as ConvModule writes them: one generic, in place on the output, in blocks
// of 2 rows (16 rows, 4 blocks a thread), each block reading and writing its
// slice of the shared output.
// CHECK-LABEL: func.func @bias_relu
// CHECK-SAME: (%[[Y:.*]]: tensor<1x16x16x64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: %[[R:.*]] = scf.forall (%[[I:.*]]) = (0) to (16) step (2) shared_outs(%[[O:.*]] = %[[Y]])
// CHECK:   %[[S:.*]] = tensor.extract_slice %[[O]][0, %[[I]], 0, 0] [1, 2, 16, 64]
// CHECK:   linalg.generic {{.*}} ins(%[[S]], %{{.*}} : tensor<1x2x16x64xf32>, tensor<64xf32>) outs(%[[S]] : tensor<1x2x16x64xf32>)
// CHECK:     arith.addf
// CHECK:     arith.maximumf
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
// ONE-LABEL: func.func @bias_relu
// ONE-NOT: scf.forall
// ONE: %[[R:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<1x16x16x64xf32>, tensor<64xf32>) outs(%arg0 : tensor<1x16x16x64xf32>)
// ONE:   arith.addf
// ONE:   arith.maximumf
// ONE-NOT: linalg.generic
// ONE: return %[[R]]
func.func @bias_relu(%y: tensor<1x16x16x64xf32>, %b: tensor<64xf32>) -> tensor<1x16x16x64xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x16x16x64xf32>, tensor<64xf32>) outs(%y : tensor<1x16x16x64xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x16x16x64xf32>
  %e = tensor.empty() : tensor<1x16x16x64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%0 : tensor<1x16x16x64xf32>) outs(%e : tensor<1x16x16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  } -> tensor<1x16x16x64xf32>
  return %1 : tensor<1x16x16x64xf32>
}

// ConvModule's whole epilogue: the bias, a residual add (written residual
// first here), a ReLU6 clamp: one generic, in place on the convolution's
// output, not on the residual argument (which bufferization would copy
// first).
// CHECK-LABEL: func.func @bias_residual_relu6
// CHECK-SAME: %[[R:[a-z0-9]+]]: tensor<1x16x16x64xf32>)
// CHECK: %[[Y:.*]] = linalg.conv_2d_nhwc_fhwc
// CHECK: scf.forall (%[[I:.*]]) = (0) to (16) step (2) shared_outs(%[[O:.*]] = %[[Y]])
// CHECK-DAG: %[[RS:.*]] = tensor.extract_slice %[[R]][0, %[[I]], 0, 0] [1, 2, 16, 64]
// CHECK-DAG: %[[S:.*]] = tensor.extract_slice %[[O]][0, %[[I]], 0, 0] [1, 2, 16, 64]
// CHECK:   linalg.generic {{.*}} outs(%[[S]] : tensor<1x2x16x64xf32>)
// CHECK:     arith.addf
// CHECK:     arith.addf
// CHECK:     arith.maximumf
// CHECK:     arith.minimumf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bias_residual_relu6(%x: tensor<1x16x16x8xf32>, %w: tensor<64x1x1x8xf32>, %b: tensor<64xf32>, %r: tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %acc = tensor.empty() : tensor<1x16x16x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%acc : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x16x16x8xf32>, tensor<64x1x1x8xf32>) outs(%init : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x16x16x64xf32>, tensor<64xf32>) outs(%y : tensor<1x16x16x64xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x16x16x64xf32>
  %e0 = tensor.empty() : tensor<1x16x16x64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%r, %0 : tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>) outs(%e0 : tensor<1x16x16x64xf32>) {
  ^bb0(%res: f32, %in: f32, %out: f32):
    %s = arith.addf %res, %in : f32
    linalg.yield %s : f32
  } -> tensor<1x16x16x64xf32>
  %e = tensor.empty() : tensor<1x16x16x64xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%1 : tensor<1x16x16x64xf32>) outs(%e : tensor<1x16x16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %six = arith.constant 6.0 : f32
    %m = arith.maximumf %in, %z : f32
    %n = arith.minimumf %m, %six : f32
    linalg.yield %n : f32
  } -> tensor<1x16x16x64xf32>
  return %2 : tensor<1x16x16x64xf32>
}

// The bias add is read twice (returned too): nothing fuses; each stays
// whole-tensor work, split into blocks.
// CHECK-LABEL: func.func @read_twice
// CHECK-COUNT-2: scf.forall
func.func @read_twice(%y: tensor<1x16x16x64xf32>, %b: tensor<64xf32>) -> (tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>) {
  %0 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x16x16x64xf32>, tensor<64xf32>) outs(%y : tensor<1x16x16x64xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x16x16x64xf32>
  %e = tensor.empty() : tensor<1x16x16x64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%0 : tensor<1x16x16x64xf32>) outs(%e : tensor<1x16x16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  } -> tensor<1x16x16x64xf32>
  return %0, %1 : tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>
}

// Under min-elements (16384 by default): one serial pass, not blocks.
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
func.func @small(%y: tensor<1x4x4x64xf32>, %b: tensor<64xf32>) -> tensor<1x4x4x64xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x4x4x64xf32>, tensor<64xf32>) outs(%y : tensor<1x4x4x64xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x64xf32>
  return %0 : tensor<1x4x4x64xf32>
}

// A reduction is no epilogue: left alone.
// CHECK-LABEL: func.func @reduction
// CHECK-NOT: scf.forall
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
func.func @reduction(%y: tensor<1x64x64x64xf32>, %init: tensor<1x64x64xf32>) -> tensor<1x64x64xf32> {
  %0 = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
       ins(%y : tensor<1x64x64x64xf32>) outs(%init : tensor<1x64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x64x64xf32>
  return %0 : tensor<1x64x64xf32>
}

// A declaration has no body to look at (it hung the pass once).
// CHECK-LABEL: func.func private @declared
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>

// No elements (an output of zero rows): nothing to split (splitting it
// crashed under conv-fuzz's min-elements=0).
// CHECK-LABEL: func.func @empty
// CHECK-NOT: scf.forall
func.func @empty(%y: tensor<3x1x0x3xf32>) -> tensor<3x1x0x3xf32> {
  %e = tensor.empty() : tensor<3x1x0x3xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y : tensor<3x1x0x3xf32>) outs(%e : tensor<3x1x0x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  } -> tensor<3x1x0x3xf32>
  return %0 : tensor<3x1x0x3xf32>
}
// ZERO-LABEL: func.func @empty
// ZERO-NOT: scf.forall
// ZERO: return

// The GEMM's own threaded blocks (an scf.forall writing [16, 16] row
// blocks of the [64, 16] result, reshaped to the NHWC output): the
// epilogue moves into them, collapsed to the GEMM's shape, each block
// adding the bias and its residual rows to its own result before inserting
// it. One parallel region, no second pass over the output.
// CHECK-LABEL: func.func @into_gemm_blocks
// CHECK-SAME: (%[[A:.*]]: tensor<64x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>, %[[R:.*]]: tensor<1x8x8x16xf32>)
// CHECK: %[[RC:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0, 1, 2], [3]] : tensor<1x8x8x16xf32> into tensor<64x16xf32>
// CHECK: %[[F:.*]] = scf.forall (%[[I:.*]]) = (0) to (64) step (16)
// CHECK:   %[[M:.*]] = linalg.matmul
// CHECK:   %[[BS:.*]] = tensor.extract_slice %[[B]][0] [16] [1]
// CHECK:   %[[RS:.*]] = tensor.extract_slice %[[RC]][%[[I]], 0] [16, 16] [1, 1]
// CHECK:   %[[E:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[BS]], %[[RS]] : tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>) outs(%[[M]] : tensor<16x16xf32>)
// CHECK:     arith.addf
// CHECK:     arith.addf
// CHECK:     arith.maximumf
// CHECK:   tensor.parallel_insert_slice %[[E]] into %{{.*}}[%[[I]], 0] [16, 16] [1, 1]
// CHECK: %[[Y:.*]] = tensor.expand_shape %[[F]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
// The GEMM's result read by something else too: the epilogue stays after
// it.
// CHECK-LABEL: func.func @gemm_result_read_twice
// CHECK: scf.forall
// CHECK:   linalg.matmul
// CHECK-NOT: linalg.generic
// CHECK: tensor.expand_shape
// CHECK: linalg.generic
func.func @into_gemm_blocks(%a: tensor<64x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %r: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %e = tensor.empty() : tensor<64x16xf32>
  %0 = scf.forall (%i) = (0) to (64) step (16) shared_outs(%o = %e) -> (tensor<64x16xf32>) {
    %as = tensor.extract_slice %a[%i, 0] [16, 8] [1, 1] : tensor<64x8xf32> to tensor<16x8xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 16] [1, 1] : tensor<64x16xf32> to tensor<16x16xf32>
    %m = linalg.matmul ins(%as, %w : tensor<16x8xf32>, tensor<8x16xf32>) outs(%os : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<64x16xf32>
    }
  }
  %y = tensor.expand_shape %0 [[0, 1, 2], [3]] output_shape [1, 8, 8, 16] : tensor<64x16xf32> into tensor<1x8x8x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b, %r : tensor<1x8x8x16xf32>, tensor<16xf32>, tensor<1x8x8x16xf32>) outs(%y : tensor<1x8x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %res: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %s = arith.addf %in, %c : f32
    %t = arith.addf %s, %res : f32
    %u = arith.maximumf %t, %z : f32
    linalg.yield %u : f32
  } -> tensor<1x8x8x16xf32>
  return %1 : tensor<1x8x8x16xf32>
}
func.func @gemm_result_read_twice(%a: tensor<64x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<1x8x8x16xf32>, tensor<64x16xf32>) {
  %e = tensor.empty() : tensor<64x16xf32>
  %0 = scf.forall (%i) = (0) to (64) step (16) shared_outs(%o = %e) -> (tensor<64x16xf32>) {
    %as = tensor.extract_slice %a[%i, 0] [16, 8] [1, 1] : tensor<64x8xf32> to tensor<16x8xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 16] [1, 1] : tensor<64x16xf32> to tensor<16x16xf32>
    %m = linalg.matmul ins(%as, %w : tensor<16x8xf32>, tensor<8x16xf32>) outs(%os : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<64x16xf32>
    }
  }
  %y = tensor.expand_shape %0 [[0, 1, 2], [3]] output_shape [1, 8, 8, 16] : tensor<64x16xf32> into tensor<1x8x8x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x8x8x16xf32>, tensor<16xf32>) outs(%y : tensor<1x8x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x16xf32>
  return %1, %0 : tensor<1x8x8x16xf32>, tensor<64x16xf32>
}

// An epilogue that changes the element type (a bf16 output: the f32 math,
// then truncf) with a bf16 residual: the blocks write bf16 instead. Each
// computes its f32 result into a block of its own (the destination's slice
// was a fresh tensor's, with nothing to keep) and stores the rounded one
// into its slice of a bf16 destination; the reshape after them is bf16.
// The bf16 residual does not become the epilogue's init (in place).
// CHECK-LABEL: func.func @bf16_into_gemm_blocks
// CHECK-SAME: (%[[A:.*]]: tensor<64x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>, %[[R:.*]]: tensor<1x8x8x16xbf16>)
// CHECK: %[[RC:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0, 1, 2], [3]] : tensor<1x8x8x16xbf16> into tensor<64x16xbf16>
// CHECK: %[[D:.*]] = tensor.empty() : tensor<64x16xbf16>
// CHECK: %[[F:.*]] = scf.forall (%[[I:.*]]) = (0) to (64) step (16) shared_outs(%[[O:.*]] = %[[D]]) -> (tensor<64x16xbf16>)
// CHECK:   %[[OWN:.*]] = tensor.empty() : tensor<16x16xf32>
// CHECK:   %[[M:.*]] = linalg.matmul {{.*}} outs(%[[OWN]] : tensor<16x16xf32>)
// CHECK-DAG:   %[[RS:.*]] = tensor.extract_slice %[[RC]][%[[I]], 0] [16, 16] [1, 1]
// CHECK-DAG:   %[[OS:.*]] = tensor.extract_slice %[[O]][%[[I]], 0] [16, 16] [1, 1] : tensor<64x16xbf16> to tensor<16x16xbf16>
// CHECK:   %[[E:.*]] = linalg.generic {{.*}} ins(%[[M]], %{{.*}}, %[[RS]] : tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xbf16>) outs(%[[OS]] : tensor<16x16xbf16>)
// CHECK:     arith.truncf
// CHECK:   tensor.parallel_insert_slice %[[E]] into %[[O]][%[[I]], 0] [16, 16] [1, 1] : tensor<16x16xbf16> into tensor<64x16xbf16>
// CHECK: %[[Y:.*]] = tensor.expand_shape %[[F]] {{.*}} : tensor<64x16xbf16> into tensor<1x8x8x16xbf16>
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
// A bf16 residual into an f32 output (no change of type): the epilogue runs
// in place on the blocks' f32 result, the residual widened in its body.
// CHECK-LABEL: func.func @bf16_residual_into_gemm_blocks
// CHECK: scf.forall {{.*}} -> (tensor<64x16xf32>)
// CHECK:   %[[M:.*]] = linalg.matmul
// CHECK:   linalg.generic {{.*}} outs(%[[M]] : tensor<16x16xf32>)
// CHECK:     arith.extf
// CHECK-NOT: linalg.generic
// CHECK: return
// Blocks whose destination holds values (a function argument): they stay
// as they are, the epilogue after them.
// CHECK-LABEL: func.func @bf16_blocks_with_values
// CHECK: scf.forall {{.*}} -> (tensor<64x16xf32>)
// CHECK-NOT: arith.truncf
// CHECK: tensor.expand_shape
// CHECK: arith.truncf
func.func @bf16_into_gemm_blocks(%a: tensor<64x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %r: tensor<1x8x8x16xbf16>) -> tensor<1x8x8x16xbf16> {
  %e = tensor.empty() : tensor<64x16xf32>
  %0 = scf.forall (%i) = (0) to (64) step (16) shared_outs(%o = %e) -> (tensor<64x16xf32>) {
    %as = tensor.extract_slice %a[%i, 0] [16, 8] [1, 1] : tensor<64x8xf32> to tensor<16x8xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 16] [1, 1] : tensor<64x16xf32> to tensor<16x16xf32>
    %m = linalg.matmul ins(%as, %w : tensor<16x8xf32>, tensor<8x16xf32>) outs(%os : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<64x16xf32>
    }
  }
  %y = tensor.expand_shape %0 [[0, 1, 2], [3]] output_shape [1, 8, 8, 16] : tensor<64x16xf32> into tensor<1x8x8x16xf32>
  %init = tensor.empty() : tensor<1x8x8x16xbf16>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b, %r : tensor<1x8x8x16xf32>, tensor<16xf32>, tensor<1x8x8x16xbf16>) outs(%init : tensor<1x8x8x16xbf16>) {
  ^bb0(%in: f32, %c: f32, %res: bf16, %out: bf16):
    %s = arith.addf %in, %c : f32
    %rf = arith.extf %res : bf16 to f32
    %t = arith.addf %s, %rf : f32
    %u = arith.truncf %t : f32 to bf16
    linalg.yield %u : bf16
  } -> tensor<1x8x8x16xbf16>
  return %1 : tensor<1x8x8x16xbf16>
}
func.func @bf16_residual_into_gemm_blocks(%a: tensor<64x8xf32>, %w: tensor<8x16xf32>, %r: tensor<1x8x8x16xbf16>) -> tensor<1x8x8x16xf32> {
  %e = tensor.empty() : tensor<64x16xf32>
  %0 = scf.forall (%i) = (0) to (64) step (16) shared_outs(%o = %e) -> (tensor<64x16xf32>) {
    %as = tensor.extract_slice %a[%i, 0] [16, 8] [1, 1] : tensor<64x8xf32> to tensor<16x8xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 16] [1, 1] : tensor<64x16xf32> to tensor<16x16xf32>
    %m = linalg.matmul ins(%as, %w : tensor<16x8xf32>, tensor<8x16xf32>) outs(%os : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<64x16xf32>
    }
  }
  %y = tensor.expand_shape %0 [[0, 1, 2], [3]] output_shape [1, 8, 8, 16] : tensor<64x16xf32> into tensor<1x8x8x16xf32>
  %init = tensor.empty() : tensor<1x8x8x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %r : tensor<1x8x8x16xf32>, tensor<1x8x8x16xbf16>) outs(%init : tensor<1x8x8x16xf32>) {
  ^bb0(%in: f32, %res: bf16, %out: f32):
    %rf = arith.extf %res : bf16 to f32
    %t = arith.addf %in, %rf : f32
    linalg.yield %t : f32
  } -> tensor<1x8x8x16xf32>
  return %1 : tensor<1x8x8x16xf32>
}
func.func @bf16_blocks_with_values(%a: tensor<64x8xf32>, %w: tensor<8x16xf32>, %c0: tensor<64x16xf32>) -> tensor<1x8x8x16xbf16> {
  %0 = scf.forall (%i) = (0) to (64) step (16) shared_outs(%o = %c0) -> (tensor<64x16xf32>) {
    %as = tensor.extract_slice %a[%i, 0] [16, 8] [1, 1] : tensor<64x8xf32> to tensor<16x8xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 16] [1, 1] : tensor<64x16xf32> to tensor<16x16xf32>
    %m = linalg.matmul ins(%as, %w : tensor<16x8xf32>, tensor<8x16xf32>) outs(%os : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<64x16xf32>
    }
  }
  %y = tensor.expand_shape %0 [[0, 1, 2], [3]] output_shape [1, 8, 8, 16] : tensor<64x16xf32> into tensor<1x8x8x16xf32>
  %init = tensor.empty() : tensor<1x8x8x16xbf16>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y : tensor<1x8x8x16xf32>) outs(%init : tensor<1x8x8x16xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %u = arith.truncf %in : f32 to bf16
    linalg.yield %u : bf16
  } -> tensor<1x8x8x16xbf16>
  return %1 : tensor<1x8x8x16xbf16>
}

// Blocks that are the output itself (Winograd's output transform: no
// reshape), counted by the loop (`in (4)`, offsets iv * 2): the epilogue
// moves in as it is.
// CHECK-LABEL: func.func @into_output_blocks
// CHECK: scf.forall (%[[I:.*]]) in (4)
// CHECK:   %[[T:.*]] = linalg.fill
// CHECK:   %[[E:.*]] = linalg.generic {{.*}} ins(%[[T]], %{{.*}} : tensor<1x2x8x16xf32>, tensor<16xf32>) outs(%[[T]] : tensor<1x2x8x16xf32>)
// CHECK:   tensor.parallel_insert_slice %[[E]]
// CHECK-NOT: linalg.generic
// CHECK: return
// Blocks that cover half the output (rows 0-3 of 8): the epilogue stays
// whole after them, or the other rows would miss it.
// CHECK-LABEL: func.func @blocks_cover_half
// CHECK: %[[F:.*]] = scf.forall
// CHECK-NOT: linalg.generic
// CHECK: linalg.generic {{.*}} ins(%[[F]], %{{.*}} : tensor<1x8x8x16xf32>, tensor<16xf32>)
func.func @into_output_blocks(%b: tensor<16xf32>) -> tensor<1x8x8x16xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x8x8x16xf32>
  %0 = scf.forall (%i) in (4) shared_outs(%o = %e) -> (tensor<1x8x8x16xf32>) {
    %r = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %os = tensor.extract_slice %o[0, %r, 0, 0] [1, 2, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x16xf32> to tensor<1x2x8x16xf32>
    %t = linalg.fill ins(%one : f32) outs(%os : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[0, %r, 0, 0] [1, 2, 8, 16] [1, 1, 1, 1] : tensor<1x2x8x16xf32> into tensor<1x8x8x16xf32>
    }
  }
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%0, %b : tensor<1x8x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<1x8x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x16xf32>
  return %1 : tensor<1x8x8x16xf32>
}
func.func @blocks_cover_half(%b: tensor<16xf32>, %init: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %one = arith.constant 1.0 : f32
  %0 = scf.forall (%i) = (0) to (4) step (2) shared_outs(%o = %init) -> (tensor<1x8x8x16xf32>) {
    %os = tensor.extract_slice %o[0, %i, 0, 0] [1, 2, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x16xf32> to tensor<1x2x8x16xf32>
    %t = linalg.fill ins(%one : f32) outs(%os : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[0, %i, 0, 0] [1, 2, 8, 16] [1, 1, 1, 1] : tensor<1x2x8x16xf32> into tensor<1x8x8x16xf32>
    }
  }
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%0, %b : tensor<1x8x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<1x8x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x16xf32>
  return %1 : tensor<1x8x8x16xf32>
}

// Blocks of filter panels ([64, 2, 16], pack-filter-panels' layout) seen
// as the NHWC output through a collapse and an expand: the residual is
// reshaped to the panels' shape, the bias [32] expanded to [2, 16].
// CHECK-LABEL: func.func @into_panel_blocks
// CHECK-SAME: (%[[A:.*]]: tensor<64x8xf32>, %[[W:.*]]: tensor<2x8x16xf32>, %[[B:.*]]: tensor<32xf32>, %[[R:.*]]: tensor<1x8x8x32xf32>)
// CHECK-DAG: %[[RC:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0, 1, 2], [3]] : tensor<1x8x8x32xf32> into tensor<64x32xf32>
// CHECK-DAG: %[[RE:.*]] = tensor.expand_shape %[[RC]] {{\[}}[0], [1, 2]] output_shape [64, 2, 16]
// CHECK-DAG: %[[BE:.*]] = tensor.expand_shape %[[B]] {{\[}}[0, 1]] output_shape [2, 16]
// CHECK: scf.forall
// CHECK:   %[[BS:.*]] = tensor.extract_slice %[[BE]][0, 0] [2, 16]
// CHECK:   %[[RS:.*]] = tensor.extract_slice %[[RE]][%{{.*}}, 0, 0] [16, 2, 16]
// CHECK:   linalg.generic {{.*}} ins(%{{.*}}, %[[BS]], %[[RS]] : tensor<16x2x16xf32>, tensor<2x16xf32>, tensor<16x2x16xf32>)
// CHECK:   tensor.parallel_insert_slice
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @into_panel_blocks(%a: tensor<64x8xf32>, %w: tensor<2x8x16xf32>, %b: tensor<32xf32>, %r: tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32> {
  %e = tensor.empty() : tensor<64x2x16xf32>
  %0 = scf.forall (%i) = (0) to (64) step (16) shared_outs(%o = %e) -> (tensor<64x2x16xf32>) {
    %as = tensor.extract_slice %a[%i, 0] [16, 8] [1, 1] : tensor<64x8xf32> to tensor<16x8xf32>
    %os = tensor.extract_slice %o[%i, 0, 0] [16, 2, 16] [1, 1, 1] : tensor<64x2x16xf32> to tensor<16x2x16xf32>
    %m = linalg.generic {indexing_maps = [affine_map<(m, p, n, k) -> (m, k)>, affine_map<(m, p, n, k) -> (p, k, n)>, affine_map<(m, p, n, k) -> (m, p, n)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
         ins(%as, %w : tensor<16x8xf32>, tensor<2x8x16xf32>) outs(%os : tensor<16x2x16xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<16x2x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0, 0] [16, 2, 16] [1, 1, 1] : tensor<16x2x16xf32> into tensor<64x2x16xf32>
    }
  }
  %c = tensor.collapse_shape %0 [[0], [1, 2]] : tensor<64x2x16xf32> into tensor<64x32xf32>
  %y = tensor.expand_shape %c [[0, 1, 2], [3]] output_shape [1, 8, 8, 32] : tensor<64x32xf32> into tensor<1x8x8x32xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b, %r : tensor<1x8x8x32xf32>, tensor<32xf32>, tensor<1x8x8x32xf32>) outs(%y : tensor<1x8x8x32xf32>) {
  ^bb0(%in: f32, %c0: f32, %res: f32, %out: f32):
    %s = arith.addf %in, %c0 : f32
    %t = arith.addf %s, %res : f32
    linalg.yield %t : f32
  } -> tensor<1x8x8x32xf32>
  return %1 : tensor<1x8x8x32xf32>
}

// An operand computed after the blocks (an i8 layer's zero-point
// correction): the epilogue cannot run inside them and stays after.
// CHECK-LABEL: func.func @operand_after_blocks
// CHECK: %[[F:.*]] = scf.forall
// CHECK-NOT: linalg.generic
// CHECK: %[[C:.*]] = linalg.fill ins(%arg0
// CHECK: linalg.generic {{.*}} ins(%[[F]], %[[C]] : tensor<1x8x8x16xf32>, tensor<16xf32>)
func.func @operand_after_blocks(%x: f32) -> tensor<1x8x8x16xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x8x8x16xf32>
  %0 = scf.forall (%i) = (0) to (8) step (2) shared_outs(%o = %e) -> (tensor<1x8x8x16xf32>) {
    %os = tensor.extract_slice %o[0, %i, 0, 0] [1, 2, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x16xf32> to tensor<1x2x8x16xf32>
    %t = linalg.fill ins(%one : f32) outs(%os : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[0, %i, 0, 0] [1, 2, 8, 16] [1, 1, 1, 1] : tensor<1x2x8x16xf32> into tensor<1x8x8x16xf32>
    }
  }
  %ce = tensor.empty() : tensor<16xf32>
  %c = linalg.fill ins(%x : f32) outs(%ce : tensor<16xf32>) -> tensor<16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%0, %c : tensor<1x8x8x16xf32>, tensor<16xf32>) outs(%0 : tensor<1x8x8x16xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.subf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x16xf32>
  return %1 : tensor<1x8x8x16xf32>
}

// A body that uses a value defined after the blocks (the fuzzer's case: a
// ReLU, its own generic reading only its init, whose zero comes after the
// bias add's blocks): it stays after them too.
// CHECK-LABEL: func.func @captured_after_blocks
// CHECK: %[[F:.*]] = scf.forall
// CHECK: tensor.parallel_insert_slice
// CHECK-NOT: arith.maximumf
// CHECK: linalg.generic {{.*}} outs(%[[F]] : tensor<16xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.maximumf
func.func @captured_after_blocks(%b: tensor<16xf32>) -> tensor<16xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %0 = scf.forall (%i) = (0) to (16) step (4) shared_outs(%o = %e) -> (tensor<16xf32>) {
    %os = tensor.extract_slice %o[%i] [4] [1] : tensor<16xf32> to tensor<4xf32>
    %t = linalg.fill ins(%one : f32) outs(%os : tensor<4xf32>) -> tensor<4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[%i] [4] [1] : tensor<4xf32> into tensor<16xf32>
    }
  }
  %zero = arith.constant 0.0 : f32
  %1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
       outs(%0 : tensor<16xf32>) {
  ^bb0(%v: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  return %1 : tensor<16xf32>
}

// Blocks over two loops of the forall, an image and a row block, their
// offset linearized as conv-lower-im2col-panels writes it for a batch,
// (n * 4 + blk) * 16 rows: they cover the [128, 16] result, so the
// epilogue moves into them as into one loop's blocks (a separate pass over
// the output before: the stem's 7x7 at batch 8 wrote and read 25.7 MB
// again).
// CHECK-LABEL: func.func @into_image_row_blocks
// CHECK: %[[F:.*]] = scf.forall (%[[N:.*]], %[[K:.*]]) in (2, 4)
// CHECK:   %[[AT:.*]] = affine.apply
// CHECK:   %[[M:.*]] = linalg.matmul
// CHECK:   %[[E:.*]] = linalg.generic {{.*}} outs(%[[M]] : tensor<16x16xf32>)
// CHECK:     arith.addf
// CHECK:   tensor.parallel_insert_slice %[[E]] into %{{.*}}[%[[AT]], 0] [16, 16] [1, 1]
// CHECK: %[[Y:.*]] = tensor.expand_shape %[[F]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
// The same loops at strides that do not tile the result (n * 32 + blk * 16
// over 2 x 4 blocks of 16 rows: rows 32-63 twice, 96-127 never): the
// epilogue stays a pass of its own after them.
// CHECK-LABEL: func.func @image_row_blocks_not_covering
// CHECK: scf.forall
// CHECK:   linalg.matmul
// CHECK-NOT: linalg.generic
// CHECK: tensor.expand_shape
// CHECK: linalg.generic
#rows = affine_map<(d0, d1) -> (d0 * 64 + d1 * 16)>
#overlap = affine_map<(d0, d1) -> (d0 * 32 + d1 * 16)>
func.func @into_image_row_blocks(%a: tensor<128x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x8x8x16xf32> {
  %e = tensor.empty() : tensor<128x16xf32>
  %0 = scf.forall (%n, %k) in (2, 4) shared_outs(%o = %e) -> (tensor<128x16xf32>) {
    %i = affine.apply #rows(%n, %k)
    %as = tensor.extract_slice %a[%i, 0] [16, 8] [1, 1] : tensor<128x8xf32> to tensor<16x8xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 16] [1, 1] : tensor<128x16xf32> to tensor<16x16xf32>
    %m = linalg.matmul ins(%as, %w : tensor<16x8xf32>, tensor<8x16xf32>) outs(%os : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<128x16xf32>
    }
  }
  %y = tensor.expand_shape %0 [[0, 1, 2], [3]] output_shape [2, 8, 8, 16] : tensor<128x16xf32> into tensor<2x8x8x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<2x8x8x16xf32>, tensor<16xf32>) outs(%y : tensor<2x8x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x8x8x16xf32>
  return %1 : tensor<2x8x8x16xf32>
}
func.func @image_row_blocks_not_covering(%a: tensor<128x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x8x8x16xf32> {
  %e = tensor.empty() : tensor<128x16xf32>
  %0 = scf.forall (%n, %k) in (2, 4) shared_outs(%o = %e) -> (tensor<128x16xf32>) {
    %i = affine.apply #overlap(%n, %k)
    %as = tensor.extract_slice %a[%i, 0] [16, 8] [1, 1] : tensor<128x8xf32> to tensor<16x8xf32>
    %os = tensor.extract_slice %o[%i, 0] [16, 16] [1, 1] : tensor<128x16xf32> to tensor<16x16xf32>
    %m = linalg.matmul ins(%as, %w : tensor<16x8xf32>, tensor<8x16xf32>) outs(%os : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<128x16xf32>
    }
  }
  %y = tensor.expand_shape %0 [[0, 1, 2], [3]] output_shape [2, 8, 8, 16] : tensor<128x16xf32> into tensor<2x8x8x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<2x8x8x16xf32>, tensor<16xf32>) outs(%y : tensor<2x8x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x8x8x16xf32>
  return %1 : tensor<2x8x8x16xf32>
}
