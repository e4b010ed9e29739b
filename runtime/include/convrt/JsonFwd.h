//===- JsonFwd.h - JsonValue, declared only ---------------------*- C++ -*-===//
//
// For headers that only declare functions returning JSON (manifestToJson,
// telemetryJson, runReportJson): their clients - most of conv-run's sources
// among them - do not parse nlohmann-json's full header. Code that builds,
// reads or prints a JsonValue includes convrt/Json.h.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_JSONFWD_H
#define CONVRT_JSONFWD_H

#include <nlohmann/json_fwd.hpp>

namespace convrt {

/// nlohmann's insertion-ordered JSON value (see Json.h).
using JsonValue = nlohmann::ordered_json;

} // namespace convrt

#endif // CONVRT_JSONFWD_H
