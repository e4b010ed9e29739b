//===- Manifest.cpp - AOT bundles: manifest.json + kernel -----------------===//

#include "convrt/Manifest.h"

#include "JsonFields.h"

#include "convrt/ChipName.h"
#include "convrt/Files.h"
#include "convrt/Json.h"

#include <cstdint>
#include <fstream>
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
  case ArgumentRole::Residual:
    return "residual";
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

int Manifest::findArgument(const std::string &name) const {
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].name == name)
      return static_cast<int>(i);
  return -1;
}

namespace {

using namespace detail;

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
                            ArgumentRole::Bias, ArgumentRole::Residual,
                            ArgumentRole::Output})
    if (name == argumentRoleName(role))
      return role;
  return Error::failure("unknown role \"" + name +
                        "\" (expected input, filter, bias, residual or "
                        "output)");
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

/// "tensor_maps": optional (bundles from before TMA kernels have none).
Expected<std::vector<TensorMapSpec>> parseTensorMaps(const Fields &root) {
  CONVRT_ASSIGN_OR_RETURN(const JsonValue *list,
                          root.get("tensor_maps", false));
  std::vector<TensorMapSpec> maps;
  if (!list)
    return maps;
  if (!list->is_array())
    return root.fail("tensor_maps", "expected an array of tensor maps, got " +
                                        describeValue(*list));
  for (size_t i = 0; i < list->size(); ++i) {
    Expected<TensorMapSpec> map =
        tensorMapFromJson((*list)[i], "tensor_maps[" + std::to_string(i) + "]");
    if (!map.ok())
      return Error::failure(root.source() + ": " + map.error().message());
    maps.push_back(std::move(*map));
  }
  return maps;
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
  // The residual is added to the output: it is stored as the output is.
  if (role == ArgumentRole::Residual) {
    int output = m.find(ArgumentRole::Output);
    if (output >= 0 && argument.dtype != m.arguments[output].dtype)
      return Error::failure(field + ".dtype: " + dtypeName(argument.dtype) +
                            " does not match the output's " +
                            dtypeName(m.arguments[output].dtype));
    return Error::success();
  }
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

/// The map must describe one of the kernel's buffers as it is: same element
/// type, and nothing the TMA could read beyond its end.
Error checkTensorMaps(const Manifest &m) {
  for (size_t i = 0; i < m.tensorMaps.size(); ++i) {
    const TensorMapSpec &map = m.tensorMaps[i];
    std::string where =
        "tensor_maps[" + std::to_string(i) + "] (" + map.name + ")";
    CONVRT_TRY(validateTensorMapAt(map, where));
    for (size_t j = 0; j < i; ++j)
      if (m.tensorMaps[j].name == map.name)
        return Error::failure(where + ".name: duplicate tensor map name " +
                              jsonQuote(map.name));
    int index = m.findArgument(map.argument);
    if (index < 0) {
      std::string names;
      for (const ArgumentSpec &argument : m.arguments)
        names += (names.empty() ? "" : ", ") + argument.name;
      return Error::failure(where + ".argument: no argument is named " +
                            jsonQuote(map.argument) + " (the arguments are " +
                            names + ")");
    }
    const ArgumentSpec &argument = m.arguments[index];
    if (map.dtype != argument.dtype)
      return Error::failure(where + ".dtype: " + dtypeName(map.dtype) +
                            " does not match argument " +
                            jsonQuote(argument.name) + ", which is " +
                            dtypeName(argument.dtype));
    uint64_t bytes = 1;
    for (int64_t dim : argument.shape)
      bytes *= uint64_t(dim);
    bytes *= dtypeSize(argument.dtype);
    if (map.extentBytes() > bytes)
      return Error::failure(
          where + ".dims: the map spans " + std::to_string(map.extentBytes()) +
          " bytes, more than argument " + jsonQuote(argument.name) + "'s " +
          std::to_string(bytes) + " (" + formatShape(argument.shape) + " " +
          dtypeName(argument.dtype) + ")");
  }
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
  CONVRT_TRY(
      checkArgument(m, ArgumentRole::Residual, p.outputShape(), false));
  return checkTensorMaps(m);
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
  CONVRT_TRY(root.checkKnown({"format_version", "generator", "kernel",
                              "arguments", "tensor_maps", "problem"}));

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
  CONVRT_ASSIGN_OR_RETURN(manifest.tensorMaps, parseTensorMaps(root));
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
  // Written only when there are maps: a pointer-only bundle reads as it did
  // before tensor maps existed.
  if (!m.tensorMaps.empty()) {
    JsonValue maps = JsonValue::array();
    for (const TensorMapSpec &map : m.tensorMaps)
      maps.push_back(tensorMapToJson(map));
    root["tensor_maps"] = std::move(maps);
  }
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
