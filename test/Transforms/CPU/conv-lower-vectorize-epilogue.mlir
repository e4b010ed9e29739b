// RUN: conv-opt %s --conv-lower-vectorize-epilogue --split-input-file | FileCheck %s
// RUN: conv-opt %s --conv-lower-vectorize-epilogue=lanes=16 --split-input-file | FileCheck %s --check-prefix=L16
// RUN: not conv-opt %s --conv-lower-vectorize-epilogue=lanes=0 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: conv-lower-vectorize-epilogue: lanes must be positive

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>

// A 16-channel channels-last output's bias and ReLU, in place (the init is
// the input, as conv-lower-parallel-epilogue leaves it): tiles of 4 pixels
// x 16 channels, read and written as vectors; the bias read as a vector
// broadcast along the pixels; each tile read from the loop's own tensor
// (the init's slice), not from the one before the loops.
// CHECK-LABEL: func.func @bias_relu_16
// CHECK-SAME: (%[[Y:.*]]: tensor<1x8x8x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK: scf.for {{.*}} to %c1{{(_[0-9]+)?}} step %c1
// CHECK: scf.for {{.*}} to %c8{{(_[0-9]+)?}} step %c1
// CHECK: scf.for {{.*}} to %c8{{(_[0-9]+)?}} step %c4
// CHECK: scf.for {{.*}} to %c16{{(_[0-9]+)?}} step %c16{{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK:   %[[BS:.*]] = tensor.extract_slice %[[B]]
// CHECK:   %[[T:.*]] = tensor.extract_slice %[[ACC]]
// CHECK-NOT: tensor.extract_slice %[[Y]]
// CHECK:   %[[X:.*]] = vector.transfer_read %[[T]]{{.*}} : tensor<1x1x4x16xf32>, vector<1x1x4x16xf32>
// CHECK:   %[[BV:.*]] = vector.transfer_read %[[BS]]{{.*}}permutation_map = {{.*}} : tensor<16xf32>, vector<1x1x4x16xf32>
// CHECK:   %[[S:.*]] = arith.addf %[[X]], %[[BV]] : vector<1x1x4x16xf32>
// CHECK:   arith.maximumf %[[S]], %{{.*}} : vector<1x1x4x16xf32>
// CHECK:   vector.transfer_write {{.*}}, %[[T]]
// CHECK-NOT: linalg.generic
// L16-LABEL: func.func @bias_relu_16
// L16: vector.transfer_read {{.*}} : tensor<1x1x1x16xf32>, vector<1x1x1x16xf32>
func.func @bias_relu_16(%y: tensor<1x8x8x16xf32>, %b: tensor<16xf32>) -> tensor<1x8x8x16xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x8x8x16xf32>, tensor<16xf32>) outs(%y : tensor<1x8x8x16xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %s = arith.addf %in, %c : f32
    %m = arith.maximumf %s, %z : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x16xf32>
  return %0 : tensor<1x8x8x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>

// 96 channels: tiles of 48 (the largest divisor of 96 not above 64 that is
// a multiple of 16), one pixel each; a residual read as a vector too.
// CHECK-LABEL: func.func @bias_residual_96
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x1x48xf32>, vector<1x1x1x48xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<48xf32>, vector<1x1x1x48xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x1x48xf32>, vector<1x1x1x48xf32>
// CHECK: vector.transfer_write {{.*}} : vector<1x1x1x48xf32>, tensor<1x1x1x48xf32>
func.func @bias_residual_96(%y: tensor<1x4x4x96xf32>, %b: tensor<96xf32>, %r: tensor<1x4x4x96xf32>) -> tensor<1x4x4x96xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #ch, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b, %r : tensor<1x4x4x96xf32>, tensor<96xf32>, tensor<1x4x4x96xf32>) outs(%y : tensor<1x4x4x96xf32>) {
  ^bb0(%in: f32, %c: f32, %res: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    %t = arith.addf %s, %res : f32
    linalg.yield %t : f32
  } -> tensor<1x4x4x96xf32>
  return %0 : tensor<1x4x4x96xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c1 = affine_map<(d0, d1, d2, d3) -> (d1)>

// Channels first: the rows are the image's (56 wide: no multiple of 16
// divides it, so the whole row), the bias one scalar per channel,
// broadcast.
// CHECK-LABEL: func.func @nchw_bias
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x1x56xf32>, vector<1x1x1x56xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1xf32>, vector<1x1x1x56xf32>
// CHECK: arith.addf {{.*}} : vector<1x1x1x56xf32>
func.func @nchw_bias(%y: tensor<1x8x56x56xf32>, %b: tensor<8xf32>) -> tensor<1x8x56x56xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #c1, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       ins(%y, %b : tensor<1x8x56x56xf32>, tensor<8xf32>) outs(%y : tensor<1x8x56x56xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %s = arith.addf %in, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x8x56x56xf32>
  return %0 : tensor<1x8x56x56xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// Left alone: a transposing read (its vector read would gather), a plain
// copy (the copy passes vectorize those), a dynamic shape.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: vector.transfer_read
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: vector.transfer_read
func.func @left_alone(%a: tensor<16x16xf32>, %o: tensor<16x16xf32>, %d: tensor<?x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<?x16xf32>) {
  %0 = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
       ins(%a : tensor<16x16xf32>) outs(%o : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
       ins(%a : tensor<16x16xf32>) outs(%o : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x16xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
       ins(%d : tensor<?x16xf32>) outs(%d : tensor<?x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<?x16xf32>
  return %0, %1, %2 : tensor<16x16xf32>, tensor<16x16xf32>, tensor<?x16xf32>
}
