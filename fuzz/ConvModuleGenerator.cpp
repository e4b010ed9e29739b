//===- ConvModuleGenerator.cpp - conv modules from fuzz bytes -------------===//
//
// Dimension letters: n batch, g group (depthwise and pooling: the channel),
// c input channel of a group, f output channel of a group (depthwise: the
// multiplier), d h w the output's (and, windowed, the input's) spatial
// dimensions, q r s their kernel dimensions. A form is three strings of
// letters, the axes of input, filter and output, as in the linalg op's
// indexing maps (LinalgNamedStructuredOps.yamlgen.td); the same strings give
// the generic spelling's maps.
//
//===----------------------------------------------------------------------===//

#include "ConvModuleGenerator.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

namespace conv_lower_fuzz {

int64_t FuzzInput::range(int64_t lo, int64_t hi) {
  if (hi <= lo)
    return lo;
  uint64_t span = uint64_t(hi - lo);
  uint64_t value = 0;
  // Little-endian, one byte per 8 bits of span: a byte mutation moves one
  // choice, not every choice after it.
  for (uint64_t bits = 0; bits < 64 && (span >> bits) != 0; bits += 8) {
    uint64_t byte = pos < size ? data[pos++] : 0;
    value |= byte << bits;
  }
  return lo + int64_t(value % (span + 1));
}

int64_t FuzzInput::small(int64_t lo, int64_t hi) {
  // Two draws, keep the smaller: P(v) falls linearly from lo to hi.
  return std::min(range(lo, hi), range(lo, hi));
}

namespace {

enum class OpKind {
  Conv,      // strides + dilations attributes
  Plain,     // linalg.conv_1d/2d/3d: no attributes, unit strides
  Quantized, // + two i32 zero points
  Pooling,   // shape-only window operand
};

struct Form {
  std::string op;
  std::string x, w, y;
  OpKind kind;
};

const std::vector<Form> &forms() {
  static const std::vector<Form> table = {
      {"conv_1d_nwc_wcf", "nwc", "scf", "nwf", OpKind::Conv},
      {"conv_1d_ncw_fcw", "ncw", "fcs", "nfw", OpKind::Conv},
      {"conv_2d_nchw_fchw", "nchw", "fcrs", "nfhw", OpKind::Conv},
      {"conv_2d_nhwc_hwcf", "nhwc", "rscf", "nhwf", OpKind::Conv},
      {"conv_2d_nhwc_fhwc", "nhwc", "frsc", "nhwf", OpKind::Conv},
      {"conv_2d_ngchw_fgchw", "ngchw", "fgcrs", "ngfhw", OpKind::Conv},
      {"conv_2d_ngchw_gfchw", "ngchw", "gfcrs", "ngfhw", OpKind::Conv},
      {"conv_2d_nhwgc_gfhwc", "nhwgc", "gfrsc", "nhwgf", OpKind::Conv},
      {"conv_3d_ndhwc_dhwcf", "ndhwc", "qrscf", "ndhwf", OpKind::Conv},
      {"conv_3d_ncdhw_fcdhw", "ncdhw", "fcqrs", "nfdhw", OpKind::Conv},
      {"depthwise_conv_1d_nwc_wc", "nwg", "sg", "nwg", OpKind::Conv},
      {"depthwise_conv_1d_ncw_cw", "ngw", "gs", "ngw", OpKind::Conv},
      {"depthwise_conv_1d_nwc_wcm", "nwg", "sgf", "nwgf", OpKind::Conv},
      {"depthwise_conv_2d_nchw_chw", "nghw", "grs", "nghw", OpKind::Conv},
      {"depthwise_conv_2d_nhwc_hwc", "nhwg", "rsg", "nhwg", OpKind::Conv},
      {"depthwise_conv_2d_nhwc_hwcm", "nhwg", "rsgf", "nhwgf", OpKind::Conv},
      {"depthwise_conv_3d_ndhwc_dhwc", "ndhwg", "qrsg", "ndhwg", OpKind::Conv},
      {"depthwise_conv_3d_ncdhw_cdhw", "ngdhw", "gqrs", "ngdhw", OpKind::Conv},
      {"depthwise_conv_3d_ndhwc_dhwcm", "ndhwg", "qrsgf", "ndhwgf",
       OpKind::Conv},
      {"conv_1d", "w", "s", "w", OpKind::Plain},
      {"conv_2d", "hw", "rs", "hw", OpKind::Plain},
      {"conv_3d", "dhw", "qrs", "dhw", OpKind::Plain},
      {"conv_2d_nchw_fchw_q", "nchw", "fcrs", "nfhw", OpKind::Quantized},
      {"conv_2d_nhwc_hwcf_q", "nhwc", "rscf", "nhwf", OpKind::Quantized},
      {"conv_2d_nhwc_fhwc_q", "nhwc", "frsc", "nhwf", OpKind::Quantized},
      {"conv_2d_ngchw_gfchw_q", "ngchw", "gfcrs", "ngfhw", OpKind::Quantized},
      {"conv_2d_nhwgc_gfhwc_q", "nhwgc", "gfrsc", "nhwgf", OpKind::Quantized},
      {"conv_3d_ndhwc_dhwcf_q", "ndhwc", "qrscf", "ndhwf", OpKind::Quantized},
      {"depthwise_conv_2d_nhwc_hwc_q", "nhwg", "rsg", "nhwg",
       OpKind::Quantized},
      {"depthwise_conv_2d_nhwc_hwcm_q", "nhwg", "rsgf", "nhwgf",
       OpKind::Quantized},
      {"pooling_nhwc_sum", "nhwg", "rs", "nhwg", OpKind::Pooling},
      {"pooling_nchw_max", "nghw", "rs", "nghw", OpKind::Pooling},
      {"pooling_nwc_sum", "nwg", "s", "nwg", OpKind::Pooling},
      {"pooling_ndhwc_max", "ndhwg", "qrs", "ndhwg", OpKind::Pooling},
  };
  return table;
}

/// The forms ConvLower's rewrites take today, drawn more often than the rest.
bool isTakenForm(const Form &form) {
  static const char *taken[] = {
      "conv_2d_nchw_fchw",          "conv_2d_nhwc_hwcf",
      "conv_2d_nhwc_fhwc",          "conv_2d_ngchw_fgchw",
      "conv_2d_ngchw_gfchw",        "conv_2d_nhwgc_gfhwc",
      "depthwise_conv_2d_nchw_chw", "depthwise_conv_2d_nhwc_hwc",
      "depthwise_conv_2d_nhwc_hwcm"};
  return std::find(std::begin(taken), std::end(taken), form.op) !=
         std::end(taken);
}

bool isSpatial(char d) { return d == 'd' || d == 'h' || d == 'w'; }
char kernelOf(char d) { return d == 'd' ? 'q' : d == 'h' ? 'r' : 's'; }
bool isInteger(const std::string &elem) { return elem[0] == 'i'; }
int bitWidth(const std::string &elem) {
  if (elem == "bf16")
    return 16;
  return std::stoi(elem.substr(1));
}

struct ElementTypes {
  std::string x, w, y;
};

std::string zeroOf(const std::string &elem) {
  return isInteger(elem) ? "0 : " + elem : "0.0 : " + elem;
}
std::string oneOf(const std::string &elem) {
  return isInteger(elem) ? "1 : " + elem : "1.0 : " + elem;
}

/// A tensor type; dims marked dynamic print as `?`.
std::string tensorType(const std::vector<int64_t> &shape,
                       const std::vector<bool> &dynamic,
                       const std::string &elem) {
  std::string s = "tensor<";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (dynamic[i] ? std::string("?") : std::to_string(shape[i])) + "x";
  return s + elem + ">";
}

std::string join(const std::vector<std::string> &items,
                 const std::string &separator) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i)
    s += (i ? separator : "") + items[i];
  return s;
}

std::string intList(const std::vector<int64_t> &values) {
  std::vector<std::string> items;
  for (int64_t v : values)
    items.push_back(std::to_string(v));
  return join(items, ", ");
}

/// `%dst = <cast> %src : from to to`, or nothing when the types agree.
std::string convert(std::string &value, const std::string &from,
                    const std::string &to, const std::string &name) {
  if (from == to)
    return "";
  std::string op;
  if (isInteger(from) && isInteger(to))
    op = bitWidth(to) > bitWidth(from) ? "arith.extsi" : "arith.trunci";
  else if (isInteger(from))
    op = "arith.sitofp";
  else if (isInteger(to))
    op = "arith.fptosi";
  else
    op = bitWidth(to) > bitWidth(from) ? "arith.extf" : "arith.truncf";
  std::string line =
      "      " + name + " = " + op + " " + value + " : " + from + " to " + to +
      "\n";
  value = name;
  return line;
}

/// Everything drawn for one convolution.
struct Conv {
  const Form *form;
  ElementTypes elems;
  std::map<char, int64_t> size; // n g c f and kernels q r s; spatial: output
  std::map<char, int64_t> inSize, stride, dilation, padLow, padHigh;
  bool padded = false;          // through a tensor.pad
  bool nonZeroPad = false;      // pad value 1: must not be absorbed
  bool channelPad = false;      // the pad also grows the c axis by one
  bool imageInput = false;      // grouped: %x is the rank-(k+2) image
  bool namedAttrs = true;       // named op prints strides/dilations
  bool generic = false;
  std::string loops;            // generic loop order
  bool commuteMul = false, commuteAdd = false;
  std::vector<bool> xDynamic, wDynamic, yDynamic;
  enum class Init { Zero, Fill, Tensor, FillTensor, Empty } init = Init::Zero;
  bool zeroPointArgs = false;
  // Consumers.
  enum class Bias { None, Generic, GenericSwapped, Broadcast } bias =
      Bias::None;
  int biasAxis = -1;            // an axis of the (collapsed) output
  bool collapseGroups = false;  // collapse (g, f) before the bias
  bool narrowBias = false;      // the bias in the data's narrower float type
  bool relu = false, reluInPlace = false;
  bool roundToBF16 = false; // an f32 result rounded to bf16 last
};

bool has(const std::string &axes, char d) {
  return axes.find(d) != std::string::npos;
}

/// Extent of one axis of the convolution's operand (input: windowed and
/// padded; channel padding included).
int64_t inputExtent(const Conv &conv, char d) {
  if (isSpatial(d))
    return conv.inSize.at(d) + conv.padLow.at(d) + conv.padHigh.at(d);
  return conv.size.at(d);
}

std::vector<int64_t> shapeOf(const Conv &conv, const std::string &axes,
                             bool isInput) {
  std::vector<int64_t> shape;
  for (char d : axes)
    shape.push_back(isInput ? inputExtent(conv, d) : conv.size.at(d));
  return shape;
}

int64_t outputFormula(int64_t in, int64_t k, int64_t s, int64_t dl) {
  int64_t numerator = in - dl * (k - 1) - 1;
  if (numerator < 0)
    return 0;
  return numerator / s + 1;
}

ElementTypes drawElementTypes(FuzzInput &in, const Form &form) {
  if (form.kind == OpKind::Quantized)
    return in.pick<ElementTypes>(
        {{"i8", "i8", "i32"}, {"i8", "i8", "i32"}, {"i16", "i8", "i32"}});
  if (form.kind == OpKind::Pooling) {
    std::string e = in.pick<std::string>({"f32", "f16", "i32"});
    return {e, e, e};
  }
  static const std::vector<ElementTypes> common = {
      {"f32", "f32", "f32"}, {"f16", "f16", "f32"}, {"bf16", "bf16", "f32"},
      {"f16", "f16", "f16"}, {"i8", "i8", "i32"}};
  static const std::vector<ElementTypes> rare = {
      {"f64", "f64", "f64"},   {"i8", "i8", "f32"},   {"f16", "f32", "f32"},
      {"i32", "i32", "i32"},   {"bf16", "bf16", "bf16"}, {"f32", "f32", "f16"},
      {"f32", "f32", "f64"}};
  return in.chance(85) ? in.pick(common) : in.pick(rare);
}

int64_t drawChannels(FuzzInput &in) {
  if (in.chance(2))
    return 0;
  if (in.chance(20))
    return in.pick<int64_t>({8, 16, 32, 64});
  return in.small(1, 6);
}

void drawSizes(FuzzInput &in, Conv &conv) {
  const Form &form = *conv.form;
  bool depthwise = !has(form.x, 'c') && has(form.x, 'g');
  bool grouped = has(form.x, 'c') && has(form.x, 'g');
  conv.size['n'] = !has(form.y, 'n') ? 1 : in.chance(2) ? 0 : in.small(1, 3);
  conv.size['g'] = grouped ? in.small(1, 3) : depthwise ? drawChannels(in) : 1;
  conv.size['c'] = has(form.x, 'c') ? drawChannels(in) : 1;
  conv.size['f'] = !has(form.w + form.y, 'f') ? 1
                   : depthwise                 ? in.small(1, 3)
                                               : drawChannels(in);
  bool unitWindows = form.kind == OpKind::Plain;
  for (char d : form.y) {
    if (!isSpatial(d))
      continue;
    char k = kernelOf(d);
    conv.inSize[d] = in.chance(2)    ? 0
                     : in.chance(10) ? in.range(13, 40)
                                     : in.small(1, 12);
    conv.size[k] = in.chance(1) ? 0 : in.small(1, 4);
    conv.stride[d] = unitWindows ? 1 : in.small(1, 3);
    conv.dilation[d] = unitWindows || in.chance(50) ? 1 : in.range(2, 3);
    conv.padLow[d] = conv.padHigh[d] = 0;
  }
  conv.padded = in.chance(45);
  for (char d : form.y) {
    if (!isSpatial(d) || !conv.padded)
      continue;
    conv.padLow[d] = in.chance(40) ? 0 : in.small(0, 3);
    conv.padHigh[d] = in.chance(40) ? 0 : in.small(0, 3);
  }
  conv.nonZeroPad = conv.padded && in.chance(8);
  conv.channelPad = conv.padded && has(form.x, 'c') && conv.size['c'] >= 2 &&
                    in.chance(5);
  // The output: the formula's size, a top-left crop of it, or (rarely) one
  // more than the formula, which the verifier must reject.
  for (char d : form.y) {
    if (!isSpatial(d))
      continue;
    char k = kernelOf(d);
    int64_t formula =
        outputFormula(inputExtent(conv, d), conv.size[k], conv.stride[d],
                      conv.dilation[d]);
    int64_t out = formula;
    if (formula > 1 && in.chance(20))
      out = in.range(1, formula - 1);
    else if (in.chance(3))
      out = formula + 1;
    conv.size[d] = out;
  }
}

std::string permutedLoops(FuzzInput &in, std::string loops) {
  // Fisher-Yates driven by the fuzz bytes.
  for (size_t i = loops.size(); i > 1; --i)
    std::swap(loops[i - 1], loops[in.range(0, int64_t(i) - 1)]);
  return loops;
}

/// The named op's loop order: the output's dimensions, then the filter's
/// reductions (depthwise NCHW puts the channel after the spatial dims).
std::string defaultLoops(const Form &form) {
  if (form.op == "depthwise_conv_2d_nchw_chw")
    return "nhwgrs";
  std::string loops = form.y;
  for (char d : form.w)
    if (!has(loops, d))
      loops += d;
  return loops;
}

void drawSpelling(FuzzInput &in, Conv &conv) {
  const Form &form = *conv.form;
  bool genericAllowed =
      form.kind == OpKind::Conv || form.kind == OpKind::Plain;
  conv.generic = genericAllowed && in.chance(35);
  conv.loops = defaultLoops(form);
  if (conv.generic && in.chance(25))
    conv.loops = permutedLoops(in, conv.loops);
  conv.commuteMul = conv.generic && in.chance(25);
  conv.commuteAdd = conv.generic && in.chance(25);
  conv.namedAttrs = !in.chance(10);
  // A grouped input may arrive as the image, padded, then split in groups.
  size_t gc = form.x.find("gc");
  conv.imageInput = gc != std::string::npos && in.chance(30);

  auto drawDynamic = [&](const std::string &axes, bool dynamicBatch) {
    std::vector<bool> dyn;
    for (char d : axes)
      dyn.push_back((d == 'n' && dynamicBatch) || in.chance(3));
    return dyn;
  };
  bool dynamicBatch = has(form.y, 'n') && in.chance(25);
  conv.xDynamic = drawDynamic(form.x, dynamicBatch);
  conv.wDynamic = drawDynamic(form.w, false);
  conv.yDynamic = drawDynamic(form.y, dynamicBatch);
  if (conv.imageInput) // only the batch may be dynamic in the split image
    for (size_t i = 0; i < form.x.size(); ++i)
      conv.xDynamic[i] = form.x[i] == 'n' && dynamicBatch;

  bool onlyBatchDynamic = true;
  for (size_t i = 0; i < form.y.size(); ++i)
    if (conv.yDynamic[i] && form.y[i] != 'n')
      onlyBatchDynamic = false;
  bool batchFromInput = true;
  for (size_t i = 0; i < form.y.size(); ++i)
    if (form.y[i] == 'n' && conv.yDynamic[i])
      batchFromInput = conv.xDynamic[form.x.find('n')];
  unsigned pickInit = in.range(0, 99);
  if (!onlyBatchDynamic || !batchFromInput)
    conv.init = pickInit < 70 ? Conv::Init::Tensor : Conv::Init::FillTensor;
  else
    conv.init = pickInit < 45   ? Conv::Init::Zero
                : pickInit < 65 ? Conv::Init::Fill
                : pickInit < 85 ? Conv::Init::Tensor
                : pickInit < 95 ? Conv::Init::FillTensor
                                : Conv::Init::Empty;
  conv.zeroPointArgs = form.kind == OpKind::Quantized && in.chance(50);

  // Consumers: a per-channel bias, a ReLU.
  if (form.kind == OpKind::Pooling || !in.chance(30))
    conv.bias = Conv::Bias::None;
  else
    conv.bias = in.pick<Conv::Bias>({Conv::Bias::Generic, Conv::Bias::Generic,
                                     Conv::Bias::GenericSwapped,
                                     Conv::Bias::Broadcast});
  size_t gf = form.y.find("gf");
  conv.collapseGroups = conv.bias != Conv::Bias::None &&
                        gf != std::string::npos && in.chance(65);
  if (conv.bias != Conv::Bias::None) {
    // Mostly the channel axis; sometimes another, which the epilogue fusion
    // must not mistake for a per-channel bias.
    int rank = int(form.y.size()) - (conv.collapseGroups ? 1 : 0);
    size_t channel = form.y.find('f');
    if (channel == std::string::npos)
      channel = form.y.find('g');
    if (conv.collapseGroups)
      channel = gf;
    conv.biasAxis = (channel != std::string::npos && in.chance(85))
                        ? int(channel)
                        : int(in.range(0, rank - 1));
  }
  conv.relu = form.kind != OpKind::Pooling && in.chance(20);
  conv.reluInPlace = conv.relu && in.chance(30);
  // A generic bias may keep the data's narrower float type (f16, bf16 into
  // f32), widened in its body: what conv-run and compile() emit for 16-bit
  // layers. (Decided last, and only then drawn: earlier decisions read the
  // same bytes as before.)
  const std::string &x = conv.elems.x, &y = conv.elems.y;
  conv.narrowBias = (conv.bias == Conv::Bias::Generic ||
                     conv.bias == Conv::Bias::GenericSwapped) &&
                    !isInteger(x) && !isInteger(y) &&
                    bitWidth(x) < bitWidth(y) && in.chance(50);
  // An f32 result rounded to bf16 at the end (conv-run --bf16-output,
  // compile()'s bf16 activations): the epilogue changes the element type.
  // (Drawn after everything else, for the same reason; false where the
  // bytes have run out, so the corpus's inputs keep their modules.)
  conv.roundToBF16 =
      y == "f32" && form.kind != OpKind::Pooling && in.chance(20);
}

/// Prints one convolution's producers, op and consumers into `body`; adds its
/// arguments and results to `args` and `results`.
class ConvPrinter {
public:
  ConvPrinter(const Conv &conv, int index, std::vector<std::string> &args,
              std::vector<std::string> &results, std::ostringstream &body)
      : conv(conv), form(*conv.form), args(args), results(results),
        body(body), p("%" + std::string(1, char('a' + index))) {}

  void print() {
    std::string x = printInput();
    std::string w = p + "w";
    args.push_back(w + ": " + filterType());
    std::string init = printInit();
    std::string y = printOp(x, w, init);
    y = printBias(y);
    y = printRelu(y);
    y = printRoundToBF16(y);
    results.push_back(y + " : " + currentType);
  }

private:
  std::string yType() const {
    return tensorType(shapeOf(conv, form.y, false), conv.yDynamic,
                      conv.elems.y);
  }
  std::string filterType() const {
    return tensorType(shapeOf(conv, form.w, false), conv.wDynamic,
                      conv.elems.w);
  }
  /// The convolution's input as it sees it (padded, split).
  std::string convInputType() const {
    return tensorType(shapeOf(conv, form.x, true), conv.xDynamic,
                      conv.elems.x);
  }

  /// %x's axes, shape and dynamic dims (the image merges g and c).
  void sourceShape(std::string &axes, std::vector<int64_t> &shape,
                   std::vector<bool> &dynamic) const {
    axes.clear();
    shape.clear();
    dynamic.clear();
    for (size_t i = 0; i < form.x.size(); ++i) {
      char d = form.x[i];
      int64_t extent = isSpatial(d) ? conv.inSize.at(d) : conv.size.at(d);
      if (d == 'c' && conv.channelPad)
        extent -= 1;
      if (conv.imageInput && d == 'c') {
        shape.back() *= extent;
        continue;
      }
      axes += d;
      shape.push_back(extent);
      dynamic.push_back(conv.xDynamic[i]);
    }
  }

  std::string printInput() {
    std::string axes;
    std::vector<int64_t> shape;
    std::vector<bool> dynamic;
    sourceShape(axes, shape, dynamic);
    std::string x = p + "x";
    std::string type = tensorType(shape, dynamic, conv.elems.x);
    args.push_back(x + ": " + type);
    if (has(axes, 'n') && dynamic[axes.find('n')]) {
      body << "    " << p << "c0 = arith.constant 0 : index\n";
      body << "    " << p << "n = tensor.dim " << x << ", " << p << "c0 : "
           << type << "\n";
      batch = p + "n";
    }
    std::string value = x;
    if (conv.padded) {
      std::vector<int64_t> low, high, padded = shape;
      for (size_t i = 0; i < axes.size(); ++i) {
        char d = axes[i];
        int64_t lo = isSpatial(d) ? conv.padLow.at(d) : 0;
        int64_t hi = isSpatial(d)                  ? conv.padHigh.at(d)
                     : (d == 'c' && conv.channelPad) ? 1
                                                     : 0;
        low.push_back(lo);
        high.push_back(hi);
        padded[i] += lo + hi;
      }
      std::string paddedType = tensorType(padded, dynamic, conv.elems.x);
      std::string pad = conv.nonZeroPad ? oneOf(conv.elems.x)
                                        : zeroOf(conv.elems.x);
      std::vector<std::string> idx;
      for (size_t i = 0; i < axes.size(); ++i)
        idx.push_back("%i" + std::to_string(i) + ": index");
      body << "    " << p << "pv = arith.constant " << pad << "\n";
      body << "    " << p << "xp = tensor.pad " << value << " low["
           << intList(low) << "] high[" << intList(high) << "] {\n"
           << "    ^bb0(" << join(idx, ", ") << "):\n"
           << "      tensor.yield " << p << "pv : " << conv.elems.x << "\n"
           << "    } : " << type << " to " << paddedType << "\n";
      value = p + "xp";
      type = paddedType;
    }
    if (conv.imageInput) {
      std::vector<std::string> reassociation, outputShape;
      for (size_t i = 0; i < form.x.size(); ++i) {
        char d = form.x[i];
        if (d == 'c')
          continue; // in the group of the g before it
        std::string group = "[" + std::to_string(i);
        if (d == 'g')
          group += ", " + std::to_string(i + 1);
        reassociation.push_back(group + "]");
      }
      for (size_t i = 0; i < form.x.size(); ++i)
        outputShape.push_back(conv.xDynamic[i]
                                  ? batch
                                  : std::to_string(inputExtent(conv, form.x[i])));
      std::string split = convInputType();
      body << "    " << p << "xg = tensor.expand_shape " << value << " ["
           << join(reassociation, ", ") << "] output_shape ["
           << join(outputShape, ", ") << "] : " << type << " into " << split
           << "\n";
      value = p + "xg";
      type = split;
    }
    inputType = type;
    return value;
  }

  /// Sizes for a tensor.empty of `type`'s dynamic dims.
  std::string emptySizes(const std::vector<bool> &dynamic,
                         const std::string &value,
                         const std::string &valueType) {
    std::vector<std::string> sizes;
    for (size_t i = 0; i < dynamic.size(); ++i) {
      if (!dynamic[i])
        continue;
      if (value.empty()) {
        sizes.push_back(batch); // only the batch is dynamic (drawSpelling)
        continue;
      }
      std::string c = p + "k" + std::to_string(counter++);
      body << "    " << c << " = arith.constant " << i << " : index\n";
      std::string dim = p + "d" + std::to_string(counter++);
      body << "    " << dim << " = tensor.dim " << value << ", " << c << " : "
           << valueType << "\n";
      sizes.push_back(dim);
    }
    return join(sizes, ", ");
  }

  std::string printInit() {
    std::string type = yType();
    std::string init = p + "init";
    switch (conv.init) {
    case Conv::Init::Tensor:
      args.push_back(init + ": " + type);
      return init;
    case Conv::Init::FillTensor: {
      args.push_back(init + ": " + type);
      body << "    " << p << "zero = arith.constant " << zeroOf(conv.elems.y)
           << "\n";
      body << "    " << p << "filled = linalg.fill ins(" << p << "zero : "
           << conv.elems.y << ") outs(" << init << " : " << type << ") -> "
           << type << "\n";
      return p + "filled";
    }
    case Conv::Init::Zero:
    case Conv::Init::Fill:
    case Conv::Init::Empty: {
      std::string sizes = emptySizes(conv.yDynamic, "", "");
      body << "    " << p << "empty = tensor.empty(" << sizes << ") : " << type
           << "\n";
      if (conv.init == Conv::Init::Empty)
        return p + "empty";
      std::string value = conv.init == Conv::Init::Zero
                              ? zeroOf(conv.elems.y)
                              : (isInteger(conv.elems.y) ? "3 : " : "3.0 : ") +
                                    conv.elems.y;
      body << "    " << p << "zero = arith.constant " << value << "\n";
      body << "    " << p << "filled = linalg.fill ins(" << p << "zero : "
           << conv.elems.y << ") outs(" << p << "empty : " << type << ") -> "
           << type << "\n";
      return p + "filled";
    }
    }
    return init;
  }

  std::string windowAttrs() const {
    std::vector<int64_t> strides, dilations;
    for (char d : form.y)
      if (isSpatial(d)) {
        strides.push_back(conv.stride.at(d));
        dilations.push_back(conv.dilation.at(d));
      }
    std::string k = std::to_string(strides.size());
    return "{dilations = dense<[" + intList(dilations) + "]> : tensor<" + k +
           "xi64>, strides = dense<[" + intList(strides) + "]> : tensor<" + k +
           "xi64>}";
  }

  bool unitWindows() const {
    for (char d : form.y)
      if (isSpatial(d) && (conv.stride.at(d) != 1 || conv.dilation.at(d) != 1))
        return false;
    return true;
  }

  std::string printOp(const std::string &x, const std::string &w,
                      const std::string &init) {
    std::string y = p + "y";
    std::string type = yType();
    currentType = type;
    if (conv.generic)
      return printGeneric(x, w, init);
    std::string ins = x + ", " + w;
    std::string insTypes = inputType + ", " + filterType();
    if (form.kind == OpKind::Quantized) {
      std::string zx = p + "zx", zw = p + "zw";
      if (conv.zeroPointArgs) {
        args.push_back(zx + ": i32");
        args.push_back(zw + ": i32");
      } else {
        body << "    " << zx << " = arith.constant 3 : i32\n";
        body << "    " << zw << " = arith.constant -2 : i32\n";
      }
      ins += ", " + zx + ", " + zw;
      insTypes += ", i32, i32";
    }
    body << "    " << y << " = linalg." << form.op << " ";
    if (form.kind != OpKind::Plain && (conv.namedAttrs || !unitWindows()))
      body << windowAttrs() << " ";
    body << "ins(" << ins << " : " << insTypes << ") outs(" << init << " : "
         << type << ") -> " << type << "\n";
    return y;
  }

  std::string affineMap(const std::vector<std::string> &results) const {
    std::vector<std::string> dims;
    for (size_t i = 0; i < conv.loops.size(); ++i)
      dims.push_back("d" + std::to_string(i));
    return "affine_map<(" + join(dims, ", ") + ") -> (" + join(results, ", ") +
           ")>";
  }

  std::string loopVar(char d, int64_t multiplier) const {
    std::string v = "d" + std::to_string(conv.loops.find(d));
    return multiplier == 1 ? v : v + " * " + std::to_string(multiplier);
  }

  std::string printGeneric(const std::string &x, const std::string &w,
                           const std::string &init) {
    std::vector<std::string> xr, wr, yr, kinds;
    for (char d : form.x)
      xr.push_back(isSpatial(d) ? loopVar(d, conv.stride.at(d)) + " + " +
                                      loopVar(kernelOf(d), conv.dilation.at(d))
                                : loopVar(d, 1));
    for (char d : form.w)
      wr.push_back(loopVar(d, 1));
    for (char d : form.y)
      yr.push_back(loopVar(d, 1));
    for (char d : conv.loops)
      kinds.push_back(has(form.y, d) ? "\"parallel\"" : "\"reduction\"");
    const ElementTypes &e = conv.elems;
    std::string type = yType();
    body << "    " << p << "y = linalg.generic {indexing_maps = ["
         << affineMap(xr) << ", " << affineMap(wr) << ", " << affineMap(yr)
         << "], iterator_types = [" << join(kinds, ", ") << "]}\n"
         << "        ins(" << x << ", " << w << " : " << inputType << ", "
         << filterType() << ") outs(" << init << " : " << type << ") {\n"
         << "    ^bb0(%in: " << e.x << ", %fl: " << e.w << ", %acc: " << e.y
         << "):\n";
    std::string a = "%in", b = "%fl";
    body << convert(a, e.x, e.y, "%ea") << convert(b, e.w, e.y, "%eb");
    if (conv.commuteMul)
      std::swap(a, b);
    bool integer = isInteger(e.y);
    body << "      %prod = " << (integer ? "arith.muli " : "arith.mulf ") << a
         << ", " << b << " : " << e.y << "\n";
    body << "      %sum = " << (integer ? "arith.addi " : "arith.addf ")
         << (conv.commuteAdd ? "%prod, %acc" : "%acc, %prod") << " : " << e.y
         << "\n"
         << "      linalg.yield %sum : " << e.y << "\n"
         << "    } -> " << type << "\n";
    return p + "y";
  }

  std::string identityMap(size_t rank) const {
    std::vector<std::string> dims;
    for (size_t i = 0; i < rank; ++i)
      dims.push_back("d" + std::to_string(i));
    return "affine_map<(" + join(dims, ", ") + ") -> (" + join(dims, ", ") +
           ")>";
  }

  std::string printBias(const std::string &y) {
    if (conv.bias == Conv::Bias::None)
      return y;
    std::vector<int64_t> shape = shapeOf(conv, form.y, false);
    std::vector<bool> dynamic = conv.yDynamic;
    std::string value = y, type = currentType;
    if (conv.collapseGroups) {
      size_t gf = form.y.find("gf");
      std::vector<std::string> reassociation;
      for (size_t i = 0; i < form.y.size(); ++i) {
        if (i == gf + 1)
          continue;
        reassociation.push_back(i == gf ? "[" + std::to_string(i) + ", " +
                                              std::to_string(i + 1) + "]"
                                        : "[" + std::to_string(i) + "]");
      }
      // A group holding a static 0 collapses to a static 0. (Typed `?`, the
      // tensor verifier accepts it, but MLIR 22's bufferization infers the
      // memref dim as 0 and memref.collapse_shape then rejects its own
      // result: an upstream defect, seen by conv-fuzz, outside ConvLower.)
      bool zero = (!dynamic[gf] && shape[gf] == 0) ||
                  (!dynamic[gf + 1] && shape[gf + 1] == 0);
      shape[gf] *= shape[gf + 1];
      dynamic[gf] = !zero && (dynamic[gf] || dynamic[gf + 1]);
      shape.erase(shape.begin() + gf + 1);
      dynamic.erase(dynamic.begin() + gf + 1);
      std::string collapsed = tensorType(shape, dynamic, conv.elems.y);
      body << "    " << p << "yc = tensor.collapse_shape " << value << " ["
           << join(reassociation, ", ") << "] : " << type << " into "
           << collapsed << "\n";
      value = p + "yc";
      type = collapsed;
    }
    int axis = conv.biasAxis;
    std::string biasElem = conv.narrowBias ? conv.elems.x : conv.elems.y;
    std::string biasType =
        tensorType({shape[axis]}, {dynamic[axis]}, biasElem);
    std::string bias = p + "bias";
    args.push_back(bias + ": " + biasType);
    std::string empty = p + "bempty";
    std::string sizes = emptySizes(dynamic, value, type);
    body << "    " << empty << " = tensor.empty(" << sizes << ") : " << type
         << "\n";
    std::string id = identityMap(shape.size());
    std::vector<std::string> dims;
    for (size_t i = 0; i < shape.size(); ++i)
      dims.push_back("d" + std::to_string(i));
    std::string biasMap = "affine_map<(" + join(dims, ", ") + ") -> (d" +
                          std::to_string(axis) + ")>";
    std::vector<std::string> kinds(shape.size(), "\"parallel\"");
    std::string elem = conv.elems.y;
    std::string add = isInteger(elem) ? "arith.addi" : "arith.addf";
    std::string out = p + "yb";
    if (conv.bias == Conv::Bias::Broadcast) {
      std::vector<std::string> broadcastDims;
      for (size_t i = 0; i < shape.size(); ++i)
        if (int(i) != axis)
          broadcastDims.push_back(std::to_string(i));
      std::string bcast = p + "bcast";
      std::string bempty2 = p + "bempty2";
      body << "    " << bempty2 << " = tensor.empty(" << sizes << ") : "
           << type << "\n";
      body << "    " << bcast << " = linalg.broadcast ins(" << bias << " : "
           << biasType << ") outs(" << bempty2 << " : " << type
           << ") dimensions = [" << join(broadcastDims, ", ") << "]\n";
      body << "    " << out << " = linalg.add ins(" << value << ", " << bcast
           << " : " << type << ", " << type << ") outs(" << empty << " : "
           << type << ") -> " << type << "\n";
    } else {
      bool swapped = conv.bias == Conv::Bias::GenericSwapped;
      std::string ins = swapped ? bias + ", " + value : value + ", " + bias;
      std::string insTypes =
          swapped ? biasType + ", " + type : type + ", " + biasType;
      std::string maps = swapped ? biasMap + ", " + id : id + ", " + biasMap;
      // The bias block argument, widened first where it is narrower.
      std::string l = swapped ? "%b" : "%l", r = swapped ? "%l" : "%b";
      std::string lElem = swapped ? biasElem : elem;
      std::string rElem = swapped ? elem : biasElem;
      body << "    " << out << " = linalg.generic {indexing_maps = [" << maps
           << ", " << id << "], iterator_types = [" << join(kinds, ", ")
           << "]} ins(" << ins << " : " << insTypes << ") outs(" << empty
           << " : " << type << ") {\n"
           << "    ^bb0(" << l << ": " << lElem << ", " << r << ": " << rElem
           << ", %o: " << elem << "):\n";
      std::string b = "%b";
      if (conv.narrowBias) {
        body << "      %widened = arith.extf %b : " << biasElem << " to " << elem
             << "\n";
        b = "%widened";
      }
      body << "      %s = " << add << " " << (swapped ? b + ", %l" : "%l, " + b)
           << " : " << elem << "\n"
           << "      linalg.yield %s : " << elem << "\n"
           << "    } -> " << type << "\n";
    }
    currentType = type;
    currentDynamic = dynamic;
    return out;
  }

  std::string printRelu(const std::string &y) {
    if (!conv.relu)
      return y;
    std::string type = currentType;
    std::vector<bool> dynamic =
        currentDynamic.empty() ? conv.yDynamic : currentDynamic;
    size_t rank = dynamic.size();
    std::string out = p + "relu";
    std::string target = y;
    if (!conv.reluInPlace) {
      target = p + "rempty";
      std::string sizes = emptySizes(dynamic, y, type); // prints tensor.dims
      body << "    " << target << " = tensor.empty(" << sizes << ") : " << type
           << "\n";
    }
    std::string elem = conv.elems.y;
    std::string id = identityMap(rank);
    std::vector<std::string> kinds(rank, "\"parallel\"");
    std::string max = isInteger(elem) ? "arith.maxsi" : "arith.maximumf";
    body << "    " << p << "rzero = arith.constant " << zeroOf(elem) << "\n";
    if (conv.reluInPlace) {
      body << "    " << out << " = linalg.generic {indexing_maps = [" << id
           << "], iterator_types = [" << join(kinds, ", ") << "]} outs("
           << target << " : " << type << ") {\n"
           << "    ^bb0(%v: " << elem << "):\n";
    } else {
      body << "    " << out << " = linalg.generic {indexing_maps = [" << id
           << ", " << id << "], iterator_types = [" << join(kinds, ", ")
           << "]} ins(" << y << " : " << type << ") outs(" << target << " : "
           << type << ") {\n"
           << "    ^bb0(%v: " << elem << ", %unused: " << elem << "):\n";
    }
    body << "      %m = " << max << " %v, " << p << "rzero : " << elem << "\n"
         << "      linalg.yield %m : " << elem << "\n"
         << "    } -> " << type << "\n";
    return out;
  }

  /// arith.truncf of the f32 result into a fresh bf16 tensor.
  std::string printRoundToBF16(const std::string &y) {
    if (!conv.roundToBF16)
      return y;
    std::vector<bool> dynamic =
        currentDynamic.empty() ? conv.yDynamic : currentDynamic;
    size_t rank = dynamic.size();
    std::string from = currentType;
    std::string to = from.substr(0, from.rfind("f32")) + "bf16>";
    std::string target = p + "rounded_empty", out = p + "rounded";
    std::string sizes = emptySizes(dynamic, y, from);
    body << "    " << target << " = tensor.empty(" << sizes << ") : " << to
         << "\n";
    std::string id = identityMap(rank);
    std::vector<std::string> kinds(rank, "\"parallel\"");
    body << "    " << out << " = linalg.generic {indexing_maps = [" << id
         << ", " << id << "], iterator_types = [" << join(kinds, ", ")
         << "]} ins(" << y << " : " << from << ") outs(" << target << " : "
         << to << ") {\n"
         << "    ^bb0(%v: f32, %unused: bf16):\n"
         << "      %t = arith.truncf %v : f32 to bf16\n"
         << "      linalg.yield %t : bf16\n"
         << "    } -> " << to << "\n";
    currentType = to;
    return out;
  }

  const Conv &conv;
  const Form &form;
  std::vector<std::string> &args;
  std::vector<std::string> &results;
  std::ostringstream &body;
  std::string p; // the SSA name prefix of this convolution
  std::string batch;
  std::string inputType, currentType;
  std::vector<bool> currentDynamic;
  int counter = 0;
};

Conv drawConv(FuzzInput &in) {
  Conv conv;
  const std::vector<Form> &all = forms();
  if (in.chance(70)) {
    std::vector<const Form *> taken;
    for (const Form &form : all)
      if (isTakenForm(form))
        taken.push_back(&form);
    conv.form = in.pick(taken);
  } else {
    conv.form = &all[in.range(0, int64_t(all.size()) - 1)];
  }
  conv.elems = drawElementTypes(in, *conv.form);
  drawSizes(in, conv);
  drawSpelling(in, conv);
  return conv;
}

std::string describe(const Conv &conv) {
  std::ostringstream s;
  s << (conv.generic ? "generic:" : "") << conv.form->op << " " << conv.elems.x
    << "," << conv.elems.w << "->" << conv.elems.y;
  for (char d : std::string("ngcf"))
    if (has(conv.form->x + conv.form->w + conv.form->y, d))
      s << " " << d << conv.size.at(d);
  for (char d : conv.form->y)
    if (isSpatial(d))
      s << " " << d << ":in" << conv.inSize.at(d) << ",k"
        << conv.size.at(kernelOf(d)) << ",s" << conv.stride.at(d) << ",d"
        << conv.dilation.at(d) << ",p" << conv.padLow.at(d) << "/"
        << conv.padHigh.at(d) << ",out" << conv.size.at(d);
  if (conv.generic)
    s << " loops=" << conv.loops;
  if (conv.narrowBias)
    s << " bias:" << conv.elems.x;
  return s.str();
}

} // namespace

GeneratedModule generateConvModule(FuzzInput &in) {
  int count = in.chance(15) ? 2 : 1;
  std::vector<Conv> convs;
  for (int i = 0; i < count; ++i)
    convs.push_back(drawConv(in));

  std::vector<std::string> args, results;
  std::ostringstream body;
  GeneratedModule generated;
  for (int i = 0; i < count; ++i) {
    ConvPrinter(convs[i], i, args, results, body).print();
    generated.summary += describe(convs[i]) + "\n";
    generated.forms.push_back((convs[i].generic ? "generic:" : "") +
                              convs[i].form->op);
  }
  std::vector<std::string> values, types;
  for (const std::string &result : results) {
    size_t colon = result.find(" : ");
    values.push_back(result.substr(0, colon));
    types.push_back(result.substr(colon + 3));
  }
  std::ostringstream text;
  text << "func.func @conv(" << join(args, ", ") << ") -> ("
       << join(types, ", ") << ") {\n"
       << body.str() << "    return " << join(values, ", ") << " : "
       << join(types, ", ") << "\n}\n";
  generated.text = text.str();
  return generated;
}

std::vector<std::string> generatorFormNames() {
  std::vector<std::string> names;
  for (const Form &form : forms())
    names.push_back(form.op);
  return names;
}

} // namespace conv_lower_fuzz
