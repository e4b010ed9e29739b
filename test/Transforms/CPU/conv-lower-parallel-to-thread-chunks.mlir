// RUN: conv-opt %s --conv-lower-parallel-to-thread-chunks="num-threads=2" --split-input-file | FileCheck %s
// RUN: conv-opt %s --conv-lower-parallel-to-thread-chunks --split-input-file | FileCheck %s --check-prefix=DEFAULT

// A 1-D loop: each thread of the team runs iterations [t*n/T, (t+1)*n/T) of
// the n = ceil((ub - lb) / step) iterations, the induction variable
// lb + i * step.

// CHECK-DAG:   func.func private @omp_get_thread_num() -> i32
// CHECK-DAG:   func.func private @omp_get_num_threads() -> i32
// CHECK-LABEL: func.func @rows(
// CHECK-SAME:    %[[BUF:.*]]: memref<?xf32>, %[[LB:.*]]: index, %[[UB:.*]]: index)
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:         %[[SPAN:.*]] = arith.subi %[[UB]], %[[LB]]
// CHECK:         %[[TRIP:.*]] = arith.ceildivsi %[[SPAN]], %[[STEP:.*]] :
// CHECK:         %[[N:.*]] = arith.maxsi %[[TRIP]], %[[ZERO]]
// CHECK:         %[[TWO:.*]] = arith.constant 2 : i32
// CHECK:         omp.parallel num_threads(%[[TWO]] : i32) {
// CHECK:           %[[T32:.*]] = func.call @omp_get_thread_num() : () -> i32
// CHECK:           %[[T:.*]] = arith.index_castui %[[T32]]
// CHECK:           %[[TEAM32:.*]] = func.call @omp_get_num_threads() : () -> i32
// CHECK:           %[[TEAM:.*]] = arith.index_castui %[[TEAM32]]
// CHECK:           %[[BEGIN_NUM:.*]] = arith.muli %[[T]], %[[N]]
// CHECK:           %[[BEGIN:.*]] = arith.divui %[[BEGIN_NUM]], %[[TEAM]]
// CHECK:           %[[NEXT:.*]] = arith.addi %[[T]], %{{.*}}
// CHECK:           %[[END_NUM:.*]] = arith.muli %[[NEXT]], %[[N]]
// CHECK:           %[[END:.*]] = arith.divui %[[END_NUM]], %[[TEAM]]
// CHECK:           scf.for %[[I:.*]] = %[[BEGIN]] to %[[END]] step %{{.*}} {
// CHECK:             %[[SCALED:.*]] = arith.muli %[[I]], %[[STEP]]
// CHECK:             %[[IV:.*]] = arith.addi %[[LB]], %[[SCALED]]
// CHECK:             memref.store %{{.*}}, %[[BUF]][%[[IV]]]
// CHECK:           }
// CHECK-NEXT:      omp.terminator
// CHECK-NOT:     scf.parallel
// DEFAULT-LABEL: func.func @rows(
// DEFAULT:         omp.parallel {
func.func @rows(%buf: memref<?xf32>, %lb: index, %ub: index) {
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%lb) to (%ub) step (%c4) {
    memref.store %one, %buf[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A 2-D loop is linearized row major: j = i mod 5, i = i div 5.

// CHECK-LABEL: func.func @tiles(
// CHECK:         omp.parallel
// CHECK:           scf.for %[[L:.*]] =
// CHECK:             %[[J:.*]] = arith.remui %[[L]], %[[FIVE:.*]] : index
// CHECK:             %[[I:.*]] = arith.divui %[[L]], %[[FIVE]] : index
// CHECK:             %[[J2:.*]] = arith.muli %[[J]], %{{.*}}
// CHECK:             %[[JJ:.*]] = arith.addi %{{.*}}, %[[J2]]
// CHECK:             %[[I2:.*]] = arith.muli %[[I]], %{{.*}}
// CHECK:             %[[II:.*]] = arith.addi %{{.*}}, %[[I2]]
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[II]], %[[JJ]]]
func.func @tiles(%buf: memref<6x10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c10 = arith.constant 10 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c10) step (%c1, %c2) {
    memref.store %one, %buf[%i, %j] : memref<6x10xf32>
    scf.reduce
  }
  return
}

// -----

// Stack buffers of the body get a scope per iteration; a loop nested in the
// parallel one stays a parallel loop, run by the thread that owns the
// iteration.

// CHECK-LABEL: func.func @scratch(
// CHECK:         omp.parallel
// CHECK:           scf.for
// CHECK:             memref.alloca_scope {
// CHECK:               memref.alloca() : memref<16xf32>
// CHECK:               scf.parallel
// CHECK:             }
// CHECK-NOT:     omp.parallel
func.func @scratch(%buf: memref<64x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %tmp = memref.alloca() : memref<16xf32>
    scf.parallel (%j) = (%c0) to (%c16) step (%c1) {
      %v = memref.load %buf[%i, %j] : memref<64x16xf32>
      memref.store %v, %tmp[%j] : memref<16xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// A loop with a reduction is left as it is.

// CHECK-NOT:   func.func private @omp_get_thread_num
// CHECK-LABEL: func.func @sum(
// CHECK-NOT:     omp.parallel
// CHECK:         scf.parallel
func.func @sum(%buf: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.parallel (%i) = (%c0) to (%c64) step (%c1) init (%zero) -> f32 {
    %v = memref.load %buf[%i] : memref<64xf32>
    scf.reduce(%v : f32) {
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      scf.reduce.return %t : f32
    }
  }
  return %s : f32
}
