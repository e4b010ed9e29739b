//===- Record.cpp - The fake libcuda's record of what happened ------------===//

#include "fakecuda/Record.h"

#include <cstdio>
#include <cstdlib>

namespace fakecuda {

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", c);
      out += escape;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

JsonLine::JsonLine(const char *event) : text_("{\"event\":" + quote(event)) {}

JsonLine &JsonLine::string(const char *key, std::string_view value) {
  return raw(key, quote(value));
}

JsonLine &JsonLine::number(const char *key, uint64_t value) {
  return raw(key, std::to_string(value));
}

JsonLine &JsonLine::boolean(const char *key, bool value) {
  return raw(key, value ? "true" : "false");
}

JsonLine &JsonLine::raw(const char *key, const std::string &json) {
  text_ += (text_.empty() ? "{" : ",") + quote(key) + ":" + json;
  return *this;
}

void record(const JsonLine &line) {
  const char *path = std::getenv(kRecordEnvVar);
  if (!path || !*path)
    return;
  // Opened per event: appends from several processes (a test and the tools
  // it runs) interleave by whole lines, and each line is on disk at once.
  if (FILE *file = std::fopen(path, "a")) {
    std::fprintf(file, "%s\n", line.text().c_str());
    std::fclose(file);
  }
}

} // namespace fakecuda
