//===- Manifest.cpp - AOT bundles: manifest.json + kernel -----------------===//

#include "convrt/Manifest.h"

#include "convrt/Files.h"

#include <cmath>
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

std::string where(const JsonValue &value) {
  if (value.line() == 0)
    return "";
  return " (line " + std::to_string(value.line()) + ", column " +
         std::to_string(value.column()) + ")";
}

std::string describeValue(const JsonValue &value) {
  if (value.isString())
    return "string " + jsonQuote(value.asString());
  if (value.isNumber() || value.isBool() || value.isNull())
    return value.dump();
  return JsonValue::kindName(value.kind());
}

/// Typed access to one JSON object of the manifest; errors read
/// "<source>: <path>.<key>: <what> (line L, column C)".
class Fields {
public:
  Fields(const JsonValue &object, std::string path, const std::string &source)
      : object_(object), path_(std::move(path)), source_(source) {}

  std::string fieldPath(const std::string &key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  Error fail(const std::string &field, const std::string &what,
             const JsonValue &at) const {
    return Error::failure(source_ + ": " + field + ": " + what + where(at));
  }

  Error checkKnown(std::initializer_list<const char *> known) const {
    for (const JsonValue::Member &member : object_.members()) {
      bool found = false;
      for (const char *key : known)
        found = found || member.first == key;
      if (!found) {
        std::string list;
        for (const char *key : known)
          list += (list.empty() ? "" : ", ") + std::string(key);
        return fail(fieldPath(member.first),
                    "unknown field (expected one of: " + list + ")",
                    member.second);
      }
    }
    return Error::success();
  }

  Expected<const JsonValue *> get(const std::string &key, bool required) const {
    const JsonValue *value = object_.find(key);
    if (!value && required)
      return fail(fieldPath(key),
                  path_.empty() ? "missing"
                                : "missing from the " + path_ + " object",
                  object_);
    return value;
  }

  Expected<std::string> string(const std::string &key, bool required = true,
                               const std::string &fallback = "") const {
    CONVRT_ASSIGN_OR_RETURN(const JsonValue *value, get(key, required));
    if (!value)
      return fallback;
    if (!value->isString() || value->asString().empty())
      return fail(fieldPath(key),
                  "expected a non-empty string, got " + describeValue(*value),
                  *value);
    return value->asString();
  }

  static Expected<int64_t> toInteger(const Fields &fields,
                                     const std::string &field,
                                     const JsonValue &value, int64_t min) {
    bool integral = value.isNumber() && std::isfinite(value.asNumber()) &&
                    value.asNumber() == std::floor(value.asNumber()) &&
                    std::fabs(value.asNumber()) < 9.0e15;
    std::string expected = min == 0   ? "a non-negative integer"
                           : min == 1 ? "a positive integer"
                                      : "an integer >= " + std::to_string(min);
    if (!integral || value.asNumber() < static_cast<double>(min))
      return fields.fail(
          field, "expected " + expected + ", got " + describeValue(value),
          value);
    return static_cast<int64_t>(value.asNumber());
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
    if (!value->isArray() || value->elements().size() < minCount ||
        value->elements().size() > maxCount)
      return fail(
          fieldPath(key),
          "expected an array of " + count + " integers, got " +
              (value->isArray()
                   ? "an array of " + std::to_string(value->elements().size())
                   : describeValue(*value)),
          *value);
    std::vector<int64_t> result;
    for (size_t i = 0; i < value->elements().size(); ++i) {
      CONVRT_ASSIGN_OR_RETURN(
          int64_t element,
          toInteger(*this, fieldPath(key) + "[" + std::to_string(i) + "]",
                    value->elements()[i], min));
      result.push_back(element);
    }
    return result;
  }

  Expected<Fields> object(const std::string &key) const {
    CONVRT_ASSIGN_OR_RETURN(const JsonValue *value, get(key, true));
    if (!value->isObject())
      return fail(fieldPath(key),
                  "expected an object, got " + describeValue(*value), *value);
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

/// Wraps a plain parse error (unknown dtype, ...) with the field and line.
template <typename T>
Expected<T> atField(const Fields &fields, const std::string &key,
                    Expected<T> parsed) {
  if (parsed.ok())
    return parsed;
  const JsonValue *value = fields.json().find(key);
  return fields.fail(fields.fieldPath(key), parsed.error().message(),
                     value ? *value : fields.json());
}

Dim3 toDim3(const std::vector<int64_t> &dims) {
  Dim3 d;
  d.x = static_cast<unsigned>(dims[0]);
  d.y = dims.size() > 1 ? static_cast<unsigned>(dims[1]) : 1;
  d.z = dims.size() > 2 ? static_cast<unsigned>(dims[2]) : 1;
  return d;
}

bool isChipName(const std::string &chip) {
  // sm_<digits>[a-z]: sm_90, sm_90a, sm_100f.
  if (chip.size() < 4 || chip.compare(0, 3, "sm_") != 0)
    return false;
  size_t i = 3;
  while (i < chip.size() && chip[i] >= '0' && chip[i] <= '9')
    ++i;
  if (i == 3)
    return false;
  return i == chip.size() ||
         (i + 1 == chip.size() && chip[i] >= 'a' && chip[i] <= 'z');
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
                       "missing (a kernel needs a binary, a ptx, or both)",
                       fields.json());
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
        return fields.fail(
            fields.fieldPath(key) + "[" + std::to_string(i) + "]",
            "too large for a launch dimension", *fields.json().find(key));
  kernel.grid = toDim3(grid);
  kernel.block = toDim3(block);
  CONVRT_ASSIGN_OR_RETURN(int64_t smem,
                          fields.integer("shared_memory_bytes", 0, 0));
  if (smem > 0x7FFFFFFF)
    return fields.fail(fields.fieldPath("shared_memory_bytes"), "too large",
                       *fields.json().find("shared_memory_bytes"));
  kernel.sharedMemoryBytes = static_cast<unsigned>(smem);
  CONVRT_ASSIGN_OR_RETURN(kernel.chip, fields.string("chip", false));
  if (!kernel.chip.empty() && !isChipName(kernel.chip))
    return fields.fail(fields.fieldPath("chip"),
                       "expected a chip name like \"sm_90\", got " +
                           jsonQuote(kernel.chip),
                       *fields.json().find("chip"));
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
  if (!list->isArray() || list->elements().empty())
    return root.fail("arguments", "expected a non-empty array of arguments",
                     *list);
  std::vector<ArgumentSpec> arguments;
  for (size_t i = 0; i < list->elements().size(); ++i) {
    const JsonValue &element = list->elements()[i];
    std::string path = "arguments[" + std::to_string(i) + "]";
    if (!element.isObject())
      return root.fail(
          path, "expected an object, got " + describeValue(element), element);
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
                         "(store the tensor as f32)",
                         *element.find("dtype"));
    CONVRT_ASSIGN_OR_RETURN(argument.shape, fields.integers("shape", 1, 8, 1));
    for (const ArgumentSpec &previous : arguments)
      if (previous.name == argument.name)
        return fields.fail(fields.fieldPath("name"),
                           "duplicate argument name " +
                               jsonQuote(argument.name),
                           *element.find("name"));
    arguments.push_back(std::move(argument));
  }
  return arguments;
}

Expected<ConvProblem> parseProblem(const Fields &root) {
  CONVRT_ASSIGN_OR_RETURN(Fields fields, root.object("problem"));
  CONVRT_TRY(fields.checkKnown({"layout", "filter_layout", "n", "c", "h", "w",
                                "f", "kh", "kw", "stride", "dilation",
                                "padding", "groups", "dtype", "accumulate"}));
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
  CONVRT_ASSIGN_OR_RETURN(std::string accumulate,
                          fields.string("accumulate", false, "f32"));
  CONVRT_ASSIGN_OR_RETURN(
      p.accumulate, atField(fields, "accumulate", parseDType(accumulate)));
  Error invalid = p.validate();
  if (!invalid.ok())
    return fields.fail("problem", invalid.message(), fields.json());
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
  if (!json->isObject())
    return Error::failure(source + ": expected a JSON object at the top level" +
                          where(*json));
  Fields root(*json, "", source);
  CONVRT_TRY(root.checkKnown(
      {"format_version", "generator", "kernel", "arguments", "problem"}));

  Manifest manifest;
  CONVRT_ASSIGN_OR_RETURN(int64_t version, root.integer("format_version", 1));
  if (version != kManifestFormatVersion)
    return root.fail("format_version",
                     "version " + std::to_string(version) +
                         " is not supported (this runtime reads " +
                         std::to_string(kManifestFormatVersion) + ")",
                     *json->find("format_version"));
  manifest.formatVersion = static_cast<int>(version);
  if (const JsonValue *generator = json->find("generator"))
    manifest.generator =
        generator->isString() ? generator->asString() : generator->dump();
  CONVRT_ASSIGN_OR_RETURN(manifest.kernel, parseKernel(root));
  CONVRT_ASSIGN_OR_RETURN(manifest.arguments, parseArguments(root));
  CONVRT_ASSIGN_OR_RETURN(manifest.problem, parseProblem(root));
  manifest.problem.hasBias = manifest.find(ArgumentRole::Bias) >= 0;
  Error invalid = validateManifest(manifest);
  if (!invalid.ok())
    return Error::failure(source + ": " + invalid.message());
  return manifest;
}

static JsonValue intArray(std::initializer_list<int64_t> values) {
  JsonValue array = JsonValue::array();
  for (int64_t value : values)
    array.push(value);
  return array;
}

JsonValue manifestToJson(const Manifest &m) {
  JsonValue kernel = JsonValue::object();
  kernel.set("name", m.kernel.name);
  if (!m.kernel.binary.empty())
    kernel.set("binary", m.kernel.binary);
  if (!m.kernel.ptx.empty())
    kernel.set("ptx", m.kernel.ptx);
  kernel.set("grid",
             intArray({m.kernel.grid.x, m.kernel.grid.y, m.kernel.grid.z}));
  kernel.set("block",
             intArray({m.kernel.block.x, m.kernel.block.y, m.kernel.block.z}));
  kernel.set("shared_memory_bytes",
             static_cast<int64_t>(m.kernel.sharedMemoryBytes));
  if (!m.kernel.chip.empty())
    kernel.set("chip", m.kernel.chip);

  JsonValue arguments = JsonValue::array();
  for (const ArgumentSpec &argument : m.arguments) {
    JsonValue shape = JsonValue::array();
    for (int64_t dim : argument.shape)
      shape.push(dim);
    arguments.push(JsonValue::object()
                       .set("name", argument.name)
                       .set("role", argumentRoleName(argument.role))
                       .set("dtype", dtypeName(argument.dtype))
                       .set("shape", std::move(shape)));
  }

  const ConvProblem &p = m.problem;
  JsonValue problem = JsonValue::object();
  problem.set("layout", layoutName(p.layout))
      .set("filter_layout", filterLayoutName(p.filterLayout))
      .set("n", p.n)
      .set("c", p.c)
      .set("h", p.h)
      .set("w", p.w)
      .set("f", p.f)
      .set("kh", p.kh)
      .set("kw", p.kw)
      .set("stride", intArray({p.strideH, p.strideW}))
      .set("dilation", intArray({p.dilationH, p.dilationW}))
      .set("padding", intArray({p.padTop, p.padLeft, p.padBottom, p.padRight}))
      .set("groups", p.groups)
      .set("dtype", dtypeName(p.dtype))
      .set("accumulate", dtypeName(p.accumulate));

  JsonValue root = JsonValue::object();
  root.set("format_version", m.formatVersion);
  if (!m.generator.empty())
    root.set("generator", m.generator);
  root.set("kernel", std::move(kernel))
      .set("arguments", std::move(arguments))
      .set("problem", std::move(problem));
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
                   manifestToJson(manifest).dump(2) + "\n");
}

} // namespace convrt
