//===- OmpParallelToGomp.cpp - omp.parallel through GOMP_parallel ---------===//
//
// LLVM's OpenMP translation starts an omp.parallel with __kmpc_fork_call,
// which only LLVM's libomp exports: in a torch process, whose OpenMP runtime
// is GCC's libgomp, ConvLower's threads were a second pool, and each pool's
// idle threads spun on the cores the other one needed. GOMP_parallel (GCC's
// OpenMP ABI) is exported by libgomp and by libomp alike, so code that starts
// its regions with it runs on whichever runtime the process already has.
//
// On the LLVM dialect, after everything else is lowered, each omp.parallel
// becomes
//
//   llvm.func internal @f_omp_parallel_0(%data: !llvm.ptr) { loads; body }
//   ... store the captured values into a stack struct ...
//   llvm.call @GOMP_parallel(@f_omp_parallel_0, %struct, %num_threads, 0)
//
// GOMP_parallel runs the function on every thread of the team, the caller's
// included, and returns when all have.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-omp-parallel-to-gomp"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWEROMPPARALLELTOGOMP
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kGompParallel = "GOMP_parallel";

/// Why this region cannot be outlined, or "".
std::string unsupportedReason(omp::ParallelOp region) {
  if (region.getIfExpr() || !region.getAllocateVars().empty() ||
      !region.getPrivateVars().empty() || !region.getReductionVars().empty() ||
      region.getProcBindKindAttr())
    return "only num_threads is supported (no if, allocate, private, "
           "reduction or proc_bind clause)";
  if (region.getRegion().front().getNumArguments() != 0)
    return "the region has block arguments";
  if (Value n = region.getNumThreads(); n && !isa<IntegerType>(n.getType()))
    return "num_threads is not an integer (run after the conversion to the "
           "LLVM dialect)";
  if (!region->getParentOfType<LLVM::LLVMFuncOp>())
    return "the region is not in an llvm.func (run after the conversion to "
           "the LLVM dialect)";
  WalkResult nested = region.getRegion().walk([&](Operation *op) {
    if (isa<omp::OpenMPDialect>(op->getDialect()) &&
        !(isa<omp::TerminatorOp>(op) && op->getParentOp() == region))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (nested.wasInterrupted())
    return "the region holds OpenMP constructs of its own (a worksharing "
           "loop, a nested region)";
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(region.getRegion(), captured);
  for (Value v : captured)
    if (!LLVM::isCompatibleType(v.getType()))
      return "the region uses a value of non-LLVM type (run after the "
             "conversion to the LLVM dialect)";
  return "";
}

/// Values cheaper to recompute in the outlined function than to pass.
bool isRematerializable(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumResults() == 1 && def->getNumOperands() == 0 &&
         def->getNumRegions() == 0 &&
         (def->hasTrait<OpTrait::ConstantLike>() ||
          isa<LLVM::AddressOfOp, LLVM::ZeroOp, LLVM::UndefOp, LLVM::PoisonOp>(
              def));
}

/// The team size as GOMP_parallel's `unsigned num_threads` (0: the
/// runtime's default).
Value numThreadsAsI32(OpBuilder &b, omp::ParallelOp region) {
  Location loc = region.getLoc();
  Type i32 = b.getI32Type();
  Value n = region.getNumThreads();
  if (!n)
    return LLVM::ConstantOp::create(b, loc, i32, 0);
  unsigned width = cast<IntegerType>(n.getType()).getWidth();
  if (width > 32)
    return LLVM::TruncOp::create(b, loc, i32, n);
  if (width < 32)
    return LLVM::ZExtOp::create(b, loc, i32, n);
  return n;
}

/// Replaces the uses of `from` inside `scope` with `to`.
void replaceUsesIn(Operation *scope, Value from, Value to) {
  from.replaceUsesWithIf(to, [&](OpOperand &use) {
    return scope->isProperAncestor(use.getOwner());
  });
}

class Outliner {
public:
  Outliner(ModuleOp module) : module(module), symbols(module) {}

  void outline(omp::ParallelOp region) {
    MLIRContext *ctx = module.getContext();
    Location loc = region.getLoc();
    auto parent = region->getParentOfType<LLVM::LLVMFuncOp>();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);

    SetVector<Value> captured;
    getUsedValuesDefinedAbove(region.getRegion(), captured);
    SmallVector<Value> fields, remade;
    for (Value v : captured)
      (isRematerializable(v) ? remade : fields).push_back(v);
    SmallVector<Type> fieldTypes =
        llvm::map_to_vector(fields, [](Value v) { return v.getType(); });
    auto record = LLVM::LLVMStructType::getLiteral(ctx, fieldTypes);

    // The body as `void fn(ptr)`: its blocks move over whole; the captured
    // values are loaded from the struct (or remade) at the top.
    OpBuilder b(parent);
    b.setInsertionPointAfter(parent);
    auto fn = LLVM::LLVMFuncOp::create(
        b, loc, (parent.getName() + "_omp_parallel").str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType}),
        LLVM::Linkage::Internal);
    symbols.insert(fn); // uniques the name
    Region &body = fn.getBody();
    body.getBlocks().splice(body.end(), region.getRegion().getBlocks());
    Block &entry = body.front();
    Value data = entry.addArgument(ptrType, loc);
    b.setInsertionPointToStart(&entry);
    for (auto [i, v] : llvm::enumerate(fields)) {
      Value at = LLVM::GEPOp::create(
          b, loc, ptrType, record, data,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      replaceUsesIn(fn, v, LLVM::LoadOp::create(b, loc, v.getType(), at));
    }
    for (Value v : remade)
      replaceUsesIn(fn, v, b.clone(*v.getDefiningOp())->getResult(0));
    SmallVector<omp::TerminatorOp> exits;
    for (Block &block : body)
      if (auto exit = dyn_cast<omp::TerminatorOp>(block.getTerminator()))
        exits.push_back(exit);
    for (omp::TerminatorOp exit : exits) {
      b.setInsertionPoint(exit);
      LLVM::ReturnOp::create(b, exit.getLoc(), ValueRange{});
      exit.erase();
    }

    // The call: the struct lives in the caller's entry block (one slot for
    // every call of this region), filled where the region was.
    b.setInsertionPoint(region);
    Value arg;
    if (fields.empty()) {
      arg = LLVM::ZeroOp::create(b, loc, ptrType);
    } else {
      OpBuilder entryBuilder = OpBuilder::atBlockBegin(&parent.getBody().front());
      Value one = LLVM::ConstantOp::create(entryBuilder, loc,
                                           entryBuilder.getI64Type(), 1);
      arg = LLVM::AllocaOp::create(entryBuilder, loc, ptrType, record, one);
      for (auto [i, v] : llvm::enumerate(fields)) {
        Value at = LLVM::GEPOp::create(
            b, loc, ptrType, record, arg,
            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
        LLVM::StoreOp::create(b, loc, v, at);
      }
    }
    Value fnAddress = LLVM::AddressOfOp::create(b, loc, fn);
    Value team = numThreadsAsI32(b, region);
    Value flags = LLVM::ConstantOp::create(b, loc, b.getI32Type(), 0);
    LLVM::CallOp::create(b, loc, gompParallel(),
                         ValueRange{fnAddress, arg, team, flags});
    region.erase();
  }

private:
  /// void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads,
  ///                    unsigned flags)
  LLVM::LLVMFuncOp gompParallel() {
    if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(kGompParallel))
      return existing;
    MLIRContext *ctx = module.getContext();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto i32 = IntegerType::get(ctx, 32);
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto decl = LLVM::LLVMFuncOp::create(
        b, module.getLoc(), kGompParallel,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                    {ptrType, ptrType, i32, i32}));
    symbols.insert(decl);
    return decl;
  }

  ModuleOp module;
  SymbolTable symbols;
};

struct ConvLowerOmpParallelToGompPass
    : conv_lower::impl::ConvLowerOmpParallelToGompBase<
          ConvLowerOmpParallelToGompPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<omp::ParallelOp> regions;
    bool failed = false;
    module.walk([&](omp::ParallelOp region) {
      std::string reason = unsupportedReason(region);
      if (!reason.empty()) {
        region.emitError("conv-lower-omp-parallel-to-gomp: ") << reason;
        failed = true;
      }
      regions.push_back(region);
    });
    if (failed)
      return signalPassFailure();
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << regions.size()
                            << " parallel regions\n");
    Outliner outliner(module);
    for (omp::ParallelOp region : regions)
      outliner.outline(region);
  }
};

} // namespace
