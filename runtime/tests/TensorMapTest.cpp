//===- TensorMapTest.cpp - TMA tensor map specs and their encoding --------===//
//
// The driver's documented limits (one case each), the manifest's JSON form,
// the flat record MLIR host code passes, and encoding through the fake
// driver: what it records, and the named error of a driver without the
// entry points (FAKE_CUDA_NO_TMA).
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "convrt/Context.h"
#include "convrt/Files.h"
#include "convrt/Json.h"
#include "convrt/Memory.h"
#include "convrt/TensorMap.h"

#include <cctype>
#include <cstring>
#include <functional>
#include <optional>

using namespace convrt;
using namespace convrt::test;

namespace {

/// The input of an NHWC f16 convolution N8 H56 W56 C64, 3x3, padding 1: one
/// copy loads 128 output pixels' worth of 64 channels.
TensorMapSpec im2colSpec() {
  TensorMapSpec spec;
  spec.name = "input_im2col";
  spec.argument = "input";
  spec.mode = TensorMapMode::Im2col;
  spec.dtype = DType::F16;
  spec.dims = {64, 56, 56, 8};
  spec.stridesBytes = {128, 7168, 401408};
  spec.box = {64, 128};
  spec.elementStrides = {1, 1, 1, 1};
  spec.lowerCorner = {-1, -1};
  spec.upperCorner = {-1, -1};
  spec.swizzle = TensorMapSwizzle::B128;
  return spec;
}

/// Its filter as a [F=64 rows][K=576] f16 matrix: 64 of K by 128 rows, more
/// rows than there are (what lies beyond reads zero).
TensorMapSpec tiledSpec() {
  TensorMapSpec spec;
  spec.name = "filter_tiles";
  spec.argument = "filter";
  spec.mode = TensorMapMode::Tiled;
  spec.dtype = DType::F16;
  spec.dims = {576, 64};
  spec.stridesBytes = {1152};
  spec.box = {64, 128};
  spec.elementStrides = {1, 1};
  spec.swizzle = TensorMapSwizzle::B128;
  return spec;
}

TEST(TensorMapTest, TheConvolutionsMapsAreValid) {
  TensorMapSpec input = im2colSpec();
  Error error = validateTensorMap(input);
  EXPECT_TRUE(error.ok()) << error.message();
  EXPECT_EQ(input.boxBytes(), 64u * 128 * 2);
  EXPECT_EQ(input.extentBytes(), 8u * 56 * 56 * 64 * 2);
  TensorMapSpec filter = tiledSpec();
  error = validateTensorMap(filter);
  EXPECT_TRUE(error.ok()) << error.message();
  EXPECT_EQ(filter.boxBytes(), 64u * 128 * 2);
  EXPECT_EQ(filter.extentBytes(), 64u * 576 * 2);
}

TEST(TensorMapTest, NamesAndSpans) {
  EXPECT_STREQ(tensorMapModeName(TensorMapMode::Tiled), "tiled");
  EXPECT_STREQ(tensorMapModeName(TensorMapMode::Im2col), "im2col");
  EXPECT_STREQ(tensorMapSwizzleName(TensorMapSwizzle::None), "none");
  EXPECT_STREQ(tensorMapSwizzleName(TensorMapSwizzle::B32), "32B");
  EXPECT_STREQ(tensorMapSwizzleName(TensorMapSwizzle::B64), "64B");
  EXPECT_STREQ(tensorMapSwizzleName(TensorMapSwizzle::B128), "128B");
  EXPECT_EQ(swizzleBytes(TensorMapSwizzle::None), 0u);
  EXPECT_EQ(swizzleBytes(TensorMapSwizzle::B32), 32u);
  EXPECT_EQ(swizzleBytes(TensorMapSwizzle::B64), 64u);
  EXPECT_EQ(swizzleBytes(TensorMapSwizzle::B128), 128u);
  EXPECT_EQ(kTensorMapBytes, sizeof(CUtensorMap));
  EXPECT_GE(alignof(TensorMapBytes), alignof(CUtensorMap));
  EXPECT_GE(alignof(TensorMapBytes), kTensorMapAlignment);
}

TEST(TensorMapTest, BoxBytesFollowTheElementStrides) {
  // Every other row of an 8-row box: 4 rows; the innermost stride is
  // ignored by the TMA.
  TensorMapSpec spec = tiledSpec();
  spec.box = {64, 8};
  spec.elementStrides = {4, 2};
  EXPECT_EQ(spec.boxBytes(), 64u * 4 * 2);
  spec.box = {64, 7};
  EXPECT_EQ(spec.boxBytes(), 64u * 4 * 2); // ceil(7 / 2)
  // Im2col: pixels per column, whatever the traversal strides.
  TensorMapSpec input = im2colSpec();
  input.elementStrides = {1, 2, 2, 1};
  EXPECT_EQ(input.boxBytes(), 64u * 128 * 2);
}

/// One of the driver's limits broken.
struct Broken {
  const char *what;
  std::function<void(TensorMapSpec &)> edit;
  bool im2col;
  const char *error;
};

void PrintTo(const Broken &c, std::ostream *os) { *os << c.what; }

class TensorMapConstraintTest : public ::testing::TestWithParam<Broken> {};

TEST_P(TensorMapConstraintTest, NamesTheMapAndTheField) {
  const Broken &c = GetParam();
  TensorMapSpec spec = c.im2col ? im2colSpec() : tiledSpec();
  c.edit(spec);
  Error error = validateTensorMap(spec);
  ASSERT_FALSE(error.ok()) << c.what;
  EXPECT_EQ(error.message(), c.error);
}

/// A valid rank-5 (NDHWC) im2col map, for its corner range.
void makeRank5(TensorMapSpec &s) {
  s.dims = {64, 8, 8, 8, 2};
  s.stridesBytes = {128, 1024, 8192, 65536};
  s.elementStrides = {1, 1, 1, 1, 1};
  s.lowerCorner = {-1, -1, -1};
  s.upperCorner = {-1, -1, -1};
}

INSTANTIATE_TEST_SUITE_P(
    EachLimit, TensorMapConstraintTest,
    ::testing::Values(
        Broken{"rank_0", [](TensorMapSpec &s) { s.dims.clear(); }, false,
               "tensor map \"filter_tiles\": dims: rank 0 is not in 1..5"},
        Broken{"rank_6", [](TensorMapSpec &s) { s.dims = {16, 2, 2, 2, 2, 2}; },
               false,
               "tensor map \"filter_tiles\": dims: rank 6 is not in 1..5"},
        Broken{"im2col_rank_2",
               [](TensorMapSpec &s) {
                 s.dims = {64, 56};
               },
               true,
               "tensor map \"input_im2col\": dims: an im2col map has rank 3 "
               "to 5 (C, W[, H[, D]], N), got 2"},
        Broken{"dim_zero", [](TensorMapSpec &s) { s.dims[1] = 0; }, false,
               "tensor map \"filter_tiles\": dims[1]: 0 is not in 1..2^32"},
        Broken{"dim_above_2_32",
               [](TensorMapSpec &s) { s.dims[0] = (uint64_t(1) << 32) + 1; },
               false,
               "tensor map \"filter_tiles\": dims[0]: 4294967297 is not in "
               "1..2^32"},
        Broken{"stride_count",
               [](TensorMapSpec &s) { s.stridesBytes.push_back(16); }, false,
               "tensor map \"filter_tiles\": strides_bytes: expected 1 "
               "entries (rank - 1: dims[0] is contiguous), got 2"},
        Broken{"stride_not_16",
               [](TensorMapSpec &s) { s.stridesBytes[1] = 7160; }, true,
               "tensor map \"input_im2col\": strides_bytes[1]: 7160 is not a "
               "multiple of 16"},
        Broken{"stride_2_40",
               [](TensorMapSpec &s) { s.stridesBytes[0] = uint64_t(1) << 40; },
               false,
               "tensor map \"filter_tiles\": strides_bytes[0]: 1099511627776 "
               "is not below 2^40"},
        Broken{"box_count", [](TensorMapSpec &s) { s.box = {64}; }, false,
               "tensor map \"filter_tiles\": box: expected 2 entries (one per "
               "dimension), got 1"},
        Broken{"box_257", [](TensorMapSpec &s) { s.box[1] = 257; }, false,
               "tensor map \"filter_tiles\": box[1]: 257 is not in 1..256"},
        Broken{"box_0", [](TensorMapSpec &s) { s.box[1] = 0; }, false,
               "tensor map \"filter_tiles\": box[1]: 0 is not in 1..256"},
        Broken{"inner_box_not_16_bytes", [](TensorMapSpec &s) { s.box[0] = 4; },
               false,
               "tensor map \"filter_tiles\": box[0]: 4 f16 elements are 8 "
               "bytes, not a multiple of 16"},
        Broken{"im2col_box_count",
               [](TensorMapSpec &s) {
                 s.box = {64, 128, 1};
               },
               true,
               "tensor map \"input_im2col\": box: expected 2 entries "
               "(channelsPerPixel, pixelsPerColumn), got 3"},
        Broken{"channels_per_pixel",
               [](TensorMapSpec &s) {
                 s.box[0] = 257;
                 s.swizzle = TensorMapSwizzle::None;
               },
               true,
               "tensor map \"input_im2col\": box[0]: channelsPerPixel 257 is "
               "not in 1..256"},
        Broken{"pixels_per_column", [](TensorMapSpec &s) { s.box[1] = 1025; },
               true,
               "tensor map \"input_im2col\": box[1]: pixelsPerColumn 1025 is "
               "not in 1..1024"},
        Broken{"tiled_swizzle_span", [](TensorMapSpec &s) { s.box[0] = 128; },
               false,
               "tensor map \"filter_tiles\": swizzle: the inner box is 256 "
               "bytes (box[0] 128 x 2), more than the 128B swizzle's span"},
        Broken{"im2col_swizzle_span",
               [](TensorMapSpec &s) { s.swizzle = TensorMapSwizzle::B64; },
               true,
               "tensor map \"input_im2col\": swizzle: the inner box is 128 "
               "bytes (channelsPerPixel 64 x 2), more than the 64B swizzle's "
               "span"},
        Broken{"element_stride_count",
               [](TensorMapSpec &s) { s.elementStrides = {1}; }, false,
               "tensor map \"filter_tiles\": element_strides: expected 2 "
               "entries (one per dimension), got 1"},
        Broken{"element_stride_9",
               [](TensorMapSpec &s) { s.elementStrides[2] = 9; }, true,
               "tensor map \"input_im2col\": element_strides[2]: 9 is not in "
               "1..8"},
        Broken{"element_stride_0",
               [](TensorMapSpec &s) { s.elementStrides[0] = 0; }, false,
               "tensor map \"filter_tiles\": element_strides[0]: 0 is not in "
               "1..8"},
        Broken{"tiled_corners", [](TensorMapSpec &s) { s.lowerCorner = {0}; },
               false,
               "tensor map \"filter_tiles\": lower_corner: only im2col maps "
               "have corners"},
        Broken{"corner_count", [](TensorMapSpec &s) { s.upperCorner = {-1}; },
               true,
               "tensor map \"input_im2col\": upper_corner: expected 2 entries "
               "(rank - 2: one per spatial dimension), got 1"},
        Broken{"rank_3_corner",
               [](TensorMapSpec &s) {
                 s.dims = {64, 56, 8};
                 s.stridesBytes = {128, 7168};
                 s.elementStrides = {1, 1, 1};
                 s.lowerCorner = {-32769};
                 s.upperCorner = {0};
               },
               true,
               "tensor map \"input_im2col\": lower_corner[0]: -32769 is "
               "outside [-32768, 32767] (a rank-3 im2col map)"},
        Broken{"rank_4_corner",
               [](TensorMapSpec &s) { s.upperCorner[1] = 128; }, true,
               "tensor map \"input_im2col\": upper_corner[1]: 128 is outside "
               "[-128, 127] (a rank-4 im2col map)"},
        Broken{"rank_5_corner",
               [](TensorMapSpec &s) {
                 makeRank5(s);
                 s.lowerCorner[2] = -17;
               },
               true,
               "tensor map \"input_im2col\": lower_corner[2]: -17 is outside "
               "[-16, 15] (a rank-5 im2col map)"},
        Broken{"empty_bounding_box",
               [](TensorMapSpec &s) {
                 s.lowerCorner[0] = 60;
                 s.upperCorner[0] = 3;
               },
               true,
               "tensor map \"input_im2col\": upper_corner[0]: the bounding box "
               "of dims[1] is empty (56 + upper 3 - lower 60 = -1)"},
        Broken{"tf32", [](TensorMapSpec &s) { s.dtype = DType::TF32; }, false,
               "tensor map \"filter_tiles\": dtype: tf32 is not a buffer type "
               "(map the f32 tensor)"}),
    [](const ::testing::TestParamInfo<Broken> &info) {
      return std::string(info.param.what);
    });

TEST(TensorMapTest, OtherValidShapes) {
  // Rank 5 with its corner range's ends, rank 1, and an i8 / i32 box.
  TensorMapSpec volume = im2colSpec();
  makeRank5(volume);
  volume.dims = {64, 32, 32, 32, 2};
  volume.stridesBytes = {128, 4096, 131072, 4194304};
  volume.lowerCorner = {-16, 0, 15};
  volume.upperCorner = {15, -16, 0};
  EXPECT_TRUE(validateTensorMap(volume).ok())
      << validateTensorMap(volume).message();
  TensorMapSpec vector = tiledSpec();
  vector.dims = {1000};
  vector.stridesBytes = {};
  vector.box = {64};
  vector.elementStrides = {1};
  EXPECT_TRUE(validateTensorMap(vector).ok())
      << validateTensorMap(vector).message();
  TensorMapSpec bytes = tiledSpec();
  bytes.dtype = DType::I8;
  bytes.box = {128, 256};
  EXPECT_TRUE(validateTensorMap(bytes).ok())
      << validateTensorMap(bytes).message();
  bytes.box = {8, 1};
  EXPECT_EQ(validateTensorMap(bytes).message(),
            "tensor map \"filter_tiles\": box[0]: 8 i8 elements are 8 bytes, "
            "not a multiple of 16");
  TensorMapSpec words = tiledSpec();
  words.dtype = DType::I32;
  words.box = {32, 16};
  EXPECT_TRUE(validateTensorMap(words).ok())
      << validateTensorMap(words).message();
  // The manifest's form of the messages.
  TensorMapSpec input = im2colSpec();
  input.box[1] = 0;
  EXPECT_EQ(
      validateTensorMapAt(input, "tensor_maps[0] (input_im2col)").message(),
      "tensor_maps[0] (input_im2col).box[1]: pixelsPerColumn 0 is not "
      "in 1..1024");
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

TEST(TensorMapJsonTest, RoundTrip) {
  for (const TensorMapSpec &spec : {im2colSpec(), tiledSpec()}) {
    JsonValue json = tensorMapToJson(spec);
    Expected<TensorMapSpec> again = tensorMapFromJson(json, "map");
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_EQ(tensorMapToJson(*again), json);
    EXPECT_EQ(again->dims, spec.dims);
    EXPECT_EQ(again->lowerCorner, spec.lowerCorner);
  }
  EXPECT_EQ(dumpJson(tensorMapToJson(im2colSpec())),
            "{\"name\":\"input_im2col\",\"argument\":\"input\",\"mode\":"
            "\"im2col\",\"dtype\":\"f16\",\"dims\":[64,56,56,8],"
            "\"strides_bytes\":[128,7168,401408],\"box\":[64,128],"
            "\"element_strides\":[1,1,1,1],\"lower_corner\":[-1,-1],"
            "\"upper_corner\":[-1,-1],\"swizzle\":\"128B\"}");
  EXPECT_FALSE(tensorMapToJson(tiledSpec()).contains("lower_corner"));
}

TEST(TensorMapJsonTest, Defaults) {
  Expected<JsonValue> json = parseJson(R"({"name": "w", "argument": "filter",
      "mode": "tiled", "dtype": "f16", "dims": [576, 64],
      "strides_bytes": [1152], "box": [64, 128]})");
  ASSERT_TRUE(json.ok());
  Expected<TensorMapSpec> spec = tensorMapFromJson(*json, "map");
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  EXPECT_EQ(spec->elementStrides, (std::vector<uint32_t>{1, 1}));
  EXPECT_EQ(spec->swizzle, TensorMapSwizzle::B128);
}

struct MalformedMap {
  const char *what;
  const char *json;
  const char *error;
};

void PrintTo(const MalformedMap &c, std::ostream *os) { *os << c.what; }

class MalformedTensorMapTest : public ::testing::TestWithParam<MalformedMap> {};

TEST_P(MalformedTensorMapTest, ErrorNamesThePath) {
  const MalformedMap &c = GetParam();
  Expected<JsonValue> json = parseJson(c.json);
  ASSERT_TRUE(json.ok()) << json.error().message();
  Expected<TensorMapSpec> spec = tensorMapFromJson(*json, "tensor_maps[1]");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().message(), c.error);
}

#define TILED_FIELDS                                                           \
  R"("name": "w", "argument": "filter", "dtype": "f16", "dims": [576, 64], )"  \
  R"("strides_bytes": [1152])"

INSTANTIATE_TEST_SUITE_P(
    EachField, MalformedTensorMapTest,
    ::testing::Values(
        MalformedMap{"not_an_object", "[1]",
                     "tensor_maps[1]: expected an object, got array"},
        MalformedMap{"unknown_field",
                     "{" TILED_FIELDS
                     R"(, "mode": "tiled", "box": [64, 8], "boxes": 1})",
                     "tensor_maps[1].boxes: unknown field (expected one of: "
                     "name, argument, mode, dtype, dims, strides_bytes, box, "
                     "element_strides, lower_corner, upper_corner, swizzle)"},
        MalformedMap{"missing_box", "{" TILED_FIELDS R"(, "mode": "tiled"})",
                     "tensor_maps[1].box: missing from the tensor_maps[1] "
                     "object"},
        MalformedMap{"bad_mode",
                     "{" TILED_FIELDS R"(, "mode": "tile", "box": [64, 8]})",
                     "tensor_maps[1].mode: unknown mode \"tile\" (expected "
                     "tiled or im2col)"},
        MalformedMap{"bad_dtype",
                     R"({"name": "w", "argument": "filter", "dtype": "f8",
                         "mode": "tiled", "dims": [576, 64],
                         "strides_bytes": [1152], "box": [64, 8]})",
                     "tensor_maps[1].dtype: unknown dtype \"f8\" (expected "
                     "f32, tf32, f16, bf16, i8 or i32)"},
        MalformedMap{"dims_not_array",
                     R"({"name": "w", "argument": "filter", "dtype": "f16",
                         "mode": "tiled", "dims": 576,
                         "strides_bytes": [1152], "box": [64, 8]})",
                     "tensor_maps[1].dims: expected an array of 1 to 5 "
                     "integers, got 576"},
        MalformedMap{"negative_box",
                     "{" TILED_FIELDS R"(, "mode": "tiled", "box": [64, -8]})",
                     "tensor_maps[1].box[1]: expected a positive integer, got "
                     "-8"},
        MalformedMap{
            "tiled_corner",
            "{" TILED_FIELDS
            R"(, "mode": "tiled", "box": [64, 8], "lower_corner": [0]})",
            "tensor_maps[1].lower_corner: only im2col maps have "
            "corners"},
        MalformedMap{"im2col_without_corners",
                     R"({"name": "x", "argument": "input", "dtype": "f16",
                         "mode": "im2col", "dims": [64, 56, 56, 8],
                         "strides_bytes": [128, 7168, 401408],
                         "box": [64, 128]})",
                     "tensor_maps[1].lower_corner: missing from the "
                     "tensor_maps[1] object"},
        MalformedMap{"bad_swizzle",
                     "{" TILED_FIELDS
                     R"(, "mode": "tiled", "box": [64, 8], "swizzle": "256B"})",
                     "tensor_maps[1].swizzle: unknown swizzle \"256B\" "
                     "(expected none, 32B, 64B or 128B)"},
        MalformedMap{"a_driver_limit",
                     "{" TILED_FIELDS R"(, "mode": "tiled", "box": [64, 300]})",
                     "tensor_maps[1] (w).box[1]: 300 is not in 1..256"}),
    [](const ::testing::TestParamInfo<MalformedMap> &info) {
      return std::string(info.param.what);
    });

//===----------------------------------------------------------------------===//
// The record
//===----------------------------------------------------------------------===//

TEST(TensorMapRecordTest, LayoutAndRoundTrip) {
  std::vector<int64_t> record = tensorMapRecord(im2colSpec());
  ASSERT_EQ(record.size(), size_t(kTensorMapRecordSize));
  // What MLIR host code writes, entry by entry (TensorMap.h).
  EXPECT_EQ(record, (std::vector<int64_t>{1,      int64_t(DType::F16),
                                          4,      3, // [0..3]
                                          64,     56,
                                          56,     8,
                                          0, // dims
                                          128,    7168,
                                          401408, 0,
                                          0, // strides
                                          64,     128,
                                          0,      0,
                                          0, // box
                                          1,      1,
                                          1,      1,
                                          0, // el. strides
                                          -1,     -1,
                                          0, // lower
                                          -1,     -1,
                                          0})); // upper
  for (const TensorMapSpec &spec : {im2colSpec(), tiledSpec()}) {
    Expected<TensorMapSpec> decoded =
        tensorMapFromRecord(tensorMapRecord(spec).data());
    ASSERT_TRUE(decoded.ok()) << decoded.error().message();
    TensorMapSpec expected = spec;
    expected.name.clear(); // a record carries neither
    expected.argument.clear();
    EXPECT_EQ(tensorMapToJson(*decoded), tensorMapToJson(expected));
  }
}

TEST(TensorMapRecordTest, ErrorsNameTheEntry) {
  auto decodeError = [](std::function<void(std::vector<int64_t> &)> edit) {
    std::vector<int64_t> record = tensorMapRecord(im2colSpec());
    edit(record);
    Expected<TensorMapSpec> spec = tensorMapFromRecord(record.data());
    return spec.ok() ? "(decoded)" : spec.error().message();
  };
  EXPECT_EQ(decodeError([](auto &r) { r[0] = 2; }),
            "tensor map record[0] (mode): 2 is out of range");
  EXPECT_EQ(decodeError([](auto &r) { r[1] = 9; }),
            "tensor map record[1] (dtype): 9 is out of range");
  EXPECT_EQ(decodeError([](auto &r) { r[5] = -56; }),
            "tensor map record[5] (dims[1]): -56 is out of range");
  EXPECT_EQ(decodeError([](auto &r) { r[2] = 2; }),
            "tensor map record[2] (rank): an im2col map has rank 3 to 5, got "
            "2");
  EXPECT_EQ(decodeError([](auto &r) { r[16] = 1; }),
            "tensor map record[16]: 1 in an entry this spec does not use, "
            "which must be 0 (is the record laid out as convrt/TensorMap.h "
            "says?)");
  EXPECT_EQ(decodeError([](auto &r) { r[14] = 0; }),
            "tensor map record: box[0]: channelsPerPixel 0 is not in 1..256");
  EXPECT_EQ(tensorMapFromRecord(nullptr).error().message(),
            "tensor map record: null");
}

//===----------------------------------------------------------------------===//
// Encoding through the fake driver
//===----------------------------------------------------------------------===//

class TensorMapEncodeTest : public FakeCudaTest {
protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    recordPath_ = dir_.file("record.jsonl");
    record_.emplace("FAKE_CUDA_RECORD", recordPath_.c_str());
  }
  void TearDown() override {
    record_.reset();
    FakeCudaTest::TearDown();
  }

  std::vector<JsonValue> recorded(const std::string &event) const {
    return recordedEvents(recordPath_, event);
  }

  TempDir dir_;
  std::string recordPath_;
  std::optional<ScopedEnv> record_;
};

TEST_F(TensorMapEncodeTest, EncodesBothModesAndTheFakeRecordsThem) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver, 0);
  ASSERT_TRUE(context.ok()) << context.error().message();
  Expected<DeviceBuffer> input =
      DeviceBuffer::allocate(driver, im2colSpec().extentBytes());
  Expected<DeviceBuffer> filter =
      DeviceBuffer::allocate(driver, tiledSpec().extentBytes());
  ASSERT_TRUE(input.ok() && filter.ok());

  TensorMapBytes inputMap, filterMap;
  Error error =
      encodeTensorMap(*driver, im2colSpec(), input->get(), inputMap.bytes);
  ASSERT_TRUE(error.ok()) << error.message();
  error = encodeTensorMap(*driver, tiledSpec(), filter->get() + 1152,
                          filterMap.bytes);
  ASSERT_TRUE(error.ok()) << error.message();
  EXPECT_EQ(std::memcmp(inputMap.bytes, "FAKETMAP", 8), 0);
  uint64_t address = 0;
  std::memcpy(&address, inputMap.bytes + 8, 8);
  EXPECT_EQ(address, input->get());

  std::vector<JsonValue> maps = recorded("tensor_map");
  ASSERT_EQ(maps.size(), 2u);
  const JsonValue &im2col = maps[0];
  EXPECT_EQ(im2col.at("call"), "cuTensorMapEncodeIm2col");
  EXPECT_EQ(im2col.at("mode"), "im2col");
  EXPECT_EQ(im2col.at("dtype"), "float16");
  EXPECT_EQ(im2col.at("rank"), 4);
  EXPECT_EQ(im2col.at("dims"), JsonValue({64, 56, 56, 8}));
  EXPECT_EQ(im2col.at("strides"), JsonValue({128, 7168, 401408}));
  EXPECT_EQ(im2col.at("channels_per_pixel"), 64);
  EXPECT_EQ(im2col.at("pixels_per_column"), 128);
  EXPECT_EQ(im2col.at("lower_corner"), JsonValue({-1, -1}));
  EXPECT_EQ(im2col.at("upper_corner"), JsonValue({-1, -1}));
  EXPECT_EQ(im2col.at("element_strides"), JsonValue({1, 1, 1, 1}));
  EXPECT_EQ(im2col.at("swizzle"), "128B");
  EXPECT_EQ(im2col.at("interleave"), "none");
  EXPECT_EQ(im2col.at("l2_promotion"), "128B");
  EXPECT_EQ(im2col.at("oob_fill"), "none");
  EXPECT_EQ(im2col.at("allocation").at("offset"), 0);
  EXPECT_EQ(im2col.at("allocation").at("bytes"), 8 * 56 * 56 * 64 * 2);
  const JsonValue &tiled = maps[1];
  EXPECT_EQ(tiled.at("call"), "cuTensorMapEncodeTiled");
  EXPECT_EQ(tiled.at("mode"), "tiled");
  EXPECT_EQ(tiled.at("serial").get<int>(), im2col.at("serial").get<int>() + 1);
  EXPECT_EQ(tiled.at("box"), JsonValue({64, 128}));
  EXPECT_FALSE(tiled.contains("lower_corner"));
  EXPECT_EQ(tiled.at("allocation").at("offset"), 1152);
  EXPECT_NE(tiled.at("allocation").at("id"), im2col.at("allocation").at("id"));
}

TEST_F(TensorMapEncodeTest, TheRuntimesOwnChecksComeFirst) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  ASSERT_TRUE(driver->init().ok());
  TensorMapBytes map;
  TensorMapSpec bad = tiledSpec();
  bad.box[0] = 4;
  EXPECT_EQ(encodeTensorMap(*driver, bad, 0x10000, map.bytes).message(),
            "tensor map \"filter_tiles\": box[0]: 4 f16 elements are 8 bytes, "
            "not a multiple of 16");
  EXPECT_EQ(encodeTensorMap(*driver, tiledSpec(), 0x10008, map.bytes).message(),
            "tensor map \"filter_tiles\": the global address 0x10008 is not "
            "16-byte aligned (the TMA requires it)");
  EXPECT_EQ(
      encodeTensorMap(*driver, tiledSpec(), 0x10000, map.bytes + 16).message(),
      "tensor map \"filter_tiles\": the map's storage must be 64-byte "
      "aligned (use TensorMapBytes)");
  EXPECT_EQ(fake().calls("cuTensorMapEncodeTiled"), 0);
}

TEST_F(TensorMapEncodeTest, DriverFailuresAreNamed) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  ASSERT_TRUE(driver->init().ok());
  fake().setFailures("cuTensorMapEncodeIm2col:CUDA_ERROR_INVALID_VALUE");
  TensorMapBytes map;
  Error error = encodeTensorMap(*driver, im2colSpec(), 0x10000, map.bytes);
  EXPECT_EQ(error.message(),
            "tensor map \"input_im2col\": cuTensorMapEncodeIm2col failed: "
            "CUDA_ERROR_INVALID_VALUE (invalid argument)");
  EXPECT_EQ(error.call(), "cuTensorMapEncodeIm2col");
  EXPECT_EQ(error.code(), CUDA_ERROR_INVALID_VALUE);
}

/// The fake refuses what the real driver documents as invalid, so a
/// runtime (or compiler) that skipped its own checks is caught on it too.
TEST_F(TensorMapEncodeTest, TheFakeChecksTheDriversRules) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  ASSERT_TRUE(driver->init().ok());
  const DriverApi &api = driver->api();
  ASSERT_NE(api.cuTensorMapEncodeTiled, nullptr);
  ASSERT_NE(api.cuTensorMapEncodeIm2col, nullptr);
  std::vector<uint8_t> memory(1 << 20);
  void *base = reinterpret_cast<void *>(
      (reinterpret_cast<uintptr_t>(memory.data()) + 255) / 256 * 256);

  struct Tiled {
    CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    cuuint32_t rank = 2;
    size_t addressOffset = 0;
    cuuint64_t dims[5] = {576, 64, 1, 1, 1};
    cuuint64_t strides[4] = {1152, 0, 0, 0};
    cuuint32_t box[5] = {64, 128, 1, 1, 1};
    cuuint32_t elementStrides[5] = {1, 1, 1, 1, 1};
    CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
    CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    CUtensorMapFloatOOBfill oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  };
  TensorMapBytes map;
  auto tiled = [&](std::function<void(Tiled &)> edit,
                   unsigned char *out = nullptr) {
    Tiled t;
    edit(t);
    return api.cuTensorMapEncodeTiled(
        reinterpret_cast<CUtensorMap *>(out ? out : map.bytes), t.type, t.rank,
        static_cast<char *>(base) + t.addressOffset, t.dims, t.strides, t.box,
        t.elementStrides, t.interleave, t.swizzle,
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, t.oob);
  };
  EXPECT_EQ(tiled([](Tiled &) {}), CUDA_SUCCESS);
  EXPECT_EQ(tiled([](Tiled &) {}, map.bytes + 32), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) { t.rank = 6; }), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) { t.addressOffset = 8; }),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) { t.dims[1] = 0; }), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) { t.strides[0] = 1160; }),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) { t.box[1] = 257; }), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) { t.box[0] = 4; }), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) { t.box[0] = 128; }), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) { t.elementStrides[1] = 9; }),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) {
              t.type = CU_TENSOR_MAP_DATA_TYPE_INT32;
              t.box[0] = 32;
              t.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
            }),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(tiled([](Tiled &t) {
              t.interleave = CU_TENSOR_MAP_INTERLEAVE_32B; // wants 32B swizzle
            }),
            CUDA_ERROR_INVALID_VALUE);

  cuuint64_t dims[4] = {64, 56, 56, 8};
  cuuint64_t strides[3] = {128, 7168, 401408};
  cuuint32_t elementStrides[4] = {1, 1, 1, 1};
  auto im2col = [&](std::vector<int> lower, std::vector<int> upper,
                    cuuint32_t channels, cuuint32_t pixels) {
    return api.cuTensorMapEncodeIm2col(
        reinterpret_cast<CUtensorMap *>(map.bytes),
        CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, base, dims, strides, lower.data(),
        upper.data(), channels, pixels, elementStrides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  EXPECT_EQ(im2col({-1, -1}, {-1, -1}, 64, 128), CUDA_SUCCESS);
  EXPECT_EQ(im2col({-129, -1}, {-1, -1}, 64, 128), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(im2col({-1, -1}, {-1, 128}, 64, 128), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(im2col({60, -1}, {3, -1}, 64, 128), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(im2col({-1, -1}, {-1, -1}, 0, 128), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(im2col({-1, -1}, {-1, -1}, 64, 1025), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(im2col({-1, -1}, {-1, -1}, 128, 128), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(recorded("tensor_map").size(), 2u); // only the valid ones
}

TEST_F(TensorMapEncodeTest, ADriverWithoutTheEntryPointsStillLoads) {
  ScopedEnv olderDriver("FAKE_CUDA_NO_TMA", "1");
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  EXPECT_TRUE(driver->library().missingEntryPoints.empty());
  EXPECT_EQ(driver->library().missingOptionalEntryPoints,
            (std::vector<std::string>{"cuTensorMapEncodeTiled",
                                      "cuTensorMapEncodeIm2col"}));
  ASSERT_TRUE(driver->init().ok());
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver, 0);
  ASSERT_TRUE(context.ok()) << context.error().message();

  TensorMapBytes map;
  Error error = encodeTensorMap(*driver, im2colSpec(), 0x10000, map.bytes);
  EXPECT_EQ(error.message(),
            "tensor map \"input_im2col\": cuTensorMapEncodeIm2col failed: "
            "not available (the driver " +
                canonicalPath(fakeLibcudaPath()) +
                " has no cuTensorMapEncodeIm2col: TMA kernels (sm_90a) need a "
                "CUDA 12.0 or later driver; update the NVIDIA driver)");
  EXPECT_EQ(error.call(), "cuTensorMapEncodeIm2col");
  EXPECT_EQ(error.code(), CUDA_ERROR_NOT_FOUND);
  error = encodeTensorMap(*driver, tiledSpec(), 0x10000, map.bytes);
  EXPECT_NE(error.message().find("has no cuTensorMapEncodeTiled: TMA kernels "
                                 "(sm_90a) need a CUDA 12.0 or later driver"),
            std::string::npos)
      << error.message();
  EXPECT_EQ(fake().calls("cuTensorMapEncodeIm2col"), 0);
}

TEST_F(TensorMapEncodeTest, WithoutGetProcAddressTheyComeFromDlsym) {
  fake().setFailures("cuGetProcAddress:CUDA_ERROR_NOT_SUPPORTED");
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  EXPECT_FALSE(driver->library().resolvedWithGetProcAddress);
  EXPECT_TRUE(driver->library().missingOptionalEntryPoints.empty());
  EXPECT_NE(driver->api().cuTensorMapEncodeTiled, nullptr);
}

} // namespace
