// RUN: conv-opt %s --convert-vector-to-llvm=enable-amx --conv-lower-amx-loop-types | FileCheck %s
// The rest of the conversion to LLVM then goes through, and LLVM's X86
// backend keeps the carried tile in a tile register.
// RUN: conv-opt %s --convert-vector-to-llvm=enable-amx --conv-lower-amx-loop-types \
// RUN:   --convert-scf-to-cf --finalize-memref-to-llvm --convert-arith-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-translate --mlir-to-llvmir | llc -O2 -mattr=+amx-tile,+amx-bf16,+avx512f -o - \
// RUN: | FileCheck %s --check-prefix=ASM

// The K loop carries LLVM's x86_amx, not !amx.tile.
// CHECK-LABEL: func.func @tiles
// CHECK: %[[Z:.*]] = llvm.call_intrinsic "llvm.x86.tilezero.internal"
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z]]) -> (!llvm.x86_amx) {
// CHECK:   llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// CHECK:   scf.yield %{{.*}} : !llvm.x86_amx
// ASM-LABEL: tiles:
// ASM: ldtilecfg
// ASM: tilezero %[[ACC:tmm[0-7]]]
// ASM: .LBB0_[[LOOP:[0-9]+]]:
// ASM: tileloadd
// ASM: tileloadd
// ASM: tdpbf16ps %tmm{{[0-7]}}, %tmm{{[0-7]}}, %[[ACC]]
// ASM: tilestored %[[ACC]]
// ASM: tilerelease
func.func @tiles(%A: memref<28x64x2xbf16>, %B: memref<64x16x2xbf16>, %C: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %z = amx.tile_zero : !amx.tile<16x16xf32>
  %r = scf.for %k = %c0 to %c64 step %c16 iter_args(%acc = %z) -> (!amx.tile<16x16xf32>) {
    %a = amx.tile_load %A[%c0, %k, %c0], %c128 : memref<28x64x2xbf16> into !amx.tile<16x32xbf16>
    %b = amx.tile_load %B[%k, %c0, %c0], %c64 : memref<64x16x2xbf16> into !amx.tile<16x32xbf16>
    %d = amx.tile_mulf %a, %b, %acc : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    scf.yield %d : !amx.tile<16x16xf32>
  }
  amx.tile_store %C[%c0, %c0], %r : memref<16x16xf32>, !amx.tile<16x16xf32>
  return
}
