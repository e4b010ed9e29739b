//===- ManifestTest.cpp - Bundle manifests: schema and errors -------------===//

#include "TestSupport.h"

#include "convrt/Json.h"
#include "convrt/Manifest.h"

#include <cctype>
#include <functional>

using namespace convrt;
using namespace convrt::test;

namespace {

/// A valid manifest: f16 NHWC, 2 groups, bias, asymmetric padding.
const char *kValid = R"({
  "format_version": 1,
  "generator": "conv-run test",
  "kernel": {
    "name": "conv_kernel",
    "binary": "kernel.cubin",
    "ptx": "kernel.ptx",
    "grid": [4, 2, 1],
    "block": [128, 1, 1],
    "shared_memory_bytes": 65536,
    "chip": "sm_90a"
  },
  "arguments": [
    {"name": "x", "role": "input", "dtype": "f16", "shape": [2, 9, 9, 4]},
    {"name": "w", "role": "filter", "dtype": "f16", "shape": [6, 3, 3, 2]},
    {"name": "b", "role": "bias", "dtype": "f32", "shape": [6]},
    {"name": "y", "role": "output", "dtype": "f16", "shape": [2, 5, 4, 6]}
  ],
  "problem": {
    "layout": "nhwc", "n": 2, "c": 4, "h": 9, "w": 9, "f": 6,
    "kh": 3, "kw": 3, "stride": [2, 2], "dilation": [1, 1],
    "padding": [1, 1, 1, 0], "groups": 2, "dtype": "f16", "accumulate": "f32"
  }
})";

TEST(ManifestTest, ParsesAValidManifest) {
  Expected<Manifest> m = parseManifest(kValid);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->generator, "conv-run test");
  EXPECT_EQ(m->kernel.name, "conv_kernel");
  EXPECT_EQ(m->kernel.binary, "kernel.cubin");
  EXPECT_EQ(m->kernel.ptx, "kernel.ptx");
  EXPECT_EQ(m->kernel.grid.x, 4u);
  EXPECT_EQ(m->kernel.grid.y, 2u);
  EXPECT_EQ(m->kernel.block.x, 128u);
  EXPECT_EQ(m->kernel.sharedMemoryBytes, 65536u);
  EXPECT_EQ(m->kernel.chip, "sm_90a");
  ASSERT_EQ(m->arguments.size(), 4u);
  EXPECT_EQ(m->arguments[2].role, ArgumentRole::Bias);
  EXPECT_EQ(m->arguments[2].dtype, DType::F32);
  const ConvProblem &p = m->problem;
  EXPECT_EQ(p.layout, Layout::NHWC);
  EXPECT_EQ(p.filterLayout, FilterLayout::FHWC); // the NHWC default
  EXPECT_EQ(p.outH(), 5);
  EXPECT_EQ(p.outW(), 4);
  EXPECT_EQ(p.padRight, 0);
  EXPECT_EQ(p.groups, 2);
  EXPECT_EQ(p.dtype, DType::F16);
  EXPECT_TRUE(p.hasBias);
  EXPECT_EQ(m->find(ArgumentRole::Output), 3);
}

TEST(ManifestTest, DefaultsForOptionalFields) {
  Expected<Manifest> m = parseManifest(R"({
    "format_version": 1,
    "kernel": {"name": "k", "ptx": "k.ptx", "grid": [1], "block": [32]},
    "arguments": [
      {"name": "x", "role": "input", "dtype": "f32", "shape": [1, 1, 3, 3]},
      {"name": "w", "role": "filter", "dtype": "f32", "shape": [1, 1, 3, 3]},
      {"name": "y", "role": "output", "dtype": "f32", "shape": [1, 1, 1, 1]}],
    "problem": {"layout": "nchw", "n": 1, "c": 1, "h": 3, "w": 3, "f": 1,
                "kh": 3, "kw": 3, "dtype": "f32"}})");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->kernel.binary, "");
  EXPECT_EQ(m->kernel.grid.y, 1u);
  EXPECT_EQ(m->kernel.sharedMemoryBytes, 0u);
  EXPECT_EQ(m->problem.filterLayout, FilterLayout::FCHW);
  EXPECT_EQ(m->problem.strideH, 1);
  EXPECT_EQ(m->problem.groups, 1);
  EXPECT_EQ(m->problem.accumulate, DType::F32);
  EXPECT_FALSE(m->problem.hasBias);
}

TEST(ManifestTest, JsonRoundTrip) {
  Expected<Manifest> m = parseManifest(kValid);
  ASSERT_TRUE(m.ok());
  std::string written = dumpJson(manifestToJson(*m), 2);
  Expected<Manifest> again = parseManifest(written);
  ASSERT_TRUE(again.ok()) << again.error().message() << "\n" << written;
  EXPECT_EQ(manifestToJson(*again), manifestToJson(*m));
  // Launch dimensions and shapes stay on one line (tests grep for them).
  EXPECT_NE(written.find("    \"grid\": [4, 2, 1],\n"), std::string::npos)
      << written;
  EXPECT_NE(written.find("\"shape\": [2, 9, 9, 4]"), std::string::npos);
}

/// Applies `edit` to the valid manifest's JSON and returns the parse error.
std::string errorAfter(const std::function<void(std::string &)> &edit) {
  std::string text = kValid;
  edit(text);
  Expected<Manifest> m = parseManifest(text);
  return m.ok() ? "(parsed)" : m.error().message();
}

void replace(std::string &text, const std::string &from,
             const std::string &to) {
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

struct Malformed {
  const char *from;
  const char *to;
  const char *error;
};

void PrintTo(const Malformed &c, std::ostream *os) {
  *os << (*c.to ? c.to : "(a field deleted)");
}

class MalformedManifestTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedManifestTest, ErrorNamesTheField) {
  const Malformed &c = GetParam();
  EXPECT_EQ(errorAfter([&](std::string &t) { replace(t, c.from, c.to); }),
            c.error);
}

INSTANTIATE_TEST_SUITE_P(
    EachField, MalformedManifestTest,
    ::testing::Values(
        Malformed{"\"format_version\": 1", "\"format_version\": 2",
                  "manifest.json: format_version: version 2 is not supported "
                  "(this runtime reads 1)"},
        Malformed{"\"format_version\": 1,", "",
                  "manifest.json: format_version: missing"},
        Malformed{"\"generator\"", "\"generater\"",
                  "manifest.json: generater: unknown field (expected one of: "
                  "format_version, generator, kernel, arguments, tensor_maps, "
                  "problem)"},
        Malformed{"\"name\": \"conv_kernel\",", "",
                  "manifest.json: kernel.name: missing from the kernel object"},
        Malformed{"\"grid\": [4, 2, 1]", "\"grid\": [4, -2, 1]",
                  "manifest.json: kernel.grid[1]: expected a positive integer, "
                  "got -2"},
        Malformed{"\"grid\": [4, 2, 1]", "\"grid\": [4, 2, 1, 1]",
                  "manifest.json: kernel.grid: expected an array of 1 to 3 "
                  "integers, got an array of 4"},
        Malformed{"\"block\": [128, 1, 1]", "\"block\": \"128\"",
                  "manifest.json: kernel.block: expected an array of 1 to 3 "
                  "integers, got string \"128\""},
        Malformed{"65536", "1.5",
                  "manifest.json: kernel.shared_memory_bytes: expected a "
                  "non-negative integer, got 1.5"},
        Malformed{"\"sm_90a\"", "\"hopper\"",
                  "manifest.json: kernel.chip: expected a chip name like "
                  "\"sm_90\", got \"hopper\""},
        Malformed{"\"binary\": \"kernel.cubin\",\n    \"ptx\": \"kernel.ptx\",",
                  "",
                  "manifest.json: kernel.binary: missing (a kernel needs a "
                  "binary, a ptx, or both)"},
        Malformed{"\"role\": \"filter\"", "\"role\": \"weights\"",
                  "manifest.json: arguments[1].role: unknown role \"weights\" "
                  "(expected input, filter, bias, residual or output)"},
        Malformed{"\"dtype\": \"f32\", \"shape\": [6]",
                  "\"dtype\": \"fp8\", \"shape\": [6]",
                  "manifest.json: arguments[2].dtype: unknown dtype \"fp8\" "
                  "(expected f32, tf32, f16, bf16, i8 or i32)"},
        Malformed{"\"accumulate\": \"f32\"",
                  "\"accumulate\": \"f32\", \"zero_points\": [1, 0]",
                  "manifest.json: problem: zero points need i8 data, got f16"},
        Malformed{"\"dtype\": \"f32\", \"shape\": [6]",
                  "\"dtype\": \"tf32\", \"shape\": [6]",
                  "manifest.json: arguments[2].dtype: tf32 is a problem "
                  "precision, not a buffer type (store the tensor as f32)"},
        Malformed{"\"name\": \"b\"", "\"name\": \"x\"",
                  "manifest.json: arguments[2].name: duplicate argument name "
                  "\"x\""},
        Malformed{"[2, 5, 4, 6]", "[2, 5, 5, 6]",
                  "manifest.json: arguments[3] (y).shape: [2, 5, 5, 6] does "
                  "not match the problem, which implies [2, 5, 4, 6] for the "
                  "output"},
        Malformed{"\"dtype\": \"f16\", \"shape\": [6, 3, 3, 2]",
                  "\"dtype\": \"f32\", \"shape\": [6, 3, 3, 2]",
                  "manifest.json: arguments[1] (w).dtype: f32 does not match "
                  "problem.dtype f16 (stored as f16)"},
        Malformed{"\"role\": \"output\"", "\"role\": \"input\"",
                  "manifest.json: arguments: 2 arguments have role \"input\" "
                  "(at most one)"},
        Malformed{"\"layout\": \"nhwc\"", "\"layout\": \"chwn\"",
                  "manifest.json: problem.layout: unknown layout \"chwn\" "
                  "(expected nchw or nhwc)"},
        Malformed{"\"n\": 2", "\"n\": \"2\"",
                  "manifest.json: problem.n: expected a positive integer, got "
                  "string \"2\""},
        Malformed{"\"stride\": [2, 2]", "\"stride\": [2]",
                  "manifest.json: problem.stride: expected an array of 2 "
                  "integers, got an array of 1"},
        Malformed{"\"padding\": [1, 1, 1, 0]", "\"padding\": [1, -1, 1, 0]",
                  "manifest.json: problem.padding[1]: expected a non-negative "
                  "integer, got -1"},
        Malformed{"\"groups\": 2", "\"groups\": 3",
                  "manifest.json: problem: groups (3) must divide c (4) and f "
                  "(6)"},
        Malformed{"\"kh\": 3", "\"kh\": 30",
                  "manifest.json: problem: the output is empty: the dilated "
                  "kernel (30x3) is larger than the padded input"},
        Malformed{"\"accumulate\": \"f32\"", "\"accumulate\": \"bf16\"",
                  "manifest.json: problem: accumulate must be f32 or f16, got "
                  "bf16"},
        Malformed{"\"groups\": 2,", "\"groups\": 2, \"bias\": true,",
                  "manifest.json: problem.bias: unknown field (expected one "
                  "of: layout, filter_layout, n, c, h, w, f, kh, kw, stride, "
                  "dilation, padding, groups, dtype, accumulate, zero_points)"}),
    [](const ::testing::TestParamInfo<Malformed> &info) {
      // The error's field path, as a test name: "problem_padding_1_".
      std::string error = info.param.error;
      size_t start = error.find(": ") + 2;
      std::string name = error.substr(start, error.find(": ", start) - start) +
                         "_" + std::to_string(info.index);
      for (char &c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)))
          c = '_';
      return name;
    });

// A residual: the output's shape and dtype, at most one.
TEST(ManifestTest, AResidualIsTheOutputsTwin) {
  const std::string residual =
      R"({"name": "r", "role": "residual", "dtype": "f16", "shape": [2, 5, 4, 6]},
    {"name": "y")";
  auto withResidual = [&](const std::string &r) {
    return errorAfter([&](std::string &t) { replace(t, "{\"name\": \"y\"", r); });
  };
  EXPECT_EQ(withResidual(residual), "(parsed)");
  std::string text = kValid;
  replace(text, "{\"name\": \"y\"", residual);
  Expected<Manifest> m = parseManifest(text);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->find(ArgumentRole::Residual), 3);
  EXPECT_EQ(m->find(ArgumentRole::Output), 4);
  Expected<Manifest> again =
      parseManifest(dumpJson(manifestToJson(*m)), "round trip");
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->find(ArgumentRole::Residual), 3);

  std::string wrongType = residual;
  replace(wrongType, "\"f16\"", "\"f32\"");
  EXPECT_EQ(withResidual(wrongType),
            "manifest.json: arguments[3] (r).dtype: f32 does not match the "
            "output's f16");
  std::string wrongShape = residual;
  replace(wrongShape, "[2, 5, 4, 6]", "[2, 5, 4, 1]");
  EXPECT_EQ(withResidual(wrongShape),
            "manifest.json: arguments[3] (r).shape: [2, 5, 4, 1] does not "
            "match the problem, which implies [2, 5, 4, 6] for the residual");
  std::string twice = residual;
  replace(twice, "\"r\"", "\"r1\"");
  replace(twice, "{\"name\": \"y\"", residual);
  EXPECT_EQ(withResidual(twice),
            "manifest.json: arguments: 2 arguments have role \"residual\" "
            "(at most one)");
}

/// A quantized i8 problem: i8 operands, an i32 output, zero points.
const char *kQuantized = R"({
  "format_version": 1,
  "kernel": {"name": "k", "binary": "k.cubin", "grid": [2, 1, 1],
             "block": [256, 1, 1], "chip": "sm_90"},
  "arguments": [
    {"name": "x", "role": "input", "dtype": "i8", "shape": [1, 8, 8, 32]},
    {"name": "w", "role": "filter", "dtype": "i8", "shape": [64, 3, 3, 32]},
    {"name": "y", "role": "output", "dtype": "i32", "shape": [1, 8, 8, 64]}
  ],
  "problem": {
    "layout": "nhwc", "n": 1, "c": 32, "h": 8, "w": 8, "f": 64,
    "kh": 3, "kw": 3, "padding": [1, 1, 1, 1], "dtype": "i8",
    "accumulate": "i32", "zero_points": [-7, 3]
  }
})";

TEST(ManifestTest, QuantizedProblemKeepsItsZeroPoints) {
  Expected<Manifest> m = parseManifest(kQuantized);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_TRUE(m->problem.isQuantized());
  EXPECT_EQ(m->problem.inputZeroPoint, -7);
  EXPECT_EQ(m->problem.filterZeroPoint, 3);
  EXPECT_EQ(m->arguments[2].dtype, DType::I32);
  std::string written = dumpJson(manifestToJson(*m), 2);
  EXPECT_NE(written.find("\"zero_points\": [-7, 3]"), std::string::npos)
      << written;
  Expected<Manifest> again = parseManifest(written);
  ASSERT_TRUE(again.ok()) << again.error().message() << "\n" << written;
  EXPECT_EQ(manifestToJson(*again), manifestToJson(*m));
  // A float problem writes no zero points.
  Expected<Manifest> f16 = parseManifest(kValid);
  ASSERT_TRUE(f16.ok());
  EXPECT_EQ(dumpJson(manifestToJson(*f16), 2).find("zero_points"),
            std::string::npos);
}

TEST(ManifestTest, QuantizedProblemErrors) {
  auto errorIn = [](const std::string &from, const std::string &to) {
    std::string text = kQuantized;
    replace(text, from, to);
    Expected<Manifest> m = parseManifest(text);
    return m.ok() ? "(parsed)" : m.error().message();
  };
  EXPECT_EQ(errorIn("[-7, 3]", "[-7, 300]"),
            "manifest.json: problem: the filter zero point must be an i8 value "
            "(-128..127), got 300");
  EXPECT_EQ(errorIn("[-7, 3]", "[-7]"),
            "manifest.json: problem.zero_points: expected an array of 2 "
            "integers, got an array of 1");
  EXPECT_EQ(errorIn("\"dtype\": \"i32\", \"shape\": [1, 8, 8, 64]",
                    "\"dtype\": \"f32\", \"shape\": [1, 8, 8, 64]"),
            "manifest.json: arguments[2] (y).dtype: f32 does not match the "
            "output type i32");
}

/// An sm_90a TMA kernel's manifest: NHWC f16 N8 H56 W56 C64, 3x3, padding
/// 1; the input read through an im2col map, the filter as [64][576] tiles.
const char *kTma = R"({
  "format_version": 1,
  "kernel": {"name": "conv_tma", "binary": "kernel.cubin",
             "grid": [392, 1, 1], "block": [384, 1, 1],
             "shared_memory_bytes": 197632, "chip": "sm_90a"},
  "arguments": [
    {"name": "input", "role": "input", "dtype": "f16", "shape": [8, 56, 56, 64]},
    {"name": "filter", "role": "filter", "dtype": "f16", "shape": [64, 3, 3, 64]},
    {"name": "output", "role": "output", "dtype": "f16", "shape": [8, 56, 56, 64]}
  ],
  "tensor_maps": [
    {"name": "input_im2col", "argument": "input", "mode": "im2col",
     "dtype": "f16", "dims": [64, 56, 56, 8],
     "strides_bytes": [128, 7168, 401408], "box": [64, 128],
     "element_strides": [1, 1, 1, 1], "lower_corner": [-1, -1],
     "upper_corner": [-1, -1], "swizzle": "128B"},
    {"name": "filter_tiles", "argument": "filter", "mode": "tiled",
     "dtype": "f16", "dims": [576, 64], "strides_bytes": [1152],
     "box": [64, 128]}
  ],
  "problem": {
    "layout": "nhwc", "n": 8, "c": 64, "h": 56, "w": 56, "f": 64,
    "kh": 3, "kw": 3, "padding": [1, 1, 1, 1], "dtype": "f16"
  }
})";

TEST(ManifestTest, TensorMaps) {
  Expected<Manifest> m = parseManifest(kTma);
  ASSERT_TRUE(m.ok()) << m.error().message();
  ASSERT_EQ(m->tensorMaps.size(), 2u);
  const TensorMapSpec &input = m->tensorMaps[0];
  EXPECT_EQ(input.name, "input_im2col");
  EXPECT_EQ(input.argument, "input");
  EXPECT_EQ(input.mode, TensorMapMode::Im2col);
  EXPECT_EQ(input.dims, (std::vector<uint64_t>{64, 56, 56, 8}));
  EXPECT_EQ(input.lowerCorner, (std::vector<int32_t>{-1, -1}));
  const TensorMapSpec &filter = m->tensorMaps[1];
  EXPECT_EQ(filter.mode, TensorMapMode::Tiled);
  EXPECT_EQ(filter.box, (std::vector<uint32_t>{64, 128}));
  EXPECT_EQ(filter.elementStrides, (std::vector<uint32_t>{1, 1}));
  EXPECT_EQ(filter.swizzle, TensorMapSwizzle::B128);
  EXPECT_EQ(m->findArgument("filter"), 1);
  EXPECT_EQ(m->findArgument("bias"), -1);

  std::string written = dumpJson(manifestToJson(*m), 2);
  Expected<Manifest> again = parseManifest(written);
  ASSERT_TRUE(again.ok()) << again.error().message() << "\n" << written;
  EXPECT_EQ(manifestToJson(*again), manifestToJson(*m));
  EXPECT_NE(written.find("\"dims\": [64, 56, 56, 8]"), std::string::npos)
      << written;
  // A pointer-only manifest writes no "tensor_maps" (older readers).
  Expected<Manifest> plain = parseManifest(kValid);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->tensorMaps.empty());
  EXPECT_FALSE(manifestToJson(*plain).contains("tensor_maps"));
}

TEST(ManifestTest, TensorMapErrors) {
  auto errorIn = [](const std::string &from, const std::string &to) {
    std::string text = kTma;
    replace(text, from, to);
    Expected<Manifest> m = parseManifest(text);
    return m.ok() ? "(parsed)" : m.error().message();
  };
  EXPECT_EQ(errorIn("\"argument\": \"filter\"", "\"argument\": \"weights\""),
            "manifest.json: tensor_maps[1] (filter_tiles).argument: no "
            "argument is named \"weights\" (the arguments are input, "
            "filter, output)");
  EXPECT_EQ(errorIn("\"dtype\": \"f16\", \"dims\": [576, 64]",
                    "\"dtype\": \"bf16\", \"dims\": [576, 64]"),
            "manifest.json: tensor_maps[1] (filter_tiles).dtype: bf16 does not "
            "match argument \"filter\", which is f16");
  EXPECT_EQ(errorIn("[576, 64]", "[576, 65]"),
            "manifest.json: tensor_maps[1] (filter_tiles).dims: the map spans "
            "74880 bytes, more than argument \"filter\"'s 73728 ([64, 3, 3, "
            "64] f16)");
  EXPECT_EQ(errorIn("\"box\": [64, 128]}", "\"box\": [64, 257]}"),
            "manifest.json: tensor_maps[1] (filter_tiles).box[1]: 257 is not "
            "in 1..256");
  EXPECT_EQ(errorIn("\"box\": [64, 128]}", "\"box\": \"64x128\"}"),
            "manifest.json: tensor_maps[1].box: expected an array of 1 to 5 "
            "integers, got string \"64x128\"");
  EXPECT_EQ(errorIn("\"name\": \"filter_tiles\"", "\"name\": \"input_im2col\""),
            "manifest.json: tensor_maps[1] (input_im2col).name: duplicate "
            "tensor map name \"input_im2col\"");
  std::string notAnArray = kValid;
  replace(notAnArray, "\"problem\": {", "\"tensor_maps\": {}, \"problem\": {");
  EXPECT_EQ(parseManifest(notAnArray).error().message(),
            "manifest.json: tensor_maps: expected an array of tensor maps, got "
            "object");
}

TEST(ManifestTest, SyntaxErrorsArePrefixed) {
  Expected<Manifest> m = parseManifest("{\"kernel\": }", "b/manifest.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message(),
            "b/manifest.json: invalid JSON: parse error at line 1, column 12 "
            "(byte 12): syntax error while parsing value - unexpected '}'; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(parseManifest("[]").error().message(),
            "manifest.json: expected a JSON object at the top level, got "
            "array");
  // nlohmann alone would keep the second "grid" silently.
  std::string twice = kValid;
  replace(twice, "\"grid\": [4, 2, 1]", "\"grid\": [4, 2, 1], \"grid\": [1]");
  EXPECT_EQ(parseManifest(twice).error().message(),
            "manifest.json: invalid JSON: duplicate key \"kernel.grid\"");
}

TEST(ManifestTest, IntegersMayBeWrittenAsIntegralFloats) {
  std::string text = kValid;
  replace(text, "\"grid\": [4, 2, 1]", "\"grid\": [4.0, 2, 1]");
  Expected<Manifest> m = parseManifest(text);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->kernel.grid.x, 4u);
  replace(text, "\"n\": 2", "\"n\": 18446744073709551615");
  EXPECT_EQ(parseManifest(text).error().message(),
            "manifest.json: problem.n: expected a positive integer, got "
            "18446744073709551615");
}

TEST(ManifestTest, BundleFilesMustExist) {
  TempDir dir;
  dir.write("manifest.json", kValid);
  dir.write("kernel.cubin", "FAKECUBIN");
  Expected<Bundle> bundle = loadBundle(dir.path());
  ASSERT_FALSE(bundle.ok());
  EXPECT_EQ(bundle.error().message(),
            dir.file("manifest.json") +
                ": kernel.ptx names kernel.ptx, which is not a file in the "
                "bundle (" +
                dir.file("kernel.ptx") + ")");
  dir.write("kernel.ptx", "// ptx");
  bundle = loadBundle(dir.path());
  ASSERT_TRUE(bundle.ok()) << bundle.error().message();
  EXPECT_EQ(bundle->binaryPath, dir.file("kernel.cubin"));
  EXPECT_EQ(bundle->ptxPath, dir.file("kernel.ptx"));

  Expected<Bundle> missing = loadBundle(dir.file("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("cannot open " + dir.file("nope") +
                                           "/manifest.json"),
            std::string::npos);
}

TEST(ManifestTest, WriteBundleThenLoadIt) {
  Expected<Manifest> m = parseManifest(kValid);
  ASSERT_TRUE(m.ok());
  TempDir dir;
  Error written = writeBundle(dir.path(), *m, "FAKECUBIN\n", ".version 9.0\n");
  ASSERT_TRUE(written.ok()) << written.message();
  Expected<Bundle> bundle = loadBundle(dir.path());
  ASSERT_TRUE(bundle.ok()) << bundle.error().message();
  EXPECT_EQ(manifestToJson(bundle->manifest), manifestToJson(*m));

  Manifest broken = *m;
  broken.arguments.pop_back(); // no output
  Error refused = writeBundle(dir.path(), broken, "", "");
  EXPECT_EQ(refused.message(), "refusing to write bundle: arguments: no "
                               "argument has role \"output\"");
}

} // namespace
