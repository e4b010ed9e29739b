//===- EnumOptionParser.h - enum options whose errors name the values -*- C++ -*-===//
//
// The modes of ConvLower's passes and pipelines are enum options
// (llvm::cl::values in TableGen). llvm::cl's parser rejects a bad value with
// "Cannot find option named 'tpu'!", which leaves the user to run --help;
// ours says "unknown value 'tpu' (expected cuda or cpu-twin)". Otherwise it is
// llvm::cl::parser<E> as LLVM 22 has it (mlir::PassOptions reads its
// `Values` to print options), installed for an enum E by
// CONV_LOWER_ENUM_OPTION_PARSER(E) before any option of type E is declared.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_ENUMOPTIONPARSER_H
#define CONVLOWER_TRANSFORMS_ENUMOPTIONPARSER_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace mlir::conv_lower {

template <typename E>
class NamedValueParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(llvm::StringRef name, E v, llvm::StringRef helpStr)
        : GenericOptionInfo(name, helpStr), V(v) {}
    llvm::cl::OptionValue<E> V;
  };
  llvm::SmallVector<OptionInfo, 8> Values;

public:
  using parser_data_type = E;

  NamedValueParser(llvm::cl::Option &o) : generic_parser_base(o) {}

  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  llvm::StringRef getOption(unsigned n) const override { return Values[n].Name; }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// Returns true on error (llvm::cl's convention).
  bool parse(llvm::cl::Option &o, llvm::StringRef argName, llvm::StringRef arg,
             E &value) {
    llvm::StringRef given = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values)
      if (info.Name == given) {
        value = info.V.getValue();
        return false;
      }
    return o.error("unknown value '" + given + "' (expected " + allowed() +
                   ")");
  }

  /// "a, b or c".
  std::string allowed() const {
    std::string list;
    for (size_t i = 0, e = Values.size(); i < e; ++i) {
      if (i)
        list += i + 1 == e ? " or " : ", ";
      list += Values[i].Name.str();
    }
    return list;
  }

  template <typename DT>
  void addLiteralOption(llvm::StringRef name, const DT &v,
                        llvm::StringRef helpStr) {
    Values.push_back(OptionInfo(name, static_cast<E>(v), helpStr));
    AddLiteralOption(Owner, name);
  }

  void removeLiteralOption(llvm::StringRef name) {
    Values.erase(Values.begin() + findOption(name));
  }
};

} // namespace mlir::conv_lower

/// Makes NamedValueParser the parser of every option of enum type TYPE.
/// Expand at global scope, in a header every declaration of such an option
/// includes first (an explicit specialization must precede any use).
#define CONV_LOWER_ENUM_OPTION_PARSER(TYPE)                                    \
  namespace llvm::cl {                                                         \
  template <>                                                                  \
  class parser<TYPE> : public ::mlir::conv_lower::NamedValueParser<TYPE> {     \
  public:                                                                      \
    using NamedValueParser::NamedValueParser;                                  \
  };                                                                           \
  }

#endif // CONVLOWER_TRANSFORMS_ENUMOPTIONPARSER_H
