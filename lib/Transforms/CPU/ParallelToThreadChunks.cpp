//===- ParallelToThreadChunks.cpp - parallel loops as per-thread chunks ---===//
//
// The CPU pipeline's parallel loops (the GEMMs' row blocks) are reduction-free
// scf.parallel ops with independent iterations. convert-scf-to-openmp makes
// them omp.wsloop, which LLVM's OpenMP translation turns into libomp's
// __kmpc_for_static_init: the code then needs LLVM's runtime, and in a torch
// process (GCC's libgomp) that is a second thread pool whose idle threads
// spin against the first one's (ResNet-50 through patch(): 0.52x torch with
// two runtimes, 0.91x with one; docs/performance.md). Here each thread of an
// omp.parallel computes its own static chunk from omp_get_thread_num and
// omp_get_num_threads, which both runtimes export, so the region can be
// started through either (conv-lower-omp-parallel-to-gomp).
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-parallel-to-thread-chunks"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERPARALLELTOTHREADCHUNKS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kThreadNum = "omp_get_thread_num";
constexpr llvm::StringLiteral kNumThreads = "omp_get_num_threads";

/// `func.func private @name() -> i32`, declared once in the module.
func::FuncOp declareOpenMPQuery(ModuleOp module, StringRef name) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto decl = func::FuncOp::create(
      b, module.getLoc(), name, b.getFunctionType({}, {b.getI32Type()}));
  decl.setPrivate();
  return decl;
}

/// The loop's trip counts, computed before it (0 for an empty range, so the
/// unsigned chunk arithmetic never sees a negative count).
SmallVector<Value> tripCounts(RewriterBase &rewriter, scf::ParallelOp loop) {
  Location loc = loop.getLoc();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  SmallVector<Value> trips;
  for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(),
                                       loop.getUpperBound(), loop.getStep())) {
    Value span = arith::SubIOp::create(rewriter, loc, ub, lb);
    Value trip = arith::CeilDivSIOp::create(rewriter, loc, span, step);
    trips.push_back(arith::MaxSIOp::create(rewriter, loc, trip, zero));
  }
  return trips;
}

/// The thread's share [begin, end) of `total` iterations: the balanced split
/// t * total / T, so the chunks differ by at most one iteration.
std::pair<Value, Value> threadChunk(OpBuilder &b, Location loc, Value total,
                                    func::FuncOp threadNum,
                                    func::FuncOp numThreads) {
  auto asIndex = [&](func::FuncOp query) -> Value {
    Value i32 = func::CallOp::create(b, loc, query).getResult(0);
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), i32);
  };
  Value thread = asIndex(threadNum), team = asIndex(numThreads);
  auto bound = [&](Value t) -> Value {
    Value scaled = arith::MulIOp::create(b, loc, t, total);
    return arith::DivUIOp::create(b, loc, scaled, team);
  };
  Value begin = bound(thread);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value next = arith::AddIOp::create(b, loc, thread, one);
  return {begin, bound(next)};
}

/// The induction variables of linear iteration `linear` (row major).
SmallVector<Value> delinearize(OpBuilder &b, Location loc, scf::ParallelOp loop,
                               ArrayRef<Value> trips, Value linear) {
  size_t rank = trips.size();
  SmallVector<Value> ivs(rank);
  Value rest = linear;
  for (size_t d = rank; d-- > 0;) {
    Value index = rest;
    if (d > 0) {
      index = arith::RemUIOp::create(b, loc, rest, trips[d]);
      rest = arith::DivUIOp::create(b, loc, rest, trips[d]);
    }
    Value scaled = arith::MulIOp::create(b, loc, index, loop.getStep()[d]);
    ivs[d] = arith::AddIOp::create(b, loc, loop.getLowerBound()[d], scaled);
  }
  return ivs;
}

bool hasStackAllocations(scf::ParallelOp loop) {
  return loop.getBody()
      ->walk([](memref::AllocaOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// omp.parallel { chunk = this thread's; scf.for over it { body } }.
void rewriteLoop(RewriterBase &rewriter, scf::ParallelOp loop,
                 unsigned numThreads, func::FuncOp threadNum,
                 func::FuncOp numThreadsQuery) {
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> trips = tripCounts(rewriter, loop);
  Value total = trips.front();
  for (Value trip : ArrayRef<Value>(trips).drop_front())
    total = arith::MulIOp::create(rewriter, loc, total, trip);

  omp::ParallelOperands clauses;
  if (numThreads > 0)
    clauses.numThreads = arith::ConstantIntOp::create(
        rewriter, loc, rewriter.getI32Type(), numThreads);
  auto region = omp::ParallelOp::create(rewriter, loc, clauses);
  Block *body = rewriter.createBlock(&region.getRegion());
  omp::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPointToStart(body);

  auto [begin, end] =
      threadChunk(rewriter, loc, total, threadNum, numThreadsQuery);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto chunk = scf::ForOp::create(rewriter, loc, begin, end, one);
  rewriter.setInsertionPointToStart(chunk.getBody());
  // Allocas in the body would otherwise pile up on the thread's stack, one
  // set per iteration of the chunk.
  Operation *yieldPoint = chunk.getBody()->getTerminator();
  if (hasStackAllocations(loop)) {
    auto scope = memref::AllocaScopeOp::create(rewriter, loc, TypeRange{});
    Block *scopeBody = rewriter.createBlock(&scope.getBodyRegion());
    yieldPoint = memref::AllocaScopeReturnOp::create(rewriter, loc);
    rewriter.setInsertionPointToStart(scopeBody);
  }
  SmallVector<Value> ivs =
      delinearize(rewriter, loc, loop, trips, chunk.getInductionVar());
  Operation *reduce = loop.getBody()->getTerminator();
  rewriter.inlineBlockBefore(loop.getBody(), yieldPoint, ivs);
  rewriter.eraseOp(reduce);
  rewriter.eraseOp(loop);
}

struct ConvLowerParallelToThreadChunksPass
    : conv_lower::impl::ConvLowerParallelToThreadChunksBase<
          ConvLowerParallelToThreadChunksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> loops;
    module.walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      // Inner parallel loops run sequentially inside their thread's chunk.
      if (loop.getNumReductions() == 0)
        loops.push_back(loop);
      return WalkResult::skip();
    });
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << loops.size()
                            << " parallel loops\n");
    if (loops.empty())
      return;
    func::FuncOp threadNum = declareOpenMPQuery(module, kThreadNum);
    func::FuncOp numThreadsQuery = declareOpenMPQuery(module, kNumThreads);
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : loops)
      rewriteLoop(rewriter, loop, numThreads, threadNum, numThreadsQuery);
  }
};

} // namespace
