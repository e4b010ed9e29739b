//===- Image.h - What the fake libcuda reads from module images -*- C++ -*-===//
//
// The fake driver runs nothing on a GPU, but it reads real kernel images the
// way the driver does, so that tests can check what a runtime launches:
//
//  - cubins (ELF64, EM_CUDA): the architecture from the ELF header, the
//    kernels from the symbol table (STT_FUNC with the CUDA entry flag in
//    st_other; device functions are not kernels), and each kernel's
//    parameters from EIATTR_KPARAM_INFO entries of its .nv.info.<kernel>
//    section;
//  - PTX text: .target, and each .entry's .param list laid out as ptxas
//    lays it out (each parameter aligned to its .align or element size).
//
// Verified against nvcc 13.0 / cuobjdump 13.5 output (sm_80 to sm_90a).
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_TESTS_FAKECUDA_IMAGE_H
#define CONVRT_TESTS_FAKECUDA_IMAGE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fakecuda {

struct Param {
  uint32_t offset = 0; ///< In the parameter buffer.
  uint32_t size = 0;   ///< Bytes.
  /// PTX: the parameter's alignment, for layoutParamsFor; 0 where the image
  /// gives the offsets (cubins).
  uint32_t alignment = 0;
};

struct Kernel {
  std::string name;
  std::vector<Param> params; ///< In ordinal order.
};

enum class ImageKind { Fake, Cubin, Ptx };
const char *imageKindName(ImageKind kind);

struct Image {
  ImageKind kind = ImageKind::Fake;
  size_t bytes = 0;  ///< The image's size (a cubin's, from its headers).
  int smVersion = 0; ///< 90 for sm_90 and sm_90a (PTX: its .target).
  std::vector<Kernel> kernels;
};

/// Starts with the ELF magic.
bool isElf(const void *data);
/// Has a .version directive and at least one .entry.
bool looksLikePtx(const char *text);

/// Parses a cubin; on failure returns false and says why in `error`.
bool parseCubin(const unsigned char *data, Image &image, std::string &error);
/// Parses PTX text; on failure returns false and says why in `error`. The
/// offsets are laid out from 0; layoutParamsFor gives the JIT's.
bool parsePtx(const char *text, Image &image, std::string &error);

/// Lays PTX parameters out as ptxas does for sm_<smVersion>: it aligns each
/// one within constant bank 0, where the parameters start at 0x160 (sm_75 to
/// sm_89; assumed for older chips), 0x210 (sm_90) or 0x380 (sm_100 and
/// later), so an alignment above 16 may move a parameter (nvcc 13 cubins: a
/// CUtensorMap, alignas(128), after a pointer is at 112 on sm_90, 32 on
/// sm_80, 128 on sm_100).
void layoutParamsFor(int smVersion, std::vector<Param> &params);

} // namespace fakecuda

#endif // CONVRT_TESTS_FAKECUDA_IMAGE_H
