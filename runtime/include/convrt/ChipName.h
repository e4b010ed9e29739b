//===- ChipName.h - Reading any sm_XY[a|f] chip name ------------*- C++ -*-===//
//
// Manifests and compatibility checks name the chip a binary targets, which
// may be any NVIDIA architecture (sm_100f, sm_120, ...), not only those
// ConvLower compiles for: that table is Arch.h's. This reads the name alone.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_CHIPNAME_H
#define CONVRT_CHIPNAME_H

#include <optional>
#include <string_view>

namespace convrt {

struct ChipName {
  int major = 0, minor = 0; ///< The compute capability: sm_90a -> 9.0.
  char suffix = 0;          ///< 'a' (that chip only), 'f' (family) or 0.
};

/// "sm_90a" -> {9, 0, 'a'}, "sm_100f" -> {10, 0, 'f'}; nullopt unless the
/// name is "sm_" followed by two or more digits and at most an 'a' or 'f'.
inline std::optional<ChipName> parseChipName(std::string_view name) {
  if (name.substr(0, 3) != "sm_")
    return std::nullopt;
  size_t end = 3;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9')
    ++end;
  std::string_view suffix = name.substr(end);
  if (end - 3 < 2 || (!suffix.empty() && suffix != "a" && suffix != "f"))
    return std::nullopt;
  ChipName chip;
  for (size_t i = 3; i + 1 < end; ++i)
    chip.major = chip.major * 10 + (name[i] - '0');
  chip.minor = name[end - 1] - '0';
  chip.suffix = suffix.empty() ? 0 : suffix[0];
  return chip;
}

} // namespace convrt

#endif // CONVRT_CHIPNAME_H
