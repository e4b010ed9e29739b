//===- Image.cpp - What the fake libcuda reads from module images ---------===//

#include "fakecuda/Image.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <elf.h>
#include <sstream>

namespace fakecuda {
namespace {

/// .nv.info entries are [format:u8][attribute:u8][value or size:u16]; the
/// EIFMT_SVAL format is followed by `size` bytes of payload, the others
/// (NVAL, BVAL, HVAL) carry their value in those 2 bytes.
constexpr uint8_t kFormatSval = 0x04;
/// EIATTR_KPARAM_INFO's 12-byte payload: u32 index, u16 ordinal, u16
/// offset, u32 whose bits 18..31 are the size (cuobjdump -elf agrees).
constexpr uint8_t kKparamInfo = 0x17;
constexpr size_t kKparamPayload = 12;
/// st_other of a kernel's symbol; device functions lack it.
constexpr unsigned char kCudaEntry = 0x10;
/// ELF ABI version 8 (CUDA 12.8+) moved the SM number to e_flags[15:8].
constexpr unsigned kAbiWithShiftedSm = 8;
constexpr size_t kMaxImageBytes = size_t(1) << 30;

template <typename T> T read(const unsigned char *at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

struct Elf {
  const unsigned char *data = nullptr;
  Elf64_Ehdr header{};
  std::vector<Elf64_Shdr> sections;

  const char *string(const Elf64_Shdr &table, uint64_t offset) const {
    return offset < table.sh_size
               ? reinterpret_cast<const char *>(data + table.sh_offset + offset)
               : "";
  }
  std::string sectionName(const Elf64_Shdr &section) const {
    return string(sections[header.e_shstrndx], section.sh_name);
  }
};

bool readHeader(const unsigned char *data, Elf &elf, std::string &error) {
  elf.data = data;
  elf.header = read<Elf64_Ehdr>(data);
  const Elf64_Ehdr &h = elf.header;
  if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_DATA] != ELFDATA2LSB ||
      h.e_machine != EM_CUDA) {
    error = "not a 64-bit little-endian CUDA ELF (e_machine " +
            std::to_string(h.e_machine) + ")";
    return false;
  }
  if (h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shnum == 0 ||
      h.e_shstrndx >= h.e_shnum ||
      h.e_shoff + uint64_t(h.e_shnum) * h.e_shentsize > kMaxImageBytes) {
    error = "malformed ELF section header table";
    return false;
  }
  for (unsigned i = 0; i < h.e_shnum; ++i)
    elf.sections.push_back(
        read<Elf64_Shdr>(data + h.e_shoff + i * sizeof(Elf64_Shdr)));
  return true;
}

/// cuModuleLoadData gets no size: like the driver, take it from the headers.
size_t imageSize(const Elf &elf) {
  const Elf64_Ehdr &h = elf.header;
  uint64_t end = h.e_shoff + uint64_t(h.e_shnum) * h.e_shentsize;
  end =
      std::max<uint64_t>(end, h.e_phoff + uint64_t(h.e_phnum) * h.e_phentsize);
  for (const Elf64_Shdr &section : elf.sections)
    if (section.sh_type != SHT_NOBITS)
      end = std::max<uint64_t>(end, section.sh_offset + section.sh_size);
  return size_t(end);
}

int smVersion(const Elf64_Ehdr &h) {
  return h.e_ident[EI_ABIVERSION] >= kAbiWithShiftedSm ? (h.e_flags >> 8) & 0xff
                                                       : h.e_flags & 0xff;
}

std::vector<std::string> kernelNames(const Elf &elf) {
  std::vector<std::string> names;
  for (const Elf64_Shdr &table : elf.sections) {
    if (table.sh_type != SHT_SYMTAB || table.sh_link >= elf.sections.size())
      continue;
    const Elf64_Shdr &strings = elf.sections[table.sh_link];
    for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= table.sh_size;
         at += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol = read<Elf64_Sym>(elf.data + table.sh_offset + at);
      if (ELF64_ST_TYPE(symbol.st_info) == STT_FUNC &&
          (symbol.st_other & kCudaEntry))
        names.push_back(elf.string(strings, symbol.st_name));
    }
  }
  return names;
}

std::vector<Param> kparamInfo(const unsigned char *info, size_t size) {
  std::vector<std::pair<uint16_t, Param>> byOrdinal;
  for (size_t at = 0; at + 4 <= size;) {
    uint8_t format = info[at], attribute = info[at + 1];
    uint16_t length = format == kFormatSval ? read<uint16_t>(info + at + 2) : 0;
    const unsigned char *payload = info + at + 4;
    if (format == kFormatSval && attribute == kKparamInfo &&
        length >= kKparamPayload && at + 4 + kKparamPayload <= size)
      byOrdinal.push_back(
          {read<uint16_t>(payload + 4),
           {read<uint16_t>(payload + 6), read<uint32_t>(payload + 8) >> 18}});
    at += 4 + length;
  }
  std::sort(byOrdinal.begin(), byOrdinal.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<Param> params;
  for (const auto &entry : byOrdinal)
    params.push_back(entry.second);
  return params;
}

std::vector<Param> kernelParams(const Elf &elf, const std::string &kernel) {
  for (const Elf64_Shdr &section : elf.sections)
    if (elf.sectionName(section) == ".nv.info." + kernel)
      return kparamInfo(elf.data + section.sh_offset, section.sh_size);
  return {}; // no .nv.info section: no parameters
}

//===----------------------------------------------------------------------===//
// PTX
//===----------------------------------------------------------------------===//

std::string withoutComments(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "//") == 0) {
      i = text.find('\n', i);
      if (i == std::string::npos)
        break;
    } else if (text.compare(i, 2, "/*") == 0) {
      i = text.find("*/", i);
      if (i == std::string::npos)
        break;
      ++i;
      continue;
    }
    out += text[i];
  }
  return out;
}

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '.' || c == '%';
}

/// ".target sm_90a, ..." -> 90; 0 if absent.
int targetVersion(const std::string &ptx) {
  size_t at = ptx.find(".target");
  if (at == std::string::npos)
    return 0;
  at = ptx.find("sm_", at);
  return at == std::string::npos ? 0 : std::atoi(ptx.c_str() + at + 3);
}

/// Bytes of a PTX type: ".u64" -> 8, ".b8" -> 1, ".f16x2" -> 4.
uint32_t typeBytes(const std::string &type) {
  size_t digits = type.find_first_of("0123456789");
  if (digits == std::string::npos)
    return 0;
  uint32_t bits = uint32_t(std::atoi(type.c_str() + digits));
  size_t vector = type.find('x', digits);
  uint32_t lanes = vector == std::string::npos
                       ? 1
                       : uint32_t(std::atoi(type.c_str() + vector + 1));
  return bits / 8 * std::max(1u, lanes);
}

/// One ".param [.align A] .type [qualifiers] name[N]" at `offset`.
bool parseParam(const std::string &text, uint32_t &offset, Param &param) {
  std::istringstream words(text);
  std::vector<std::string> tokens;
  for (std::string token; words >> token;)
    tokens.push_back(token);
  if (tokens.size() < 3 || tokens[0] != ".param")
    return false;
  size_t typeAt = 1;
  uint32_t align = 0;
  if (tokens[1] == ".align" && tokens.size() >= 5) {
    align = uint32_t(std::atoi(tokens[2].c_str()));
    typeAt = 3;
  }
  uint32_t element = typeBytes(tokens[typeAt]);
  const std::string &name = tokens.back();
  size_t bracket = name.find('[');
  uint32_t count = bracket == std::string::npos
                       ? 1
                       : uint32_t(std::atoi(name.c_str() + bracket + 1));
  if (!element || !count)
    return false;
  align = align ? align : element;
  offset = (offset + align - 1) / align * align;
  param = {offset, element * count, align};
  offset += param.size;
  return true;
}

bool parseParamList(const std::string &list, Kernel &kernel,
                    std::string &error) {
  uint32_t offset = 0;
  std::istringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.find_first_not_of(" \t\r\n") == std::string::npos)
      continue;
    Param param;
    if (!parseParam(item, offset, param)) {
      error = "cannot read parameter '" + item + "' of " + kernel.name;
      return false;
    }
    kernel.params.push_back(param);
  }
  return true;
}

/// The .entry at `at` (just past the keyword): its name and parameters.
bool parseEntry(const std::string &ptx, size_t at, Kernel &kernel,
                std::string &error) {
  size_t start = ptx.find_first_not_of(" \t\r\n", at);
  size_t end = start;
  while (end < ptx.size() && isNameChar(ptx[end]))
    ++end;
  kernel.name = ptx.substr(start, end - start);
  size_t open = ptx.find_first_of("({", end);
  if (open == std::string::npos || ptx[open] == '{')
    return !kernel.name.empty();
  size_t close = ptx.find(')', open);
  if (close == std::string::npos) {
    error = "unterminated parameter list of " + kernel.name;
    return false;
  }
  return parseParamList(ptx.substr(open + 1, close - open - 1), kernel, error);
}

} // namespace

const char *imageKindName(ImageKind kind) {
  switch (kind) {
  case ImageKind::Fake:
    return "fake";
  case ImageKind::Cubin:
    return "cubin";
  case ImageKind::Ptx:
    return "ptx";
  }
  return "?";
}

bool isElf(const void *data) {
  return data && std::memcmp(data, ELFMAG, SELFMAG) == 0;
}

bool looksLikePtx(const char *text) {
  return text && std::strstr(text, ".version") && std::strstr(text, ".entry");
}

bool parseCubin(const unsigned char *data, Image &image, std::string &error) {
  Elf elf;
  if (!readHeader(data, elf, error))
    return false;
  image.kind = ImageKind::Cubin;
  image.bytes = imageSize(elf);
  image.smVersion = smVersion(elf.header);
  for (const std::string &name : kernelNames(elf))
    image.kernels.push_back({name, kernelParams(elf, name)});
  if (image.kernels.empty()) {
    error = "the cubin has no kernel (no STT_FUNC entry symbol)";
    return false;
  }
  return true;
}

void layoutParamsFor(int smVersion, std::vector<Param> &params) {
  uint32_t base = smVersion >= 100 ? 0x380 : smVersion >= 90 ? 0x210 : 0x160;
  uint32_t end = base;
  for (Param &param : params) {
    uint32_t align = std::max(1u, param.alignment);
    uint32_t at = (end + align - 1) / align * align;
    param.offset = at - base;
    end = at + param.size;
  }
}

bool parsePtx(const char *text, Image &image, std::string &error) {
  std::string ptx = withoutComments(text);
  image.kind = ImageKind::Ptx;
  image.bytes = std::strlen(text) + 1;
  image.smVersion = targetVersion(ptx);
  for (size_t at = ptx.find(".entry"); at != std::string::npos;
       at = ptx.find(".entry", at + 1)) {
    if (at + 6 >= ptx.size() || !std::isspace((unsigned char)ptx[at + 6]))
      continue;
    Kernel kernel;
    if (!parseEntry(ptx, at + 6, kernel, error))
      return false;
    image.kernels.push_back(std::move(kernel));
  }
  if (image.kernels.empty()) {
    error = "the PTX has no .entry";
    return false;
  }
  return true;
}

} // namespace fakecuda
