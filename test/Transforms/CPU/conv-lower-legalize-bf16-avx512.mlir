// conv-lower-legalize-bf16{avx512-bf16}: f32 -> bf16 vectors rounded by
// VCVTNEPS2BF16 (16 lanes, then 8) give the bits the integer rounding gives
// (the first RUN, without the option, and LLVM's own fptrunc): ties to
// even, overflow to infinity, NaNs quiet, -0. (Subnormal inputs are not
// among them: the instruction reads them as zero.)
// REQUIRES: avx512-bf16
// RUN: mlir-opt %S/Inputs/bf16-vcvt.mlir --convert-vector-to-scf --convert-scf-to-cf \
// RUN:   --convert-vector-to-llvm --convert-arith-to-llvm --convert-func-to-llvm \
// RUN:   --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | conv-opt --conv-lower-legalize-bf16 \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s
// RUN: mlir-opt %S/Inputs/bf16-vcvt.mlir --convert-vector-to-scf --convert-scf-to-cf \
// RUN:   --convert-vector-to-llvm --convert-arith-to-llvm --convert-func-to-llvm \
// RUN:   --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | conv-opt --conv-lower-legalize-bf16=avx512-bf16=true \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s
// CHECK: ( 1065353216, 1065353216, 1065484288, 1065418752, 1065418752, -1071644672, 2139029504, 2139095040, 2143289344, -8388608, 2139095040, -2147483648, 2139095040, 1065418752, 1036845056, -1097203712, 1199570944, 981663744, -1057488896, 1073741824, 1065484288, 1065484288, -1081999360, 1343553536 )
