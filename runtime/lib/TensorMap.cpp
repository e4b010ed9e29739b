//===- TensorMap.cpp - TMA tensor map specs: checks, JSON, records --------===//
//
// The host half of TensorMap.h (convrt_host, no <cuda.h>): the driver's
// documented limits, the manifest's JSON form and the flat record MLIR host
// code passes. encodeTensorMap, which calls the driver, is in
// TensorMapEncode.cpp.
//
//===----------------------------------------------------------------------===//

#include "convrt/TensorMap.h"

#include "JsonFields.h"

#include "convrt/Json.h"

#include <algorithm>

namespace convrt {

const char *tensorMapModeName(TensorMapMode mode) {
  switch (mode) {
  case TensorMapMode::Tiled:
    return "tiled";
  case TensorMapMode::Im2col:
    return "im2col";
  }
  return "?";
}

const char *tensorMapSwizzleName(TensorMapSwizzle mode) {
  switch (mode) {
  case TensorMapSwizzle::None:
    return "none";
  case TensorMapSwizzle::B32:
    return "32B";
  case TensorMapSwizzle::B64:
    return "64B";
  case TensorMapSwizzle::B128:
    return "128B";
  }
  return "?";
}

unsigned swizzleBytes(TensorMapSwizzle mode) {
  switch (mode) {
  case TensorMapSwizzle::None:
    return 0;
  case TensorMapSwizzle::B32:
    return 32;
  case TensorMapSwizzle::B64:
    return 64;
  case TensorMapSwizzle::B128:
    return 128;
  }
  return 0;
}

uint64_t TensorMapSpec::boxBytes() const {
  uint64_t elements = 1;
  if (mode == TensorMapMode::Im2col) {
    for (size_t i = 0; i < std::min<size_t>(box.size(), 2); ++i)
      elements *= box[i];
  } else {
    for (size_t i = 0; i < box.size(); ++i) {
      // The TMA ignores the innermost element stride (no stride along the
      // contiguous dimension) and loads ceil(box / stride) elements in the
      // others.
      uint32_t stride =
          i > 0 && i < elementStrides.size() && elementStrides[i] > 0
              ? elementStrides[i]
              : 1;
      elements *= (uint64_t(box[i]) + stride - 1) / stride;
    }
  }
  return elements * dtypeSize(dtype);
}

uint64_t TensorMapSpec::extentBytes() const {
  if (dims.empty() || stridesBytes.size() + 1 != dims.size())
    return 0;
  uint64_t last = (dims[0] - 1) * dtypeSize(dtype);
  for (size_t i = 1; i < dims.size(); ++i)
    last += (dims[i] - 1) * stridesBytes[i - 1];
  return last + dtypeSize(dtype);
}

namespace {

using namespace detail;

constexpr uint64_t kMaxDim = uint64_t(1) << 32;
constexpr uint64_t kStrideLimit = uint64_t(1) << 40;
constexpr int kMaxRank = 5;

std::string describeMap(const TensorMapSpec &spec) {
  return spec.name.empty() ? "tensor map"
                           : "tensor map " + jsonQuote(spec.name);
}

std::string indexed(const char *field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

/// The signed range of im2col corners, which the driver packs into fewer
/// bits the more spatial dimensions there are.
std::pair<int32_t, int32_t> cornerRange(int rank) {
  if (rank == 3)
    return {-32768, 32767};
  if (rank == 4)
    return {-128, 127};
  return {-16, 15};
}

/// The driver's documented limits (cuda.h, cuTensorMapEncodeTiled and
/// cuTensorMapEncodeIm2col, for CU_TENSOR_MAP_INTERLEAVE_NONE, which is all
/// this runtime encodes). Fields are named "<prefix><separator><field>".
Error check(const TensorMapSpec &spec, const std::string &prefix,
            const char *separator) {
  auto fail = [&](const std::string &field, const std::string &what) {
    return Error::failure(prefix + separator + field + ": " + what);
  };
  auto count = [&](const char *field, size_t expected, size_t got,
                   const std::string &why) {
    return fail(field, "expected " + std::to_string(expected) + " entries (" +
                           why + "), got " + std::to_string(got));
  };
  bool im2col = spec.mode == TensorMapMode::Im2col;
  if (spec.mode != TensorMapMode::Tiled && !im2col)
    return fail("mode",
                "invalid mode " + std::to_string(static_cast<int>(spec.mode)));
  if (spec.swizzle != TensorMapSwizzle::None &&
      spec.swizzle != TensorMapSwizzle::B32 &&
      spec.swizzle != TensorMapSwizzle::B64 &&
      spec.swizzle != TensorMapSwizzle::B128)
    return fail("swizzle", "invalid swizzle " +
                               std::to_string(static_cast<int>(spec.swizzle)));
  // The TMA moves bytes of a buffer; TF32 is a way of computing on f32.
  switch (spec.dtype) {
  case DType::F32:
  case DType::F16:
  case DType::BF16:
  case DType::I8:
  case DType::I32:
    break;
  case DType::TF32:
    return fail("dtype", "tf32 is not a buffer type (map the f32 tensor)");
  default:
    return fail("dtype", "invalid dtype " +
                             std::to_string(static_cast<int>(spec.dtype)));
  }
  size_t elementSize = dtypeSize(spec.dtype);

  int rank = spec.rank();
  if (im2col && (rank < 3 || rank > kMaxRank))
    return fail("dims", "an im2col map has rank 3 to 5 (C, W[, H[, D]], N), "
                        "got " +
                            std::to_string(rank));
  if (rank < 1 || rank > kMaxRank)
    return fail("dims", "rank " + std::to_string(rank) + " is not in 1..5");
  for (size_t i = 0; i < spec.dims.size(); ++i)
    if (spec.dims[i] == 0 || spec.dims[i] > kMaxDim)
      return fail(indexed("dims", i),
                  std::to_string(spec.dims[i]) + " is not in 1..2^32");

  if (spec.stridesBytes.size() != size_t(rank - 1))
    return count("strides_bytes", rank - 1, spec.stridesBytes.size(),
                 "rank - 1: dims[0] is contiguous");
  for (size_t i = 0; i < spec.stridesBytes.size(); ++i) {
    uint64_t stride = spec.stridesBytes[i];
    if (stride % 16 != 0)
      return fail(indexed("strides_bytes", i),
                  std::to_string(stride) + " is not a multiple of 16");
    if (stride >= kStrideLimit)
      return fail(indexed("strides_bytes", i),
                  std::to_string(stride) + " is not below 2^40");
  }

  // The inner box is what one row of the copy writes to shared memory: the
  // swizzle permutes 16-byte chunks within its span, so the row must fit.
  uint64_t innerBytes = 0;
  std::string innerWhat;
  if (im2col) {
    if (spec.box.size() != 2)
      return count("box", 2, spec.box.size(),
                   "channelsPerPixel, pixelsPerColumn");
    if (spec.box[0] < 1 || spec.box[0] > 256)
      return fail("box[0]", "channelsPerPixel " + std::to_string(spec.box[0]) +
                                " is not in 1..256");
    if (spec.box[1] < 1 || spec.box[1] > 1024)
      return fail("box[1]", "pixelsPerColumn " + std::to_string(spec.box[1]) +
                                " is not in 1..1024");
    innerBytes = uint64_t(spec.box[0]) * elementSize;
    innerWhat = "channelsPerPixel";
  } else {
    if (spec.box.size() != size_t(rank))
      return count("box", rank, spec.box.size(), "one per dimension");
    // A box may exceed its dimension: what lies outside reads zero.
    for (size_t i = 0; i < spec.box.size(); ++i)
      if (spec.box[i] < 1 || spec.box[i] > 256)
        return fail(indexed("box", i),
                    std::to_string(spec.box[i]) + " is not in 1..256");
    innerBytes = uint64_t(spec.box[0]) * elementSize;
    if (innerBytes % 16 != 0)
      return fail("box[0]", std::to_string(spec.box[0]) + " " +
                                dtypeName(spec.dtype) + " elements are " +
                                std::to_string(innerBytes) +
                                " bytes, not a multiple of 16");
    innerWhat = "box[0]";
  }
  if (unsigned span = swizzleBytes(spec.swizzle); span && innerBytes > span)
    return fail("swizzle",
                "the inner box is " + std::to_string(innerBytes) + " bytes (" +
                    innerWhat + " " + std::to_string(spec.box[0]) + " x " +
                    std::to_string(elementSize) + "), more than the " +
                    tensorMapSwizzleName(spec.swizzle) + " swizzle's span");

  if (spec.elementStrides.size() != size_t(rank))
    return count("element_strides", rank, spec.elementStrides.size(),
                 "one per dimension");
  for (size_t i = 0; i < spec.elementStrides.size(); ++i)
    if (spec.elementStrides[i] < 1 || spec.elementStrides[i] > 8)
      return fail(indexed("element_strides", i),
                  std::to_string(spec.elementStrides[i]) + " is not in 1..8");

  if (!im2col) {
    if (!spec.lowerCorner.empty())
      return fail("lower_corner", "only im2col maps have corners");
    if (!spec.upperCorner.empty())
      return fail("upper_corner", "only im2col maps have corners");
    return Error::success();
  }
  auto [low, high] = cornerRange(rank);
  for (auto [field, corner] :
       {std::pair<const char *, const std::vector<int32_t> *>{
            "lower_corner", &spec.lowerCorner},
        {"upper_corner", &spec.upperCorner}}) {
    if (corner->size() != size_t(rank - 2))
      return count(field, rank - 2, corner->size(),
                   "rank - 2: one per spatial dimension");
    for (size_t i = 0; i < corner->size(); ++i)
      if ((*corner)[i] < low || (*corner)[i] > high)
        return fail(indexed(field, i),
                    std::to_string((*corner)[i]) + " is outside [" +
                        std::to_string(low) + ", " + std::to_string(high) +
                        "] (a rank-" + std::to_string(rank) + " im2col map)");
  }
  // The box of spatial dimension i (dims[i + 1]) runs from lower to
  // dim - 1 + upper: it must hold at least one position.
  for (size_t i = 0; i < spec.lowerCorner.size(); ++i) {
    int64_t positions =
        int64_t(spec.dims[i + 1]) + spec.upperCorner[i] - spec.lowerCorner[i];
    if (positions < 1)
      return fail(indexed("upper_corner", i),
                  "the bounding box of dims[" + std::to_string(i + 1) +
                      "] is empty (" + std::to_string(spec.dims[i + 1]) +
                      " + upper " + std::to_string(spec.upperCorner[i]) +
                      " - lower " + std::to_string(spec.lowerCorner[i]) +
                      " = " + std::to_string(positions) + ")");
  }
  return Error::success();
}

Expected<TensorMapMode> parseMode(const std::string &name) {
  for (TensorMapMode mode : {TensorMapMode::Tiled, TensorMapMode::Im2col})
    if (name == tensorMapModeName(mode))
      return mode;
  return Error::failure("unknown mode " + jsonQuote(name) +
                        " (expected tiled or im2col)");
}

Expected<TensorMapSwizzle> parseSwizzle(const std::string &name) {
  for (TensorMapSwizzle mode : {TensorMapSwizzle::None, TensorMapSwizzle::B32,
                                TensorMapSwizzle::B64, TensorMapSwizzle::B128})
    if (name == tensorMapSwizzleName(mode))
      return mode;
  return Error::failure("unknown swizzle " + jsonQuote(name) +
                        " (expected none, 32B, 64B or 128B)");
}

template <typename To>
std::vector<To> narrow(const std::vector<int64_t> &values) {
  return std::vector<To>(values.begin(), values.end());
}

} // namespace

Error validateTensorMap(const TensorMapSpec &spec) {
  return check(spec, describeMap(spec), ": ");
}

Error validateTensorMapAt(const TensorMapSpec &spec, const std::string &where) {
  return check(spec, where, ".");
}

JsonValue tensorMapToJson(const TensorMapSpec &spec) {
  JsonValue json = {{"name", spec.name},
                    {"argument", spec.argument},
                    {"mode", tensorMapModeName(spec.mode)},
                    {"dtype", dtypeName(spec.dtype)},
                    {"dims", spec.dims},
                    {"strides_bytes", spec.stridesBytes},
                    {"box", spec.box},
                    {"element_strides", spec.elementStrides}};
  if (spec.mode == TensorMapMode::Im2col) {
    json["lower_corner"] = spec.lowerCorner;
    json["upper_corner"] = spec.upperCorner;
  }
  json["swizzle"] = tensorMapSwizzleName(spec.swizzle);
  return json;
}

Expected<TensorMapSpec> tensorMapFromJson(const JsonValue &json,
                                          const std::string &path) {
  static const std::string kNoSource;
  if (!json.is_object())
    return Error::failure(path + ": expected an object, got " +
                          describeValue(json));
  Fields fields(json, path, kNoSource);
  CONVRT_TRY(fields.checkKnown({"name", "argument", "mode", "dtype", "dims",
                                "strides_bytes", "box", "element_strides",
                                "lower_corner", "upper_corner", "swizzle"}));
  TensorMapSpec spec;
  CONVRT_ASSIGN_OR_RETURN(spec.name, fields.string("name"));
  CONVRT_ASSIGN_OR_RETURN(spec.argument, fields.string("argument"));
  CONVRT_ASSIGN_OR_RETURN(std::string mode, fields.string("mode"));
  CONVRT_ASSIGN_OR_RETURN(spec.mode, atField(fields, "mode", parseMode(mode)));
  CONVRT_ASSIGN_OR_RETURN(std::string dtype, fields.string("dtype"));
  CONVRT_ASSIGN_OR_RETURN(spec.dtype,
                          atField(fields, "dtype", parseDType(dtype)));
  // Counts and ranges beyond the JSON types are validateTensorMap's, which
  // knows the rank; these bounds only keep the values representable.
  CONVRT_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                          fields.integers("dims", 1, kMaxRank, 1));
  spec.dims = narrow<uint64_t>(dims);
  CONVRT_ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                          fields.integers("strides_bytes", 0, kMaxRank - 1, 0));
  spec.stridesBytes = narrow<uint64_t>(strides);
  CONVRT_ASSIGN_OR_RETURN(std::vector<int64_t> box,
                          fields.integers("box", 1, kMaxRank, 1));
  for (size_t i = 0; i < box.size(); ++i)
    if (box[i] > 0xFFFFFFFF)
      return fields.fail(fields.fieldPath(indexed("box", i)), "too large");
  spec.box = narrow<uint32_t>(box);
  // Every element, by default: what a dense copy wants.
  CONVRT_ASSIGN_OR_RETURN(
      std::vector<int64_t> elementStrides,
      fields.integers("element_strides", 1, kMaxRank, 1,
                      std::vector<int64_t>(dims.size(), 1)));
  for (size_t i = 0; i < elementStrides.size(); ++i)
    if (elementStrides[i] > 0xFFFFFFFF)
      return fields.fail(fields.fieldPath(indexed("element_strides", i)),
                         "too large");
  spec.elementStrides = narrow<uint32_t>(elementStrides);
  bool im2col = spec.mode == TensorMapMode::Im2col;
  for (auto [key, corner] : {std::pair<const char *, std::vector<int32_t> *>{
                                 "lower_corner", &spec.lowerCorner},
                             {"upper_corner", &spec.upperCorner}}) {
    if (!im2col) {
      if (findMember(json, key))
        return fields.fail(fields.fieldPath(key),
                           "only im2col maps have corners");
      continue;
    }
    CONVRT_ASSIGN_OR_RETURN(std::vector<int64_t> values,
                            fields.integers(key, 1, kMaxRank - 2, INT32_MIN));
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] > INT32_MAX)
        return fields.fail(fields.fieldPath(indexed(key, i)), "too large");
    *corner = narrow<int32_t>(values);
  }
  CONVRT_ASSIGN_OR_RETURN(std::string swizzle,
                          fields.string("swizzle", false, "128B"));
  CONVRT_ASSIGN_OR_RETURN(spec.swizzle,
                          atField(fields, "swizzle", parseSwizzle(swizzle)));
  CONVRT_TRY(validateTensorMapAt(spec, path + " (" + spec.name + ")"));
  return spec;
}

namespace {

/// Reads a record and notes which entries it used.
class RecordReader {
public:
  explicit RecordReader(const int64_t *record) : record_(record) {}

  /// Entry `index` (the spec's `field`) within [low, high].
  Expected<int64_t> at(int index, const std::string &field, int64_t low,
                       int64_t high) {
    used_[index] = true;
    int64_t value = record_[index];
    if (value < low || value > high)
      return Error::failure("tensor map record[" + std::to_string(index) +
                            "] (" + field + "): " + std::to_string(value) +
                            " is out of range");
    return value;
  }

  template <typename T>
  Expected<std::vector<T>> array(int first, size_t count, const char *field,
                                 int64_t low, int64_t high) {
    std::vector<T> values;
    for (size_t i = 0; i < count; ++i) {
      CONVRT_ASSIGN_OR_RETURN(int64_t value,
                              at(first + int(i), indexed(field, i), low, high));
      values.push_back(static_cast<T>(value));
    }
    return values;
  }

  /// A nonzero entry the spec does not use means the writer laid the record
  /// out otherwise: refuse it rather than encode a wrong map.
  Error checkUnused() const {
    for (int i = 0; i < kTensorMapRecordSize; ++i)
      if (!used_[i] && record_[i] != 0)
        return Error::failure(
            "tensor map record[" + std::to_string(i) +
            "]: " + std::to_string(record_[i]) +
            " in an entry this spec does not use, which must be 0 (is the "
            "record laid out as convrt/TensorMap.h says?)");
    return Error::success();
  }

private:
  const int64_t *record_;
  bool used_[kTensorMapRecordSize] = {};
};

} // namespace

Expected<TensorMapSpec> tensorMapFromRecord(const int64_t *record) {
  if (!record)
    return Error::failure("tensor map record: null");
  RecordReader reader(record);
  TensorMapSpec spec;
  CONVRT_ASSIGN_OR_RETURN(int64_t mode, reader.at(kRecordMode, "mode", 0, 1));
  spec.mode = static_cast<TensorMapMode>(mode);
  CONVRT_ASSIGN_OR_RETURN(
      int64_t dtype,
      reader.at(kRecordDType, "dtype", 0, static_cast<int64_t>(DType::I32)));
  spec.dtype = static_cast<DType>(dtype);
  CONVRT_ASSIGN_OR_RETURN(int64_t rank,
                          reader.at(kRecordRank, "rank", 1, kMaxRank));
  CONVRT_ASSIGN_OR_RETURN(int64_t swizzle,
                          reader.at(kRecordSwizzle, "swizzle", 0, 3));
  spec.swizzle = static_cast<TensorMapSwizzle>(swizzle);
  bool im2col = spec.mode == TensorMapMode::Im2col;
  if (im2col && rank < 3)
    return Error::failure("tensor map record[2] (rank): an im2col map has "
                          "rank 3 to 5, got " +
                          std::to_string(rank));
  CONVRT_ASSIGN_OR_RETURN(spec.dims,
                          reader.array<uint64_t>(kRecordDims, size_t(rank),
                                                 "dims", 1, int64_t(kMaxDim)));
  CONVRT_ASSIGN_OR_RETURN(
      spec.stridesBytes,
      reader.array<uint64_t>(kRecordStrides, size_t(rank - 1), "strides_bytes",
                             0, int64_t(kStrideLimit)));
  CONVRT_ASSIGN_OR_RETURN(
      spec.box, reader.array<uint32_t>(kRecordBox, im2col ? 2 : size_t(rank),
                                       "box", 0, 0xFFFFFFFF));
  CONVRT_ASSIGN_OR_RETURN(
      spec.elementStrides,
      reader.array<uint32_t>(kRecordElementStrides, size_t(rank),
                             "element_strides", 0, 0xFFFFFFFF));
  if (im2col) {
    CONVRT_ASSIGN_OR_RETURN(
        spec.lowerCorner,
        reader.array<int32_t>(kRecordLower, size_t(rank - 2), "lower_corner",
                              INT32_MIN, INT32_MAX));
    CONVRT_ASSIGN_OR_RETURN(
        spec.upperCorner,
        reader.array<int32_t>(kRecordUpper, size_t(rank - 2), "upper_corner",
                              INT32_MIN, INT32_MAX));
  }
  CONVRT_TRY(reader.checkUnused());
  CONVRT_TRY(check(spec, "tensor map record", ": "));
  return spec;
}

} // namespace convrt
