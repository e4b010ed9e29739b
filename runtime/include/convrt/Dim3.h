//===- Dim3.h - Launch dimensions -------------------------------*- C++ -*-===//

#ifndef CONVRT_DIM3_H
#define CONVRT_DIM3_H

namespace convrt {

/// A grid or block shape, as cuLaunchKernel takes it.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

} // namespace convrt

#endif // CONVRT_DIM3_H
