//===- RunInputs.cpp - the problem, module and data of a run --------------===//
//
// From flags: the problem is validated, its linalg module built with the
// ops' builders and its data read from .npy files or drawn from the seed.
// From a .mlir file: the function is found and checked to take
// (input, filter[, bias]) tensors, and each argument's data is read or drawn
// for its static shape. Every error here is bad input.
//
//===----------------------------------------------------------------------===//

#include "RunSteps.h"

#include "ConvLower/Runner/ConvModule.h"
#include "ConvLower/Runner/ModuleInfo.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

namespace {

llvm::Expected<DType> dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isSignlessInteger(8))
    return DType::I8;
  if (t.isSignlessInteger(32))
    return DType::I32;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return badInput("element type " + s +
                  " is not supported (f32, f16, bf16, i8, i32)");
}

/// Loads `path` if given (checking its shape), else random data.
llvm::Expected<HostTensor> loadOrRandom(llvm::StringRef path,
                                        llvm::StringRef what,
                                        llvm::ArrayRef<int64_t> shape,
                                        DType dtype, uint64_t seed,
                                        uint64_t stream) {
  if (path.empty())
    return randomTensor(shape, dtype, seed, stream);
  auto t = readNpy(path, dtype);
  if (!t)
    return asBadInput(t.takeError());
  if (!shape.empty() && llvm::ArrayRef<int64_t>(t->shape) != shape)
    return badInput(llvm::formatv("{0} {1} has shape {2} but the problem "
                                  "needs {3}",
                                  what, path, formatShape(t->shape),
                                  formatShape(shape)));
  return t;
}

/// torch's conv1d shapes: `shape` (the 2-D problem's, with H = 1) without
/// its unit H, which sits at 2 in NCHW/FCHW and at 1 in NHWC/FHWC. The
/// memory order is the same: .npy files and the output keep torch's rank.
llvm::SmallVector<int64_t> withoutUnitH(llvm::ArrayRef<int64_t> shape,
                                        Layout layout, bool oneDimensional) {
  llvm::SmallVector<int64_t> result(shape);
  if (oneDimensional)
    result.erase(result.begin() + (layout == Layout::NCHW ? 2 : 1));
  return result;
}

/// Whether the flags describe torch's conv1d (a rank-3 --input-shape).
bool isConv1dFlags(const ConvFlags &flags) {
  return llvm::count(flags.inputShape, ',') == 2;
}

llvm::Expected<Prepared> prepareFromFlags(MLIRContext &ctx,
                                          const RunOptions &options) {
  ConvFlags flags = *options.flags;
  flags.bias |= !options.biasNpy.empty();
  auto problem = problemFromFlags(flags);
  if (!problem)
    return asBadInput(problem.takeError());
  Prepared p;
  p.problem = *problem;
  p.function = kConvFunctionName.str();
  p.epilogue.residual = flags.residual;
  p.epilogue.bf16Output = flags.bf16Output;
  p.epilogue.bf16Residual = flags.bf16Residual;
  if (llvm::Error e = validateEpilogue(*problem, p.epilogue))
    return asBadInput(std::move(e));
  p.module = buildConvModule(ctx, *problem, p.epilogue);
  DType dt = problem->dtype;
  bool conv1d = isConv1dFlags(flags);
  Layout layout = problem->layout;
  auto x = loadOrRandom(options.inputNpy, "--input",
                        withoutUnitH(problem->inputShape(), layout, conv1d),
                        dt, options.seed, 0);
  if (!x)
    return x.takeError();
  // The module takes the 2-D shapes (same bytes).
  std::vector<int64_t> xShape = problem->inputShape();
  x->shape.assign(xShape.begin(), xShape.end());
  p.data.inputs = {std::move(*x)};
  if (problem->isPooling()) {
    if (!options.filterNpy.empty())
      return badInput("--pool max reads no filter (drop --filter)");
  } else {
    auto w = loadOrRandom(options.filterNpy, "--filter",
                          withoutUnitH(problem->filterShape(), layout, conv1d),
                          dt, options.seed, 1);
    if (!w)
      return w.takeError();
    std::vector<int64_t> wShape = problem->filterShape();
    w->shape.assign(wShape.begin(), wShape.end());
    p.data.inputs.push_back(std::move(*w));
  }
  if (problem->hasBias) {
    auto b = loadOrRandom(options.biasNpy, "--bias-file", problem->biasShape(),
                          dt, options.seed, 2);
    if (!b)
      return b.takeError();
    p.data.inputs.push_back(std::move(*b));
  }
  Type element = elementType(ctx, dt);
  for (const HostTensor &t : p.data.inputs)
    p.data.inputSpecs.push_back({t.shape, element});
  DType out = outputDType(*problem, p.epilogue);
  if (p.epilogue.residual) {
    // The output's shape and type, drawn from the seed's fourth stream.
    auto shape = llvm::to_vector(problem->outputShape());
    DType type = residualDType(*problem, p.epilogue);
    p.data.inputs.push_back(randomTensor(shape, type, options.seed, 3));
    p.data.inputSpecs.push_back({shape, elementType(ctx, type)});
  }
  p.data.outputSpec = {llvm::to_vector(problem->outputShape()),
                       elementType(ctx, out)};
  p.data.npyOutputShape =
      withoutUnitH(problem->outputShape(), layout, conv1d);
  p.data.outputDType = out;
  p.data.outputElements = problem->outputElements();
  return p;
}

/// The function must take (input[, filter[, bias]]) ranked tensors (a
/// pooling reads no filter) and return one.
llvm::Error checkSignature(func::FuncOp func) {
  std::string name = func.getSymName().str();
  if (func.isExternal())
    return badInput("@" + name + " is a declaration without a body");
  FunctionType type = func.getFunctionType();
  if (type.getNumInputs() < 1 || type.getNumInputs() > 3 ||
      type.getNumResults() != 1)
    return badInput(llvm::formatv(
        "@{0} must take (input[, filter[, bias]]) tensors and return the "
        "output",
        name));
  for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
    if (!isa<RankedTensorType>(t))
      return badInput(llvm::formatv(
          "@{0} must take and return ranked tensors, not {1}", name, t));
  return llvm::Error::success();
}

/// The data of each argument: its .npy file or seeded values.
llvm::Error loadArguments(func::FuncOp func, const RunOptions &options,
                          RunData &data) {
  FunctionType type = func.getFunctionType();
  std::string name = func.getSymName().str();
  llvm::StringRef paths[] = {options.inputNpy, options.filterNpy,
                             options.biasNpy};
  llvm::StringRef names[] = {"--input", "--filter", "--bias-file"};
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    auto t = cast<RankedTensorType>(type.getInput(i));
    auto dt = dtypeOf(t.getElementType());
    if (!dt)
      return dt.takeError();
    llvm::SmallVector<int64_t> shape(t.getShape());
    if (!t.hasStaticShape() && paths[i].empty())
      return badInput(llvm::formatv(
          "argument {0} of @{1} has a dynamic shape: give its data with {2}",
          i, name, names[i]));
    auto values = loadOrRandom(
        paths[i], names[i],
        t.hasStaticShape() ? llvm::ArrayRef<int64_t>(shape)
                           : llvm::ArrayRef<int64_t>(),
        *dt, options.seed, i);
    if (!values)
      return values.takeError();
    if (!t.hasStaticShape() && values->shape.size() != t.getShape().size())
      return badInput(llvm::formatv("{0} {1} has rank {2}; @{3} expects rank "
                                    "{4}",
                                    names[i], paths[i], values->shape.size(),
                                    name, t.getRank()));
    data.inputSpecs.push_back({values->shape, t.getElementType()});
    data.inputs.push_back(std::move(*values));
  }
  return llvm::Error::success();
}

/// The result's concrete shape (a dynamic batch is the input's).
llvm::Error describeOutput(func::FuncOp func, RunData &data) {
  auto result = cast<RankedTensorType>(func.getFunctionType().getResult(0));
  auto outDType = dtypeOf(result.getElementType());
  if (!outDType)
    return outDType.takeError();
  llvm::SmallVector<int64_t> outShape(result.getShape());
  if (!outShape.empty() && ShapedType::isDynamic(outShape[0]))
    outShape[0] = data.inputs[0].shape[0];
  if (llvm::any_of(outShape, ShapedType::isDynamic))
    return badInput("only the batch of the result may be dynamic");
  data.outputSpec = {outShape, result.getElementType()};
  data.npyOutputShape = outShape;
  data.outputDType = *outDType;
  data.outputElements = 1;
  for (int64_t d : outShape)
    data.outputElements *= d;
  return llvm::Error::success();
}

llvm::Expected<Prepared> prepareFromFile(MLIRContext &ctx,
                                         const RunOptions &options) {
  Prepared p;
  std::string openError;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(options.mlirFile, &openError);
  if (!file)
    return badInput(openError);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  // Parse errors are printed located (file:line:col) before the one-line
  // error that follows.
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  p.module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!p.module)
    return badInput("cannot parse " + options.mlirFile +
                    " (diagnostics above)");
  auto func = findConvFunction(*p.module, options.function);
  if (!func)
    return asBadInput(func.takeError());
  p.function = func->getSymName().str();
  if (llvm::Error e = checkSignature(*func))
    return std::move(e);
  if (llvm::Error e = loadArguments(*func, options, p.data))
    return std::move(e);
  if (llvm::Error e = describeOutput(*func, p.data))
    return std::move(e);
  return p;
}

} // namespace

llvm::Expected<Prepared> runner::prepare(MLIRContext &context,
                                         const RunOptions &options) {
  bool fromFile = !options.mlirFile.empty();
  if (fromFile && options.flags)
    return badInput("give either a .mlir file or --input-shape/--filter-shape");
  if (!fromFile && !options.flags)
    return badInput("give a .mlir file, or --input-shape N,C,H,W and "
                    "--filter-shape F,C/G,KH,KW");
  return fromFile ? prepareFromFile(context, options)
                  : prepareFromFlags(context, options);
}
