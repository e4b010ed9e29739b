//===- Record.h - The fake libcuda's record of what happened ----*- C++ -*-===//
//
// One JSON object per event, appended as a line to the file named by
// $FAKE_CUDA_RECORD (read at each event, so a test may set it late) and
// flushed at once: a test or a lit check reads what a process launched even
// if it then crashed. Nothing is written when the variable is unset. The
// event format is documented at the top of fake_libcuda.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_TESTS_FAKECUDA_RECORD_H
#define CONVRT_TESTS_FAKECUDA_RECORD_H

#include <cstdint>
#include <string>
#include <string_view>

namespace fakecuda {

inline constexpr const char *kRecordEnvVar = "FAKE_CUDA_RECORD";

/// The JSON string literal for `text`.
std::string quote(std::string_view text);

/// A JSON object built member by member, in order.
class JsonLine {
public:
  /// {"event": <event>, ...}, the record's lines.
  explicit JsonLine(const char *event);
  /// An object without "event" (a member of a line).
  JsonLine() = default;
  JsonLine &string(const char *key, std::string_view value);
  JsonLine &number(const char *key, uint64_t value);
  JsonLine &boolean(const char *key, bool value);
  /// `json` is already JSON text (an array or object).
  JsonLine &raw(const char *key, const std::string &json);
  std::string text() const { return (text_.empty() ? "{" : text_) + "}"; }

private:
  std::string text_;
};

/// Appends the line to $FAKE_CUDA_RECORD, if set.
void record(const JsonLine &line);

} // namespace fakecuda

#endif // CONVRT_TESTS_FAKECUDA_RECORD_H
