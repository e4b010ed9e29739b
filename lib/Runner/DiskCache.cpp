//===- DiskCache.cpp - compiled CPU code kept on disk across processes ----===//
//
// One file an entry, named by a hash of its key:
//
//   "CONVLOWER-OBJ-1\n"  u64 key size, key   u32 packed count,
//   each: u32 rank, i64 dims[rank], i64 element bits
//   u64 object size, object                  u64 xxh3 of all the above
//
// Little-endian, as the machines that read it (x86-64) are.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/DiskCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include <dlfcn.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

using namespace mlir::conv_lower;

namespace {

constexpr llvm::StringLiteral kMagic = "CONVLOWER-OBJ-1\n";
constexpr llvm::StringLiteral kSuffix = ".clo";
constexpr uint64_t kDefaultBound = 256ull << 20;

uint64_t hashOf(llvm::StringRef bytes) {
  return llvm::xxh3_64bits(llvm::arrayRefFromStringRef(bytes));
}

template <typename T> void put(std::string &out, T value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof(T));
}

/// Reads the entry's fields in order; any read past the end fails it.
class Reader {
public:
  explicit Reader(llvm::StringRef bytes) : rest(bytes) {}
  template <typename T> bool get(T &value) {
    if (rest.size() < sizeof(T))
      return false;
    std::memcpy(&value, rest.data(), sizeof(T));
    rest = rest.drop_front(sizeof(T));
    return true;
  }
  bool get(std::string &value, uint64_t size) {
    if (rest.size() < size)
      return false;
    value = rest.take_front(size).str();
    rest = rest.drop_front(size);
    return true;
  }
  bool atEnd() const { return rest.empty(); }

private:
  llvm::StringRef rest;
};

std::string serialize(llvm::StringRef key, const CachedObject &entry) {
  std::string out = kMagic.str();
  put<uint64_t>(out, key.size());
  out += key;
  put<uint32_t>(out, entry.packed.size());
  for (const CachedObject::Packed &p : entry.packed) {
    put<uint32_t>(out, p.shape.size());
    for (int64_t d : p.shape)
      put<int64_t>(out, d);
    put<int64_t>(out, p.elementBits);
  }
  put<uint64_t>(out, entry.object.size());
  out += entry.object;
  put<uint64_t>(out, hashOf(out));
  return out;
}

/// The entry in `bytes`, if it is whole and for `key`.
std::optional<CachedObject> deserialize(llvm::StringRef bytes,
                                        llvm::StringRef key) {
  if (bytes.size() < kMagic.size() + sizeof(uint64_t) ||
      !bytes.starts_with(kMagic))
    return std::nullopt;
  llvm::StringRef body = bytes.drop_back(sizeof(uint64_t));
  uint64_t checksum;
  std::memcpy(&checksum, bytes.end() - sizeof(uint64_t), sizeof(uint64_t));
  if (checksum != hashOf(body))
    return std::nullopt;
  Reader in(body.drop_front(kMagic.size()));
  uint64_t keySize;
  std::string storedKey;
  if (!in.get(keySize) || !in.get(storedKey, keySize) || storedKey != key)
    return std::nullopt;
  CachedObject entry;
  uint32_t count;
  if (!in.get(count))
    return std::nullopt;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t rank;
    CachedObject::Packed p;
    if (!in.get(rank) || rank > 8)
      return std::nullopt;
    p.shape.resize(rank);
    for (int64_t &d : p.shape)
      if (!in.get(d))
        return std::nullopt;
    if (!in.get(p.elementBits))
      return std::nullopt;
    entry.packed.push_back(std::move(p));
  }
  uint64_t objectSize;
  if (!in.get(objectSize) || !in.get(entry.object, objectSize) || !in.atEnd())
    return std::nullopt;
  return entry;
}

std::string defaultDirectory() {
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (llvm::Twine(xdg) + "/convlower").str();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (llvm::Twine(home) + "/.cache/convlower").str();
  return "";
}

uint64_t boundFromEnvironment() {
  const char *text = std::getenv("CONVLOWER_CACHE_BYTES");
  if (!text || !*text)
    return kDefaultBound;
  char *end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  return end && *end == '\0' ? value : kDefaultBound;
}

/// A hash of the file this code was loaded from (conv-run, the C API's
/// library): a rebuilt compiler is another compiler.
std::string buildHash() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&buildHash), &info) || !info.dli_fname)
    return "unknown";
  auto file = llvm::MemoryBuffer::getFile(info.dli_fname, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return "unknown";
  return llvm::utohexstr(hashOf((*file)->getBuffer()));
}

bool isEntry(llvm::StringRef path) { return path.ends_with(kSuffix); }
bool isTemporary(llvm::StringRef path) {
  return llvm::sys::path::filename(path).contains(".tmp-");
}

} // namespace

DiskCache &DiskCache::process() {
  static DiskCache cache = [] {
    const char *dir = std::getenv("CONVLOWER_CACHE_DIR");
    std::string directory = dir ? std::string(dir) : defaultDirectory();
    if (directory == "off")
      directory.clear();
    return DiskCache(directory, boundFromEnvironment());
  }();
  return cache;
}

const std::string &DiskCache::environmentKey() {
  static const std::string key = [] {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    std::vector<std::string> on;
    for (const auto &f : features)
      if (f.getValue())
        on.push_back(f.getKey().str());
    std::sort(on.begin(), on.end());
    std::string text = "cpu " + llvm::sys::getHostCPUName().str() + "\n";
    text += "features";
    for (const std::string &f : on)
      text += " +" + f;
    text += "\nllvm " LLVM_VERSION_STRING "\nconvlower " + buildHash() + "\n";
    return text;
  }();
  return key;
}

std::string DiskCache::entryPath(llvm::StringRef key) const {
  return (llvm::Twine(directory) + "/" + llvm::utohexstr(hashOf(key)) +
          kSuffix)
      .str();
}

std::optional<CachedObject> DiskCache::load(llvm::StringRef key) const {
  if (!enabled())
    return std::nullopt;
  std::string path = entryPath(key);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return std::nullopt;
  std::optional<CachedObject> entry = deserialize((*file)->getBuffer(), key);
  if (entry)
    ::utimes(path.c_str(), nullptr); // most recently used
  return entry;
}

void DiskCache::store(llvm::StringRef key, const CachedObject &entry) const {
  if (!enabled() || llvm::sys::fs::create_directories(directory))
    return;
  std::string path = entryPath(key);
  llvm::SmallString<256> temporary;
  int fd;
  if (llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temporary))
    return;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << serialize(key, entry);
    out.flush();
    if (out.has_error()) {
      out.clear_error();
      llvm::sys::fs::remove(temporary);
      return;
    }
  }
  // Atomic: a reader sees the old file or the new one, never half of one.
  if (llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return;
  }
  trim();
}

namespace {
struct FileInfo {
  std::string path;
  uint64_t size;
  llvm::sys::TimePoint<> modified;
};

std::vector<FileInfo> listFiles(llvm::StringRef directory) {
  std::vector<FileInfo> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       it != end && !ec; it.increment(ec)) {
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    files.push_back({it->path(), status.getSize(),
                     status.getLastModificationTime()});
  }
  return files;
}
} // namespace

void DiskCache::trim() const {
  std::vector<FileInfo> entries;
  uint64_t total = 0;
  auto now = std::chrono::system_clock::now();
  for (FileInfo &f : listFiles(directory)) {
    // A writer that died between create and rename leaves its file behind.
    if (isTemporary(f.path) && now - f.modified > std::chrono::hours(1)) {
      llvm::sys::fs::remove(f.path);
      continue;
    }
    if (!isEntry(f.path))
      continue;
    total += f.size;
    entries.push_back(std::move(f));
  }
  std::sort(entries.begin(), entries.end(),
            [](const FileInfo &a, const FileInfo &b) {
              return a.modified < b.modified;
            });
  for (const FileInfo &f : entries) {
    if (total <= bound)
      break;
    if (!llvm::sys::fs::remove(f.path))
      total -= f.size;
  }
}

size_t DiskCache::clear() const {
  if (!enabled())
    return 0;
  size_t removed = 0;
  for (const FileInfo &f : listFiles(directory))
    if ((isEntry(f.path) || isTemporary(f.path)) &&
        !llvm::sys::fs::remove(f.path) && isEntry(f.path))
      ++removed;
  return removed;
}

std::pair<uint64_t, size_t> DiskCache::usage() const {
  uint64_t bytes = 0;
  size_t count = 0;
  if (enabled())
    for (const FileInfo &f : listFiles(directory))
      if (isEntry(f.path)) {
        bytes += f.size;
        ++count;
      }
  return {bytes, count};
}
