//===- Tensor.h - host tensors, .npy files, 16-bit floats -------*- C++ -*-===//

#ifndef CONVLOWER_RUNNER_TENSOR_H
#define CONVLOWER_RUNNER_TENSOR_H

#include "ConvLower/Runner/ConvProblem.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include "convrt/DType.h"

#include <cstdint>
#include <vector>

namespace mlir::conv_lower {

/// A dense host tensor kept as f32 values that are exactly representable in
/// `dtype` (so f16/bf16 data round-trip losslessly); `storage()` packs it.
struct HostTensor {
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<float> values;

  int64_t numElements() const;
  /// Bytes in the element type (f32: 4 per element, f16/bf16: 2).
  std::vector<uint8_t> storage() const;
  /// The values widened to double, as the float64 reference takes them.
  std::vector<double> asDoubles() const;
};

/// Uniform values in [-1, 1), rounded to `dtype`; never all zeros. Each
/// (seed, stream) pair is an independent sequence: operands use different
/// streams so that no seed's input equals another seed's filter.
HostTensor randomTensor(llvm::ArrayRef<int64_t> shape, DType dtype,
                        uint64_t seed, uint64_t stream = 0);

/// Reads a C-order little-endian .npy of f32 ('<f4') or f16 ('<f2'); the
/// values are rounded to `dtype`. Errors name the file and what is wrong.
llvm::Expected<HostTensor> readNpy(llvm::StringRef path, DType dtype);
/// Writes a C-order little-endian .npy: '<i4' for an integer `dtype`, else
/// '<f4'.
llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<double> values, DType dtype = DType::F32);

std::string formatShape(llvm::ArrayRef<int64_t> shape);

} // namespace mlir::conv_lower

#endif
