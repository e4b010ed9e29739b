//===- Error.h - Error and Expected<T> for the convrt runtime ---*- C++ -*-===//
//
// Every public function that can fail returns an Error or an Expected<T>: the
// runtime is used by tools that must report and exit cleanly (and is built
// with -fno-exceptions when it is part of the MLIR build), so nothing throws.
// A failed driver call keeps its name and CUresult so that callers and tests
// can tell which call failed without parsing the message.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_ERROR_H
#define CONVRT_ERROR_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace convrt {

class Error {
public:
  /// Success.
  Error() = default;
  static Error success() { return Error(); }
  /// A failure described by `message` alone (I/O, parsing, validation).
  static Error failure(std::string message) {
    Error e;
    e.failed_ = true;
    e.message_ = std::move(message);
    return e;
  }
  /// A failed driver (or library) call: "<call> failed: <name> (<text>)".
  static Error callFailure(std::string call, int code, const std::string &name,
                           const std::string &text) {
    Error e = failure(call + " failed: " + name +
                      (text.empty() ? "" : " (" + text + ")"));
    e.call_ = std::move(call);
    e.code_ = code;
    return e;
  }

  bool ok() const { return !failed_; }
  const std::string &message() const { return message_; }
  /// The failing call's name ("cuModuleLoadData"), empty for other failures.
  const std::string &call() const { return call_; }
  /// The failing call's status code (a CUresult for driver calls), else 0.
  int code() const { return code_; }

  /// Prefixes the message with what was being done: "loading X: <message>".
  Error &withContext(const std::string &context) {
    if (failed_)
      message_ = context + ": " + message_;
    return *this;
  }
  /// Appends a hint (the fix) to the message.
  Error &withHint(const std::string &hint) {
    if (failed_ && !hint.empty())
      message_ += ": " + hint;
    return *this;
  }

private:
  bool failed_ = false;
  std::string message_;
  std::string call_;
  int code_ = 0;
};

/// A value or the Error that prevented computing it. Works for move-only T.
template <typename T> class Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Error error) : error_(std::move(error)) {
    assert(!error_.ok() && "Expected built from a success Error");
  }

  bool ok() const { return value_.has_value(); }
  const Error &error() const { return error_; }
  Error takeError() { return std::move(error_); }

  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }

private:
  std::optional<T> value_;
  Error error_;
};

} // namespace convrt

#define CONVRT_CONCAT_IMPL(a, b) a##b
#define CONVRT_CONCAT(a, b) CONVRT_CONCAT_IMPL(a, b)

/// Returns the Error of `expr` from the enclosing function if it failed.
#define CONVRT_TRY(expr)                                                       \
  do {                                                                         \
    ::convrt::Error convrtTryError_ = (expr);                                  \
    if (!convrtTryError_.ok())                                                 \
      return convrtTryError_;                                                  \
  } while (0)

/// `CONVRT_ASSIGN_OR_RETURN(auto x, f());` declares x from an Expected or
/// returns its Error from the enclosing function.
#define CONVRT_ASSIGN_OR_RETURN(decl, expr)                                    \
  CONVRT_ASSIGN_OR_RETURN_IMPL(CONVRT_CONCAT(convrtExpected_, __LINE__), decl, \
                               expr)
#define CONVRT_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr)                          \
  auto tmp = (expr);                                                           \
  if (!tmp.ok())                                                               \
    return tmp.takeError();                                                    \
  decl = std::move(*tmp)

#endif // CONVRT_ERROR_H
