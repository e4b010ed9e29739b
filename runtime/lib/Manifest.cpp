//===- Manifest.cpp - AOT bundles: manifest.json + kernel -----------------===//

#include "convrt/Manifest.h"

#include "convrt/ChipName.h"
#include "convrt/Files.h"
#include "convrt/Json.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <tuple>

namespace convrt {

const char *argumentRoleName(ArgumentRole role) {
  switch (role) {
  case ArgumentRole::Input:
    return "input";
  case ArgumentRole::Filter:
    return "filter";
  case ArgumentRole::Bias:
    return "bias";
  case ArgumentRole::Output:
    return "output";
  }
  return "?";
}

int Manifest::find(ArgumentRole role) const {
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].role == role)
      return static_cast<int>(i);
  return -1;
}

namespace {

std::string describeValue(const JsonValue &value) {
  if (value.is_string())
    return "string " + jsonQuote(value.get_ref<const std::string &>());
  if (value.is_primitive())
    return dumpJson(value);
  return value.type_name();
}

/// An integer the manifest may hold: JSON integers, and floats with an
/// integral value (2.0, as some JSON writers print them).
std::optional<int64_t> asInteger(const JsonValue &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>() <= uint64_t(INT64_MAX)
               ? std::optional<int64_t>(value.get<int64_t>())
               : std::nullopt;
  if (value.is_number_integer())
    return value.get<int64_t>();
  if (!value.is_number_float())
    return std::nullopt;
  double number = value.get<double>();
  if (!std::isfinite(number) || number != std::floor(number) ||
      std::fabs(number) >= 9.0e15)
    return std::nullopt;
  return static_cast<int64_t>(number);
}

/// Typed access to one JSON object of the manifest; errors read
/// "<source>: <path>.<key>: <what>".
class Fields {
public:
  Fields(const JsonValue &object, std::string path, const std::string &source)
      : object_(object), path_(std::move(path)), source_(source) {}

  std::string fieldPath(const std::string &key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  Error fail(const std::string &field, const std::string &what) const {
    return Error::failure(source_ + ": " + field + ": " + what);
  }

  Error checkKnown(std::initializer_list<const char *> known) const {
    for (const auto &member : object_.items()) {
      bool found = false;
      for (const char *key : known)
        found = found || member.key() == key;
      if (found)
        continue;
      std::string list;
      for (const char *key : known)
        list += (list.empty() ? "" : ", ") + std::string(key);
      return fail(fieldPath(member.key()),
                  "unknown field (expected one of: " + list + ")");
    }
    return Error::success();
  }

  Expected<const JsonValue *> get(const std::string &key, bool required) const {
    const JsonValue *value = findMember(object_, key);
    if (!value && required)
      return fail(fieldPath(key),
                  path_.empty() ? "missing"
                                : "missing from the " + path_ + " object");
    return value;
  }

  Expected<std::string> string(const std::string &key, bool required = true,
                               const std::string &fallback = "") const {
    CONVRT_ASSIGN_OR_RETURN(const JsonValue *value, get(key, required));
    if (!value)
      return fallback;
    if (!value->is_string() || value->get_ref<const std::string &>().empty())
      return fail(fieldPath(key),
                  "expected a non-empty string, got " + describeValue(*value));
    return value->get<std::string>();
  }

  static Expected<int64_t> toInteger(const Fields &fields,
                                     const std::string &field,
                                     const JsonValue &value, int64_t min) {
    std::optional<int64_t> integer = asInteger(value);
    std::string expected = min == 0   ? "a non-negative integer"
                           : min == 1 ? "a positive integer"
                                      : "an integer >= " + std::to_string(min);
    if (!integer || *integer < min)
      return fields.fail(field, "expected " + expected + ", got " +
                                    describeValue(value));
    return *integer;
  }

  Expected<int64_t>
  integer(const std::string &key, int64_t min,
          std::optional<int64_t> fallback = std::nullopt) const {
    CONVRT_ASSIGN_OR_RETURN(const JsonValue *value,
                            get(key, !fallback.has_value()));
    if (!value)
      return *fallback;
    return toInteger(*this, fieldPath(key), *value, min);
  }

  /// An array of `minCount`..`maxCount` integers >= min.
  Expected<std::vector<int64_t>>
  integers(const std::string &key, size_t minCount, size_t maxCount,
           int64_t min,
           std::optional<std::vector<int64_t>> fallback = std::nullopt) const {
    CONVRT_ASSIGN_OR_RETURN(const JsonValue *value,
                            get(key, !fallback.has_value()));
    if (!value)
      return *fallback;
    std::string count =
        minCount == maxCount
            ? std::to_string(minCount)
            : std::to_string(minCount) + " to " + std::to_string(maxCount);
    if (!value->is_array() || value->size() < minCount ||
        value->size() > maxCount)
      return fail(fieldPath(key),
                  "expected an array of " + count + " integers, got " +
                      (value->is_array()
                           ? "an array of " + std::to_string(value->size())
                           : describeValue(*value)));
    std::vector<int64_t> result;
    for (size_t i = 0; i < value->size(); ++i) {
      CONVRT_ASSIGN_OR_RETURN(
          int64_t element,
          toInteger(*this, fieldPath(key) + "[" + std::to_string(i) + "]",
                    (*value)[i], min));
      result.push_back(element);
    }
    return result;
  }

  Expected<Fields> object(const std::string &key) const {
    CONVRT_ASSIGN_OR_RETURN(const JsonValue *value, get(key, true));
    if (!value->is_object())
      return fail(fieldPath(key),
                  "expected an object, got " + describeValue(*value));
    return Fields(*value, fieldPath(key), source_);
  }

  const JsonValue &json() const { return object_; }
  const std::string &path() const { return path_; }
  const std::string &source() const { return source_; }

private:
  const JsonValue &object_;
  std::string path_;
  const std::string &source_;
};

/// Wraps a plain parse error (unknown dtype, ...) with the field's path.
template <typename T>
Expected<T> atField(const Fields &fields, const std::string &key,
                    Expected<T> parsed) {
  if (parsed.ok())
    return parsed;
  return fields.fail(fields.fieldPath(key), parsed.error().message());
}

Dim3 toDim3(const std::vector<int64_t> &dims) {
  Dim3 d;
  d.x = static_cast<unsigned>(dims[0]);
  d.y = dims.size() > 1 ? static_cast<unsigned>(dims[1]) : 1;
  d.z = dims.size() > 2 ? static_cast<unsigned>(dims[2]) : 1;
  return d;
}

Expected<KernelSpec> parseKernel(const Fields &root) {
  CONVRT_ASSIGN_OR_RETURN(Fields fields, root.object("kernel"));
  CONVRT_TRY(fields.checkKnown({"name", "binary", "ptx", "grid", "block",
                                "shared_memory_bytes", "chip"}));
  KernelSpec kernel;
  CONVRT_ASSIGN_OR_RETURN(kernel.name, fields.string("name"));
  CONVRT_ASSIGN_OR_RETURN(kernel.binary, fields.string("binary", false));
  CONVRT_ASSIGN_OR_RETURN(kernel.ptx, fields.string("ptx", false));
  if (kernel.binary.empty() && kernel.ptx.empty())
    return fields.fail(fields.fieldPath("binary"),
                       "missing (a kernel needs a binary, a ptx, or both)");
  // Launch dimensions must fit the driver's unsigned int parameters.
  CONVRT_ASSIGN_OR_RETURN(std::vector<int64_t> grid,
                          fields.integers("grid", 1, 3, 1));
  CONVRT_ASSIGN_OR_RETURN(std::vector<int64_t> block,
                          fields.integers("block", 1, 3, 1));
  for (auto [key, dims] :
       {std::pair<const char *, std::vector<int64_t> *>{"grid", &grid},
        {"block", &block}})
    for (size_t i = 0; i < dims->size(); ++i)
      if ((*dims)[i] > 0x7FFFFFFF)
        return fields.fail(fields.fieldPath(key) + "[" + std::to_string(i) +
                               "]",
                           "too large for a launch dimension");
  kernel.grid = toDim3(grid);
  kernel.block = toDim3(block);
  CONVRT_ASSIGN_OR_RETURN(int64_t smem,
                          fields.integer("shared_memory_bytes", 0, 0));
  if (smem > 0x7FFFFFFF)
    return fields.fail(fields.fieldPath("shared_memory_bytes"), "too large");
  kernel.sharedMemoryBytes = static_cast<unsigned>(smem);
  CONVRT_ASSIGN_OR_RETURN(kernel.chip, fields.string("chip", false));
  if (!kernel.chip.empty() && !parseChipName(kernel.chip))
    return fields.fail(fields.fieldPath("chip"),
                       "expected a chip name like \"sm_90\", got " +
                           jsonQuote(kernel.chip));
  return kernel;
}

Expected<ArgumentRole> parseRole(const std::string &name) {
  for (ArgumentRole role : {ArgumentRole::Input, ArgumentRole::Filter,
                            ArgumentRole::Bias, ArgumentRole::Output})
    if (name == argumentRoleName(role))
      return role;
  return Error::failure("unknown role \"" + name +
                        "\" (expected input, filter, bias or output)");
}

Expected<std::vector<ArgumentSpec>> parseArguments(const Fields &root) {
  CONVRT_ASSIGN_OR_RETURN(const JsonValue *list, root.get("arguments", true));
  if (!list->is_array() || list->empty())
    return root.fail("arguments", "expected a non-empty array of arguments");
  std::vector<ArgumentSpec> arguments;
  for (size_t i = 0; i < list->size(); ++i) {
    const JsonValue &element = (*list)[i];
    std::string path = "arguments[" + std::to_string(i) + "]";
    if (!element.is_object())
      return root.fail(path,
                       "expected an object, got " + describeValue(element));
    Fields fields(element, path, root.source());
    CONVRT_TRY(fields.checkKnown({"name", "role", "dtype", "shape"}));
    ArgumentSpec argument;
    CONVRT_ASSIGN_OR_RETURN(argument.name, fields.string("name"));
    CONVRT_ASSIGN_OR_RETURN(std::string role, fields.string("role"));
    CONVRT_ASSIGN_OR_RETURN(argument.role,
                            atField(fields, "role", parseRole(role)));
    CONVRT_ASSIGN_OR_RETURN(std::string dtype, fields.string("dtype"));
    CONVRT_ASSIGN_OR_RETURN(argument.dtype,
                            atField(fields, "dtype", parseDType(dtype)));
    if (argument.dtype == DType::TF32)
      return fields.fail(fields.fieldPath("dtype"),
                         "tf32 is a problem precision, not a buffer type "
                         "(store the tensor as f32)");
    CONVRT_ASSIGN_OR_RETURN(argument.shape, fields.integers("shape", 1, 8, 1));
    for (const ArgumentSpec &previous : arguments)
      if (previous.name == argument.name)
        return fields.fail(fields.fieldPath("name"),
                           "duplicate argument name " +
                               jsonQuote(argument.name));
    arguments.push_back(std::move(argument));
  }
  return arguments;
}

Expected<ConvProblem> parseProblem(const Fields &root) {
  CONVRT_ASSIGN_OR_RETURN(Fields fields, root.object("problem"));
  CONVRT_TRY(fields.checkKnown({"layout", "filter_layout", "n", "c", "h", "w",
                                "f", "kh", "kw", "stride", "dilation",
                                "padding", "groups", "dtype", "accumulate",
                                "zero_points"}));
  ConvProblem p;
  CONVRT_ASSIGN_OR_RETURN(std::string layout, fields.string("layout"));
  CONVRT_ASSIGN_OR_RETURN(p.layout,
                          atField(fields, "layout", parseLayout(layout)));
  CONVRT_ASSIGN_OR_RETURN(
      std::string filterLayout,
      fields.string("filter_layout", false,
                    filterLayoutName(defaultFilterLayout(p.layout))));
  CONVRT_ASSIGN_OR_RETURN(
      p.filterLayout,
      atField(fields, "filter_layout", parseFilterLayout(filterLayout)));
  for (auto [key, slot] : {std::pair<const char *, int64_t *>{"n", &p.n},
                           {"c", &p.c},
                           {"h", &p.h},
                           {"w", &p.w},
                           {"f", &p.f},
                           {"kh", &p.kh},
                           {"kw", &p.kw}}) {
    CONVRT_ASSIGN_OR_RETURN(*slot, fields.integer(key, 1));
  }
  CONVRT_ASSIGN_OR_RETURN(
      std::vector<int64_t> stride,
      fields.integers("stride", 2, 2, 1, std::vector<int64_t>{1, 1}));
  CONVRT_ASSIGN_OR_RETURN(
      std::vector<int64_t> dilation,
      fields.integers("dilation", 2, 2, 1, std::vector<int64_t>{1, 1}));
  CONVRT_ASSIGN_OR_RETURN(
      std::vector<int64_t> padding,
      fields.integers("padding", 4, 4, 0, std::vector<int64_t>{0, 0, 0, 0}));
  p.strideH = stride[0];
  p.strideW = stride[1];
  p.dilationH = dilation[0];
  p.dilationW = dilation[1];
  p.padTop = padding[0];
  p.padLeft = padding[1];
  p.padBottom = padding[2];
  p.padRight = padding[3];
  CONVRT_ASSIGN_OR_RETURN(p.groups, fields.integer("groups", 1, 1));
  CONVRT_ASSIGN_OR_RETURN(std::string dtype, fields.string("dtype"));
  CONVRT_ASSIGN_OR_RETURN(p.dtype, atField(fields, "dtype", parseDType(dtype)));
  CONVRT_ASSIGN_OR_RETURN(
      std::string accumulate,
      fields.string("accumulate", false, isInteger(p.dtype) ? "i32" : "f32"));
  CONVRT_ASSIGN_OR_RETURN(
      p.accumulate, atField(fields, "accumulate", parseDType(accumulate)));
  // An i8 problem is quantized: sum (x - zx)(w - zw) into i32, the padding
  // reading zx (torch's quantized convolution); zero points default to 0.
  // (validate() checks the range.)
  CONVRT_ASSIGN_OR_RETURN(
      std::vector<int64_t> zeroPoints,
      fields.integers("zero_points", 2, 2, INT32_MIN,
                      std::vector<int64_t>{0, 0}));
  p.inputZeroPoint = zeroPoints[0];
  p.filterZeroPoint = zeroPoints[1];
  Error invalid = p.validate();
  if (!invalid.ok())
    return fields.fail("problem", invalid.message());
  return p;
}

Error checkArgument(const Manifest &m, ArgumentRole role,
                    const std::vector<int64_t> &shape, bool required) {
  int count = 0;
  for (const ArgumentSpec &argument : m.arguments)
    count += argument.role == role;
  std::string roleName = argumentRoleName(role);
  if (count == 0 && required)
    return Error::failure("arguments: no argument has role \"" + roleName +
                          "\"");
  if (count > 1)
    return Error::failure("arguments: " + std::to_string(count) +
                          " arguments have role \"" + roleName +
                          "\" (at most one)");
  if (count == 0)
    return Error::success();
  int index = m.find(role);
  const ArgumentSpec &argument = m.arguments[index];
  std::string field =
      "arguments[" + std::to_string(index) + "] (" + argument.name + ")";
  if (argument.shape != shape)
    return Error::failure(field + ".shape: " + formatShape(argument.shape) +
                          " does not match the problem, which implies " +
                          formatShape(shape) + " for the " + roleName);
  DType expected = storageType(m.problem.dtype);
  bool dtypeFree = role == ArgumentRole::Output || role == ArgumentRole::Bias;
  if (!dtypeFree && argument.dtype != expected)
    return Error::failure(field + ".dtype: " + dtypeName(argument.dtype) +
                          " does not match problem.dtype " +
                          dtypeName(m.problem.dtype) + " (stored as " +
                          dtypeName(expected) + ")");
  // A quantized kernel writes i32; a float one a float type.
  if (role == ArgumentRole::Output &&
      (m.problem.isQuantized() ? argument.dtype != DType::I32
                               : isInteger(argument.dtype)))
    return Error::failure(field + ".dtype: " + dtypeName(argument.dtype) +
                          " does not match the output type " +
                          dtypeName(m.problem.outputType()));
  return Error::success();
}

} // namespace

Error validateManifest(const Manifest &m) {
  if (m.formatVersion != kManifestFormatVersion)
    return Error::failure("format_version: " + std::to_string(m.formatVersion) +
                          " is not supported (this runtime reads " +
                          std::to_string(kManifestFormatVersion) + ")");
  if (m.kernel.name.empty())
    return Error::failure("kernel.name: missing");
  if (m.kernel.binary.empty() && m.kernel.ptx.empty())
    return Error::failure("kernel.binary: missing (a kernel needs a binary, "
                          "a ptx, or both)");
  CONVRT_TRY(m.problem.validate().withContext("problem"));
  const ConvProblem &p = m.problem;
  CONVRT_TRY(checkArgument(m, ArgumentRole::Input, p.inputShape(), true));
  CONVRT_TRY(checkArgument(m, ArgumentRole::Filter, p.filterShape(), true));
  CONVRT_TRY(checkArgument(m, ArgumentRole::Bias, p.biasShape(), false));
  CONVRT_TRY(checkArgument(m, ArgumentRole::Output, p.outputShape(), true));
  return Error::success();
}

Expected<Manifest> parseManifest(std::string_view text,
                                 const std::string &source) {
  Expected<JsonValue> json = parseJson(text);
  if (!json.ok())
    return Error::failure(source + ": invalid JSON: " + json.error().message());
  if (!json->is_object())
    return Error::failure(source +
                          ": expected a JSON object at the top level, got " +
                          describeValue(*json));
  Fields root(*json, "", source);
  CONVRT_TRY(root.checkKnown(
      {"format_version", "generator", "kernel", "arguments", "problem"}));

  Manifest manifest;
  CONVRT_ASSIGN_OR_RETURN(int64_t version, root.integer("format_version", 1));
  if (version != kManifestFormatVersion)
    return root.fail("format_version",
                     "version " + std::to_string(version) +
                         " is not supported (this runtime reads " +
                         std::to_string(kManifestFormatVersion) + ")");
  manifest.formatVersion = static_cast<int>(version);
  if (const JsonValue *generator = findMember(*json, "generator"))
    manifest.generator = generator->is_string() ? generator->get<std::string>()
                                                : dumpJson(*generator);
  CONVRT_ASSIGN_OR_RETURN(manifest.kernel, parseKernel(root));
  CONVRT_ASSIGN_OR_RETURN(manifest.arguments, parseArguments(root));
  CONVRT_ASSIGN_OR_RETURN(manifest.problem, parseProblem(root));
  manifest.problem.hasBias = manifest.find(ArgumentRole::Bias) >= 0;
  Error invalid = validateManifest(manifest);
  if (!invalid.ok())
    return Error::failure(source + ": " + invalid.message());
  return manifest;
}

JsonValue manifestToJson(const Manifest &m) {
  auto dims = [](const Dim3 &d) { return JsonValue{d.x, d.y, d.z}; };
  JsonValue kernel = JsonValue::object();
  kernel["name"] = m.kernel.name;
  if (!m.kernel.binary.empty())
    kernel["binary"] = m.kernel.binary;
  if (!m.kernel.ptx.empty())
    kernel["ptx"] = m.kernel.ptx;
  kernel["grid"] = dims(m.kernel.grid);
  kernel["block"] = dims(m.kernel.block);
  kernel["shared_memory_bytes"] = m.kernel.sharedMemoryBytes;
  if (!m.kernel.chip.empty())
    kernel["chip"] = m.kernel.chip;

  JsonValue arguments = JsonValue::array();
  for (const ArgumentSpec &argument : m.arguments)
    arguments.push_back({{"name", argument.name},
                         {"role", argumentRoleName(argument.role)},
                         {"dtype", dtypeName(argument.dtype)},
                         {"shape", argument.shape}});

  const ConvProblem &p = m.problem;
  JsonValue problem = {
      {"layout", layoutName(p.layout)},
      {"filter_layout", filterLayoutName(p.filterLayout)},
      {"n", p.n},
      {"c", p.c},
      {"h", p.h},
      {"w", p.w},
      {"f", p.f},
      {"kh", p.kh},
      {"kw", p.kw},
      {"stride", {p.strideH, p.strideW}},
      {"dilation", {p.dilationH, p.dilationW}},
      {"padding", {p.padTop, p.padLeft, p.padBottom, p.padRight}},
      {"groups", p.groups},
      {"dtype", dtypeName(p.dtype)},
      {"accumulate", dtypeName(p.accumulate)}};
  if (p.isQuantized())
    problem["zero_points"] = {p.inputZeroPoint, p.filterZeroPoint};

  JsonValue root = JsonValue::object();
  root["format_version"] = m.formatVersion;
  if (!m.generator.empty())
    root["generator"] = m.generator;
  root["kernel"] = std::move(kernel);
  root["arguments"] = std::move(arguments);
  root["problem"] = std::move(problem);
  return root;
}

Expected<Bundle> loadBundle(const std::string &directory) {
  std::string manifestPath = joinPath(directory, kManifestFileName);
  CONVRT_ASSIGN_OR_RETURN(std::string text, readFile(manifestPath));
  Bundle bundle;
  bundle.directory = directory;
  CONVRT_ASSIGN_OR_RETURN(bundle.manifest, parseManifest(text, manifestPath));
  const KernelSpec &kernel = bundle.manifest.kernel;
  for (auto [field, name, path] :
       {std::tuple<const char *, const std::string *, std::string *>{
            "kernel.binary", &kernel.binary, &bundle.binaryPath},
        {"kernel.ptx", &kernel.ptx, &bundle.ptxPath}}) {
    if (name->empty())
      continue;
    *path = joinPath(directory, *name);
    if (!isRegularFile(*path))
      return Error::failure(manifestPath + ": " + field + " names " + *name +
                            ", which is not a file in the bundle (" + *path +
                            ")");
  }
  return bundle;
}

static Error writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    return Error::failure("cannot write " + path);
  return Error::success();
}

Error writeBundle(const std::string &directory, const Manifest &manifest,
                  const std::string &binary, const std::string &ptx) {
  CONVRT_TRY(
      validateManifest(manifest).withContext("refusing to write bundle"));
  if (!manifest.kernel.binary.empty())
    CONVRT_TRY(writeFile(joinPath(directory, manifest.kernel.binary), binary));
  if (!manifest.kernel.ptx.empty())
    CONVRT_TRY(writeFile(joinPath(directory, manifest.kernel.ptx), ptx));
  return writeFile(joinPath(directory, kManifestFileName),
                   dumpJson(manifestToJson(manifest), 2) + "\n");
}

} // namespace convrt
