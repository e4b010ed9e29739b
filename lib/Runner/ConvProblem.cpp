//===- ConvProblem.cpp - validation and derived sizes ---------------------===//

#include "ConvLower/Runner/ConvProblem.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <array>

using namespace mlir::conv_lower;
using llvm::createStringError;
using llvm::formatv;

llvm::StringRef mlir::conv_lower::toString(Layout layout) {
  return layout == Layout::NCHW ? "nchw" : "nhwc";
}

llvm::StringRef mlir::conv_lower::toString(DType dtype) {
  return convrt::dtypeName(dtype);
}

int64_t mlir::conv_lower::elementBytes(DType dtype) {
  return convrt::dtypeSize(convrt::storageType(dtype));
}

bool mlir::conv_lower::isDepthwise(const ConvProblem &p) {
  return p.groups == p.c && p.groups == p.f && p.groups > 1;
}

int64_t mlir::conv_lower::inputBytes(const ConvProblem &p) {
  return p.inputElements() * elementBytes(p.dtype);
}

int64_t mlir::conv_lower::im2colBytes(const ConvProblem &p) {
  if (p.isPooling())
    return 0; // pooled directly: no column matrix
  return p.groups * (p.n * p.outD() * p.outH() * p.outW()) *
         (p.channelsPerGroup() * p.kd * p.kh * p.kw) * elementBytes(p.dtype);
}

/// Every tensor the run materializes (X_col included) must be indexable with
/// 32-bit element counts and fit in memory; products are formed in floating
/// point so that absurd shapes cannot overflow on the way.
static llvm::Error checkSizes(const ConvProblem &p);

llvm::Error mlir::conv_lower::validateProblem(const ConvProblem &p) {
  const int64_t n = p.n, c = p.c, h = p.h, w = p.w, f = p.f, kh = p.kh,
                kw = p.kw, groups = p.groups;
  const std::array<int64_t, 2> stride = {p.strideH, p.strideW},
                               dilation = {p.dilationH, p.dilationW};
  const std::array<int64_t, 4> padding = {p.padTop, p.padLeft, p.padBottom,
                                          p.padRight};
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
  // One dimension over runtime/'s tensor limit makes some tensor too large;
  // refusing it here keeps the output-size formula below free of overflow.
  if (llvm::any_of(std::initializer_list<int64_t>{n, c, h, w, f, kh, kw},
                   [](int64_t d) { return d > convrt::kMaxTensorElements; }))
    return createStringError(
        "the problem is too large: a dimension exceeds 2^31-1 elements");
  auto tooLarge = [](int64_t v) { return v > kMaxWindowParameter; };
  if (llvm::any_of(stride, tooLarge) || llvm::any_of(dilation, tooLarge) ||
      llvm::any_of(padding, tooLarge))
    return createStringError(formatv(
        "stride, dilation and padding are limited to {0}", kMaxWindowParameter));
  if (p.isQuantized() && p.hasBias)
    return createStringError("--bias takes float data: an i8 convolution's "
                             "i32 output has no bias here");
  for (int64_t zero : {p.inputZeroPoint, p.filterZeroPoint})
    if (zero < -128 || zero > 127)
      return createStringError(formatv(
          "--zero-points are i8 values (-128..127), got {0},{1}",
          p.inputZeroPoint, p.filterZeroPoint));
  if (llvm::Error e = checkSizes(p))
    return e;
  if (p.outH() < 1 || p.outW() < 1)
    return createStringError(formatv(
        "the {0}x{1} kernel (dilation {2}x{3}) does not fit the {4}x{5} input "
        "padded by top,left,bottom,right = {6},{7},{8},{9}",
        kh, kw, dilation[0], dilation[1], h, w, padding[0], padding[1],
        padding[2], padding[3]));
  if (p.hasDepth) {
    if (p.groups != 1)
      return createStringError(
          "a 3-D convolution from flags takes --groups 1 (linalg has no "
          "grouped 3-D op; give a .mlir file with a depthwise_conv_3d)");
    if (p.isQuantized())
      return createStringError("--dtype i8 takes 2-D shapes (give a .mlir "
                               "file with conv_3d_ndhwc_dhwcf_q)");
    // The depth's own rules (positive, limits, the kernel fits): runtime/'s.
    convrt::Error invalid = p.validate();
    if (!invalid.ok())
      return createStringError(invalid.message());
  }
  if (p.isPooling()) {
    // Max pooling's own rules (float data, the padding): runtime/'s.
    convrt::Error invalid = p.validatePooling();
    if (!invalid.ok())
      return createStringError(invalid.message());
  }
  return llvm::Error::success();
}

static llvm::Error checkSizes(const ConvProblem &p) {
  const int64_t n = p.n, c = p.c, h = p.h, w = p.w, f = p.f, kh = p.kh,
                kw = p.kw, groups = p.groups, cg = p.channelsPerGroup();
  constexpr double kMaxElements = convrt::kMaxTensorElements; // 2^31 - 1
  auto elements = [](std::initializer_list<double> dims) {
    double n = 1;
    for (double d : dims)
      n *= d;
    return n;
  };
  double outH = std::max<int64_t>(p.outH(), 1),
         outW = std::max<int64_t>(p.outW(), 1),
         outD = std::max<int64_t>(p.outD(), 1), d = double(p.d),
         kd = double(p.kd);
  struct Named {
    const char *name;
    double count;
  } tensors[] = {
      {"input", elements({double(n), double(c), d, double(h), double(w)})},
      {"filter", elements({double(f), double(cg), kd, double(kh), double(kw)})},
      {"output", elements({double(n), double(f), outD, outH, outW})},
      {"X_col (im2col)", elements({double(n), outD, outH, outW, double(cg), kd,
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

std::string mlir::conv_lower::describeProblem(const ConvProblem &p) {
  const std::array<int64_t, 2> stride = {p.strideH, p.strideW},
                               dilation = {p.dilationH, p.dilationW};
  const std::array<int64_t, 4> padding = {p.padTop, p.padLeft, p.padBottom,
                                          p.padRight};
  const int64_t n = p.n, c = p.c, h = p.h, w = p.w, f = p.f, kh = p.kh,
                kw = p.kw, groups = p.groups;
  std::string s =
      p.hasDepth
          ? formatv("N{0} C{1} {2}x{3}x{4} F{5} {6}x{7}x{8}", n, c, p.d, h, w,
                    f, p.kd, kh, kw)
                .str()
          : formatv("N{0} C{1} {2}x{3} F{4} {5}x{6}", n, c, h, w, f, kh, kw)
                .str();
  if (p.hasDepth)
    s += formatv(" s{0},{1},{2} d{3},{4},{5} p{6},{7},{8},{9},{10},{11}",
                 p.strideD, p.strideH, p.strideW, p.dilationD, p.dilationH,
                 p.dilationW, p.padFront, p.padTop, p.padLeft, p.padBack,
                 p.padBottom, p.padRight)
             .str();
  auto pair = [](std::array<int64_t, 2> v) {
    return v[0] == v[1] ? std::to_string(v[0])
                        : formatv("{0},{1}", v[0], v[1]).str();
  };
  if (!p.hasDepth) {
    s += " s" + pair(stride);
    if (dilation != std::array<int64_t, 2>{1, 1})
      s += " d" + pair(dilation);
    if (llvm::all_equal(padding))
      s += " p" + std::to_string(padding[0]);
    else
      s += formatv(" p{0},{1},{2},{3}", padding[0], padding[1], padding[2],
                   padding[3]).str();
  }
  s += " g" + std::to_string(groups);
  s += " " + toString(p.dtype).str() + " " + toString(p.layout).str();
  if (p.isQuantized())
    s += formatv(" zp{0},{1}", p.inputZeroPoint, p.filterZeroPoint).str();
  if (p.hasBias)
    s += " +bias";
  if (p.isPooling())
    s = "maxpool " + s;
  return s;
}

llvm::Expected<llvm::SmallVector<int64_t>>
mlir::conv_lower::parseIntList(llvm::StringRef text, llvm::StringRef flag,
                               llvm::ArrayRef<size_t> allowedCounts,
                               bool allowZero, int64_t max) {
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
    if (v > max)
      return createStringError(formatv(
          "{0} values are limited to {1}, got '{2}'", flag, max, text));
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

namespace {

/// How many values --stride/--dilation and --padding take for an input of
/// `rank` (torch's conv1d, conv2d, conv3d).
llvm::SmallVector<size_t> windowCounts(size_t rank) {
  if (rank == 3)
    return {1};
  return rank == 5 ? llvm::SmallVector<size_t>{1, 3}
                   : llvm::SmallVector<size_t>{1, 2};
}
llvm::SmallVector<size_t> paddingCounts(size_t rank) {
  if (rank == 3)
    return {1, 2};
  return rank == 5 ? llvm::SmallVector<size_t>{1, 3, 6}
                   : llvm::SmallVector<size_t>{1, 2, 4};
}

/// The parsed shape and window flags, in torch's rank.
struct TorchWindow {
  llvm::SmallVector<int64_t> input, filter, stride, dilation, padding;
};

/// torch's conv1d, N,C,L with an F,C/G,K filter, as the 2-D convolution
/// with H = KH = 1: (N, C, L) -> (N, C, 1, L); padding P or (left, right).
void liftConv1d(TorchWindow &t) {
  t.input.insert(t.input.begin() + 2, 1);
  t.filter.insert(t.filter.begin() + 2, 1);
  t.stride.insert(t.stride.begin(), 1);
  t.dilation.insert(t.dilation.begin(), 1);
  int64_t left = t.padding.front(), right = t.padding.back();
  t.padding = {0, left, 0, right};
}

/// torch's conv3d, N,C,D,H,W with F,C/G,KD,KH,KW: the depth goes into `p`
/// and what is left is the 2-D problem's. Padding P, (PD, PH, PW) as torch,
/// or front, top, left, back, bottom, right.
void takeDepth(TorchWindow &t, ConvProblem &p) {
  p.hasDepth = true;
  p.d = t.input[2], p.kd = t.filter[2];
  t.input.erase(t.input.begin() + 2);
  t.filter.erase(t.filter.begin() + 2);
  p.strideD = t.stride.front(), p.dilationD = t.dilation.front();
  if (t.stride.size() == 3)
    t.stride.erase(t.stride.begin());
  if (t.dilation.size() == 3)
    t.dilation.erase(t.dilation.begin());
  llvm::SmallVector<int64_t> all = t.padding;
  if (all.size() == 1)
    all.assign(6, all[0]);
  else if (all.size() == 3)
    all = {all[0], all[1], all[2], all[0], all[1], all[2]};
  p.padFront = all[0], p.padBack = all[3];
  t.padding = {all[1], all[2], all[4], all[5]};
}

/// --zero-points XZ,WZ (signed: parseIntList takes non-negative values only).
llvm::Error parseZeroPoints(llvm::StringRef text, ConvProblem &p) {
  if (text.empty())
    return llvm::Error::success();
  if (!p.isQuantized())
    return createStringError(
        "--zero-points needs --dtype i8 (a quantized convolution)");
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  int64_t zx, zw;
  if (parts.size() != 2 || parts[0].trim().getAsInteger(10, zx) ||
      parts[1].trim().getAsInteger(10, zw))
    return createStringError(
        formatv("--zero-points expects XZ,WZ (two integers), got '{0}'", text));
  p.inputZeroPoint = zx, p.filterZeroPoint = zw;
  return llvm::Error::success();
}

} // namespace

/// --pool max: the problem of a depthwise convolution whose filter is the
/// window ([C, 1, KH, KW], C groups), computing the maximum.
static llvm::Expected<ConvProblem> maxPoolFromFlags(const ConvFlags &flags) {
  if (flags.inputShape.empty() || flags.window.empty() ||
      !flags.filterShape.empty())
    return createStringError(
        "--pool max takes --input-shape N,C,H,W and --window KH,KW (not "
        "--filter-shape)");
  if (flags.bias || flags.groups != 1 || !flags.zeroPoints.empty())
    return createStringError("--pool max takes no --bias, --groups or "
                             "--zero-points (each channel pools alone)");
  auto in = parseIntList(flags.inputShape, "--input-shape", {3, 4});
  if (!in)
    return in.takeError();
  auto window = parseIntList(flags.window, "--window", {in->size() - 2});
  if (!window)
    return window.takeError();
  llvm::SmallVector<int64_t> filter = {(*in)[1], 1};
  filter.append(window->begin(), window->end());
  ConvFlags conv = flags;
  conv.maxPool = false;
  conv.filterShape = llvm::join(
      llvm::map_range(filter, [](int64_t v) { return std::to_string(v); }),
      ",");
  conv.groups = (*in)[1];
  auto p = problemFromFlags(conv);
  if (!p)
    return p.takeError();
  p->pooling = convrt::Pooling::Max;
  if (llvm::Error e = validateProblem(*p))
    return std::move(e);
  return p;
}

llvm::Expected<ConvProblem>
mlir::conv_lower::problemFromFlags(const ConvFlags &flags) {
  ConvProblem p;
  if (flags.maxPool)
    return maxPoolFromFlags(flags);
  if (flags.inputShape.empty() || flags.filterShape.empty())
    return createStringError(
        "give a .mlir file, or --input-shape N,C,H,W and --filter-shape "
        "F,C/G,KH,KW (or --pool max and --window KH,KW)");
  auto in = parseIntList(flags.inputShape, "--input-shape", {3, 4, 5});
  if (!in)
    return in.takeError();
  size_t rank = in->size();
  auto fi = parseIntList(flags.filterShape, "--filter-shape", {rank});
  if (!fi)
    return fi.takeError();
  auto st = parseIntList(flags.stride, "--stride", windowCounts(rank), false,
                         kMaxWindowParameter);
  if (!st)
    return st.takeError();
  auto di = parseIntList(flags.dilation, "--dilation", windowCounts(rank),
                         false, kMaxWindowParameter);
  if (!di)
    return di.takeError();
  auto pa = parseIntList(flags.padding, "--padding", paddingCounts(rank),
                         /*allowZero=*/true, kMaxWindowParameter);
  if (!pa)
    return pa.takeError();
  TorchWindow t{*in, *fi, *st, *di, *pa};
  if (rank == 3)
    liftConv1d(t);
  else if (rank == 5)
    takeDepth(t, p);

  p.n = t.input[0], p.c = t.input[1], p.h = t.input[2], p.w = t.input[3];
  p.f = t.filter[0], p.kh = t.filter[2], p.kw = t.filter[3];
  p.groups = flags.groups;
  p.strideH = t.stride[0], p.strideW = t.stride.back();
  p.dilationH = t.dilation[0], p.dilationW = t.dilation.back();
  llvm::ArrayRef<int64_t> pads = t.padding;
  if (pads.size() == 1)
    p.padTop = p.padLeft = p.padBottom = p.padRight = pads[0];
  else if (pads.size() == 2) // torch: (PH, PW)
    p.padTop = p.padBottom = pads[0], p.padLeft = p.padRight = pads[1];
  else
    p.padTop = pads[0], p.padLeft = pads[1], p.padBottom = pads[2],
    p.padRight = pads[3];
  p.hasBias = flags.bias;
  p.layout = flags.layout;
  p.filterLayout = convrt::defaultFilterLayout(flags.layout);
  p.dtype = flags.dtype;
  p.accumulate = p.isQuantized() ? DType::I32 : DType::F32;
  if (llvm::Error e = parseZeroPoints(flags.zeroPoints, p))
    return std::move(e);

  if (p.groups >= 1 && p.c % p.groups == 0 && t.filter[1] != p.c / p.groups)
    return createStringError(formatv(
        "filter has {0} input channels per group but the input has C/G = "
        "{1}/{2} = {3}",
        t.filter[1], p.c, p.groups, p.c / p.groups));
  if (llvm::Error e = validateProblem(p))
    return std::move(e);
  return p;
}
