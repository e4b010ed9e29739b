//===- TensorMap.h - TMA tensor maps a kernel takes by value ----*- C++ -*-===//
//
// The sm_90a kernels load their operands with the Tensor Memory Accelerator
// (cp.async.bulk.tensor), which reads a 128-byte CUtensorMap describing the
// tensor in global memory. A map holds the buffer's address, so it cannot be
// built at compile time: the compiler writes a TensorMapSpec into the bundle
// manifest ("tensor_maps") and the runtime encodes it for the caller's device
// buffer (cuTensorMapEncodeIm2col / cuTensorMapEncodeTiled, resolved through
// dlopen like every driver entry point) and passes it by value, as a
// 64-byte-aligned __grid_constant__ kernel parameter after the manifest's
// pointer arguments, in the manifest's order.
//
// lib/TensorMap.cpp (in convrt_host: no <cuda.h>) validates, converts and
// flattens specs; lib/TensorMapEncode.cpp (in convrt) calls the driver.
//
// Everything is innermost-first, as the driver API takes it: dims[0] is the
// contiguous dimension (channels, for a channels-last image).
//
// Im2col mode (PTX ISA, "Tensor copy: im2col mode"): the image of rank 3..5
// (C, W[, H[, D]], N). Per spatial dimension the bounding box runs from
// lowerCorner to dim - 1 + upperCorner, traversed with elementStrides; one
// copy loads pixelsPerColumn consecutive box positions (W fastest, then H,
// D, N), channelsPerPixel channels each, from the position the instruction's
// coordinates name plus its im2col offsets; what lies outside the tensor
// reads zero. For a convolution: lower = -padding, upper = padding -
// dilation * (kernel - 1), element strides = the convolution's strides, and
// the offsets are the filter tap times the dilation.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_TENSORMAP_H
#define CONVRT_TENSORMAP_H

#include "convrt/DType.h"
#include "convrt/Error.h"
#include "convrt/JsonFwd.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convrt {

class Driver;

/// The size and alignment of a CUtensorMap (cuda.h's CU_TENSOR_MAP_NUM_QWORDS
/// * 8, aligned to 64: the driver's documented requirement for the map it
/// writes). Where the kernel's parameter lands is the kernel's layout: ptxas
/// aligns `.param .align 64` within the constant bank (offset 48 after four
/// pointers on sm_90); the driver copies the 128 bytes there at launch.
inline constexpr unsigned kTensorMapBytes = 128;
inline constexpr unsigned kTensorMapAlignment = 64;

enum class TensorMapMode { Tiled, Im2col };
/// The shared-memory swizzle the copy writes (CU_TENSOR_MAP_SWIZZLE_*).
enum class TensorMapSwizzle { None, B32, B64, B128 };

const char *tensorMapModeName(TensorMapMode mode);       // "tiled", "im2col"
const char *tensorMapSwizzleName(TensorMapSwizzle mode); // "none", "32B", ...
/// The span in bytes of a swizzle pattern's row (0 for None).
unsigned swizzleBytes(TensorMapSwizzle mode);

struct TensorMapSpec {
  /// Free-form, for messages ("input_im2col").
  std::string name;
  /// The manifest argument whose device buffer the map describes
  /// ("input", "filter").
  std::string argument;
  TensorMapMode mode = TensorMapMode::Tiled;
  /// The element type (a buffer type: F16, BF16, F32, I8, I32; TF32 is not).
  DType dtype = DType::F16;
  /// Sizes, innermost first; rank = dims.size() (1..5; im2col 3..5).
  std::vector<uint64_t> dims;
  /// Byte strides of dims[1..rank-1] (rank - 1 entries).
  std::vector<uint64_t> stridesBytes;
  /// Tiled: the box, rank entries. Im2col: {channelsPerPixel,
  /// pixelsPerColumn}.
  std::vector<uint32_t> box;
  /// Traversal strides, rank entries (1 = every element).
  std::vector<uint32_t> elementStrides;
  /// Im2col only: rank - 2 entries each, innermost spatial dimension first.
  std::vector<int32_t> lowerCorner, upperCorner;
  TensorMapSwizzle swizzle = TensorMapSwizzle::B128;
  // Interleave is always none, L2 promotion 128B, and out-of-bound elements
  // read zero (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE).

  int rank() const { return static_cast<int>(dims.size()); }
  /// The bytes one copy writes to shared memory (what the mbarrier's
  /// expect_tx counts): the box's elements times the element size. Tiled:
  /// box[0] * prod ceil(box[i] / elementStrides[i]) for i >= 1 (the TMA
  /// ignores elementStrides[0]); im2col: channelsPerPixel * pixelsPerColumn.
  /// Out-of-bound elements are written too (as zeros), so they count.
  uint64_t boxBytes() const;
  /// The bytes of global memory the map spans from its base address: the
  /// last element's offset plus its size (0 for a malformed spec). The
  /// manifest checks that it fits the argument's buffer.
  uint64_t extentBytes() const;
};

/// A CUtensorMap's storage: what encodeTensorMap writes and a launch passes
/// by value (a pointer to it in the kernel params array). Aligned to 128,
/// not just the 64 the driver documents: CUDA 13's cuda.h declares
/// CUtensorMap alignas(128), and this may stand in for one.
struct alignas(2 * kTensorMapAlignment) TensorMapBytes {
  unsigned char bytes[kTensorMapBytes] = {};
};

/// The driver's documented limits (cuTensorMapEncodeTiled/Im2col): rank,
/// 16-byte multiple strides below 2^40, box entries 1..256 (the inner box's
/// bytes a multiple of 16 and at most the swizzle span), element strides
/// 1..8, corners within the rank's range, and so on. The message names the
/// map and the field: `tensor map "input_im2col": box[0]: 300 is not in
/// 1..256`.
Error validateTensorMap(const TensorMapSpec &spec);
/// The same checks, naming the field as "<where>.<field>", as the manifest
/// does: "tensor_maps[0] (input_im2col).box[0]: 300 is not in 1..256".
Error validateTensorMapAt(const TensorMapSpec &spec, const std::string &where);

/// The manifest's form (runtime/README.md): "name", "argument", "mode",
/// "dtype", "dims", "strides_bytes", "box", "element_strides", im2col's
/// "lower_corner" and "upper_corner", "swizzle".
JsonValue tensorMapToJson(const TensorMapSpec &spec);
/// Strict, like the manifest: unknown fields are errors, and the spec is
/// validated. `path` names the object in messages ("tensor_maps[0]" gives
/// "tensor_maps[0].box: expected an array of 1 to 5 integers, got ...");
/// parseManifest prefixes its file name ("manifest.json: ...").
Expected<TensorMapSpec> tensorMapFromJson(const JsonValue &json,
                                          const std::string &path);

/// A flat record of the spec for MLIR host code, which passes it as a
/// constant i64 array to mgpuConvLowerEncodeTensorMap:
///   [0] mode (0 tiled, 1 im2col)   [1] dtype (DType's value)
///   [2] rank                       [3] swizzle (TensorMapSwizzle's value)
///   [4..8]   dims          [9..13]  stridesBytes (rank - 1 used)
///   [14..18] box           [19..23] elementStrides
///   [24..26] lowerCorner   [27..29] upperCorner
/// Unused entries are 0. Im2col's box is {channelsPerPixel,
/// pixelsPerColumn} in [14], [15]. The record has no name or argument.
inline constexpr int kTensorMapRecordSize = 30;
inline constexpr int kRecordMode = 0, kRecordDType = 1, kRecordRank = 2,
                     kRecordSwizzle = 3, kRecordDims = 4, kRecordStrides = 9,
                     kRecordBox = 14, kRecordElementStrides = 19,
                     kRecordLower = 24, kRecordUpper = 27;
/// Inline: the compiler writes the record for its host code without linking
/// the runtime, and must write exactly what tensorMapFromRecord reads.
inline std::vector<int64_t> tensorMapRecord(const TensorMapSpec &spec) {
  std::vector<int64_t> record(kTensorMapRecordSize, 0);
  record[kRecordMode] = static_cast<int64_t>(spec.mode);
  record[kRecordDType] = static_cast<int64_t>(spec.dtype);
  record[kRecordRank] = spec.rank();
  record[kRecordSwizzle] = static_cast<int64_t>(spec.swizzle);
  // Entries past a block's capacity are dropped: such a spec is invalid
  // anyway, and the record cannot say so.
  auto put = [&](int first, int capacity, const auto &values) {
    for (size_t i = 0; i < values.size() && i < size_t(capacity); ++i)
      record[first + i] = static_cast<int64_t>(values[i]);
  };
  put(kRecordDims, 5, spec.dims);
  put(kRecordStrides, 5, spec.stridesBytes);
  put(kRecordBox, 5, spec.box);
  put(kRecordElementStrides, 5, spec.elementStrides);
  put(kRecordLower, 3, spec.lowerCorner);
  put(kRecordUpper, 3, spec.upperCorner);
  return record;
}
/// Reads kTensorMapRecordSize entries and validates the spec; an entry out
/// of range or a nonzero unused one (a record laid out differently) is an
/// error naming it: "tensor map record[14] (box[0]): -3 is out of range".
Expected<TensorMapSpec> tensorMapFromRecord(const int64_t *record);

/// Encodes `spec` for the device buffer at `globalAddress` into `out`
/// (kTensorMapBytes, aligned to kTensorMapAlignment) through the driver.
/// A driver without the entry point is a named error (the TMA needs a CUDA
/// 12.0 or later driver); the spec is validated first, and `globalAddress`
/// must be 16-byte aligned, as the driver requires.
Error encodeTensorMap(const Driver &driver, const TensorMapSpec &spec,
                      uint64_t globalAddress, void *out);

} // namespace convrt

#endif // CONVRT_TENSORMAP_H
