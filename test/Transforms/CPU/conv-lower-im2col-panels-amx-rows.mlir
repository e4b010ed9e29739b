// RUN: conv-opt %s --conv-lower-im2col --canonicalize --conv-lower-decompose \
// RUN:   --canonicalize --conv-lower-pack-rhs \
// RUN:   --conv-lower-im2col-panels="min-blocks=8 tile-n=32" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=ROWS
// RUN: conv-opt %s --conv-lower-im2col --canonicalize --conv-lower-decompose \
// RUN:   --canonicalize --conv-lower-pack-rhs \
// RUN:   --conv-lower-im2col-panels="min-blocks=8 tile-n=32 amx-rows" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=AMX

// amx-rows: the row blocks of a bf16 GEMM are whole 16-row AMX tiles where
// that still gives the blocks wanted (56x56: 224 rows, 14 blocks, against
// 392 rows, 8 blocks, 24.5 tiles each), else blocks whose partial last tile
// is at most an eighth of their rows (14x14: 98 = 6 x 16 + 2, in 2 blocks,
// against 14 one-image-row blocks of 14 rows, none a whole tile). An i8
// GEMM (TDPBSSD's tiles) alike; an f32 GEMM is blocked as before.
// ROWS-LABEL: func.func @rows_14
// ROWS: scf.forall (%{{.*}}) in (14)
// ROWS: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [14, 32] [1, 1] : tensor<196x32xf32> to tensor<14x32xf32>
// ROWS-LABEL: func.func @rows_56
// ROWS: scf.forall (%{{.*}}) in (8)
// ROWS: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [392, 32] [1, 1]
// AMX-LABEL: func.func @rows_14
// AMX: scf.forall (%{{.*}}) in (2)
// AMX: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [98, 32] [1, 1] : tensor<196x32xf32> to tensor<98x32xf32>
// AMX-LABEL: func.func @rows_56
// AMX: scf.forall (%{{.*}}) in (14)
// AMX: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [224, 32] [1, 1]
// ROWS-LABEL: func.func @rows_14_i8
// ROWS: scf.forall (%{{.*}}) in (14)
// AMX-LABEL: func.func @rows_14_i8
// AMX: scf.forall (%{{.*}}) in (2)
// AMX: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [98, 32] [1, 1] : tensor<196x32xi32> to tensor<98x32xi32>
// AMX-LABEL: func.func @rows_f32
// AMX: scf.forall (%{{.*}}) in (14)
// AMX: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [14, 32] [1, 1]
func.func @rows_14(%x: tensor<1x16x16x16xbf16>, %w: tensor<32x3x3x16xbf16>) -> tensor<1x14x14x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x14x14x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x14x14x32xf32>) -> tensor<1x14x14x32xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x16x16x16xbf16>, tensor<32x3x3x16xbf16>) outs(%init : tensor<1x14x14x32xf32>) -> tensor<1x14x14x32xf32>
  return %y : tensor<1x14x14x32xf32>
}
func.func @rows_56(%x: tensor<1x58x58x16xbf16>, %w: tensor<32x3x3x16xbf16>) -> tensor<1x56x56x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x56x56x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x58x58x16xbf16>, tensor<32x3x3x16xbf16>) outs(%init : tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32>
  return %y : tensor<1x56x56x32xf32>
}
func.func @rows_14_i8(%x: tensor<1x16x16x16xi8>, %w: tensor<32x3x3x16xi8>) -> tensor<1x14x14x32xi32> {
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<1x14x14x32xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<1x14x14x32xi32>) -> tensor<1x14x14x32xi32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x16x16x16xi8>, tensor<32x3x3x16xi8>) outs(%init : tensor<1x14x14x32xi32>) -> tensor<1x14x14x32xi32>
  return %y : tensor<1x14x14x32xi32>
}
func.func @rows_f32(%x: tensor<1x16x16x16xf32>, %w: tensor<32x3x3x16xf32>) -> tensor<1x14x14x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x14x14x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x14x14x32xf32>) -> tensor<1x14x14x32xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x16x16x16xf32>, tensor<32x3x3x16xf32>) outs(%init : tensor<1x14x14x32xf32>) -> tensor<1x14x14x32xf32>
  return %y : tensor<1x14x14x32xf32>
}
