//===- Json.cpp - A small JSON value, parser and printer ------------------===//

#include "convrt/Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace convrt {

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const Member &member : members_)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

JsonValue &JsonValue::set(std::string key, JsonValue value) {
  kind_ = Kind::Object;
  for (Member &member : members_)
    if (member.first == key) {
      member.second = std::move(value);
      return *this;
    }
  members_.emplace_back(std::move(key), std::move(value));
  return *this;
}

JsonValue &JsonValue::push(JsonValue value) {
  kind_ = Kind::Array;
  elements_.push_back(std::move(value));
  return *this;
}

const char *JsonValue::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "boolean";
  case Kind::Number:
    return "number";
  case Kind::String:
    return "string";
  case Kind::Array:
    return "array";
  case Kind::Object:
    return "object";
  }
  return "value";
}

std::string jsonQuote(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char escape[8];
        std::snprintf(escape, sizeof(escape), "\\u%04x", c);
        out += escape;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

static std::string formatNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  // Integers print exactly; other values with enough digits to round-trip
  // a float and to show small errors (1.2e-07).
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    std::snprintf(text, sizeof(text), "%.0f", value);
  else
    std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

void JsonValue::dumpTo(std::string &out, int indent, int depth) const {
  auto newline = [&](int level) {
    if (indent < 0)
      return;
    out += '\n';
    out.append(static_cast<size_t>(indent * level), ' ');
  };
  switch (kind_) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
    out += bool_ ? "true" : "false";
    return;
  case Kind::Number:
    out += formatNumber(number_);
    return;
  case Kind::String:
    out += jsonQuote(string_);
    return;
  case Kind::Array: {
    // Arrays of scalars stay on one line: shapes and dims read better so.
    bool flat = true;
    for (const JsonValue &element : elements_)
      flat = flat && !element.isArray() && !element.isObject();
    out += '[';
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (i)
        out += (flat && indent >= 0) ? ", " : ",";
      if (!flat)
        newline(depth + 1);
      elements_[i].dumpTo(out, indent, depth + 1);
    }
    if (!flat && !elements_.empty())
      newline(depth);
    out += ']';
    return;
  }
  case Kind::Object:
    out += '{';
    for (size_t i = 0; i < members_.size(); ++i) {
      if (i)
        out += ',';
      newline(depth + 1);
      out += jsonQuote(members_[i].first);
      out += indent >= 0 ? ": " : ":";
      members_[i].second.dumpTo(out, indent, depth + 1);
    }
    if (!members_.empty())
      newline(depth);
    out += '}';
    return;
  }
}

std::string JsonValue::dump(int indent) const {
  std::string out;
  dumpTo(out, indent, 0);
  return out;
}

/// Recursive descent over the text, tracking line and column.
class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Expected<JsonValue> parseDocument() {
    JsonValue value;
    CONVRT_TRY(parseValue(value, 0));
    skipWhitespace();
    if (pos_ != text_.size())
      return fail("unexpected text after the JSON value");
    return value;
  }

private:
  static constexpr int kMaxDepth = 128;

  Error fail(const std::string &what) const {
    return Error::failure("line " + std::to_string(line_) + ", column " +
                          std::to_string(column_) + ": " + what);
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  void skipWhitespace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      advance();
  }

  std::string describeNext() const {
    if (atEnd())
      return "end of input";
    char c = peek();
    if (static_cast<unsigned char>(c) < 0x20)
      return "a control character";
    return std::string("'") + c + "'";
  }

  Error parseValue(JsonValue &out, int depth) {
    skipWhitespace();
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    int line = line_, column = column_;
    Error error;
    switch (peek()) {
    case '{':
      error = parseObject(out, depth);
      break;
    case '[':
      error = parseArray(out, depth);
      break;
    case '"':
      out = JsonValue(JsonValue::Kind::String);
      error = parseString(out.string_);
      break;
    case 't':
      error = parseKeyword("true", out, JsonValue(true));
      break;
    case 'f':
      error = parseKeyword("false", out, JsonValue(false));
      break;
    case 'n':
      error = parseKeyword("null", out, JsonValue());
      break;
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
        error = parseNumber(out);
      else
        return fail("expected a value, found " + describeNext());
    }
    out.line_ = line;
    out.column_ = column;
    return error;
  }

  Error parseKeyword(std::string_view word, JsonValue &out, JsonValue value) {
    if (text_.substr(pos_, word.size()) != word)
      return fail("expected a value, found " + describeNext());
    for (size_t i = 0; i < word.size(); ++i)
      advance();
    out = std::move(value);
    return Error::success();
  }

  Error parseNumber(JsonValue &out) {
    size_t start = pos_;
    auto digits = [&] {
      size_t before = pos_;
      while (peek() >= '0' && peek() <= '9')
        advance();
      return pos_ > before;
    };
    if (peek() == '-')
      advance();
    if (peek() == '0') {
      advance();
    } else if (!digits()) {
      return fail("expected digits in number");
    }
    if (peek() == '.') {
      advance();
      if (!digits())
        return fail("expected digits after the decimal point");
    }
    if (peek() == 'e' || peek() == 'E') {
      advance();
      if (peek() == '+' || peek() == '-')
        advance();
      if (!digits())
        return fail("expected digits in the exponent");
    }
    std::string literal(text_.substr(start, pos_ - start));
    out = JsonValue(std::strtod(literal.c_str(), nullptr));
    return Error::success();
  }

  Error parseHex4(unsigned &code) {
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      unsigned digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return fail("expected 4 hex digits after \\u");
      code = code * 16 + digit;
      advance();
    }
    return Error::success();
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  Error parseString(std::string &out) {
    advance(); // the opening quote
    out.clear();
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      char c = peek();
      if (c == '"') {
        advance();
        return Error::success();
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in string (escape it)");
      if (c != '\\') {
        out += c;
        advance();
        continue;
      }
      advance();
      char escape = peek();
      if (atEnd())
        return fail("unterminated string");
      advance();
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned code;
        CONVRT_TRY(parseHex4(code));
        if (code >= 0xD800 && code < 0xDC00) {
          unsigned low;
          if (peek() != '\\')
            return fail("unpaired UTF-16 surrogate in \\u escape");
          advance();
          if (peek() != 'u')
            return fail("unpaired UTF-16 surrogate in \\u escape");
          advance();
          CONVRT_TRY(parseHex4(low));
          if (low < 0xDC00 || low > 0xDFFF)
            return fail("unpaired UTF-16 surrogate in \\u escape");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code <= 0xDFFF) {
          return fail("unpaired UTF-16 surrogate in \\u escape");
        }
        appendUtf8(out, code);
        break;
      }
      default:
        return fail(std::string("invalid escape \\") + escape);
      }
    }
  }

  Error parseArray(JsonValue &out, int depth) {
    out = JsonValue::array();
    advance(); // '['
    skipWhitespace();
    if (peek() == ']') {
      advance();
      return Error::success();
    }
    while (true) {
      JsonValue element;
      CONVRT_TRY(parseValue(element, depth + 1));
      out.elements_.push_back(std::move(element));
      skipWhitespace();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == ']') {
        advance();
        return Error::success();
      }
      return fail("expected ',' or ']' in array, found " + describeNext());
    }
  }

  Error parseObject(JsonValue &out, int depth) {
    out = JsonValue::object();
    advance(); // '{'
    skipWhitespace();
    if (peek() == '}') {
      advance();
      return Error::success();
    }
    while (true) {
      skipWhitespace();
      if (peek() != '"')
        return fail("expected a quoted member name, found " + describeNext());
      int keyLine = line_, keyColumn = column_;
      std::string key;
      CONVRT_TRY(parseString(key));
      if (out.find(key))
        return Error::failure("line " + std::to_string(keyLine) + ", column " +
                              std::to_string(keyColumn) + ": duplicate key \"" +
                              key + "\"");
      skipWhitespace();
      if (peek() != ':')
        return fail("expected ':' after member name \"" + key + "\", found " +
                    describeNext());
      advance();
      JsonValue value;
      CONVRT_TRY(parseValue(value, depth + 1));
      out.members_.emplace_back(std::move(key), std::move(value));
      skipWhitespace();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        return Error::success();
      }
      return fail("expected ',' or '}' in object, found " + describeNext());
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

Expected<JsonValue> parseJson(std::string_view text) {
  return JsonParser(text).parseDocument();
}

} // namespace convrt
