//===- Json.cpp - JSON through nlohmann-json, without exceptions ----------===//

#include "convrt/Json.h"

#include <vector>

namespace convrt {
namespace {

constexpr size_t kMaxDepth = 128;

/// Builds the document from nlohmann's SAX events. Unlike json::parse() it
/// reports errors as values (parse() throws, or returns a bare "discarded"
/// value without saying why), rejects duplicate keys, and bounds the depth
/// (the printers recurse).
class DocumentBuilder {
public:
  using number_integer_t = JsonValue::number_integer_t;
  using number_unsigned_t = JsonValue::number_unsigned_t;
  using number_float_t = JsonValue::number_float_t;
  using string_t = JsonValue::string_t;
  using binary_t = JsonValue::binary_t;

  bool null() { return add(nullptr) != nullptr; }
  bool boolean(bool value) { return add(value) != nullptr; }
  bool number_integer(number_integer_t value) { return add(value) != nullptr; }
  bool number_unsigned(number_unsigned_t value) {
    return add(value) != nullptr;
  }
  bool number_float(number_float_t value, const string_t &) {
    return add(value) != nullptr;
  }
  bool string(string_t &value) { return add(std::move(value)) != nullptr; }
  bool binary(binary_t &) { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return open(JsonValue::object()); }
  bool start_array(std::size_t) { return open(JsonValue::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t &name) {
    if (open_.back().value->contains(name))
      return fail("duplicate key " + jsonQuote(childPath(name)));
    key_ = std::move(name);
    return true;
  }

  bool parse_error(std::size_t byte, const std::string &,
                   const nlohmann::detail::exception &error) {
    return fail(describeParseError(error.what(), byte));
  }

  JsonValue &root() { return root_; }
  const std::string &error() const { return error_; }

private:
  struct Open {
    JsonValue *value;
    std::string path; ///< "kernel.grid", "arguments[1]"; "" for the root.
  };

  /// "[json.exception.parse_error.101] parse error at line 1, column 12:
  /// syntax error ..." -> "parse error at line 1, column 12 (byte 12):
  /// syntax error ...".
  static std::string describeParseError(std::string what, size_t byte) {
    size_t tag = what.find("] ");
    if (what.compare(0, 1, "[") == 0 && tag != std::string::npos)
      what.erase(0, tag + 2);
    std::string where = " (byte " + std::to_string(byte) + ")";
    size_t colon = what.find(": ");
    if (colon == std::string::npos)
      return what + where;
    return what.insert(colon, where);
  }

  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  /// The path of the value about to be added under the innermost container.
  std::string childPath(const std::string &name) const {
    const Open &parent = open_.back();
    if (parent.value->is_array())
      return parent.path + "[" + std::to_string(parent.value->size()) + "]";
    return parent.path.empty() ? name : parent.path + "." + name;
  }

  /// Adds `value` where the parser is; returns where it now lives. Only the
  /// last element of each open container is ever pointed to, so later
  /// insertions (into that innermost container) move nothing still in use.
  JsonValue *add(JsonValue value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    JsonValue &parent = *open_.back().value;
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    JsonValue &slot = parent[key_];
    slot = std::move(value);
    return &slot;
  }

  bool open(JsonValue container) {
    if (open_.size() >= kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    std::string path = open_.empty() ? "" : childPath(key_);
    open_.push_back({add(std::move(container)), std::move(path)});
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  JsonValue root_;
  std::vector<Open> open_;
  std::string key_;
  std::string error_;
};

bool isContainer(const JsonValue &value) {
  return value.is_object() || value.is_array();
}

void dumpPretty(const JsonValue &value, int indent, int depth,
                std::string &out);

void newline(int indent, int depth, std::string &out) {
  out += '\n';
  out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
}

void dumpArray(const JsonValue &array, int indent, int depth,
               std::string &out) {
  // Arrays of scalars stay on one line: shapes and launch dimensions read
  // better so (and tests grep for "grid": [13, 2, 1]).
  bool flat = true;
  for (const JsonValue &element : array)
    flat = flat && !isContainer(element);
  out += '[';
  size_t i = 0;
  for (const JsonValue &element : array) {
    if (i++)
      out += flat ? ", " : ",";
    if (!flat)
      newline(indent, depth + 1, out);
    dumpPretty(element, indent, depth + 1, out);
  }
  if (!flat && !array.empty())
    newline(indent, depth, out);
  out += ']';
}

void dumpObject(const JsonValue &object, int indent, int depth,
                std::string &out) {
  out += '{';
  size_t i = 0;
  for (const auto &member : object.items()) {
    if (i++)
      out += ',';
    newline(indent, depth + 1, out);
    out += jsonQuote(member.key()) + ": ";
    dumpPretty(member.value(), indent, depth + 1, out);
  }
  if (!object.empty())
    newline(indent, depth, out);
  out += '}';
}

void dumpPretty(const JsonValue &value, int indent, int depth,
                std::string &out) {
  if (value.is_array())
    return dumpArray(value, indent, depth, out);
  if (value.is_object())
    return dumpObject(value, indent, depth, out);
  out += dumpJson(value);
}

} // namespace

Expected<JsonValue> parseJson(std::string_view text) {
  DocumentBuilder builder;
  if (!JsonValue::sax_parse(text.begin(), text.end(), &builder))
    return Error::failure(builder.error().empty() ? "invalid JSON"
                                                  : builder.error());
  return std::move(builder.root());
}

std::string dumpJson(const JsonValue &value, int indent) {
  if (indent >= 0 && isContainer(value)) {
    std::string out;
    dumpPretty(value, indent, 0, out);
    return out;
  }
  return value.dump(-1, ' ', /*ensure_ascii=*/false,
                    nlohmann::detail::error_handler_t::replace);
}

std::string jsonQuote(std::string_view text) {
  return dumpJson(JsonValue(std::string(text)));
}

const JsonValue *findMember(const JsonValue &object, std::string_view key) {
  if (!object.is_object())
    return nullptr;
  auto found = object.find(std::string(key));
  return found == object.end() ? nullptr : &*found;
}

} // namespace convrt
