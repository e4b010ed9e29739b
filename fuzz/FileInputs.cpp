//===- FileInputs.cpp - the files ConvLower's tools read, fuzzed ---------===//
//
// conv-fuzz --files: each input is one byte choosing a reader and the
// file's bytes. The readers are what conv-run and convrt-run take from
// users: .npy tensors (conv-run --input/--filter/--bias) and bundle
// manifests (convrt-run). The property: any bytes give a value or a named
// error, never a crash, an abort (nlohmann-json built without exceptions
// aborts where it would throw) or a sanitizer report; and an accepted
// manifest prints back to a manifest that parses to the same text.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "ConvLower/Runner/Tensor.h"
#include "convrt/Json.h"
#include "convrt/Manifest.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void fileViolation(const std::string &what,
                                std::string_view bytes) {
  llvm::errs() << "conv-fuzz --files: " << what << "\n// input ("
               << bytes.size() << " bytes):\n"
               << bytes << "\n";
  llvm::errs().flush();
  std::abort();
}

/// One scratch file per process (readNpy reads a path).
const std::string &scratchPath() {
  static std::string path = [] {
    llvm::SmallString<128> p;
    if (llvm::sys::fs::createTemporaryFile("conv-fuzz", "npy", p)) {
      llvm::errs() << "conv-fuzz: cannot create a temporary file\n";
      std::exit(2);
    }
    return std::string(p);
  }();
  return path;
}

bool checkNpy(std::string_view bytes, mlir::conv_lower::DType dtype) {
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(scratchPath(), ec);
    if (ec)
      fileViolation("cannot write the scratch file: " + ec.message(), "");
    out << bytes;
  }
  llvm::Expected<mlir::conv_lower::HostTensor> tensor =
      mlir::conv_lower::readNpy(scratchPath(), dtype);
  if (!tensor) {
    std::string message = llvm::toString(tensor.takeError());
    if (message.empty())
      fileViolation("readNpy failed without saying why", bytes);
    return false;
  }
  if (int64_t(tensor->values.size()) != tensor->numElements())
    fileViolation("readNpy returned " + std::to_string(tensor->values.size()) +
                      " values for a shape of " +
                      std::to_string(tensor->numElements()) + " elements",
                  bytes);
  return true;
}

bool checkManifest(std::string_view text) {
  convrt::Expected<convrt::Manifest> manifest = convrt::parseManifest(text);
  if (!manifest.ok()) {
    if (manifest.error().message().empty())
      fileViolation("parseManifest failed without saying why", text);
    return false;
  }
  std::string printed = convrt::dumpJson(convrt::manifestToJson(*manifest), 2);
  convrt::Expected<convrt::Manifest> again = convrt::parseManifest(printed);
  if (!again.ok())
    fileViolation("an accepted manifest printed to one that does not parse: " +
                      again.error().message() + "\n// printed:\n" + printed,
                  text);
  std::string reprinted = convrt::dumpJson(convrt::manifestToJson(*again), 2);
  if (reprinted != printed)
    fileViolation("a manifest does not survive printing and parsing:\n" +
                      printed + "\n// became:\n" + reprinted,
                  text);
  return true;
}

} // namespace

bool conv_lower_fuzz::checkFileInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return false;
  std::string_view bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 3) {
  case 0:
    return checkNpy(bytes, mlir::conv_lower::DType::F32);
  case 1:
    return checkNpy(bytes, mlir::conv_lower::DType::F16);
  default:
    return checkManifest(bytes);
  }
}
