// The CPU pipeline leaves nothing but the LLVM dialect...
// RUN: conv-opt %S/../../examples/conv2d_nchw.mlir --conv-lower-to-llvm | FileCheck %s --check-prefix=IR
// IR-NOT: linalg.
// IR-NOT: tensor.
// IR-NOT: vector.
// IR-NOT: conv_lower.
// IR: llvm.func @conv
// The GEMM's register-tile updates are fused multiply-adds (one
// instruction each), not a multiply and an add.
// IR-NOT: llvm.fmul
// IR: llvm.intr.fmuladd{{.*}} -> vector<2xf32>
// IR-NOT: llvm.fmul
// IR: llvm.func @main
//
// ...and what it leaves runs. The example's data are small integers, so the
// result is exact; the rows below were computed independently with numpy
// (float64 direct convolution of the same formula).
// RUN: conv-opt %S/../../examples/conv2d_nchw.mlir --conv-lower-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s --check-prefix=EXEC
// RUN: conv-opt %S/../../examples/conv2d_nchw.mlir --conv-lower-to-llvm="tile-m=4 tile-n=1 tile-k=27" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s --check-prefix=EXEC
// With threads, the GEMM's row blocks are OpenMP parallel regions started
// through GCC's OpenMP ABI: no libomp-only __kmpc_* entry point remains, and
// the code runs on LLVM's libomp and on GCC's libgomp alike.
// RUN: conv-opt %S/../../examples/conv2d_nchw.mlir --conv-lower-to-llvm="threads=2 tile-m=1" \
// RUN: | FileCheck %s --check-prefix=OMP --implicit-check-not=__kmpc --implicit-check-not=omp.
// OMP-DAG: llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// OMP-DAG: llvm.func @omp_get_thread_num() -> i32
// OMP-DAG: llvm.func @omp_get_num_threads() -> i32
// OMP-DAG: llvm.func internal @conv_omp_parallel(%{{.*}}: !llvm.ptr)
// OMP-DAG: llvm.call @GOMP_parallel({{.*}}) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// RUN: %if libomp %{ conv-opt %S/../../examples/conv2d_nchw.mlir --conv-lower-to-llvm="threads=2 tile-m=1" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils,%libomp \
// RUN: | FileCheck %s --check-prefix=EXEC %}
// libgomp preloaded, not in -shared-libs: mlir-runner unloads those at exit,
// under libgomp's idle worker threads.
// RUN: %if libgomp %{ conv-opt %S/../../examples/conv2d_nchw.mlir --conv-lower-to-llvm="threads=2 tile-m=1" \
// RUN: | env LD_PRELOAD=%libgomp mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s --check-prefix=EXEC %}
// Without the im2col rewrite the same pipeline lowers the convolution as is.
// RUN: conv-opt %S/../../examples/conv2d_nchw.mlir --conv-lower-to-llvm="im2col=false" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s --check-prefix=EXEC

// EXEC: sizes = [1, 2, 6, 6]
// EXEC: {{\[\[\[\[}}-4,     5,     0,     10,     -10,     -3],
// EXEC-NEXT: [5,     6,     11,     -14,     -9,     1],
// EXEC: [-3,     1,     6,     11,     -9,     -10]],
// EXEC-NEXT: {{\[\[}}2,     0,     -5,     -5,     10,     -1],
// EXEC: [-1,     -3,     -8,     -3,     12,     1]]]]
