//===- JsonFields.h - Strict, path-naming reads of JSON objects -*- C++ -*-===//
//
// Internal to convrt_host: the typed field access that manifests and tensor
// maps share. Unknown fields are errors, and every error names the field's
// path ("manifest.json: kernel.grid[1]: expected a positive integer, got
// -2"), so a typo in a generated file never passes silently.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_LIB_JSONFIELDS_H
#define CONVRT_LIB_JSONFIELDS_H

#include "convrt/Error.h"
#include "convrt/Json.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace convrt::detail {

inline std::string describeValue(const JsonValue &value) {
  if (value.is_string())
    return "string " + jsonQuote(value.get_ref<const std::string &>());
  if (value.is_primitive())
    return dumpJson(value);
  return value.type_name();
}

/// An integer the manifest may hold: JSON integers, and floats with an
/// integral value (2.0, as some JSON writers print them).
inline std::optional<int64_t> asInteger(const JsonValue &value) {
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

/// Typed access to one JSON object; errors read "<source>: <path>.<key>:
/// <what>" ("<path>.<key>: <what>" for an empty source, which a caller
/// prefixes itself). `source` must outlive the Fields.
class Fields {
public:
  Fields(const JsonValue &object, std::string path, const std::string &source)
      : object_(object), path_(std::move(path)), source_(source) {}

  std::string fieldPath(const std::string &key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  Error fail(const std::string &field, const std::string &what) const {
    return Error::failure((source_.empty() ? "" : source_ + ": ") + field +
                          ": " + what);
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

} // namespace convrt::detail

#endif // CONVRT_LIB_JSONFIELDS_H
