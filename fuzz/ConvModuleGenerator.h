//===- ConvModuleGenerator.h - conv modules from fuzz bytes -----*- C++ -*-===//
//
// The structure-aware half of conv-fuzz: fuzz bytes choose a convolution
// (form, element types, shapes, strides, dilations, padding, groups, dynamic
// dimensions, init, generic spelling, consumers) and the generator prints it
// as a well-formed linalg-on-tensors module. Every choice is drawn from a
// range that names a real case, so a mutated input is another convolution,
// not a parse error: the fuzzing time goes to the passes, not the parser.
//
// Some draws are deliberately outside what the rewrites take (1-D and 3-D
// forms, quantized and pooling ops, a non-zero pad value, channel padding,
// dynamic spatial dimensions, f64, an output larger than the formula): the
// passes must leave those untouched, and the linalg verifier rejects the
// invalid ones before any pass sees them.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_FUZZ_CONVMODULEGENERATOR_H
#define CONVLOWER_FUZZ_CONVMODULEGENERATOR_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace conv_lower_fuzz {

/// Reads the fuzz bytes as a stream of bounded choices. When the bytes run
/// out every choice takes its smallest value, so each input, however short,
/// names exactly one module.
class FuzzInput {
public:
  FuzzInput(const uint8_t *data, size_t size) : data(data), size(size) {}

  /// A value in [lo, hi] (inclusive) from as few bytes as the range needs.
  int64_t range(int64_t lo, int64_t hi);
  /// True with probability about percent/100 (false once the bytes run out).
  bool chance(unsigned percent) { return range(0, 99) >= 100 - int(percent); }
  /// A small value in [lo, hi], the low end likelier: edge cases live there.
  int64_t small(int64_t lo, int64_t hi);
  template <typename T> const T &pick(const std::vector<T> &choices) {
    return choices[range(0, int64_t(choices.size()) - 1)];
  }
  size_t consumed() const { return pos; }

private:
  const uint8_t *data;
  size_t size;
  size_t pos = 0;
};

struct GeneratedModule {
  /// The module's MLIR text.
  std::string text;
  /// One line per convolution: its form, element types and shapes.
  std::string summary;
  /// The op form of each convolution ("generic:" before a generic spelling).
  std::vector<std::string> forms;
};

/// Draws one to two convolutions (with their producers and consumers) in a
/// `func.func @conv` and prints the module.
GeneratedModule generateConvModule(FuzzInput &input);

/// The names of every op form the generator draws (for its self-check).
std::vector<std::string> generatorFormNames();

} // namespace conv_lower_fuzz

#endif
