//===- RunErrors.cpp - the run library's errors ---------------------------===//

#include "ConvLower/Runner/RunErrors.h"

using namespace mlir::conv_lower;

char RunError::ID = 0;

llvm::Error runner::badInput(const llvm::Twine &message) {
  return llvm::make_error<RunError>(message.str(), /*badInput=*/true);
}

llvm::Error runner::failed(const llvm::Twine &message) {
  return llvm::make_error<RunError>(message.str(), /*badInput=*/false);
}

ErrorText mlir::conv_lower::takeErrorText(llvm::Error error) {
  ErrorText text;
  llvm::handleAllErrors(
      std::move(error),
      [&](const RunError &e) {
        text.badInput = e.isBadInput();
        text.message = e.message();
      },
      [&](const llvm::ErrorInfoBase &e) { text.message = e.message(); });
  return text;
}

static llvm::Error mark(llvm::Error error, bool bad) {
  if (!error)
    return error;
  if (error.isA<RunError>())
    return error;
  return llvm::make_error<RunError>(llvm::toString(std::move(error)), bad);
}

llvm::Error runner::asBadInput(llvm::Error error) {
  return mark(std::move(error), true);
}

llvm::Error runner::asFailure(llvm::Error error) {
  return mark(std::move(error), false);
}
