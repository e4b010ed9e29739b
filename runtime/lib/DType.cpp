//===- DType.cpp - Element types of bundle tensors ------------------------===//

#include "convrt/DType.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace convrt {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::TF32:
    return "tf32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I8:
    return "i8";
  case DType::I32:
    return "i32";
  }
  return "?";
}

Expected<DType> parseDType(const std::string &name) {
  for (DType dtype : {DType::F32, DType::TF32, DType::F16, DType::BF16,
                      DType::I8, DType::I32})
    if (name == dtypeName(dtype))
      return dtype;
  return Error::failure("unknown dtype \"" + name +
                        "\" (expected f32, tf32, f16, bf16, i8 or i32)");
}

DType storageType(DType dtype) {
  return dtype == DType::TF32 ? DType::F32 : dtype;
}

size_t dtypeSize(DType dtype) {
  switch (storageType(dtype)) {
  case DType::I8:
    return 1;
  case DType::F16:
  case DType::BF16:
    return 2;
  default:
    return 4;
  }
}

bool isInteger(DType dtype) {
  return dtype == DType::I8 || dtype == DType::I32;
}

double tolerance(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 1e-5;
  case DType::TF32:
    return 1e-3;
  case DType::F16:
  case DType::BF16:
    return 1e-2;
  case DType::I8:
  case DType::I32:
    return 0;
  }
  return 0;
}

/// Round to nearest, saturated to [lo, hi].
static double saturate(double value, double lo, double hi) {
  return std::min(hi, std::max(lo, std::nearbyint(value)));
}

static uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t floatToHalfBits(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t exponent = (bits >> 23) & 0xFF;
  uint32_t mantissa = bits & 0x7FFFFF;
  if (exponent == 0xFF) // inf / NaN (keep NaN quiet and non-zero)
    return sign | 0x7C00 | (mantissa ? 0x200 : 0);
  int halfExponent = static_cast<int>(exponent) - 127 + 15;
  if (halfExponent >= 0x1F) // overflow
    return sign | 0x7C00;
  if (halfExponent <= 0) {
    // Subnormal half (or zero): shift the mantissa with its implicit bit.
    if (halfExponent < -10)
      return sign;
    uint32_t full = mantissa | 0x800000;
    int shift = 14 - halfExponent;
    uint32_t half = full >> shift;
    uint32_t rest = full & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1)))
      ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half =
      (static_cast<uint32_t>(halfExponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFF;
  // Round to nearest even; a carry into the exponent is still correct
  // (up to infinity).
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return sign | static_cast<uint16_t>(half);
}

float halfBitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0x1F)
    return bitsToFloat(sign | 0x7F800000 | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal: mantissa * 2^-24.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return bitsToFloat(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

uint16_t floatToBFloat16Bits(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7F800000) == 0x7F800000 && (bits & 0x7FFFFF))
    return static_cast<uint16_t>((bits >> 16) | 0x40); // quiet NaN
  uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bfloat16BitsToFloat(uint16_t bits) {
  return bitsToFloat(static_cast<uint32_t>(bits) << 16);
}

double roundTo(DType dtype, double value) {
  if (dtype == DType::I8)
    return saturate(value, -128, 127);
  if (dtype == DType::I32)
    return saturate(value, -2147483648.0, 2147483647.0);
  float single = static_cast<float>(value);
  switch (storageType(dtype)) {
  case DType::F16:
    return halfBitsToFloat(floatToHalfBits(single));
  case DType::BF16:
    return bfloat16BitsToFloat(floatToBFloat16Bits(single));
  default:
    return single;
  }
}

std::vector<uint8_t> encode(DType dtype, const std::vector<double> &values) {
  DType storage = storageType(dtype);
  std::vector<uint8_t> bytes(values.size() * dtypeSize(storage));
  for (size_t i = 0; i < values.size(); ++i) {
    if (storage == DType::I8) {
      bytes[i] = static_cast<uint8_t>(
          static_cast<int8_t>(roundTo(DType::I8, values[i])));
      continue;
    }
    if (storage == DType::I32) {
      int32_t integer = static_cast<int32_t>(roundTo(DType::I32, values[i]));
      std::memcpy(&bytes[i * 4], &integer, 4);
      continue;
    }
    float single = static_cast<float>(values[i]);
    if (storage == DType::F32) {
      std::memcpy(&bytes[i * 4], &single, 4);
      continue;
    }
    uint16_t bits = storage == DType::F16 ? floatToHalfBits(single)
                                          : floatToBFloat16Bits(single);
    std::memcpy(&bytes[i * 2], &bits, 2);
  }
  return bytes;
}

std::vector<double> decode(DType dtype, const std::vector<uint8_t> &bytes) {
  DType storage = storageType(dtype);
  size_t size = dtypeSize(storage);
  std::vector<double> values(bytes.size() / size);
  for (size_t i = 0; i < values.size(); ++i) {
    if (storage == DType::I8) {
      values[i] = static_cast<int8_t>(bytes[i]);
      continue;
    }
    if (storage == DType::I32) {
      int32_t integer;
      std::memcpy(&integer, &bytes[i * 4], 4);
      values[i] = integer;
      continue;
    }
    if (storage == DType::F32) {
      float single;
      std::memcpy(&single, &bytes[i * 4], 4);
      values[i] = single;
      continue;
    }
    uint16_t bits;
    std::memcpy(&bits, &bytes[i * 2], 2);
    values[i] = storage == DType::F16 ? halfBitsToFloat(bits)
                                      : bfloat16BitsToFloat(bits);
  }
  return values;
}

} // namespace convrt
