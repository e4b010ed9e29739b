// RUN: conv-opt %s --pass-pipeline="builtin.module(func.func(conv-lower-epilogue-in-register-tile))" | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>

// A register-tile loop nest (the K loop stood in for by one add) whose
// result the epilogue reads in place: bias + residual, then ReLU. The
// epilogue runs on the accumulator vector before its store: the bias read
// as a vector broadcast along the rows, the residual as the same tile, the
// constant broadcast; no generic is left.
// CHECK: #[[ROWS:.*]] = affine_map<(d0) -> (0, d0)>
// CHECK-LABEL: func.func @bias_residual_relu
// CHECK-SAME: (%[[A:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>, %[[R:.*]]: tensor<16x32xf32>)
// CHECK: scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:   %[[ACC:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<8x32xf32>
// CHECK:   %[[BS:.*]] = tensor.extract_slice %[[B]][0] [32] [1]
// CHECK:   %[[BV:.*]] = vector.transfer_read %[[BS]]{{.*}}permutation_map = #[[ROWS]]{{.*}} : tensor<32xf32>, vector<8x32xf32>
// CHECK:   %[[RS:.*]] = tensor.extract_slice %[[R]][%[[M]], 0] [8, 32] [1, 1]
// CHECK:   %[[RV:.*]] = vector.transfer_read %[[RS]]{{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK:   %[[S1:.*]] = arith.addf %[[ACC]], %[[BV]] : vector<8x32xf32>
// CHECK:   %[[S2:.*]] = arith.addf %[[S1]], %[[RV]] : vector<8x32xf32>
// CHECK:   %[[Z:.*]] = vector.broadcast %{{.*}} : f32 to vector<8x32xf32>
// CHECK:   %[[Y:.*]] = arith.maximumf %[[S2]], %[[Z]] : vector<8x32xf32>
// CHECK:   vector.transfer_write %[[Y]]
// CHECK-NOT: linalg.generic
func.func @bias_residual_relu(%init: tensor<16x32xf32>, %b: tensor<32xf32>,
                              %r: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %pad = ub.poison : f32
  %0 = scf.for %m = %c0 to %c16 step %c8 iter_args(%acc = %init) -> (tensor<16x32xf32>) {
    %t = tensor.extract_slice %acc[%m, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32>
    %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x32xf32>, vector<8x32xf32>
    %w = arith.addf %v, %v : vector<8x32xf32>
    %s = vector.transfer_write %w, %t[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, tensor<8x32xf32>
    %i = tensor.insert_slice %s into %acc[%m, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32>
    scf.yield %i : tensor<16x32xf32>
  }
  %1 = linalg.generic {indexing_maps = [#id, #bias, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %b, %r : tensor<16x32xf32>, tensor<32xf32>, tensor<16x32xf32>) outs(%0 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %bb: f32, %rr: f32, %out: f32):
    %y = arith.addf %x, %bb : f32
    %z = arith.addf %y, %rr : f32
    %q = arith.maximumf %z, %zero : f32
    linalg.yield %q : f32
  } -> tensor<16x32xf32>
  return %1 : tensor<16x32xf32>
}

// A bf16 layer's f32 accumulators with its bf16 bias (the epilogue widens
// it): the bias tile is read as bf16 and widened on the vector. (Read in the
// accumulator's type, the extf had an f32 operand: invalid IR, and every
// f16 or bf16 convolution with a bias failed to compile.)
// CHECK-LABEL: func.func @narrow_bias
// CHECK: %[[BV:.*]] = vector.transfer_read {{.*}} : tensor<32xbf16>, vector<8x32xbf16>
// CHECK: %[[W:.*]] = arith.extf %[[BV]] : vector<8x32xbf16> to vector<8x32xf32>
// CHECK: arith.addf %{{.*}}, %[[W]] : vector<8x32xf32>
// CHECK-NOT: linalg.generic
func.func @narrow_bias(%init: tensor<16x32xf32>, %b: tensor<32xbf16>) -> tensor<16x32xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %pad = ub.poison : f32
  %0 = scf.for %m = %c0 to %c16 step %c8 iter_args(%acc = %init) -> (tensor<16x32xf32>) {
    %t = tensor.extract_slice %acc[%m, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32>
    %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x32xf32>, vector<8x32xf32>
    %w = arith.addf %v, %v : vector<8x32xf32>
    %s = vector.transfer_write %w, %t[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, tensor<8x32xf32>
    %i = tensor.insert_slice %s into %acc[%m, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32>
    scf.yield %i : tensor<16x32xf32>
  }
  %1 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %b : tensor<16x32xf32>, tensor<32xbf16>) outs(%0 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %bb: bf16, %out: f32):
    %wide = arith.extf %bb : bf16 to f32
    %y = arith.addf %x, %wide : f32
    linalg.yield %y : f32
  } -> tensor<16x32xf32>
  return %1 : tensor<16x32xf32>
}

// Left alone: tiles that do not cover the result (the loop stops at 8 of
// 16 rows: the other rows would miss the epilogue), an epilogue that does
// not write in place, and tiles revisited by a loop around them (K in
// blocks: the epilogue would be applied once a block).
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-3: linalg.generic
func.func @left_alone(%init: tensor<16x32xf32>, %b: tensor<32xf32>,
                      %other: tensor<16x32xf32>)
    -> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %pad = ub.poison : f32
  %0 = scf.for %m = %c0 to %c8 step %c8 iter_args(%acc = %init) -> (tensor<16x32xf32>) {
    %t = tensor.extract_slice %acc[%m, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32>
    %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x32xf32>, vector<8x32xf32>
    %s = vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, tensor<8x32xf32>
    %i = tensor.insert_slice %s into %acc[%m, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32>
    scf.yield %i : tensor<16x32xf32>
  }
  %1 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%0 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %bb: f32, %out: f32):
    %y = arith.addf %x, %bb : f32
    linalg.yield %y : f32
  } -> tensor<16x32xf32>
  %2 = scf.for %m = %c0 to %c16 step %c8 iter_args(%acc = %init) -> (tensor<16x32xf32>) {
    %t = tensor.extract_slice %acc[%m, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32>
    %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x32xf32>, vector<8x32xf32>
    %s = vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, tensor<8x32xf32>
    %i = tensor.insert_slice %s into %acc[%m, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32>
    scf.yield %i : tensor<16x32xf32>
  }
  %3 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%2, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%other : tensor<16x32xf32>) {
  ^bb0(%x: f32, %bb: f32, %out: f32):
    %y = arith.addf %x, %bb : f32
    linalg.yield %y : f32
  } -> tensor<16x32xf32>
  %c2 = arith.constant 2 : index
  %4 = scf.for %k = %c0 to %c2 step %c1 iter_args(%kacc = %init) -> (tensor<16x32xf32>) {
    %5 = scf.for %m = %c0 to %c16 step %c8 iter_args(%acc = %kacc) -> (tensor<16x32xf32>) {
      %t = tensor.extract_slice %acc[%m, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32>
      %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x32xf32>, vector<8x32xf32>
      %w = arith.addf %v, %v : vector<8x32xf32>
      %s = vector.transfer_write %w, %t[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, tensor<8x32xf32>
      %i = tensor.insert_slice %s into %acc[%m, 0] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<16x32xf32>
      scf.yield %i : tensor<16x32xf32>
    }
    scf.yield %5 : tensor<16x32xf32>
  }
  %6 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%4, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%4 : tensor<16x32xf32>) {
  ^bb0(%x: f32, %bb: f32, %out: f32):
    %y = arith.addf %x, %bb : f32
    linalg.yield %y : f32
  } -> tensor<16x32xf32>
  return %1, %3, %6 : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}

// A block whose rows the register tile does not divide (14 = 2 x 6 + 2):
// tiling peels the last two rows into a second nest, which starts from the
// first one's result, and the fill before them is still there. Together
// the two nests store every element once, so each tile's accumulators
// start as a splat of the fill's value (the fill, a pass over the block,
// goes) and the epilogue is applied in both nests' tiles (no second pass).
// CHECK-LABEL: func.func @peeled_rows_from_fill
// CHECK-SAME: (%[[OUT:.*]]: tensor<14x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[MAIN:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[OUT]])
// CHECK:   %[[Z6:.*]] = vector.broadcast %{{.*}} : f32 to vector<6x32xf32>
// CHECK:   %[[K6:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[Z6]]) -> (vector<6x32xf32>)
// CHECK:   %[[Y6:.*]] = arith.addf %[[K6]], %{{.*}} : vector<6x32xf32>
// CHECK:   %[[R6:.*]] = arith.maximumf %[[Y6]], %{{.*}} : vector<6x32xf32>
// CHECK:   vector.transfer_write %[[R6]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[MAIN]])
// CHECK:   %[[Z2:.*]] = vector.broadcast %{{.*}} : f32 to vector<2x16xf32>
// CHECK:   %[[K2:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[Z2]]) -> (vector<2x16xf32>)
// CHECK:   %[[Y2:.*]] = arith.addf %[[K2]], %{{.*}} : vector<2x16xf32>
// CHECK:   %[[R2:.*]] = arith.maximumf %[[Y2]], %{{.*}} : vector<2x16xf32>
// CHECK:   vector.transfer_write %[[R2]]
// CHECK-NOT: linalg.generic
func.func @peeled_rows_from_fill(%out: tensor<14x32xf32>, %b: tensor<32xf32>) -> tensor<14x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %pad = ub.poison : f32
  %filled = linalg.fill ins(%zero : f32) outs(%out : tensor<14x32xf32>) -> tensor<14x32xf32>
  %0 = scf.for %m = %c0 to %c12 step %c6 iter_args(%acc = %filled) -> (tensor<14x32xf32>) {
    %t = tensor.extract_slice %acc[%m, 0] [6, 32] [1, 1] : tensor<14x32xf32> to tensor<6x32xf32>
    %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<6x32xf32>, vector<6x32xf32>
    %k = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %v) -> (vector<6x32xf32>) {
      %n = arith.addf %a, %a : vector<6x32xf32>
      scf.yield %n : vector<6x32xf32>
    }
    %s = vector.transfer_write %k, %t[%c0, %c0] {in_bounds = [true, true]} : vector<6x32xf32>, tensor<6x32xf32>
    %i = tensor.insert_slice %s into %acc[%m, 0] [6, 32] [1, 1] : tensor<6x32xf32> into tensor<14x32xf32>
    scf.yield %i : tensor<14x32xf32>
  }
  %1 = scf.for %n = %c0 to %c32 step %c16 iter_args(%acc = %0) -> (tensor<14x32xf32>) {
    %t = tensor.extract_slice %acc[12, %n] [2, 16] [1, 1] : tensor<14x32xf32> to tensor<2x16xf32>
    %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<2x16xf32>, vector<2x16xf32>
    %k = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %v) -> (vector<2x16xf32>) {
      %n2 = arith.addf %a, %a : vector<2x16xf32>
      scf.yield %n2 : vector<2x16xf32>
    }
    %s = vector.transfer_write %k, %t[%c0, %c0] {in_bounds = [true, true]} : vector<2x16xf32>, tensor<2x16xf32>
    %i = tensor.insert_slice %s into %acc[12, %n] [2, 16] [1, 1] : tensor<2x16xf32> into tensor<14x32xf32>
    scf.yield %i : tensor<14x32xf32>
  }
  %2 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%1, %b : tensor<14x32xf32>, tensor<32xf32>) outs(%1 : tensor<14x32xf32>) {
  ^bb0(%x: f32, %bb: f32, %o: f32):
    %y = arith.addf %x, %bb : f32
    %r = arith.maximumf %y, %zero : f32
    linalg.yield %r : f32
  } -> tensor<14x32xf32>
  return %2 : tensor<14x32xf32>
}

// Two nests whose tiles overlap (rows 0..12 and 11..13) and leave row 13
// out: some elements would be stored twice, and one would keep the fill.
// The fill and the epilogue stay.
// CHECK-LABEL: func.func @peeled_rows_overlapping
// CHECK: linalg.fill
// CHECK: vector.transfer_read
// CHECK: vector.transfer_read
// CHECK: linalg.generic
func.func @peeled_rows_overlapping(%out: tensor<14x32xf32>, %b: tensor<32xf32>) -> tensor<14x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %pad = ub.poison : f32
  %filled = linalg.fill ins(%zero : f32) outs(%out : tensor<14x32xf32>) -> tensor<14x32xf32>
  %0 = scf.for %m = %c0 to %c12 step %c6 iter_args(%acc = %filled) -> (tensor<14x32xf32>) {
    %t = tensor.extract_slice %acc[%m, 0] [6, 32] [1, 1] : tensor<14x32xf32> to tensor<6x32xf32>
    %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<6x32xf32>, vector<6x32xf32>
    %k = scf.for %i = %c0 to %c1 step %c1 iter_args(%a = %v) -> (vector<6x32xf32>) {
      %n = arith.addf %a, %a : vector<6x32xf32>
      scf.yield %n : vector<6x32xf32>
    }
    %s = vector.transfer_write %k, %t[%c0, %c0] {in_bounds = [true, true]} : vector<6x32xf32>, tensor<6x32xf32>
    %i = tensor.insert_slice %s into %acc[%m, 0] [6, 32] [1, 1] : tensor<6x32xf32> into tensor<14x32xf32>
    scf.yield %i : tensor<14x32xf32>
  }
  %1 = scf.for %n = %c0 to %c32 step %c16 iter_args(%acc = %0) -> (tensor<14x32xf32>) {
    %t = tensor.extract_slice %acc[11, %n] [2, 16] [1, 1] : tensor<14x32xf32> to tensor<2x16xf32>
    %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<2x16xf32>, vector<2x16xf32>
    %k = scf.for %i = %c0 to %c1 step %c1 iter_args(%a = %v) -> (vector<2x16xf32>) {
      %n2 = arith.addf %a, %a : vector<2x16xf32>
      scf.yield %n2 : vector<2x16xf32>
    }
    %s = vector.transfer_write %k, %t[%c0, %c0] {in_bounds = [true, true]} : vector<2x16xf32>, tensor<2x16xf32>
    %i = tensor.insert_slice %s into %acc[11, %n] [2, 16] [1, 1] : tensor<2x16xf32> into tensor<14x32xf32>
    scf.yield %i : tensor<14x32xf32>
  }
  %2 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%1, %b : tensor<14x32xf32>, tensor<32xf32>) outs(%1 : tensor<14x32xf32>) {
  ^bb0(%x: f32, %bb: f32, %o: f32):
    %y = arith.addf %x, %bb : f32
    linalg.yield %y : f32
  } -> tensor<14x32xf32>
  return %2 : tensor<14x32xf32>
}

// The nests write filter panels, [16, 2, 16] (pack-filter-panels' view made
// inside a block of conv-lower-im2col-panels: the stem, strided 3x3s), and
// the epilogue reads them collapsed to [16, 32]: it is expanded into the
// panels' shape first (the bias [32] read as [2, 16]) and then applied to
// each tile before its store; the collapse after it is what the block
// inserts.
// CHECK-LABEL: func.func @through_panels_collapse
// CHECK-SAME: (%[[A:.*]]: tensor<16x2x16xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[BP:.*]] = tensor.expand_shape %[[B]] {{\[}}[0, 1]] output_shape [2, 16]
// CHECK: %[[R:.*]] = scf.for %[[M:.*]] = {{.*}} iter_args
// CHECK:   scf.for %[[P:.*]] = {{.*}} iter_args
// CHECK:     %[[ACC:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<8x16xf32>
// CHECK:     %[[BS:.*]] = tensor.extract_slice %[[BP]][%[[P]], 0] [1, 16] [1, 1]
// CHECK:     %[[BV:.*]] = vector.transfer_read %[[BS]]{{.*}} : tensor<1x16xf32>, vector<8x16xf32>
// CHECK:     %[[Y:.*]] = arith.addf %[[ACC]], %[[BV]] : vector<8x16xf32>
// CHECK:     vector.transfer_write %[[Y]]
// CHECK-NOT: linalg.generic
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0], [1, 2]] : tensor<16x2x16xf32> into tensor<16x32xf32>
// CHECK: return %[[C]]
func.func @through_panels_collapse(%init: tensor<16x2x16xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %pad = ub.poison : f32
  %0 = scf.for %m = %c0 to %c16 step %c8 iter_args(%acc = %init) -> (tensor<16x2x16xf32>) {
    %1 = scf.for %p = %c0 to %c2 step %c1 iter_args(%acc2 = %acc) -> (tensor<16x2x16xf32>) {
      %t = tensor.extract_slice %acc2[%m, %p, 0] [8, 1, 16] [1, 1, 1] : tensor<16x2x16xf32> to tensor<8x16xf32>
      %v = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x16xf32>, vector<8x16xf32>
      %w = arith.addf %v, %v : vector<8x16xf32>
      %s = vector.transfer_write %w, %t[%c0, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, tensor<8x16xf32>
      %i = tensor.insert_slice %s into %acc2[%m, %p, 0] [8, 1, 16] [1, 1, 1] : tensor<8x16xf32> into tensor<16x2x16xf32>
      scf.yield %i : tensor<16x2x16xf32>
    }
    scf.yield %1 : tensor<16x2x16xf32>
  }
  %c = tensor.collapse_shape %0 [[0], [1, 2]] : tensor<16x2x16xf32> into tensor<16x32xf32>
  %2 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : tensor<16x32xf32>, tensor<32xf32>) outs(%c : tensor<16x32xf32>) {
  ^bb0(%x: f32, %bb: f32, %out: f32):
    %y = arith.addf %x, %bb : f32
    linalg.yield %y : f32
  } -> tensor<16x32xf32>
  return %2 : tensor<16x32xf32>
}
