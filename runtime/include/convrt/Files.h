//===- Files.h - Small file helpers -----------------------------*- C++ -*-===//

#ifndef CONVRT_FILES_H
#define CONVRT_FILES_H

#include "convrt/Error.h"

#include <string>

namespace convrt {

/// The whole file. A std::string keeps a NUL after the data, which PTX text
/// handed to cuModuleLoadData needs; binaries ignore it.
Expected<std::string> readFile(const std::string &path);

/// `directory/name`, or `name` alone when it is absolute.
std::string joinPath(const std::string &directory, const std::string &name);

bool isRegularFile(const std::string &path);

/// The canonical path of the file behind a dlopen handle (symlinks such as
/// libcuda.so.1 -> libcuda.so.580.65.06 resolved), or `fallback`.
std::string loadedLibraryPath(void *handle, const std::string &fallback);

} // namespace convrt

#endif // CONVRT_FILES_H
