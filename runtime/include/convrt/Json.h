//===- Json.h - JSON through nlohmann-json, without exceptions --*- C++ -*-===//
//
// The runtime's one JSON library is nlohmann-json (header-only; Debian's
// nlohmann-json3-dev). JsonValue is its insertion-ordered flavour, so
// manifests and reports print their keys in the order they were written.
//
// convrt never throws (it is also compiled into -fno-exceptions code, where
// a throw aborts), so text goes through these helpers rather than
// nlohmann::json::parse() and dump(): parseJson returns parse errors as
// values, and dumpJson replaces invalid UTF-8 instead of throwing. Reading a
// value, check its type (is_string(), ...) before get<T>().
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_JSON_H
#define CONVRT_JSON_H

#include "convrt/Error.h"
#include "convrt/JsonFwd.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace convrt {

/// Parses one JSON document (RFC 8259, strict: nothing may follow it).
/// Beyond nlohmann's checks, a duplicate key is an error (nlohmann would
/// keep the last silently) and so is nesting deeper than 128. Errors read
/// "parse error at line L, column C (byte B): <nlohmann's reason>" or
/// "duplicate key \"kernel.grid\"".
Expected<JsonValue> parseJson(std::string_view text);

/// The text of `value`: compact for indent < 0; else pretty-printed with
/// `indent` spaces, arrays of scalars kept on one line ("grid": [4, 2, 1]).
/// Non-finite numbers print as null; invalid UTF-8 becomes U+FFFD.
std::string dumpJson(const JsonValue &value, int indent = -1);

/// The JSON string literal for `text`, quotes included.
std::string jsonQuote(std::string_view text);

/// The member `key` of an object; null if absent or `object` is no object.
const JsonValue *findMember(const JsonValue &object, std::string_view key);

} // namespace convrt

#endif // CONVRT_JSON_H
