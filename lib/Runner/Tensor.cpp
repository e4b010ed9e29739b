//===- Tensor.cpp - host tensors, .npy files, 16-bit floats ---------------===//

#include "ConvLower/Runner/Tensor.h"

#include "convrt/ReferenceConv.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

using namespace mlir::conv_lower;
using llvm::createStringError;
using llvm::formatv;

static float roundTo(DType dtype, float v) {
  return static_cast<float>(convrt::roundTo(dtype, v));
}

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<uint8_t> HostTensor::storage() const {
  return convrt::encode(dtype, asDoubles());
}

std::vector<double> HostTensor::asDoubles() const {
  return std::vector<double>(values.begin(), values.end());
}

HostTensor mlir::conv_lower::randomTensor(llvm::ArrayRef<int64_t> shape,
                                          DType dtype, uint64_t seed,
                                          uint64_t stream) {
  HostTensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  // runtime/'s generator (what convrt-run fills bundles with); one seed per
  // (seed, stream) pair, none shared between two pairs.
  constexpr uint64_t kStreams = 4;
  std::vector<double> values = convrt::randomTensor(
      t.numElements(), dtype, seed * kStreams + stream);
  t.values.assign(values.begin(), values.end());
  return t;
}

std::string mlir::conv_lower::formatShape(llvm::ArrayRef<int64_t> shape) {
  // Python's tuple spelling, as numpy prints shapes: (2,) for one dim.
  return "(" +
         llvm::join(llvm::map_range(shape,
                                    [](int64_t d) { return std::to_string(d); }),
                    ", ") +
         (shape.size() == 1 ? ",)" : ")");
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

/// Value of `key` in the header dict, e.g. 'descr': '<f4' -> <f4.
static llvm::StringRef headerField(llvm::StringRef header, llvm::StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == llvm::StringRef::npos)
    return {};
  llvm::StringRef rest = header.drop_front(at + key.size() + 2).ltrim(" :");
  if (rest.starts_with("'"))
    return rest.drop_front().take_until([](char c) { return c == '\''; });
  if (rest.starts_with("("))
    return rest.drop_front().take_until([](char c) { return c == ')'; });
  return rest.take_until([](char c) { return c == ',' || c == '}'; }).trim();
}

llvm::Expected<HostTensor> mlir::conv_lower::readNpy(llvm::StringRef path,
                                                     DType dtype) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return createStringError(
        formatv("cannot read {0}: {1}", path, buffer.getError().message()));
  llvm::StringRef data = (*buffer)->getBuffer();
  if (!data.starts_with("\x93NUMPY") || data.size() < 10)
    return createStringError(formatv("{0} is not a .npy file", path));
  uint8_t major = data[6];
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(data[8]) |
                (static_cast<uint8_t>(data[9]) << 8);
    offset = 10;
  } else {
    if (data.size() < 12)
      return createStringError(formatv("{0}: truncated .npy header", path));
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(data[8 + i]))
                   << (8 * i);
    offset = 12;
  }
  if (data.size() < offset + headerLen)
    return createStringError(formatv("{0}: truncated .npy header", path));
  llvm::StringRef header = data.substr(offset, headerLen);
  llvm::StringRef payload = data.drop_front(offset + headerLen);

  llvm::StringRef descr = headerField(header, "descr");
  if (descr != "<f4" && descr != "<f2")
    return createStringError(
        formatv("{0} has dtype '{1}'; conv-run reads little-endian float32 "
                "('<f4') or float16 ('<f2')",
                path, descr));
  if (headerField(header, "fortran_order") != "False")
    return createStringError(
        formatv("{0} is in Fortran order; save it in C order", path));

  HostTensor t;
  t.dtype = dtype;
  llvm::SmallVector<llvm::StringRef> dims;
  headerField(header, "shape").split(dims, ',', -1, /*KeepEmpty=*/false);
  size_t width = descr == "<f4" ? 4 : 2;
  // The header's shape is untrusted: the element count is bounded by the
  // payload at every step, so no product can overflow (a header claiming
  // (2^62,) would otherwise wrap the byte count).
  const uint64_t available = payload.size() / width;
  uint64_t elements = 1;
  bool exceeds = false, empty = false;
  for (llvm::StringRef d : dims) {
    int64_t v;
    if (d.trim().getAsInteger(10, v) || v < 0)
      return createStringError(formatv("{0}: bad shape in header", path));
    t.shape.push_back(v);
    empty |= v == 0;
    if (v != 0 && elements > available / uint64_t(v))
      exceeds = true; // more elements than the payload holds: stop multiplying
    else if (v != 0)
      elements *= uint64_t(v);
  }
  if (empty)
    elements = 0;
  if (exceeds && !empty)
    return createStringError(formatv(
        "{0}: the header's shape {1} needs more data than its {2} bytes",
        path, formatShape(t.shape), payload.size()));
  if (elements * width != payload.size())
    return createStringError(formatv(
        "{0}: the header's shape {1} does not match its {2} bytes of data",
        path, formatShape(t.shape), payload.size()));
  t.values.resize(t.numElements());
  for (int64_t i = 0; i < t.numElements(); ++i) {
    float v;
    if (width == 4) {
      std::memcpy(&v, payload.data() + 4 * i, 4);
    } else {
      uint16_t b;
      std::memcpy(&b, payload.data() + 2 * i, 2);
      v = convrt::halfBitsToFloat(b);
    }
    t.values[i] = roundTo(dtype, v);
  }
  return t;
}

llvm::Error mlir::conv_lower::writeNpy(llvm::StringRef path,
                                       llvm::ArrayRef<int64_t> shape,
                                       llvm::ArrayRef<double> values,
                                       DType dtype) {
  // Integers as i32, every float type as f32 (which holds f16/bf16 exactly).
  bool integer = convrt::isInteger(dtype);
  std::vector<uint8_t> bytes =
      convrt::encode(integer ? DType::I32 : DType::F32,
                     std::vector<double>(values.begin(), values.end()));
  std::string dims = llvm::join(
      llvm::map_range(shape, [](int64_t d) { return std::to_string(d); }),
      ", ");
  if (shape.size() == 1)
    dims += ","; // a Python 1-tuple
  std::string header =
      std::string("{'descr': '") + (integer ? "<i4" : "<f4") +
      "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad with spaces so that the data starts on a 64-byte boundary.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return createStringError(formatv("cannot write {0}: {1}", path, ec.message()));
  os << "\x93NUMPY" << '\x01' << '\x00';
  os << static_cast<char>(header.size() & 0xff)
     << static_cast<char>((header.size() >> 8) & 0xff);
  os << header;
  os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  os.close();
  if (os.has_error())
    return createStringError(formatv("cannot write {0}", path));
  return llvm::Error::success();
}
