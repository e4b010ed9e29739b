// RUN: conv-opt %s --conv-lower-omp-parallel-to-gomp --split-input-file --verify-diagnostics | FileCheck %s

// The region's body moves into an internal function of one pointer; the
// values it uses from outside travel in a stack struct allocated once in the
// caller's entry block, constants are remade inside, and GOMP_parallel runs
// the function on the team.

// CHECK-LABEL: llvm.func @rows(
// CHECK-SAME:    %[[BUF:.*]]: !llvm.ptr, %[[N:.*]]: i64)
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK:         %[[DATA:.*]] = llvm.alloca %[[ONE]] x !llvm.struct<(i64, ptr)>
// CHECK:         %[[TEAM:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NOT:     omp.parallel
// CHECK:         %[[F0:.*]] = llvm.getelementptr %[[DATA]][0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, ptr)>
// CHECK:         llvm.store %[[N]], %[[F0]]
// CHECK:         %[[F1:.*]] = llvm.getelementptr %[[DATA]][0, 1]
// CHECK:         llvm.store %[[BUF]], %[[F1]]
// CHECK:         %[[FN:.*]] = llvm.mlir.addressof @rows_omp_parallel : !llvm.ptr
// CHECK:         %[[FLAGS:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK:         llvm.call @GOMP_parallel(%[[FN]], %[[DATA]], %[[TEAM]], %[[FLAGS]])
// CHECK:         llvm.return

// CHECK-LABEL: llvm.func internal @rows_omp_parallel(
// CHECK-SAME:    %[[ARG:.*]]: !llvm.ptr) {
// CHECK:         %[[G0:.*]] = llvm.getelementptr %[[ARG]][0, 0]
// CHECK:         %[[M:.*]] = llvm.load %[[G0]] : !llvm.ptr -> i64
// CHECK:         %[[G1:.*]] = llvm.getelementptr %[[ARG]][0, 1]
// CHECK:         %[[B:.*]] = llvm.load %[[G1]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[V:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK:         %[[T:.*]] = llvm.call @omp_get_thread_num()
// CHECK:         %[[T64:.*]] = llvm.zext %[[T]]
// CHECK:         llvm.icmp "slt" %[[T64]], %[[M]]
// CHECK:         llvm.cond_br %{{.*}}, ^[[STORE:.*]], ^[[DONE:.*]]
// CHECK:       ^[[STORE]]:
// CHECK:         %[[AT:.*]] = llvm.getelementptr %[[B]][%[[T64]]]
// CHECK:         llvm.store %[[V]], %[[AT]]
// CHECK:         llvm.br ^[[DONE]]
// CHECK:       ^[[DONE]]:
// CHECK-NEXT:    llvm.return
// CHECK:       llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
llvm.func @omp_get_thread_num() -> i32
llvm.func @rows(%buf: !llvm.ptr, %n: i64) {
  %team = llvm.mlir.constant(4 : i32) : i32
  %one = llvm.mlir.constant(1.0 : f32) : f32
  omp.parallel num_threads(%team : i32) {
    %t = llvm.call @omp_get_thread_num() : () -> i32
    %t64 = llvm.zext %t : i32 to i64
    %in = llvm.icmp "slt" %t64, %n : i64
    llvm.cond_br %in, ^store, ^done
  ^store:
    %at = llvm.getelementptr %buf[%t64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %one, %at : f32, !llvm.ptr
    llvm.br ^done
  ^done:
    omp.terminator
  }
  llvm.return
}

// -----

// Two regions in one function get two functions; a region that uses nothing
// from outside gets a null pointer; without num_threads the team is the
// runtime's default (0); an i64 team size is truncated to GOMP's unsigned.

// CHECK-LABEL: llvm.func @twice(
// CHECK-SAME:    %[[N:.*]]: i64)
// CHECK-NOT:     llvm.alloca
// CHECK:         %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         %[[FN:.*]] = llvm.mlir.addressof @twice_omp_parallel : !llvm.ptr
// CHECK-NEXT:    %[[DEFAULT:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK:         llvm.call @GOMP_parallel(%[[FN]], %[[NULL]], %[[DEFAULT]], %{{.*}})
// CHECK:         %[[FN2:.*]] = llvm.mlir.addressof @twice_omp_parallel_0 : !llvm.ptr
// CHECK:         %[[TEAM:.*]] = llvm.trunc %[[N]] : i64 to i32
// CHECK:         llvm.call @GOMP_parallel(%[[FN2]], %{{.*}}, %[[TEAM]], %{{.*}})
// CHECK:       llvm.func internal @twice_omp_parallel_0(
// CHECK:       llvm.func internal @twice_omp_parallel(
llvm.func @work() -> ()
llvm.func @twice(%n: i64) {
  omp.parallel {
    llvm.call @work() : () -> ()
    omp.terminator
  }
  omp.parallel num_threads(%n : i64) {
    llvm.call @work() : () -> ()
    omp.terminator
  }
  llvm.return
}

// -----

llvm.func @conditional(%c: i1) {
  // expected-error @below {{conv-lower-omp-parallel-to-gomp: only num_threads is supported}}
  omp.parallel if(%c) {
    omp.terminator
  }
  llvm.return
}

// -----

llvm.func @worksharing(%n: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  // expected-error @below {{the region holds OpenMP constructs of its own}}
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%c0) to (%n) step (%c1) {
        omp.yield
      }
    }
    omp.terminator
  }
  llvm.return
}

// -----

func.func @not_lowered(%buf: memref<4xf32>) {
  // expected-error @below {{the region is not in an llvm.func}}
  omp.parallel {
    %c0 = arith.constant 0 : index
    %v = memref.load %buf[%c0] : memref<4xf32>
    omp.terminator
  }
  return
}

// -----

llvm.func @index_team(%m: i64) {
  %n = builtin.unrealized_conversion_cast %m : i64 to index
  // expected-error @below {{num_threads is not an integer}}
  omp.parallel num_threads(%n : index) {
    omp.terminator
  }
  llvm.return
}
