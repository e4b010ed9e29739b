//===- Json.h - A small JSON value, parser and printer ----------*- C++ -*-===//
//
// Enough JSON for bundle manifests and the tools' reports, with no third-party
// dependency: RFC 8259 syntax, objects keep their key order (stable output),
// duplicate keys are rejected, and every value remembers the line and column
// where it was parsed so that semantic errors can point at the text.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_JSON_H
#define CONVRT_JSON_H

#include "convrt/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace convrt {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;
  JsonValue(std::nullptr_t) {}
  JsonValue(bool value) : kind_(Kind::Bool), bool_(value) {}
  JsonValue(double value) : kind_(Kind::Number), number_(value) {}
  JsonValue(int value) : JsonValue(static_cast<double>(value)) {}
  JsonValue(int64_t value) : JsonValue(static_cast<double>(value)) {}
  JsonValue(uint64_t value) : JsonValue(static_cast<double>(value)) {}
  JsonValue(const char *value) : kind_(Kind::String), string_(value) {}
  JsonValue(std::string value)
      : kind_(Kind::String), string_(std::move(value)) {}
  static JsonValue array() { return JsonValue(Kind::Array); }
  static JsonValue object() { return JsonValue(Kind::Object); }

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool asBool() const { return bool_; }
  double asNumber() const { return number_; }
  const std::string &asString() const { return string_; }
  const std::vector<JsonValue> &elements() const { return elements_; }
  const std::vector<Member> &members() const { return members_; }

  /// The member `key` of an object, or null if absent (or not an object).
  const JsonValue *find(std::string_view key) const;
  /// Adds or replaces a member (objects) and returns *this for chaining.
  JsonValue &set(std::string key, JsonValue value);
  /// Appends an element (arrays).
  JsonValue &push(JsonValue value);

  /// Where the value started in the parsed text (1-based; 0 if built).
  int line() const { return line_; }
  int column() const { return column_; }

  /// Compact with indent < 0, else pretty-printed with `indent` spaces.
  /// Non-finite numbers print as null (JSON has no NaN).
  std::string dump(int indent = -1) const;

  /// "string", "number", ... for error messages.
  static const char *kindName(Kind kind);

private:
  friend class JsonParser;
  explicit JsonValue(Kind kind) : kind_(kind) {}
  void dumpTo(std::string &out, int indent, int depth) const;

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> elements_;
  std::vector<Member> members_;
  int line_ = 0;
  int column_ = 0;
};

/// Parses one JSON document; errors read "line L, column C: <what>".
Expected<JsonValue> parseJson(std::string_view text);

/// The JSON string literal for `text`, quotes included.
std::string jsonQuote(std::string_view text);

} // namespace convrt

#endif // CONVRT_JSON_H
