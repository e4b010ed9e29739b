//===- DTypeTest.cpp - Bit-exact f16/bf16 encodings -----------------------===//

#include "convrt/DType.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace convrt;

namespace {

TEST(DTypeTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalfBits(0.1f), 0x2E66);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7C00); // rounds up to infinity
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1.0p-11f), 0x3C00); // tie, even
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1.8p-10f), 0x3C02); // tie, even up
  EXPECT_EQ(floatToHalfBits(0x1.0p-24f), 0x0001);        // smallest subnormal
  EXPECT_EQ(floatToHalfBits(0x1.0p-25f), 0x0000);        // tie to zero
  EXPECT_EQ(floatToHalfBits(0x1.8p-24f), 0x0002);        // tie, even up
  EXPECT_EQ(floatToHalfBits(0x1.ffcp-15f), 0x0400);      // subnormal carries
  EXPECT_EQ(floatToHalfBits(INFINITY), 0x7C00);
  EXPECT_EQ(floatToHalfBits(NAN) & 0x7C00, 0x7C00);
  EXPECT_NE(floatToHalfBits(NAN) & 0x3FF, 0);
}

TEST(DTypeTest, HalfDecodes) {
  EXPECT_EQ(halfBitsToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfBitsToFloat(0x0001), 0x1.0p-24f);
  EXPECT_EQ(halfBitsToFloat(0x7BFF), 65504.0f);
  EXPECT_TRUE(std::isinf(halfBitsToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7E00)));
  EXPECT_EQ(halfBitsToFloat(0x8000), -0.0f);
  for (uint32_t bits = 0; bits < 0x7C00; ++bits)
    ASSERT_EQ(floatToHalfBits(halfBitsToFloat(uint16_t(bits))), bits);
}

TEST(DTypeTest, BFloat16) {
  EXPECT_EQ(floatToBFloat16Bits(1.0f), 0x3F80);
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 0x1.0p-8f), 0x3F80); // tie, even
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 0x1.8p-7f), 0x3F82); // tie, even up
  EXPECT_EQ(bfloat16BitsToFloat(0x3F80), 1.0f);
  EXPECT_TRUE(std::isnan(bfloat16BitsToFloat(floatToBFloat16Bits(NAN))));
}

TEST(DTypeTest, NamesSizesTolerances) {
  EXPECT_EQ(*parseDType("bf16"), DType::BF16);
  EXPECT_FALSE(parseDType("f64").ok());
  EXPECT_EQ(storageType(DType::TF32), DType::F32);
  EXPECT_EQ(dtypeSize(DType::TF32), 4u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(tolerance(DType::F32), 1e-5);
  EXPECT_EQ(tolerance(DType::TF32), 1e-3);
  EXPECT_EQ(tolerance(DType::F16), 1e-2);
  EXPECT_EQ(tolerance(DType::BF16), 1e-2);
}

TEST(DTypeTest, IntegersRoundSaturateAndRoundTrip) {
  EXPECT_EQ(roundTo(DType::I8, 3.4), 3);
  EXPECT_EQ(roundTo(DType::I8, -2.6), -3);
  EXPECT_EQ(roundTo(DType::I8, 300), 127);
  EXPECT_EQ(roundTo(DType::I8, -300), -128);
  EXPECT_EQ(roundTo(DType::I32, 3e10), 2147483647.0);
  EXPECT_EQ(dtypeSize(DType::I8), 1u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(tolerance(DType::I8), 0);
  EXPECT_EQ(tolerance(DType::I32), 0);
  EXPECT_TRUE(isInteger(DType::I8) && isInteger(DType::I32));
  EXPECT_FALSE(isInteger(DType::BF16));
  EXPECT_EQ(*parseDType("i8"), DType::I8);
  EXPECT_EQ(*parseDType("i32"), DType::I32);
  // Two's complement bytes, little endian; values beyond 2^24 stay exact.
  std::vector<double> i8 = {-128, -1, 0, 1, 127};
  std::vector<uint8_t> bytes = encode(DType::I8, i8);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0x80, 0xFF, 0x00, 0x01, 0x7F}));
  EXPECT_EQ(decode(DType::I8, bytes), i8);
  std::vector<double> i32 = {-2147483648.0, -16777217, 16777217, 2147483647};
  EXPECT_EQ(decode(DType::I32, encode(DType::I32, i32)), i32);
}

TEST(DTypeTest, EncodeDecodeRoundTrip) {
  std::vector<double> values = {0.0, -1.5, 0.333, 1024.25};
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    std::vector<uint8_t> bytes = encode(dtype, values);
    EXPECT_EQ(bytes.size(), values.size() * dtypeSize(dtype));
    std::vector<double> back = decode(dtype, bytes);
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_EQ(back[i], roundTo(dtype, values[i])) << dtypeName(dtype);
  }
}

} // namespace
