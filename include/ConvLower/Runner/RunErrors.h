//===- RunErrors.h - the run library's errors -------------------*- C++ -*-===//
//
// A leaf: the error every step of the run library returns, which says
// whether the input was bad (nothing ran) or a run failed, and the helpers
// that make and mark them. It depends on nothing else in the runner, so any
// file of it may include this one without a cycle.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_RUNERRORS_H
#define CONVLOWER_RUNNER_RUNERRORS_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::conv_lower {

/// The error of a run: bad input (nothing ran) or a failure while running.
class RunError : public llvm::ErrorInfo<RunError> {
public:
  static char ID;
  RunError(std::string text, bool badInput)
      : text(std::move(text)), badInput(badInput) {}
  void log(llvm::raw_ostream &os) const override { os << text; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  bool isBadInput() const { return badInput; }

private:
  std::string text;
  bool badInput;
};

/// A run library error taken apart for a front end's exit status or
/// status code: whether it was bad input (any other error is a failure).
struct ErrorText {
  bool badInput = false;
  std::string message;
};
ErrorText takeErrorText(llvm::Error error);

namespace runner {

llvm::Error badInput(const llvm::Twine &message);
llvm::Error failed(const llvm::Twine &message);
/// `error`, marked as bad input (or as a failure) unless it is a RunError.
llvm::Error asBadInput(llvm::Error error);
llvm::Error asFailure(llvm::Error error);

} // namespace runner

} // namespace mlir::conv_lower

#endif
