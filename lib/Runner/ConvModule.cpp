//===- ConvModule.cpp - a conv problem as a linalg module -----------------===//

#include "ConvLower/Runner/ConvModule.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::conv_lower;
using llvm::formatv;

static std::string tensorType(llvm::ArrayRef<int64_t> shape,
                              llvm::StringRef element) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + element.str() + ">";
}

static std::string attrs(const ConvProblem &p) {
  return formatv("{strides = dense<[{0}, {1}]> : tensor<2xi64>, dilations = "
                 "dense<[{2}, {3}]> : tensor<2xi64>}",
                 p.stride[0], p.stride[1], p.dilation[0], p.dilation[1]);
}

namespace {
/// Emits the body of @conv line by line with fresh SSA names.
class ConvEmitter {
public:
  ConvEmitter(const ConvProblem &p, llvm::raw_ostream &os)
      : p(p), os(os), elem(toString(p.dtype)), acc("f32") {}

  void emit() {
    bool nchw = p.layout == Layout::NCHW;
    os << "func.func @conv(%input: " << tensorType(p.inputShape(), elem)
       << ", %filter: " << tensorType(p.filterShape(), elem);
    if (p.bias)
      os << ", %bias: " << tensorType(p.biasShape(), elem);
    os << ") -> " << tensorType(p.outputShape(), acc) << " {\n";
    std::string x = padInput(nchw);
    std::string y;
    if (p.groups == 1)
      y = emitUngrouped(x, nchw);
    else if (nchw && p.isDepthwise())
      y = emitDepthwiseNchw(x);
    else
      y = emitGrouped(x, nchw);
    if (p.bias)
      y = emitBias(y, nchw);
    os << "  return " << y << " : " << tensorType(p.outputShape(), acc)
       << "\n}\n";
  }

private:
  llvm::SmallVector<int64_t> paddedInputShape(bool nchw) const {
    int64_t hp = p.h + p.padding[0] + p.padding[2];
    int64_t wp = p.w + p.padding[1] + p.padding[3];
    if (nchw)
      return {p.n, p.c, hp, wp};
    return {p.n, hp, wp, p.c};
  }

  std::string padInput(bool nchw) {
    if (llvm::all_of(p.padding, [](int64_t v) { return v == 0; }))
      return "%input";
    os << "  %pad_value = arith.constant 0.0 : " << elem << "\n";
    std::string low = nchw ? formatv("[0, 0, {0}, {1}]", p.padding[0], p.padding[1])
                           : formatv("[0, {0}, {1}, 0]", p.padding[0], p.padding[1]);
    std::string high = nchw ? formatv("[0, 0, {0}, {1}]", p.padding[2], p.padding[3])
                            : formatv("[0, {0}, {1}, 0]", p.padding[2], p.padding[3]);
    os << "  %padded = tensor.pad %input low" << low << " high" << high
       << " {\n  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):\n"
       << "    tensor.yield %pad_value : " << elem << "\n  } : "
       << tensorType(p.inputShape(), elem) << " to "
       << tensorType(paddedInputShape(nchw), elem) << "\n";
    return "%padded";
  }

  /// A zero-filled f32 tensor of `shape`.
  std::string zeroInit(llvm::ArrayRef<int64_t> shape) {
    std::string type = tensorType(shape, acc);
    os << "  %zero = arith.constant 0.0 : " << acc << "\n";
    os << "  %empty = tensor.empty() : " << type << "\n";
    os << "  %init = linalg.fill ins(%zero : " << acc << ") outs(%empty : "
       << type << ") -> " << type << "\n";
    return "%init";
  }

  std::string emitConv(llvm::StringRef op, llvm::StringRef x,
                       llvm::ArrayRef<int64_t> xShape, llvm::StringRef w,
                       llvm::ArrayRef<int64_t> wShape,
                       llvm::ArrayRef<int64_t> yShape) {
    std::string init = zeroInit(yShape);
    std::string yType = tensorType(yShape, acc);
    os << "  %conv = linalg." << op << " " << attrs(p) << "\n      ins(" << x
       << ", " << w << " : " << tensorType(xShape, elem) << ", "
       << tensorType(wShape, elem) << ") outs(" << init << " : " << yType
       << ") -> " << yType << "\n";
    return "%conv";
  }

  std::string emitUngrouped(llvm::StringRef x, bool nchw) {
    return emitConv(nchw ? "conv_2d_nchw_fchw" : "conv_2d_nhwc_fhwc", x,
                    paddedInputShape(nchw), "%filter", p.filterShape(),
                    p.outputShape());
  }

  /// Depthwise NCHW: the [C, 1, KH, KW] filter is a [C, KH, KW] one.
  std::string emitDepthwiseNchw(llvm::StringRef x) {
    llvm::SmallVector<int64_t> wShape = {p.c, p.kh, p.kw};
    os << "  %filter_dw = tensor.collapse_shape %filter [[0, 1], [2], [3]] : "
       << tensorType(p.filterShape(), elem) << " into "
       << tensorType(wShape, elem) << "\n";
    return emitConv("depthwise_conv_2d_nchw_chw", x, paddedInputShape(true),
                    "%filter_dw", wShape, p.outputShape());
  }

  /// Grouped: split C and F into (G, Cg) and (G, Fg) by reshapes and use the
  /// NGCHW/GFCHW or NHWGC/GFHWC op; merge (G, Fg) back afterwards.
  std::string emitGrouped(llvm::StringRef x, bool nchw) {
    int64_t g = p.groups;
    llvm::SmallVector<int64_t> xs = paddedInputShape(nchw);
    llvm::SmallVector<int64_t> xg, wg, yg;
    std::string xr, yr;
    if (nchw) {
      xg = {xs[0], g, p.cg(), xs[2], xs[3]};
      wg = {g, p.fg(), p.cg(), p.kh, p.kw};
      yg = {p.n, g, p.fg(), p.ho(), p.wo()};
      xr = yr = "[[0], [1, 2], [3], [4]]";
    } else {
      xg = {xs[0], xs[1], xs[2], g, p.cg()};
      wg = {g, p.fg(), p.kh, p.kw, p.cg()};
      yg = {p.n, p.ho(), p.wo(), g, p.fg()};
      xr = yr = "[[0], [1], [2], [3, 4]]";
    }
    auto list = [](llvm::ArrayRef<int64_t> v) {
      return "[" +
             llvm::join(llvm::map_range(
                            v, [](int64_t d) { return std::to_string(d); }),
                        ", ") +
             "]";
    };
    os << "  %input_g = tensor.expand_shape " << x << " " << xr
       << " output_shape " << list(xg) << " : " << tensorType(xs, elem)
       << " into " << tensorType(xg, elem) << "\n";
    os << "  %filter_g = tensor.expand_shape %filter [[0, 1], [2], [3], [4]] "
          "output_shape "
       << list(wg) << " : " << tensorType(p.filterShape(), elem) << " into "
       << tensorType(wg, elem) << "\n";
    std::string y = emitConv(nchw ? "conv_2d_ngchw_gfchw" : "conv_2d_nhwgc_gfhwc",
                             "%input_g", xg, "%filter_g", wg, yg);
    os << "  %conv_merged = tensor.collapse_shape " << y << " " << yr << " : "
       << tensorType(yg, acc) << " into " << tensorType(p.outputShape(), acc)
       << "\n";
    return "%conv_merged";
  }

  std::string emitBias(llvm::StringRef y, bool nchw) {
    std::string yType = tensorType(p.outputShape(), acc);
    llvm::StringRef channel = nchw ? "d1" : "d3";
    os << "  %biased = linalg.generic {indexing_maps = [affine_map<(d0, d1, "
          "d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> ("
       << channel
       << ")>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], "
          "iterator_types = [\"parallel\", \"parallel\", \"parallel\", "
          "\"parallel\"]}\n      ins("
       << y << ", %bias : " << yType << ", "
       << tensorType(p.biasShape(), elem) << ") outs(" << y << " : " << yType
       << ") {\n  ^bb0(%acc_in: f32, %b_in: " << elem << ", %out: f32):\n";
    std::string b = "%b_in";
    if (elem != "f32") {
      os << "    %b_ext = arith.extf %b_in : " << elem << " to f32\n";
      b = "%b_ext";
    }
    os << "    %sum = arith.addf %acc_in, " << b << " : f32\n"
       << "    linalg.yield %sum : f32\n  } -> " << yType << "\n";
    return "%biased";
  }

  const ConvProblem &p;
  llvm::raw_ostream &os;
  llvm::StringRef elem, acc;
};
} // namespace

std::string mlir::conv_lower::buildConvModule(const ConvProblem &problem) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// conv-run: " << problem.describe() << "\n";
  ConvEmitter(problem, os).emit();
  return text;
}
