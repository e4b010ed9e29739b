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
/// Parses PTX text; on failure returns false and says why in `error`.
bool parsePtx(const char *text, Image &image, std::string &error);

} // namespace fakecuda

#endif // CONVRT_TESTS_FAKECUDA_IMAGE_H
