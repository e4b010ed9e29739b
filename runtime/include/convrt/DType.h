//===- DType.h - Element types of bundle tensors ----------------*- C++ -*-===//
//
// The storage types a kernel reads and writes, their bit-exact host encoding
// (IEEE binary16, bfloat16: round to nearest even) and the tolerance each is
// checked with. TF32 is f32 storage computed with tensor-core TF32 math: it
// exists as a problem precision only, never as a buffer type. I8 is the data
// of a quantized convolution and I32 its accumulator and output: integer
// results are checked exactly.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_DTYPE_H
#define CONVRT_DTYPE_H

#include "convrt/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace convrt {

enum class DType { F32, TF32, F16, BF16, I8, I32 };

const char *dtypeName(DType dtype);
/// "f32", "tf32", "f16", "bf16", "i8", "i32".
Expected<DType> parseDType(const std::string &name);

/// The buffer type of a precision: TF32 is stored as F32.
DType storageType(DType dtype);
size_t dtypeSize(DType dtype);

/// Whether `dtype` holds integers (I8, I32).
bool isInteger(DType dtype);

/// rel_l2_error allowed when checking a result computed in `dtype`: f32
/// 1e-5, tf32 1e-3, f16 and bf16 1e-2, integers 0 (compareResults also
/// bounds max_abs_diff by 100x it, relative to max(1, max|reference|)).
double tolerance(DType dtype);

uint16_t floatToHalfBits(float value);
float halfBitsToFloat(uint16_t bits);
uint16_t floatToBFloat16Bits(float value);
float bfloat16BitsToFloat(uint16_t bits);

/// The value `value` becomes when stored as `dtype` (floats: first rounded
/// to f32; integers: rounded to nearest and saturated to the type's range).
double roundTo(DType dtype, double value);

/// Host values <-> the bytes of a device buffer of storageType(dtype).
std::vector<uint8_t> encode(DType dtype, const std::vector<double> &values);
std::vector<double> decode(DType dtype, const std::vector<uint8_t> &bytes);

} // namespace convrt

#endif // CONVRT_DTYPE_H
