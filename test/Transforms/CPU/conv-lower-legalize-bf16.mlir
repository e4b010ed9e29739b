// RUN: conv-opt %s --split-input-file --conv-lower-legalize-bf16 --verify-diagnostics | FileCheck %s
// RUN: conv-opt %s --split-input-file --conv-lower-legalize-bf16=avx512-bf16=true --verify-diagnostics | FileCheck %s --check-prefix=VCVT
//
// Rounding, NaNs, infinities and subnormals as LLVM's own fptrunc/fpext
// compute them (the expected lines are what mlir-runner prints without the
// pass):
// RUN: mlir-opt %S/Inputs/bf16-roundtrip.mlir --convert-vector-to-scf --convert-scf-to-cf \
// RUN:   --convert-vector-to-llvm --convert-arith-to-llvm --convert-func-to-llvm \
// RUN:   --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | conv-opt --conv-lower-legalize-bf16 \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s --check-prefix=EXEC
// EXEC: ( 1065353216, 1065353216, 1065484288, 1065418752, 1065418752, -1071644672, 2139029504, 2139095040, 65536, 65536, 2143289344, -8388608, 2139095040, -2147483648, 0, 131072, 2139095040, 1065418752 )
// EXEC-NEXT: 2

// Moves of bf16 bits become moves of i16; an extension is a shift into the
// top half of an f32; arithmetic on bf16 computes in f32 and rounds to
// nearest even by integer code.
// CHECK-LABEL: llvm.func @moves_and_math
// CHECK-NOT:     bf16
// CHECK:         %[[V:.+]] = llvm.load %{{.+}} : !llvm.ptr -> vector<17xi16>
// CHECK:         llvm.br ^bb1(%[[V]] : vector<17xi16>)
// CHECK:       ^bb1(%[[A:.+]]: vector<17xi16>):
// CHECK:         %[[W:.+]] = llvm.zext %[[A]] : vector<17xi16> to vector<17xi32>
// CHECK:         %[[S:.+]] = llvm.shl %[[W]], %{{.+}} : vector<17xi32>
// CHECK:         %[[F:.+]] = llvm.bitcast %[[S]] : vector<17xi32> to vector<17xf32>
// CHECK:         %[[SUM:.+]] = llvm.fadd %[[F]], %[[F]] : vector<17xf32>
// CHECK:         %[[BITS:.+]] = llvm.bitcast %[[SUM]] : vector<17xf32> to vector<17xi32>
// CHECK:         llvm.lshr %[[BITS]]
// CHECK:         llvm.fcmp "uno" %[[SUM]], %[[SUM]]
// CHECK:         %[[R:.+]] = llvm.trunc %{{.+}} : vector<17xi32> to vector<17xi16>
// CHECK:         llvm.store %[[R]], %{{.+}} : vector<17xi16>, !llvm.ptr
// CHECK:         llvm.mlir.constant(16256 : i16) : i16
llvm.func @moves_and_math(%p: !llvm.ptr, %q: !llvm.ptr) {
  %v = llvm.load %p : !llvm.ptr -> vector<17xbf16>
  llvm.br ^bb1(%v : vector<17xbf16>)
^bb1(%a: vector<17xbf16>):
  %s = llvm.fadd %a, %a : vector<17xbf16>
  llvm.store %s, %q : vector<17xbf16>, !llvm.ptr
  %one = llvm.mlir.constant(1.0 : bf16) : bf16
  llvm.store %one, %q : bf16, !llvm.ptr
  llvm.return
}

// -----

// A bf16 in a signature another module sees is an ABI, not bits.
// expected-error @+1 {{has bf16 in its signature, which other modules see}}
llvm.func @public_bf16(%x: bf16) -> bf16 {
  llvm.return %x : bf16
}

// -----

llvm.func @from_f64(%x: f64, %q: !llvm.ptr) {
  // expected-error @+1 {{truncates 'f64' to bf16; only f32 and f16 are expanded}}
  %t = llvm.fptrunc %x : f64 to bf16
  llvm.store %t, %q : bf16, !llvm.ptr
  llvm.return
}

// -----

// AVX512-BF16's dot product (conv-lower-x86-dot-product) takes bf16
// vectors as they are: loaded as i16 bits like every bf16, bitcast back to
// bf16 for the intrinsic alone, which is neither widened nor refused.
// CHECK-LABEL: llvm.func @dot
// CHECK: %[[A:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<32xi16>
// CHECK: %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<32xi16>
// CHECK: %[[AB:.*]] = llvm.bitcast %[[A]] : vector<32xi16> to vector<32xbf16>
// CHECK: %[[BB:.*]] = llvm.bitcast %[[B]] : vector<32xi16> to vector<32xbf16>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %[[AB]], %[[BB]]) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
llvm.func @dot(%acc: vector<16xf32>, %pa: !llvm.ptr, %pb: !llvm.ptr) -> vector<16xf32> {
  %a = llvm.load %pa : !llvm.ptr -> vector<32xbf16>
  %b = llvm.load %pb : !llvm.ptr -> vector<32xbf16>
  %0 = llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%acc, %a, %b) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
  llvm.return %0 : vector<16xf32>
}

// -----

// With avx512-bf16 an f32 vector of 8k lanes is rounded by VCVTNEPS2BF16,
// 16 lanes a call and a last 8 with the 256-bit form, put together as i16
// bits; the calls keep their bf16 result type, bitcast to i16 at once.
// Other lengths (here 4) keep the integer rounding. Without the option
// (the CHECK prefix), no intrinsic.
// VCVT-LABEL: llvm.func @vcvt
// VCVT: %[[P0:.*]] = llvm.intr.vector.extract %[[X:.*]][0] : vector<16xf32> from vector<24xf32>
// VCVT: %[[C0:.*]] = llvm.call_intrinsic "llvm.x86.avx512bf16.cvtneps2bf16.512"(%[[P0]]) : (vector<16xf32>) -> vector<16xbf16>
// VCVT: llvm.bitcast %[[C0]] : vector<16xbf16> to vector<16xi16>
// VCVT: llvm.intr.vector.insert {{.*}}[0] : vector<16xi16> into vector<24xi16>
// VCVT: %[[P1:.*]] = llvm.intr.vector.extract %[[X]][16] : vector<8xf32> from vector<24xf32>
// VCVT: %[[C1:.*]] = llvm.call_intrinsic "llvm.x86.avx512bf16.cvtneps2bf16.256"(%[[P1]]) : (vector<8xf32>) -> vector<8xbf16>
// VCVT: llvm.intr.vector.insert {{.*}}[16] : vector<8xi16> into vector<24xi16>
// VCVT: llvm.store {{.*}} : vector<24xi16>, !llvm.ptr
// VCVT-NOT: cvtneps2bf16
// VCVT: llvm.lshr
// VCVT: llvm.store {{.*}} : vector<4xi16>, !llvm.ptr
// CHECK-LABEL: llvm.func @vcvt
// CHECK-NOT: cvtneps2bf16
// CHECK: llvm.return
llvm.func @vcvt(%x: vector<24xf32>, %y: vector<4xf32>, %p: !llvm.ptr) {
  %t = llvm.fptrunc %x : vector<24xf32> to vector<24xbf16>
  llvm.store %t, %p : vector<24xbf16>, !llvm.ptr
  %u = llvm.fptrunc %y : vector<4xf32> to vector<4xbf16>
  llvm.store %u, %p : vector<4xbf16>, !llvm.ptr
  llvm.return
}
