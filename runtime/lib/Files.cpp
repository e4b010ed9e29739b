//===- Files.cpp - Small file helpers -------------------------------------===//

#include "convrt/Files.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <link.h>
#include <sys/stat.h>

namespace convrt {

Expected<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::failure("cannot open " + path + ": " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (in.bad())
    return Error::failure("cannot read " + path);
  return bytes;
}

std::string joinPath(const std::string &directory, const std::string &name) {
  if (directory.empty() || (!name.empty() && name.front() == '/'))
    return name;
  if (directory.back() == '/')
    return directory + name;
  return directory + "/" + name;
}

bool isRegularFile(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string loadedLibraryPath(void *handle, const std::string &fallback) {
  struct link_map *map = nullptr;
  std::string path = fallback;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
      map->l_name[0])
    path = map->l_name;
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? resolved : path;
}

} // namespace convrt
