//===- ConvProblem.cpp - validation and derived sizes ---------------------===//

#include "ConvLower/Runner/ConvProblem.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir::conv_lower;
using llvm::createStringError;
using llvm::formatv;

llvm::StringRef mlir::conv_lower::toString(Layout layout) {
  return layout == Layout::NCHW ? "nchw" : "nhwc";
}

llvm::StringRef mlir::conv_lower::toString(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

int64_t mlir::conv_lower::elementBytes(DType dtype) {
  return dtype == DType::F32 ? 4 : 2;
}

convrt::DType mlir::conv_lower::toRuntime(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return convrt::DType::F32;
  case DType::F16:
    return convrt::DType::F16;
  case DType::BF16:
    return convrt::DType::BF16;
  }
  return convrt::DType::F32;
}

convrt::ConvProblem ConvProblem::runtime() const {
  convrt::ConvProblem r;
  r.layout = layout == Layout::NCHW ? convrt::Layout::NCHW
                                    : convrt::Layout::NHWC;
  r.filterLayout = layout == Layout::NCHW ? convrt::FilterLayout::FCHW
                                          : convrt::FilterLayout::FHWC;
  r.n = n, r.c = c, r.h = h, r.w = w;
  r.f = f, r.kh = kh, r.kw = kw;
  r.strideH = stride[0], r.strideW = stride[1];
  r.dilationH = dilation[0], r.dilationW = dilation[1];
  r.padTop = padding[0], r.padLeft = padding[1];
  r.padBottom = padding[2], r.padRight = padding[3];
  r.groups = groups;
  r.dtype = toRuntime(dtype);
  r.accumulate = convrt::DType::F32;
  r.hasBias = bias;
  return r;
}

int64_t ConvProblem::ho() const { return runtime().outH(); }
int64_t ConvProblem::wo() const { return runtime().outW(); }

llvm::SmallVector<int64_t> ConvProblem::inputShape() const {
  return llvm::to_vector(runtime().inputShape());
}
llvm::SmallVector<int64_t> ConvProblem::filterShape() const {
  return llvm::to_vector(runtime().filterShape());
}
llvm::SmallVector<int64_t> ConvProblem::outputShape() const {
  return llvm::to_vector(runtime().outputShape());
}

double ConvProblem::flops() const { return runtime().flops(); }
int64_t ConvProblem::inputBytes() const {
  return n * c * h * w * elementBytes(dtype);
}
int64_t ConvProblem::im2colBytes() const {
  return groups * (n * ho() * wo()) * (cg() * kh * kw) * elementBytes(dtype);
}

llvm::Error ConvProblem::validate() const {
  auto positive = [](llvm::ArrayRef<int64_t> v) {
    return llvm::all_of(v, [](int64_t x) { return x > 0; });
  };
  if (!positive({n, c, h, w}))
    return createStringError(
        formatv("input shape N,C,H,W = {0},{1},{2},{3} must be positive", n, c,
                h, w));
  if (!positive({f, kh, kw}))
    return createStringError(
        formatv("filter F, KH, KW = {0}, {1}, {2} must be positive", f, kh, kw));
  if (groups < 1)
    return createStringError(formatv("--groups must be positive, got {0}", groups));
  if (c % groups != 0)
    return createStringError(formatv(
        "input channels C={0} are not divisible by groups G={1}", c, groups));
  if (f % groups != 0)
    return createStringError(formatv(
        "filter count F={0} is not divisible by groups G={1}", f, groups));
  if (!positive(stride))
    return createStringError(formatv("--stride must be positive, got {0},{1}",
                                     stride[0], stride[1]));
  if (!positive(dilation))
    return createStringError(formatv(
        "--dilation must be positive, got {0},{1}", dilation[0], dilation[1]));
  if (llvm::any_of(padding, [](int64_t p) { return p < 0; }))
    return createStringError(
        formatv("--padding must be non-negative, got {0},{1},{2},{3}",
                padding[0], padding[1], padding[2], padding[3]));
  if (llvm::Error e = checkSizes())
    return e;
  if (ho() < 1 || wo() < 1)
    return createStringError(formatv(
        "the {0}x{1} kernel (dilation {2}x{3}) does not fit the {4}x{5} input "
        "padded by top,left,bottom,right = {6},{7},{8},{9}",
        kh, kw, dilation[0], dilation[1], h, w, padding[0], padding[1],
        padding[2], padding[3]));
  return llvm::Error::success();
}

/// Every tensor the run materializes (X_col included) must be indexable with
/// 32-bit element counts and fit in memory; products are formed in floating
/// point so that absurd shapes cannot overflow on the way.
llvm::Error ConvProblem::checkSizes() const {
  constexpr double kMaxElements = 2147483647.0; // 2^31 - 1
  auto elements = [](std::initializer_list<double> dims) {
    double n = 1;
    for (double d : dims)
      n *= d;
    return n;
  };
  double outH = std::max<int64_t>(ho(), 1), outW = std::max<int64_t>(wo(), 1);
  struct Named {
    const char *name;
    double count;
  } tensors[] = {
      {"input", elements({double(n), double(c), double(h), double(w)})},
      {"filter", elements({double(f), double(cg()), double(kh), double(kw)})},
      {"output", elements({double(n), double(f), outH, outW})},
      {"X_col (im2col)", elements({double(n), outH, outW, double(cg()),
                                   double(kh), double(kw), double(groups)})},
  };
  for (const Named &t : tensors)
    if (t.count > kMaxElements)
      return createStringError(formatv(
          "the problem is too large: the {0} would have {1:E2} elements "
          "(at most 2^31-1 are supported)",
          t.name, t.count));
  return llvm::Error::success();
}

std::string ConvProblem::describe() const {
  std::string s = formatv("N{0} C{1} {2}x{3} F{4} {5}x{6}", n, c, h, w, f, kh, kw);
  auto pair = [](std::array<int64_t, 2> v) {
    return v[0] == v[1] ? std::to_string(v[0])
                        : formatv("{0},{1}", v[0], v[1]).str();
  };
  s += " s" + pair(stride);
  if (dilation != std::array<int64_t, 2>{1, 1})
    s += " d" + pair(dilation);
  if (llvm::all_equal(padding))
    s += " p" + std::to_string(padding[0]);
  else
    s += formatv(" p{0},{1},{2},{3}", padding[0], padding[1], padding[2],
                 padding[3]).str();
  s += " g" + std::to_string(groups);
  s += " " + toString(dtype).str() + " " + toString(layout).str();
  if (bias)
    s += " +bias";
  return s;
}

llvm::Expected<llvm::SmallVector<int64_t>>
mlir::conv_lower::parseIntList(llvm::StringRef text, llvm::StringRef flag,
                               llvm::ArrayRef<size_t> allowedCounts,
                               bool allowZero) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  llvm::SmallVector<int64_t> values;
  for (llvm::StringRef part : parts) {
    int64_t v;
    if (part.trim().getAsInteger(10, v))
      return createStringError(formatv(
          "{0} expects comma-separated integers, got '{1}'", flag, text));
    if (v < 0 || (v == 0 && !allowZero))
      return createStringError(
          formatv("{0} expects {1} integers, got '{2}'", flag,
                  allowZero ? "non-negative" : "positive", text));
    values.push_back(v);
  }
  if (!llvm::is_contained(allowedCounts, values.size())) {
    std::string counts;
    for (auto [i, n] : llvm::enumerate(allowedCounts))
      counts += (i == 0 ? "" : i + 1 == allowedCounts.size() ? " or " : ", ") +
                std::to_string(n);
    return createStringError(formatv("{0} expects {1} value{2}, got '{3}'",
                                     flag, counts,
                                     allowedCounts.back() == 1 ? "" : "s",
                                     text));
  }
  return values;
}

llvm::Expected<ConvProblem>
mlir::conv_lower::problemFromFlags(const ConvFlags &flags) {
  ConvProblem p;
  if (flags.inputShape.empty() || flags.filterShape.empty())
    return createStringError(
        "give a .mlir file, or --input-shape N,C,H,W and --filter-shape "
        "F,C/G,KH,KW");
  auto in = parseIntList(flags.inputShape, "--input-shape", {4});
  if (!in)
    return in.takeError();
  auto fi = parseIntList(flags.filterShape, "--filter-shape", {4});
  if (!fi)
    return fi.takeError();
  auto st = parseIntList(flags.stride, "--stride", {1, 2});
  if (!st)
    return st.takeError();
  auto di = parseIntList(flags.dilation, "--dilation", {1, 2});
  if (!di)
    return di.takeError();
  auto pa = parseIntList(flags.padding, "--padding", {1, 2, 4},
                         /*allowZero=*/true);
  if (!pa)
    return pa.takeError();

  p.n = (*in)[0], p.c = (*in)[1], p.h = (*in)[2], p.w = (*in)[3];
  p.f = (*fi)[0], p.kh = (*fi)[2], p.kw = (*fi)[3];
  p.groups = flags.groups;
  p.stride = {(*st)[0], st->back()};
  p.dilation = {(*di)[0], di->back()};
  if (pa->size() == 1)
    p.padding = {(*pa)[0], (*pa)[0], (*pa)[0], (*pa)[0]};
  else if (pa->size() == 2) // torch: (PH, PW)
    p.padding = {(*pa)[0], (*pa)[1], (*pa)[0], (*pa)[1]};
  else
    p.padding = {(*pa)[0], (*pa)[1], (*pa)[2], (*pa)[3]};
  p.bias = flags.bias;

  if (flags.layout == "nchw")
    p.layout = Layout::NCHW;
  else if (flags.layout == "nhwc")
    p.layout = Layout::NHWC;
  else
    return createStringError(
        formatv("--layout must be nchw or nhwc, got '{0}'", flags.layout));
  if (flags.dtype == "f32")
    p.dtype = DType::F32;
  else if (flags.dtype == "f16")
    p.dtype = DType::F16;
  else if (flags.dtype == "bf16")
    p.dtype = DType::BF16;
  else
    return createStringError(
        formatv("--dtype must be f32, f16 or bf16, got '{0}'", flags.dtype));

  if (p.groups >= 1 && p.c % p.groups == 0 && (*fi)[1] != p.c / p.groups)
    return createStringError(formatv(
        "filter has {0} input channels per group but the input has C/G = "
        "{1}/{2} = {3}",
        (*fi)[1], p.c, p.groups, p.c / p.groups));
  if (llvm::Error e = p.validate())
    return std::move(e);
  return p;
}
