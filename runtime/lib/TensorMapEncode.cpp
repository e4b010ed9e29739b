//===- TensorMapEncode.cpp - Encoding a tensor map through the driver -----===//
//
// The driver half of TensorMap.h, in convrt (it needs <cuda.h>'s types);
// the rest of TensorMap.h is in TensorMap.cpp, part of convrt_host.
//
//===----------------------------------------------------------------------===//

#include "convrt/TensorMap.h"

#include "convrt/Driver.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace convrt {
namespace {

CUtensorMapDataType tensorMapDataType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::I8:
    // The TMA only moves bytes: unsigned or signed, the bits are the same.
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  case DType::I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case DType::F32:
  case DType::TF32: // rejected by validateTensorMap
    break;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

CUtensorMapSwizzle tensorMapSwizzle(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::None:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  case TensorMapSwizzle::B32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case TensorMapSwizzle::B64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case TensorMapSwizzle::B128:
    break;
  }
  return CU_TENSOR_MAP_SWIZZLE_128B;
}

std::string hexAddress(uint64_t address) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(address));
  return text;
}

} // namespace

Error encodeTensorMap(const Driver &driver, const TensorMapSpec &spec,
                      uint64_t globalAddress, void *out) {
  CONVRT_TRY(validateTensorMap(spec));
  std::string map =
      spec.name.empty() ? "tensor map" : "tensor map \"" + spec.name + "\"";
  if (!out || reinterpret_cast<uintptr_t>(out) % kTensorMapAlignment != 0)
    return Error::failure(map + ": the map's storage must be " +
                          std::to_string(kTensorMapAlignment) +
                          "-byte aligned (use TensorMapBytes)");
  // The driver's rule; allocations are far more aligned, so this is a
  // pointer into the middle of a buffer.
  if (globalAddress == 0 || globalAddress % 16 != 0)
    return Error::failure(map + ": the global address " +
                          hexAddress(globalAddress) +
                          " is not 16-byte aligned (the TMA requires it)");

  // Fixed-size arrays: the driver reads rank (or rank - 1) entries, and a
  // rank-1 map still needs a valid strides pointer.
  std::array<cuuint64_t, 5> dims{}, strides{};
  std::array<cuuint32_t, 5> box{}, elementStrides{};
  std::array<int, 3> lower{}, upper{};
  std::copy(spec.dims.begin(), spec.dims.end(), dims.begin());
  std::copy(spec.stridesBytes.begin(), spec.stridesBytes.end(),
            strides.begin());
  std::copy(spec.box.begin(), spec.box.end(), box.begin());
  std::copy(spec.elementStrides.begin(), spec.elementStrides.end(),
            elementStrides.begin());
  std::copy(spec.lowerCorner.begin(), spec.lowerCorner.end(), lower.begin());
  std::copy(spec.upperCorner.begin(), spec.upperCorner.end(), upper.begin());

  auto *tensorMap = static_cast<CUtensorMap *>(out);
  auto rank = static_cast<cuuint32_t>(spec.rank());
  void *address = reinterpret_cast<void *>(globalAddress);
  CUtensorMapDataType type = tensorMapDataType(spec.dtype);
  CUtensorMapSwizzle swizzle = tensorMapSwizzle(spec.swizzle);
  // Interleave none (dense layouts), 128-byte L2 promotion (what CUTLASS
  // uses for its loads), and zeros out of bounds: the padding of a
  // convolution and the ragged edges of a GEMM tile.
  if (spec.mode == TensorMapMode::Im2col)
    return CONVRT_CU(driver, cuTensorMapEncodeIm2col)(
               tensorMap, type, rank, address, dims.data(), strides.data(),
               lower.data(), upper.data(), box[0], box[1],
               elementStrides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
               CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
        .withContext(map);
  return CONVRT_CU(driver, cuTensorMapEncodeTiled)(
             tensorMap, type, rank, address, dims.data(), strides.data(),
             box.data(), elementStrides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
             swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
      .withContext(map);
}

} // namespace convrt
