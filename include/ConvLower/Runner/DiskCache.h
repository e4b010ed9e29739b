//===- DiskCache.h - compiled CPU code kept on disk across processes -*- C++ -*-//
//
// The CPU route's compile (the pass pipeline, LLVM's optimizer and code
// generator) costs 100-900 ms a convolution; a whole network seconds. Its
// result, the object file the JIT links, is kept in a directory and linked
// again by a later process that compiles the same thing on the same kind of
// CPU with the same ConvLower.
//
// Key: the module as the pipeline gets it, the pipeline with its options,
// the host CPU's name and features, LLVM's version, and a hash of the binary
// holding ConvLower's compiler (so a rebuilt ConvLower never reads an older
// one's code). An entry is one file written under a temporary name and
// renamed into place (concurrent writers of one key each leave a whole
// file); it carries the full key and a checksum, and one that is truncated,
// corrupt or another key's is compiled again and overwritten, never linked.
// Least recently used entries go when the directory holds more than its
// bound.
//
//   $CONVLOWER_CACHE_DIR    the directory ("off": no disk cache); default
//                           $XDG_CACHE_HOME/convlower, else ~/.cache/convlower
//   $CONVLOWER_CACHE_BYTES  the bound (default 256 MiB)
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_DISKCACHE_H
#define CONVLOWER_RUNNER_DISKCACHE_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::conv_lower {

/// What a cache entry holds besides the key: the object file and the shapes
/// (and element bits) of the packed buffers the code's pack function fills.
struct CachedObject {
  struct Packed {
    llvm::SmallVector<int64_t> shape;
    int64_t elementBits = 0;
  };
  std::vector<Packed> packed;
  std::string object;
};

class DiskCache {
public:
  /// The cache the environment asks for; disabled() when it says "off" or
  /// there is no home to put it in.
  static DiskCache &process();

  bool enabled() const { return !directory.empty(); }
  llvm::StringRef path() const { return directory; }
  uint64_t boundBytes() const { return bound; }

  /// The entry for `key`, if a whole one is there (and marks it used).
  std::optional<CachedObject> load(llvm::StringRef key) const;
  /// Writes the entry for `key` (atomically), then trims the directory to
  /// its bound. Failures (a read-only disk) are ignored: the cache is an
  /// optimization.
  void store(llvm::StringRef key, const CachedObject &entry) const;
  /// Removes every entry; returns how many.
  size_t clear() const;
  /// The entries' total size in bytes and their count.
  std::pair<uint64_t, size_t> usage() const;

  /// What keys must include besides the module and the pipeline: the host
  /// CPU, LLVM's version and this ConvLower build.
  static const std::string &environmentKey();

  DiskCache(std::string directory, uint64_t bound)
      : directory(std::move(directory)), bound(bound) {}

private:
  std::string entryPath(llvm::StringRef key) const;
  void trim() const;
  std::string directory;
  uint64_t bound;
};

} // namespace mlir::conv_lower

#endif
