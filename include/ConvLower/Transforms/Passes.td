//===- Passes.td - ConvLower passes ------------------------*- tablegen -*-===//

#ifndef CONVLOWER_TRANSFORMS_PASSES_TD
#define CONVLOWER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"
include "ConvLower/Transforms/PassOptions.td"

def ConvLowerIm2Col : Pass<"conv-lower-im2col"> {
  let summary = "Rewrite linalg 2-D convolutions into im2col + matmul + fold";
  let description = [{
    Rewrites every supported linalg 2-D convolution (named NCHW/NHWC, grouped
    and depthwise forms, and convolution-shaped linalg.generic ops) into
    `conv_lower.im2col`, a linalg contraction and `conv_lower.fold`.

    - A zero `tensor.pad` producing the input is absorbed into the im2col's
      padding; the padded image is never materialized.
    - The filter becomes the GEMM's B operand by a reshape only: the im2col's
      K order follows the filter layout.
    - A 1x1, stride-1, unpadded convolution needs no im2col: the input is
      reshaped (NHWC) or transposed (NCHW) into the A operand.
    - Convolutions it cannot handle are left untouched; with
      `emit-remarks` a remark on each says why. The pass never fails on
      valid IR.
  }];
  let dependentDialects = [
    "::mlir::conv_lower::ConvLowerDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
  ];
  let options = [
    Option<"emitRemarks", "emit-remarks", "bool", /*default=*/"false",
           "Emit a remark on every convolution left untouched, saying why">,
  ];
}

def ConvLowerLiftTo2D : Pass<"conv-lower-lift-to-2d"> {
  let summary = "Rewrite 1-D and batchless convolutions as 2-D (or 3-D) "
                "convolutions with unit dimensions";
  let description = [{
    Frontends emit `linalg.conv_1d_nwc_wcf` / `conv_1d_ncw_fcw` (torch's
    conv1d), `depthwise_conv_1d_nwc_wc` / `_ncw_cw` / `_nwc_wcm`, and the
    batchless, channel-less `linalg.conv_1d`, `linalg.conv_2d` and
    `linalg.conv_3d`. Each is the convolution of the matching form
    (`conv_2d_nhwc_hwcf`, `conv_2d_nchw_fchw`, `depthwise_conv_2d_*`,
    `conv_3d_ndhwc_dhwcf`) with a height, batch or channel of one: this pass
    writes it so, with `tensor.expand_shape` of
    the operands and a `tensor.collapse_shape` of the result, so that the
    im2col rewrite and the implicit-GEMM kernel take it like any 2-D
    convolution. A zero `tensor.pad` of the input is carried through the
    reshape (the 2-D rewrites absorb it). The reshapes add or drop unit
    dimensions only: no data moves.

    Runs first in both ConvLower pipelines; run it before
    `--conv-lower-im2col` or `--conv-lower-implicit-gemm` on their own.
    Everything else is left untouched.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvLowerDecompose : Pass<"conv-lower-decompose"> {
  let summary = "Lower conv_lower.im2col and conv_lower.fold to linalg/tensor";
  let description = [{
    Expresses `conv_lower.im2col` as a zero `tensor.pad` plus a copy-like
    `linalg.generic` with affine (strided, dilated) indexing, reshaped to
    `[G, M, K]`, and `conv_lower.fold` as a reshape plus `linalg.transpose`.
    After it, any linalg backend (including upstream's loop lowering) can run
    the module.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
  ];
}

def ConvLowerFillEmptyPads : Pass<"conv-lower-fill-empty-pads"> {
  let summary = "Rewrite a tensor.pad of an empty tensor into a fill";
  let description = [{
    A `tensor.pad` whose source has a dimension of size 0 produces nothing
    but its padding value. MLIR 22's bufferization copies the (empty) source
    into a subview of the result at the low padding's offset, and
    `memref.subview` rejects that offset on a dimension of size 0 ("offset 2
    is out-of-bounds: 0 >= 0") even for an empty view, so the module stops
    compiling. This pass replaces such a pad with a `linalg.fill` of its
    padding value (when it is one value) into a `tensor.empty` of the pad's
    result size. Both ConvLower pipelines run it before bufferization; frontends
    emit such pads for degenerate convolutions (no channels, an empty image).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def ConvLowerPackRhs : Pass<"conv-lower-pack-rhs"> {
  let summary = "Transpose a GEMM's [N, K] right-hand side into [K, N] once";
  let description = [{
    The im2col rewrite keeps FCHW/FHWC filters as they are: the GEMM reads
    B as [F, K] (a reshape of the filter, no copy). The CPU micro-kernel
    (outer products along K) wants rows of B contiguous along N, so this pass
    materializes B^T with one `linalg.transpose` before the GEMM — the packing
    step of every GEMM library, on the (small) filter — and gives the
    `linalg.matmul` / `linalg.batch_matmul` its default indexing maps.
    A 50176x576x128 f32 GEMM ran 2.3x faster this way (docs/performance.md).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvLowerDepthwiseDirect : Pass<"conv-lower-depthwise-direct"> {
  let summary = "Compute depthwise convolutions directly on CPU vectors "
                "(no im2col, no K = 9 GEMM)";
  let description = [{
    Every 2-D depthwise convolution (one channel and one filter per group:
    `depthwise_conv_2d_*` with multiplier 1, or a grouped form with
    Cg = Fg = 1, or a generic spelling of one) with float data and static
    shapes is rewritten as `linalg.depthwise_conv_2d_nhwc_hwc` on a
    channels-last image (channels-first images and outputs transposed),
    the filter as [KH, KW, C], one per piece of the output: the interior,
    whose windows lie inside the image, reads it directly, and the border
    strips (top and bottom rows, left and right columns) pad only their own
    windows (`tensor.pad`), all accumulating in place into one result. Each
    is tiled: an `scf.forall` over (image, output row), then register tiles of
    `tile-columns` output columns x `tile-channels` channels (the largest
    divisors not above them) and one kernel row, which become 1-D depthwise
    convolutions (upstream's DownscaleDepthwiseConv2DNhwcHwcOp) and are
    vectorized (`linalg::vectorize`: FMAs on channel vectors, the taps
    unrolled). The CPU pipeline runs it before the im2col rewrite; other
    convolutions, quantized ones and dynamic shapes are left untouched.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"tileColumns", "tile-columns", "int64_t", /*default=*/"8",
           "Output columns per register tile">,
    Option<"tileChannels", "tile-channels", "int64_t", /*default=*/"16",
           "Channels per register tile (16: one AVX-512 f32 vector)">,
  ];
}

def ConvLowerWinograd : Pass<"conv-lower-winograd"> {
  let summary = "Compute 3x3 stride-1 convolutions by Winograd F(4x4, 3x3) "
                "on CPU vectors";
  let description = [{
    Every 2-D convolution with a 3x3 filter, unit strides and dilations,
    one group, f32 data, static shapes, channel and filter counts that are
    multiples of 8, a `linalg.fill` accumulator and at least `min-tiles`
    4x4 output tiles (the cost rule below) is rewritten as Winograd's
    F(4x4, 3x3) (Lavin and Gray: interpolation points 0, +-1, +-2, inf):

        Y = A^T [ (G g G^T) . (B^T d B) ] A

    - the filters once per call, U[36, C, F] = G g G^T on vectors of
      filters (an `scf.forall` over channels);
    - then an `scf.forall` over blocks of 4x4-tile rows of each image (what
      threads share), each block: the input transform V[36, T, C] =
      B^T d B of its T tiles (6x6 windows read from the channels-last
      image, channels as vectors; padding by clamped reads and selects, so
      the padded image is never materialized), a `linalg.batch_matmul`
      V x U -> M[36, T, F] (36 GEMMs, which conv-lower-tile-and-vectorize
      register-tiles like every other GEMM), and the output transform
      A^T M A (+ the fill's value) into the block's 4 rows of output per
      tile row, in the output's own layout (channels first through a
      register transpose of each tile's 16 pixels).

    A channels-first image is transposed to channels last; the filter to
    [3, 3, C, F]; an output whose size is not a multiple of 4 is computed
    padded and cropped.

    The cost rule: 36 multiplies per tile and channel pair instead of 144,
    against a filter transform that reads the filters and writes 4x their
    size once per call; below `min-tiles` tiles (deep layers on small
    images: r50's 512-channel 7x7 layer has 4 per image) the GEMM route is
    faster. Each block also reads all of U: where U is past 4 MiB, an image
    of fewer than 16 tiles (a block holds one image's at most) would make the
    blocks memory-bound, and keeps the GEMM route; past 16 MiB (C = F = 512)
    U's buffer, mapped fresh by every call, costs more in page faults than
    Winograd saves. The forall carries the
    dialect's `conv_lower.winograd` unit attribute. Error: Winograd's transforms amplify rounding; on f32 data
    uniform in [-1, 1] its relative L2 error against a float64 direct
    convolution grows from ~1e-6 (C = 16) to ~4e-6 (C = 512), against
    ~3e-7 for the GEMM route, so channels above `max-channels` (1024) keep
    the GEMM route and stay inside f32's 1e-5 check. Other convolutions are
    left untouched (the im2col rewrite takes them); the pass never fails on
    valid IR.
  }];
  let dependentDialects = [
    "::mlir::conv_lower::ConvLowerDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"minTiles", "min-tiles", "int64_t", /*default=*/"32",
           "The fewest 4x4 output tiles per call (N * ceil(Ho/4) * "
           "ceil(Wo/4)) for which Winograd is chosen (0: every convolution "
           "it can take, the cost rule off)">,
    Option<"maxChannels", "max-channels", "int64_t", /*default=*/"1024",
           "The most input channels for which Winograd's f32 error stays "
           "within 1e-5">,
    Option<"blockTiles", "block-tiles", "int64_t", /*default=*/"64",
           "About how many tiles a block transforms and multiplies at once "
           "(whole tile rows of one image)">,
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "Threads that share the blocks: at least two blocks each where "
           "the image has as many tile rows">,
    Option<"emitRemarks", "emit-remarks", "bool", /*default=*/"false",
           "Emit a remark on every convolution left to the GEMM route, "
           "saying why (the cost rule's reason included)">,
  ];
}

def ConvLowerCopiesToLinalg : Pass<"conv-lower-copies-to-linalg"> {
  let summary = "Rewrite strided memref.copy ops as linalg.copy";
  let description = [{
    After bufferization a `tensor.pad` is a fill plus a `memref.copy` of the
    image into a strided subview of the padded buffer. A copy that is not
    one contiguous block lowers to a call of the runner utilities' generic
    `memrefCopy` (every element's address recomputed: 1.2 ms for a 1.8 MB
    image); as `linalg.copy` it becomes loops over a contiguous innermost
    dimension, which LLVM vectorizes. Copies between contiguous memrefs stay
    `memref.copy` (a memcpy). The CPU pipeline runs it after bufferization.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ConvLowerVectorizeTransposes : Pass<"conv-lower-vectorize-transposes"> {
  let summary = "Tile static linalg.transpose ops into square vector tiles";
  let description = [{
    Every `linalg.transpose` on static tensors (not bf16, whose vector
    shuffles LLVM's x86 backend cannot lower without AVX512-BF16) first has
    the runs of dimensions it moves together collapsed (NCHW -> NHWC is
    [N, C, H*W] -> [N, H*W, C], reshaped back; not for a slice, which is not
    contiguous), so a 56x56 image's tiles are 16 wide instead of 14; then it
    is tiled with `scf.for`
    loops: the output's innermost dimension and the one the input's
    innermost becomes by `tile` (the largest divisors not above it), every
    other dimension by 1; each tile is vectorized (a `vector.transfer_read`
    of contiguous input rows, a `vector.transpose`, contiguous writes).
    Lowered to loops instead, a transpose strides through memory on every
    element: pack-rhs's transpose of a 512x4608 filter, on every call, and
    the channels-first depthwise layers' image transposes. The CPU pipeline
    runs it after the GEMM tiling and lowers `vector.transpose` to shuffles.
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::tensor::TensorDialect",
  ];
  let options = [
    Option<"tile", "tile", "int64_t", /*default=*/"16",
           "Tile size of the two exchanged dimensions (16: one AVX-512 f32 "
           "vector)">,
  ];
}

def ConvLowerVectorizeGathers : Pass<"conv-lower-vectorize-gathers"> {
  let summary = "Vectorize im2col copies along their contiguous runs";
  let description = [{
    An im2col copy (a `linalg.generic` on static buffers whose body yields
    its input element, every loop parallel, its output map a permutation)
    indexes its input with sums such as `oh + kh`: linalg's vectorizer
    rejects such maps, and the loops it lowers to moved one element per
    load and store (a third of r50's 64-channel 3x3 layer at N = 1, NHWC).
    Where the output's innermost index steps the input's innermost by one
    element too (`c`, `g * C + c`, `ow + kw`) and no other input index uses
    it (channels in NHWC, the output row in a stride-1 channels-first
    panel), each run along that loop is contiguous on both sides: the copy
    is tiled by 1 along every other loop and by the largest divisor of its
    extent up to `run` along it, and each tile becomes one
    `vector.transfer_read` and one `vector.transfer_write`. Other copies,
    and runs shorter than 4 elements, are left as they are. It runs after
    bufferization: on tensors, a vector read of a slice written whole into
    another folds back into a slice copy.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"run", "run", "int64_t", /*default=*/"64",
           "Longest run a tile copies (elements: 64 f32 are four AVX-512 "
           "registers)">,
  ];
}

def ConvLowerIm2ColPanels : Pass<"conv-lower-im2col-panels"> {
  let summary = "Compute the im2col per block of output rows inside the "
                "GEMM's parallel loop (the CPU's implicit GEMM: no X_col)";
  let description = [{
    After `conv-lower-decompose`, a convolution's GEMM reads X_col: the
    result of one copy-like `linalg.generic` (the im2col) collapsed to
    `[G, M, K]`, written whole before the GEMM reads it back (116 MB on the
    seed layer, far out of cache). This pass rewrites each such
    `linalg.matmul` / `linalg.batch_matmul` (default maps, static shapes)
    into an `scf.forall` over blocks of whole output rows: per block, the
    copy tiled to the block's rows (through its TilingInterface: only the
    image rows the block reads) gives a packed A panel of `bh * R` rows
    (R = the inner output sizes) that stays in cache while the block's GEMM
    runs, and a `linalg.fill` init is redone on the block's slice. `bh` is
    the largest divisor of the outer output size whose panel fits
    `panel-bytes` and that leaves at least `min-blocks` blocks; where even
    bh = 1 leaves fewer, the filters are split into chunks of whole register
    tiles as well. Where the filter is past `filter-cache-bytes` (every
    row block streams all of it from memory), the row blocks
    are instead the largest whose panels fit twice the budget, and the
    filters are split only as far as `threads` needs. The forall is what threads share (conv-lower-to-llvm
    lowers it to OpenMP, or to a loop with one thread).

    Channels-last outputs get the GEMM X_panel [rows, K] x W^T [K, F].
    Where the output is channels first (the fold would transpose the GEMM's
    [M, F] result), the panel is written [K, rows], its copy's innermost
    loop along the output row, and the block computes W [F, K] x
    X_panel^T straight into its [F, rows] of the output: the fold and
    pack-rhs's transpose of W go away. That needs rows enough for whole
    vectors: an image of fewer than `channels-first-min-rows` output pixels
    (a 7x7 one: 49, three vectors and one lane), in a batch of at least
    four times that many pixels (enough to pay for pack-rhs's per-call
    transpose of W), takes the channels-last block GEMM, its filters as the
    vector dimension, and the fold's transpose stays after it. Every other
    GEMM is left as it is.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
  let options = [
    Option<"panelBytes", "panel-bytes", "int64_t", /*default=*/"524288",
           "Largest A panel (bytes, every group) a block computes: half of "
           "a 1 MiB L2, leaving room for the W tiles streamed past it">,
    Option<"minBlocks", "min-blocks", "int64_t", /*default=*/"1",
           "Blocks wanted at least (the pipeline asks for 4 per thread): "
           "where the output rows are too few, the filters are split too">,
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "The threads that share the blocks: where the filter is too large "
           "for the cache (every row block streams it), the blocks are the "
           "fewest that keep this many busy">,
    Option<"filterCacheBytes", "filter-cache-bytes", "int64_t",
           /*default=*/"1048576",
           "A filter larger than this (a core's L2 share) streams from memory "
           "for every row block: then the row blocks are the fewest whose "
           "panels fit twice panel-bytes">,
    Option<"channelsFirstMinRows", "channels-first-min-rows", "int64_t",
           /*default=*/"64",
           "Channels first: an image of fewer output pixels than this (the "
           "W-first GEMM's vector dimension) in a batch of at least 4x as "
           "many takes the rows-first block GEMM and keeps the fold">,
    GemmTileMOption,
    GemmTileNOption,
  ];
}

def ConvLowerTileAndVectorize : Pass<"conv-lower-tile-and-vectorize"> {
  let summary = "Tile linalg contractions into register tiles and vectorize them";
  let description = [{
    Tiles every linalg contraction on tensors (matmul, batch_matmul and
    contraction-shaped linalg.generic ops, as the im2col rewrite emits) with
    `scf.for` loops: the innermost M dimension by `tile-m`, the innermost N
    dimension by `tile-n`, the innermost K dimension by `tile-k`, and every
    other dimension by 1. Each tile becomes a `vector.contract` (masked where a
    boundary tile is partial). This is the CPU micro-kernel: no scalar triple
    loop is left for the GEMM. The accumulator tiles are then hoisted out of
    the K loops (`hoistLoopInvariantSubsets`): carried as vectors, not read
    and written back on every K step.

    Where the operand the register tiles stream (the [K, N] one: each row
    tile reads all of it) is larger than `cache-block-bytes`, K is first
    split into blocks (BLIS's kc) whose [kc, N] slice fits that budget: the
    row tiles then read it from the L2 cache, and the accumulators go back
    to the output once per block.
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::affine::AffineDialect",
    "::mlir::tensor::TensorDialect",
  ];
  let options = [
    GemmTileMOption,
    GemmTileNOption,
    GemmTileKOption<"8">,
    Option<"cacheBlockBytes", "cache-block-bytes", "int64_t",
           /*default=*/"524288",
           "The budget of the [kc, N] slice of the streamed GEMM operand "
           "that one block of K reads (0: K is not blocked)">,
    Option<"parallelBlocks", "parallel-blocks", "int64_t", /*default=*/"0",
           "When positive, first split the innermost M dimension into about "
           "this many blocks of rows (a multiple of tile-m each; batch and "
           "group dimensions by 1) with an scf.forall, whose iterations can "
           "run on different threads">,
  ];
}

def ConvLowerGridConstantTensorMaps
    : Pass<"conv-lower-grid-constant-tensor-maps", "::mlir::LLVM::LLVMFuncOp"> {
  let summary = "Pass a kernel's TMA tensor maps by value, as __grid_constant__ parameters";
  let description = [{
    The sm_90a kernels of --conv-lower-implicit-gemm take their tensor maps
    as the last `conv_lower.tensor_maps`-many arguments, generic pointers
    that `cp.async.bulk.tensor` reads the 128-byte CUtensorMap through. MLIR
    host code (gpu.launch_func) passes pointers to device copies, which is
    what the arguments are by default. The runtime (bundles, conv-run)
    passes the maps by value instead, as CUTLASS does: no allocation or copy
    per launch, and the map sits in the kernel's parameter (constant) bank.
    This pass, run on the kernels after their conversion to the LLVM
    dialect, marks those arguments `llvm.byval = !llvm.array<128 x i8>`,
    `llvm.align = 64` and `nvvm.grid_constant`: NVPTX then declares each as
    `.param .align 64 .b8 [128]` and takes its address with `cvta.param`.
    (The attributes cannot be set on the gpu.func: NVVM accepts
    `nvvm.grid_constant` on kernel llvm.funcs only, and gpu-to-nvvm drops
    `llvm.byval`.)
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def ConvLowerImplicitGemm : Pass<"conv-lower-implicit-gemm", "::mlir::ModuleOp"> {
  let summary = "Rewrite linalg 2-D convolutions into implicit-GEMM tensor-core kernels";
  let description = [{
    Every convolution the im2col rewrite accepts (same forms, same analysis:
    strides, dilations, groups, depthwise, absorbed zero padding) with
    f16/bf16 data (mma.sync m16n8k16, f32 accumulation) or f32 data (tf32,
    m16n8k8), static shapes and a constant-fill init becomes one CTA-tiled
    kernel: the im2col is fused into the global->shared copy of the A tile
    (cp.async with zero-fill for padding and bounds, 16-byte chunks where
    the layout allows, an element gather where not), a ring of `stages`
    swizzled shared-memory buffers, ldmatrix + mma.sync per warp with the
    accumulators in registers, and an epilogue that writes each result to
    its place in the output layout (the fold) plus the init value.

    `target=cuda`: the kernel goes into `gpu.module @conv_lower_kernels`
    (attributes `conv_lower.grid`, `conv_lower.block`, `conv_lower.tiles`
    record the launch) and the convolution becomes a `gpu.launch_func` on
    managed copies of its operands. `target=cpu-twin`: the same block body
    as host loops (threads and warps become loops, cp.async a predicated
    vector copy, ldmatrix and mma.sync emulated lane by lane as the PTX ISA
    defines them, from the GPU code's own addresses), so the kernel's
    indexing can be run and checked on any machine.

    A per-channel bias add (a `linalg.generic` reading `bias[channel]`,
    also after the collapse of a grouped output) and a ReLU (`max(x, 0)`)
    that only the convolution feeds are fused into the epilogue.
    `im2col=explicit` instead emits an im2col kernel storing X_col [M, G, K]
    and a GEMM kernel reading it, for comparison.

    Depthwise convolutions (one channel and one filter per group) get a
    direct kernel instead (`conv_lower.tiles = {direct_depthwise, ...}`):
    CUDA cores, no K padding, each thread 16 bytes of channels of one
    output pixel (one channel where channels are not innermost), the taps
    unrolled, the same epilogue. Tile options select the GEMM kernel.

    Tile sizes come from a per-problem heuristic (2x2 warps, blockK = 64
    bytes, 3 stages; smaller blocks where the problem is narrow) unless
    overridden. Other convolutions are left untouched (remarks with
    `emit-remarks`).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::conv_lower::ConvLowerDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = !listconcat([ImplicitGemmTargetOption], ImplicitGemmKernelOptions, [
    Option<"emitRemarks", "emit-remarks", "bool", /*default=*/"false",
           "Emit a remark on every convolution left untouched, saying why">,
  ]);
}

#endif // CONVLOWER_TRANSFORMS_PASSES_TD
