// MLIR's GPU host ABI (the mgpu* calls that gpu-to-llvm emits) served by
// runtime/'s libconvrt_mlir_cuda.so, in place of upstream's
// libmlir_cuda_runtime, which Debian does not ship.
//
// RUN: conv-opt %s --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=bin" > %t.mlir
//
// On a real device the kernel adds one to every element.
// RUN: %if cuda-device %{ mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:   -shared-libs=%convrt_mlir_cuda,%mlir_runner_utils,%mlir_c_runner_utils \
// RUN:   | FileCheck %s --check-prefix=DEVICE %}
// DEVICE: [8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8]
//
// Against the test-only fake libcuda (which loads the real cubin, launches
// nothing and records what it is given), every mgpu* symbol resolves from our
// library and the module load, the kernel's launch and the copies reach the
// driver: the host data come back unchanged, the record shows them.
// RUN: %if fake-libcuda %{ rm -f %t.jsonl && env CONVRT_LIBCUDA=%fake_libcuda \
// RUN:   FAKE_CUDA_RECORD=%t.jsonl mlir-runner %t.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%convrt_mlir_cuda,%mlir_runner_utils,%mlir_c_runner_utils \
// RUN:   2>&1 | FileCheck %s --check-prefix=FAKE %}
// RUN: %if fake-libcuda %{ FileCheck %s --check-prefix=RECORD < %t.jsonl %}
// FAKE-NOT: failed
// FAKE: [7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7]
// RECORD: "event":"module_load"{{.*}}"kind":"cubin"{{.*}}"kernels":["add_one"]{{.*}}"result":"CUDA_SUCCESS"
// RECORD: "event":"launch","kernel":"add_one"{{.*}}"grid":[1,1,1],"block":[16,1,1]

// REQUIRES: ptxas, convrt-runtime
// mlir-runner is not instrumented and cannot load an ASan-built library:
// UNSUPPORTED: sanitize

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add_one(%buf: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %buf[%i] : memref<16xf32>
      %one = arith.constant 1.0 : f32
      %r = arith.addf %v, %one : f32
      memref.store %r, %buf[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c0 = arith.constant 0 : index
    %seven = arith.constant 7.0 : f32
    %h = memref.alloc() : memref<16xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      memref.store %seven, %h[%i] : memref<16xf32>
    }
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    %t2 = gpu.memcpy async [%t1] %d, %h : memref<16xf32>, memref<16xf32>
    %t3 = gpu.launch_func async [%t2] @kernels::@add_one blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%d : memref<16xf32>)
    %t4 = gpu.memcpy async [%t3] %h, %d : memref<16xf32>, memref<16xf32>
    %t5 = gpu.dealloc async [%t4] %d : memref<16xf32>
    gpu.wait [%t5]
    %u = memref.cast %h : memref<16xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    memref.dealloc %h : memref<16xf32>
    return
  }
}
