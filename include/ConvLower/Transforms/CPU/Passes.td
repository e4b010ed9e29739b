//===- CPU/Passes.td - ConvLower CPU passes ---*- tablegen -*-===//
//
// The CPU room: direct depthwise, Winograd, im2col panels,
// register tiling + vectorization and the copies and transposes around
// them. Nothing here names a GPU dialect.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_CPU_PASSES_TD
#define CONVLOWER_TRANSFORMS_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"
include "ConvLower/Transforms/PassOptions.td"

def ConvLowerPackRhs : Pass<"conv-lower-pack-rhs"> {
  let summary = "Transpose a GEMM's [N, K] right-hand side into [K, N] once";
  let description = [{
    The im2col rewrite keeps FCHW/FHWC filters as they are: the GEMM reads
    B as [F, K] (a reshape of the filter, no copy). The CPU micro-kernel
    (outer products along K) wants rows of B contiguous along N, so this pass
    materializes B^T with one `linalg.transpose` before the GEMM — the packing
    step of every GEMM library, on the (small) filter — and gives the
    `linalg.matmul` / `linalg.batch_matmul` its default indexing maps.
    (Measured: docs/performance-journal.md, 2026-11-30, "CPU GEMM: pack the
    transposed filter".)
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvLowerNchwToNhwc : Pass<"conv-lower-nchw-to-nhwc"> {
  let summary = "Compute channels-first windowed convolutions on a "
                "channels-last image";
  let description = [{
    An NCHW convolution's im2col gathers each GEMM row from C planes, an
    element per plane and tap; an NHWC one gathers a run of C (or C/G)
    contiguous channels per tap. This pass rewrites static named
    `conv_2d_nchw_fchw` and `conv_2d_ngchw_gfchw` (and their `_q` forms)
    with kernels larger than 1x1 into the image transposed to [N, H, W, C]
    (zero padding moved onto it), the filter to FHWC (GFHWC), the
    `conv_2d_nhwc_fhwc` (`conv_2d_nhwgc_gfhwc`) convolution, and its output
    transposed back to the original layout. With constant weights the
    filter's transpose is hoisted with the rest of its packing. 1x1 layers
    (any stride) keep their NCHW form: their GEMM reads the planes as they
    are. Runs after the direct and Winograd rewrites,
    which read NCHW images through their own channels-last view.
    (Measured: docs/performance-journal.md, 2026-12-05 (eighth session).)
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvLowerPackFilterPanels : Pass<"conv-lower-pack-filter-panels"> {
  let summary = "Lay the transposed filter out as contiguous [K, nr] column "
                "panels, the GEMM libraries' packed B";
  let description = [{
    After conv-lower-pack-rhs (and conv-lower-im2col-panels), a GEMM that
    reads W^T [K, F] (a transpose of the filter W [F, K], or a slice of it
    whose columns are whole panels) reads instead the panels
    Wp [F / nr, K, nr], made from W by one transpose in place of pack-rhs's:
    the GEMM becomes a contraction over (m, panel, column, k) into its output
    viewed as [M, F / nr, nr]. Every [K, nr] strip the register tile streams
    is then contiguous, where W^T's rows lay F floats apart (2 KB at
    F = 512: the strip maps into two of L1's 64 sets). With constant weights
    the panels are made once, by conv-lower-hoist-constant-weights. A GEMM
    of at most 16 rows (a batch-1 linear layer: 1000 classes) whose filter
    columns are not a multiple of nr reads panels padded with zero filters
    to a whole last panel, computes [M, F rounded up to nr] and is that
    result's [M, F] slice (its strided W^T rows from memory cost more than
    the padding: 1280 -> 1000 0.21-0.33 ms after a 32 MB write, as panels
    0.10-0.22). Other GEMMs with such columns, slices of them, and B of any
    other form are left as they are.
  }];
  let options = [
    Option<"panelWidth", "panel-width", "int64_t", /*default=*/"16",
           "nr: the columns of one panel (the register tile's width)">,
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvLowerPackVNNI : Pass<"conv-lower-pack-vnni"> {
  let summary = "Split a bf16 or i8 GEMM's K into groups of 32 bits, "
                "innermost in both operands (the VNNI layout of x86's dot "
                "products)";
  let description = [{
    AVX512-BF16's VDPBF16PS multiplies 16 pairs of bf16 by 16 pairs and adds
    each pair's two products into one f32 lane; AVX512-VNNI's VPDPBUSD does
    the same with quads of bytes into i32. The groups run along K: both
    GEMM operands must hold consecutive K elements side by side. Every
    bf16 x bf16 -> f32 contraction (option `bf16`) and every i8 x i8 -> i32
    one with linalg's signed product (option `i8`) on tensors, with one
    reduction loop of static extent, becomes the same contraction over
    (k / g, k % g), g = 2 (bf16) or 4 (i8), each input read through its K
    dimension split with the group innermost: a `tensor.expand_shape` where
    K is already an input's innermost dimension (the im2col rows), otherwise
    one `linalg.transpose` placed where the input is defined (the filter
    panels: hoisted into the packing function under constant weights). A K
    in no whole groups gets zeros more in both inputs (a tensor.pad: the RGB
    stem's 147).

    VPDPBUSD takes unsigned bytes on one side: an i8 contraction's body
    reads its broadcast operand with the sign bits flipped (128 added,
    `arith.xori` with 0x80; the register tile applies it to each broadcast
    group, so A is not copied) and zero-extended, and its accumulator
    starts 128 * sum_k B lower (B's column sums, computed where B is
    defined): the result is the same to the bit. With `signed-i8` (AMX's
    TDPBSSD, which multiplies signed bytes by signed bytes) the body stays
    linalg's signed product, A first, with neither the flip nor the column
    sums: the tiles load A from memory as it is.

    Dynamic K, several reduction loops, columns in no whole 4s, other
    element types and bodies are left as they are. The CPU pipeline runs it
    with `bf16-dot` (AVX512-BF16 hosts) and `i8-dot` (AVX512-VNNI hosts),
    before conv-lower-tile-and-vectorize, which keeps each group whole in a
    tile; conv-lower-x86-dot-product then makes the tiles dot products.
  }];
  let options = [
    Option<"bf16", "bf16", "bool", "true",
           "Group bf16 x bf16 -> f32 contractions in K pairs">,
    Option<"i8", "i8", "bool", "true",
           "Group i8 x i8 -> i32 contractions in K quads, A made unsigned">,
    Option<"signedI8", "signed-i8", "bool", "false",
           "With i8: keep A signed (the signed product, A first; no sign "
           "flip, no column sums), for AMX's TDPBSSD">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvLowerX86DotProduct : Pass<"conv-lower-x86-dot-product"> {
  let summary = "Lower register tiles in K groups to x86 dot products "
                "(VDPBF16PS for bf16, VPDPBUSD for i8)";
  let description = [{
    A `vector.contract` of A [M, R, g] and B [R, N, g] (unit dimensions
    aside; the group innermost in both, as conv-lower-pack-vnni lays them
    out) into an accumulator [M, N] becomes, per group r and row m, N / L
    dot products: A's group (32 bits) broadcast to every lane, B's L columns
    of groups as they lie, L = 16 lanes where N allows, else 8 or 4. bf16
    pairs into f32 become `x86vector.avx512.dot` (VDPBF16PS); i8 quads into
    i32, A's bytes zero-extended and B's sign-extended (conv-lower-pack-
    vnni's form), become `conv_lower.avx512.dot.u8s8` (VPDPBUSD; MLIR's
    x86vector has no AVX512-VNNI op), which lowers through x86vector's
    intrinsic interface. The accumulator
    stays one vector value, so the K loop carries it in registers. Other
    contractions are left to the standard lowering. The code needs a CPU
    with AVX512-BF16 (bf16) or AVX512-VNNI (i8); the CPU pipeline runs the
    pass only with `bf16-dot` or `i8-dot`, which the runners set from the
    host's features.
  }];
  let options = [
    Option<"bf16", "bf16", "bool", "true",
           "Lower bf16 pair tiles to VDPBF16PS">,
    Option<"i8", "i8", "bool", "true",
           "Lower i8 quad tiles to VPDPBUSD">,
    Option<"signedI8", "signed-i8", "bool", "false",
           "Also take i8 quad tiles with A sign-extended (conv-lower-pack-"
           "vnni's signed-i8 form): VPDPBUSD on A's bytes flipped, less 128 "
           "x B's sums over the tile's K, one more dot per B vector">,
    Option<"leaveAMXTiles", "leave-amx-tiles", "bool", "false",
           "Leave tiles of whole AMX tiles (bf16 pairs A [M, R, 2] x B [R, "
           "N, 2]; with signed-i8, i8 quads [M, R, 4] x [R, N, 4]; M, R and N "
           "multiples of 16) as contractions of the vectors as read (their "
           "casts and broadcasts folded) for conv-lower-amx-tiles">,
  ];
  let dependentDialects = ["::mlir::conv_lower::ConvLowerDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect"];
}

def ConvLowerAMXTiles : Pass<"conv-lower-amx-tiles"> {
  let summary = "Run the register tiles of GEMMs in K groups on AMX tiles "
                "(bf16 pairs: TDPBF16PS, i8 quads: TDPBSSD), on buffers";
  let description = [{
    A `vector.contract` of A [M, R, g] and B [R, N, g] into an accumulator
    [M, N] (conv-lower-pack-vnni's groups, then conv-lower-tile-and-
    vectorize's register tile): bf16 pairs (g = 2) into f32, or signed i8
    quads (g = 4; pack-vnni's signed-i8 form) into i32. It becomes a grid
    of AMX tiles: A in row blocks of at most 16 rows by R <= 16 groups (64
    bytes a row), B in blocks of R group rows by at most 16 columns, the
    accumulator in ceil(M / 16) x ceil(N / 16) tiles of at most 16 x 16
    words, each block product one `amx.tile_mulf` (TDPBF16PS) or
    `amx.tile_muli` (TDPBSSD). Where the accumulator is
    carried by an `scf.for` (the tile's K loop) the loop carries the
    accumulator tiles instead: loaded (or zeroed) once before it, stored
    once after it. An operand read from a buffer whose groups lie
    contiguous (an in-bounds `vector.transfer_read`, seen through a
    reshape of its last dimension) is loaded straight from that buffer
    with its row stride; any other goes through a small stack buffer,
    allocated at the function's entry. Inside a parallel loop, where a
    stack buffer would be shared, such a tile runs on the dots the tiles'
    edges run on (VDPBF16PS, VPDPBUSD) instead. Runs after bufferization (tile loads and stores address memory). The
    code needs a CPU with AMX-TILE, AMX-BF16 and AMX-INT8 and, on Linux,
    the process's XTILEDATA permission: the runners request it and set
    the pipeline's `amx` option from both; `conv-lower-emulate-amx` runs
    the same tile program on any CPU.
  }];
  let dependentDialects = ["::mlir::amx::AMXDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::conv_lower::ConvLowerDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect"];
}

def ConvLowerAMXLoopTypes : Pass<"conv-lower-amx-loop-types"> {
  let summary = "Loops that carry AMX tiles carry LLVM's x86_amx values";
  let description = [{
    After convert-vector-to-llvm (with AMX) the tile operations are LLVM
    intrinsics on `!llvm.x86_amx`, cast to `!amx.tile` where an `scf`
    loop carries them (conv-lower-amx-tiles' K loops). The later
    conversions (scf to cf, cf, func and OpenMP to LLVM) know no tile
    type, so each such loop's iter_args, results and yields are retyped to
    `!llvm.x86_amx` here; the casts left on either side are folded by
    reconcile-unrealized-casts. LLVM's X86 backend then keeps the carried
    tiles in tile registers (its pre-tile-config pass writes LDTILECFG).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::scf::SCFDialect"];
}

def ConvLowerEmulateAMX : Pass<"conv-lower-emulate-amx"> {
  let summary = "Emulate AMX tile operations in vector code (the AMX "
                "route's CPU twin)";
  let description = [{
    Each AMX tile value becomes a vector of the tile's shape and each tile
    operation its architectural definition in vector code: `tile_zero` a
    zero vector; `tile_load` / `tile_store` one row of `cols` contiguous
    elements per tile row, rows `stride` elements apart; `tile_mulf` (bf16
    pairs into f32: C[m][n] += A[m][2r] B[r][2n] + A[m][2r+1] B[r][2n+1])
    and `tile_muli` (i8 quads into i32, each side sign- or zero-extended
    as the op says) a contraction of the widened groups. `scf` loops carrying tiles carry
    the vectors. The result runs on any CPU: conv-run's `--amx=emulated`
    checks the AMX route's tiling, its operand addressing and its edge
    tiles against the float64 reference on machines without AMX.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
}

def ConvLowerHoistConstantWeights
    : Pass<"conv-lower-hoist-constant-weights", "::mlir::ModuleOp"> {
  let summary = "Compute what depends only on constant weights once, in a "
                "packing function of its own";
  let description = [{
    Inference weights do not change between calls, yet the CPU route
    re-derives from them on every call: pack-rhs's transposed filter
    [K, F], Winograd's U = G g G^T, depthwise's regrouped [KH, KW, C]
    filter. For every function with memref arguments marked
    `conv_lower.constant` (a unit argument attribute; read through
    `bufferization.to_tensor`, destination style, as the runner's wrapper
    is), this pass finds the side-effect-free ops computed from those
    arguments alone and hoists the values the rest of the function reads:
    each becomes a new trailing memref argument (read through a restrict
    `to_tensor`), and a new function `@<name>_pack`, with the same new
    signature and no results, computes them into those arguments. A caller
    allocates the packed buffers (their types are listed in the
    `conv_lower.packed` attribute of both functions), calls `_pack` once and
    then the function as often as it likes; the marked arguments are not
    read by it again. Values that are only views of the arguments (reshapes,
    casts) are not hoisted: they cost nothing per call. A function with
    nothing to hoist still gets its (empty) `_pack` and an empty
    `conv_lower.packed`, so callers need no special case. The CPU pipeline
    runs it after pack-rhs and the im2col panels with `constant-weights` (after inlining, so the
    wrapper sees the convolution's whole data flow).
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ConvLowerMaxPoolRows : Pass<"conv-lower-max-pool-rows"> {
  let summary = "Compute max pooling on CPU vectors by output rows, the "
                "-inf padding never copied";
  let description = [{
    Every `linalg.pooling_nhwc_max` with static shapes and float data whose
    input is an image or a `tensor.pad` of one by -infinity along H and W
    (ConvModule's max pooling, torch's max_pool2d) becomes one `scf.forall`
    over (image, output row). Each row is filled first (the accumulator's
    `linalg.fill`, in cache) and cut into pieces whose windows keep the
    same taps in the image: the padding never wins a maximum, so a border
    pixel's window drops the taps that land in it and no padded copy of
    the image is made. Each piece is a `linalg.pooling_nhwc_max` of the
    image itself, tiled into register tiles of `tile-columns` output
    columns x `tile-channels` channels (the largest divisors not above
    them) and one window row, which upstream's
    DownscaleSizeOneWindowed2DConvolution makes 1-D poolings and
    `linalg::vectorize` turns into maxima of channel vectors. One loop whose
    rows cover the output also takes an epilogue into its rows
    (conv-lower-parallel-epilogue). Channels-first poolings, dynamic shapes
    and other padding values are left to the generic lowering.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    // Narrow tiles: a stride-2 tile of 5 columns x 16 channels reads 11
    // input columns (22 AVX2 registers with its 10 accumulators: spills),
    // and the pooling is memory-bound either way (ResNet's 3x3/2 of
    // 64 x 112 x 112 at batch 8: 2.1-2.9 ms at 8 columns, 1.45-1.6 at 1 or
    // 2 columns of 8 to 32 channels, one process alternating).
    Option<"tileColumns", "tile-columns", "int64_t", /*default=*/"2",
           "Output columns per register tile">,
    Option<"tileChannels", "tile-channels", "int64_t", /*default=*/"16",
           "Channels per register tile">,
  ];
}

def ConvLowerDepthwiseDirect : Pass<"conv-lower-depthwise-direct"> {
  let summary = "Compute depthwise convolutions directly on CPU vectors "
                "(no im2col, no K = 9 GEMM)";
  let description = [{
    Every 2-D depthwise convolution (one channel and one filter per group:
    `depthwise_conv_2d_*` with multiplier 1, or a grouped form with
    Cg = Fg = 1, or a generic spelling of one) with float data and static
    shapes, or quantized (8- or 16-bit integers with zero points into i32:
    the image and the filter are then shifted by their zero points into i32
    first, and the plain convolution of the shifted data is the quantized
    one; a zero padding absorbed where zx is not 0 is left alone), is
    rewritten as `linalg.depthwise_conv_2d_nhwc_hwc` ops on a
    channels-last image (channels-first images and outputs transposed),
    the filter as [KH, KW, C], inside one `scf.forall` over (image, output
    row): each row is cut into pieces whose windows take the same taps
    (the interior all of them, a border pixel those its window does not
    lose to the padding), picked by `scf.if` on the row, and each piece
    reads the image itself with its taps (no padded copy), the row's fill
    first. The pieces are tiled into register tiles of `tile-columns`
    output columns x `tile-channels` channels (the largest divisors not
    above them) and one kernel row, which become 1-D depthwise
    convolutions (upstream's DownscaleDepthwiseConv2DNhwcHwcOp) and are
    vectorized (`linalg::vectorize`: FMAs on channel vectors, the taps
    unrolled). One loop whose rows cover the output also takes the
    epilogue into its rows (conv-lower-parallel-epilogue). Where the
    padding makes more than 25 pieces (a pad of 3 or more on a side), the
    interior and the border strips (each on a zero-padded copy of its
    window, `tensor.pad`) are separate convolutions instead, each its own
    `scf.forall` over output rows.

    A channels-first convolution at unit dilations, of one element type,
    takes no transposes instead: an `scf.forall` over (image, block of
    about a sixteenth of the channels), each block an `scf.for` over its
    planes that copies each image plane into one zero-padded plane buffer
    (zeroed once a block) and computes its output plane as `linalg.conv_2d`
    ops of the channel's taps, tiled to one output row x up to
    `plane-columns` columns x one kernel row: 1-D convolutions (upstream's
    DownscaleConv2DOp), vectorized along the row, the taps scalars. At unit
    strides that is one conv_2d of the [KH, KW] taps over the padded plane.
    At strides (SH, SW) the padded plane is first split into its SH x SW
    phases (phase (p, q) holds rows p, p + SH, ... and columns q, q + SW,
    ...: a `linalg.transpose` of the plane viewed as [H/SH, SH, W/SW, SW],
    which conv-lower-vectorize-transposes makes vector shuffles, its rows
    padded to whole 16-lane tiles), and the output plane is the sum of one
    unit-stride conv_2d per phase with that phase's taps (rows p, p + SH,
    ... and columns q, q + SW, ... of the filter): every tap once, every
    read contiguous.
    scalars. The CPU pipeline runs it before the im2col rewrite; other
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
    Option<"planeColumns", "plane-columns", "int64_t", /*default=*/"56",
           "Channels-first planes: most output columns per 1-D convolution "
           "(56: seven AVX2 vectors; a 112-column row spills)">,
  ];
}

def ConvLowerGroupedDirect : Pass<"conv-lower-grouped-direct"> {
  let summary = "Compute grouped convolutions with few filters per group "
                "directly on CPU vectors of a group's filters";
  let description = [{
    Every 2-D grouped convolution with more than one channel a group, fewer
    than `max-filters` filters a group (the GEMM's register-tile width: a
    group that fills it gains nothing here; strided, as many as
    `max-filters`: the GEMM route's gathered im2col and [G, M, Fg] result
    transposed back cost more there) and a whole number of
    `filter-lanes` filter vectors, f32 data, static shapes, unit dilations,
    not quantized, is rewritten as an `scf.forall` over (image, group),
    marked `conv_lower.grouped_direct`, of `linalg.conv_2d_nhwc_hwcf` ops:
    each reads its group's channels of the zero-padded channels-last image
    (channels-first images and outputs transposed) with its [KH, KW, Cg,
    Fg] taps (the filter regrouped once: constant weights hoist it) and
    writes its filters of the result. Each is tiled to one output row x as
    many columns as `accumulators` vectors hold x one tap x one channel,
    which upstream's DownscaleSizeOneWindowed2DConvolution makes a 1-D
    convolution and the vectorizer one FMA per column (a broadcast pixel on
    the tap's vector of filters), the accumulators hoisted out of the tap
    and channel loops. No im2col gather, no half-empty register tile. The
    CPU pipeline runs it after conv-lower-depthwise-direct, before the
    im2col rewrite, with `max-filters` = its tile-n; other convolutions are
    left untouched.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::conv_lower::ConvLowerDialect",
  ];
  let options = [
    Option<"accumulators", "accumulators", "int64_t", /*default=*/"14",
           "Accumulator vectors per 1-D convolution (14: AVX2's 16 "
           "registers less the filter vector and the broadcast)">,
    Option<"maxFilters", "max-filters", "int64_t", /*default=*/"16",
           "Take groups of fewer filters than this (the GEMM tile's width); "
           "of a strided convolution, as many as this too">,
    Option<"filterLanes", "filter-lanes", "int64_t", /*default=*/"8",
           "Filters a group must be a multiple of (8: one AVX2 f32 vector; "
           "the CPU pipeline takes 4, half of one)">,
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

    - the filters once per call, U = G g G^T on vectors of filters (an
      `scf.forall` over channels), laid out [B, 36, C, F / B] for B
      blocks of filters (below), each block's share contiguous;
    - then an `scf.forall` over blocks of 4x4-tile rows of each image and
      blocks of filters (what threads share), each block: the input
      transform V[36, T, C] = B^T d B of its T tiles (6x6 windows read
      from the channels-last image, channels as vectors; padding by
      clamped reads and selects, so the padded image is never
      materialized), a `linalg.batch_matmul` V x U -> M[36, T, F / B]
      (36 GEMMs, which conv-lower-tile-and-vectorize register-tiles like
      every other GEMM), and the output transform A^T M A (+ the fill's
      value) into the block's 4 rows of output per tile row and its
      filters, in the output's own layout (channels first through a
      register transpose of each tile's 16 pixels).

    Blocks: where U fits 4 MiB, each block takes as many tile rows as keep
    it within `block-tiles` tiles while leaving every thread two blocks,
    and all the filters (B = 1); where that count would not split evenly
    among the threads (seven blocks on two), fewer tile rows a block where
    that evens it out. Past 4 MiB U comes from memory in a
    network (every layer's weights pass through the caches between two
    calls of one layer) and each block reads all of its share: blocks then
    take as many tile rows as `block-tiles` allows, and where that leaves a
    thread without one, the threads split the filters instead (B blocks of
    whole 32-filter tiles): r50's 256-channel 14x14 layer at batch 1 reads
    half of U per thread once, where four blocks of 4 tiles read all of it
    each.

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
    dialect's `conv_lower.winograd` unit attribute. Error: Winograd's transforms amplify rounding, and the error
    grows with the channel count (measured: docs/performance-journal.md,
    2026-12-03), so channels above `max-channels` (1024) keep
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
    Option<"filterPackedOnce", "filter-packed-once", "bool",
           /*default=*/"false",
           "The filter is constant and its transform hoisted "
           "(conv-lower-hoist-constant-weights): no call pays for U, so "
           "half of min-tiles suffices">,
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

def ConvLowerFuseMultiplyAdd : Pass<"conv-lower-fuse-multiply-add"> {
  let summary = "Fuse vector multiplies into the additions that consume them "
                "(vector.fma)";
  let description = [{
    Every `arith.addf` of f32 or f64 vectors with an operand that is an
    `arith.mulf` of the same type used nowhere else becomes one
    `vector.fma` (one rounding, as under `-ffp-contract=fast`). linalg's
    vectorizer writes the GEMM register tiles' updates as a multiply and an
    add, which LLVM, without fast-math flags, must emit as two instructions
    (vmulps + vaddps): twice the arithmetic per K step, half the peak where
    additions share the FMA ports. 16-bit vectors are left alone (no FMA
    instruction for bf16; f16 needs AVX512-FP16). The CPU pipeline runs it
    after the GEMMs are vectorized.
  }];
  let dependentDialects = ["::mlir::vector::VectorDialect"];
}

def ConvLowerParallelEpilogue
    : Pass<"conv-lower-parallel-epilogue", "::mlir::func::FuncOp"> {
  let summary = "Fuse the elementwise ops after a convolution into one and "
                "split it into blocks for the threads";
  let description = [{
    A model's bias add and ReLU after a convolution stay `linalg.generic`
    ops over the whole output once the convolution is rewritten: each a
    serial pass over memory after the threaded GEMM (measured: a ReLU
    made MobileNetV2's 32-channel 112x112 depthwise layer 0.45 -> 0.78 ms).
    This pass fuses each chain of elementwise generics (every loop
    parallel, projected-permutation maps, a producer read by its consumer
    alone: upstream's elementwise fusion) into one. Where that one reads
    and writes in place the reshaped result of an `scf.forall` (the GEMM's
    threaded blocks: one result, one `parallel_insert_slice` of static
    sizes, read by nothing else) and its other operands collapse to the
    forall's shape (an identity read like the output, a residual; reads of
    groups of one dimension, a bias), it moves into the forall's blocks:
    each block applies it to its own result before inserting it. Else, with
    `threads` > 1, it tiles each top-level elementwise generic of at least
    `min-elements` elements into an `scf.forall` of about 4 blocks per
    thread along its outermost dimension with enough extent (static,
    dividing tiles), which the pipeline runs as an OpenMP parallel region
    like the GEMM's blocks.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "The threads the blocks are for (1: fuse only)">,
    Option<"minElements", "min-elements", "int64_t", /*default=*/"16384",
           "Smaller generics stay whole (a parallel region costs more)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def ConvLowerResultInDestination
    : Pass<"conv-lower-result-in-destination", "::mlir::func::FuncOp"> {
  let summary = "Compute a function's result in its output argument, not in "
                "a buffer copied there at the end";
  let description = [{
    One-shot bufferization gives the convolution's result (a `tensor.empty`
    filled by the GEMM's blocks, reshaped, its bias added) a buffer of its
    own, and the wrapper's `materialize_in_destination` becomes a
    `memref.copy` of it into the output argument: one more pass over the
    output, after the computation, on every call. Where the copied value is
    an allocation of the function seen through reshapes
    (`memref.expand_shape`, `memref.collapse_shape`), copied whole into an
    identity-layout argument that nothing else uses, right before the
    return, the allocation becomes that argument (through the inverse
    reshapes) and the copy goes. The argument must not overlap the inputs
    (the C API's contract; the wrapper marks it restrict). The CPU pipeline
    runs it right after bufferization, before the deallocations are placed.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ConvLowerCopiesToLinalg : Pass<"conv-lower-copies-to-linalg"> {
  let summary = "Rewrite strided memref.copy ops as linalg.copy or vector rows";
  let description = [{
    After bufferization a `tensor.pad` is a fill plus a `memref.copy` of the
    image into a strided subview of the padded buffer. A copy that is not
    one contiguous block lowers to a call of the runner utilities' generic
    `memrefCopy` (every element's address recomputed; measured:
    docs/performance-journal.md, 2026-12-01); as `linalg.copy` it becomes loops over a contiguous innermost
    dimension, which LLVM vectorizes. A static contiguous innermost run of at
    most 256 elements whose rows lie apart on one side (a group's channels
    of an NHWC image) becomes loops over the other dimensions moving each
    row as one vector load and store (LLVM vectorized such copies across
    rows, with gathers); rows that follow each other on both sides stay one
    long run for LLVM. Copies between
    contiguous memrefs stay `memref.copy` (a memcpy). The CPU pipeline runs
    it after bufferization.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
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

def ConvLowerEpilogueInRegisterTile
    : Pass<"conv-lower-epilogue-in-register-tile", "func::FuncOp"> {
  let summary = "Apply the epilogue to the GEMM's register tiles before they are stored";
  let description = [{
    Where a thread's block holds a register-tile loop nest (scf.for loops
    whose tiles are each stored by one full `vector.transfer_write` through
    `tensor.insert_slice`s into the loops' result), or a chain of them that
    together store every element once (a partial last row of tiles peeled
    into a second nest that starts from the first one's result), followed
    by the
    convolution's epilogue reading that result in place (an elementwise
    `linalg.generic` with identity maps on it, its other operands read
    through projected permutations, a body of elementwise arithmetic and
    constants), the epilogue's body is applied to the accumulator vector
    before that store: a bias or residual read as a vector of the same tile
    (broadcast along the dimensions it lacks), values from outside and
    constants broadcast, and the generic removed. What it reads from
    outside must exist before the loops (pure ops defining it after them
    are moved before). Anything else (a K loop blocked around the tiles,
    Winograd's or the depthwise kernels' outputs) is left to
    conv-lower-vectorize-epilogue. On MobileNetV2's 16 -> 96 1x1 at 112x112
    the separate pass over the output was 0.06 ms of 0.33.

    An epilogue that reads the nests' result through a `collapse_shape`
    (filter panels, [rows, F / w, w], that pack-filter-panels made inside a
    block of conv-lower-im2col-panels, seen as [rows, F]: the stem, strided
    3x3 layers) is expanded into the nests' shape (upstream's reshape
    fusion by expansion: the bias [F] read as [F / w, w]) before it is
    applied.

    First, where such a chain starts from a `linalg.fill` (tiling fuses the
    fill into the tiles only where they divide the block), each tile's
    accumulators start as a splat of the fill's value instead of a read of
    the filled output, and the fill, a pass over the block, goes: the
    16 -> 96 1x1 at 112x112, batch 8, took 2.4 ms instead of 4.9 on two
    Zen 3 cores (the blocks' 1568 rows, 261 six-row tiles and a two-row
    one, had kept both the fill and the epilogue's pass).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::ub::UBDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def ConvLowerVectorizeEpilogue : Pass<"conv-lower-vectorize-epilogue"> {
  let summary = "Vectorize the elementwise epilogue along its rows";
  let description = [{
    A convolution's epilogue (bias, residual add, ReLU or clamp, fused into
    one elementwise `linalg.generic` by conv-lower-parallel-epilogue, in
    blocks for the threads) lowered to scalar loops: where the innermost
    dimension is short (a channels-last output of 16 or 32 channels) LLVM
    unrolled it and vectorized across pixels with gathers and scatters (the
    bias made a 32 -> 16 1x1 at 112x112 2.2x slower). Every elementwise
    generic on static tensors whose operands are all read in the loops'
    order (the output, a residual, a per-channel bias; no transposes) and
    whose body computes something (a plain copy is left to the copy
    passes) is tiled with `scf.for` loops into vector tiles of about
    `lanes` elements, the innermost dimension by its largest divisor not
    above `lanes` that is a multiple of 16 (else its largest divisor not
    above it), the one before by what fills the rest, every other one by 1,
    and each tile vectorized: contiguous vector reads and writes.
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::tensor::TensorDialect",
  ];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"64",
           "Elements of a vector tile (64: four AVX-512 f32 registers)">,
  ];
}

def ConvLowerPrefetchEpilogueOperands
    : Pass<"conv-lower-prefetch-epilogue-operands"> {
  let summary = "Prefetch the register tiles' epilogue operands (a residual) "
                "one row tile ahead";
  let description = [{
    A register tile's epilogue (conv-lower-epilogue-in-register-tile) reads
    an operand of the output's shape, a ResNet block's residual, right
    after the tile's K loop: a `vector.transfer_read` of a buffer, without
    broadcast, following an `scf.for` that carries vectors. Past the caches
    (25.7 MB for r50's 128 -> 256 1x1 layer at 56x56, batch 8) each tile
    waited for its rows from memory after a K loop of ~70 ns: 8.3 ms
    without the residual, 10.2 with it. Before each such K loop this pass
    emits a `memref.prefetch` of every cache line the read will read one
    iteration on of the outermost loop (inside the threads' block) its
    address depends on: the same tile one row tile on, a whole row of
    tiles' work ahead. The views the read's address comes from are cloned
    with that loop's next induction value, clamped to its last iteration
    (no address outside the operand). It runs on buffers, after
    bufferization.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def ConvLowerVectorizeGathers : Pass<"conv-lower-vectorize-gathers"> {
  let summary = "Vectorize im2col copies along their contiguous runs";
  let description = [{
    An im2col copy (a `linalg.generic` on static buffers whose body yields
    its input element, every loop parallel, its output map a permutation)
    indexes its input with sums such as `oh + kh`: linalg's vectorizer
    rejects such maps, and the loops it lowers to moved one element per
    load and store (measured: docs/performance-journal.md, 2026-12-02).
    Where the output's innermost index steps the input's innermost by one
    element too (`c`, `g * C + c`, `ow + kw`) and no other input index uses
    it (channels in NHWC, the output row in a stride-1 channels-first
    panel), each run along that loop is contiguous on both sides: the copy
    is tiled by 1 along every other loop and by the largest divisor of its
    extent up to `run` along it, and each tile becomes one
    `vector.transfer_read` and one `vector.transfer_write`. Where those runs
    are shorter than 4 elements but a whole kernel row is one run (a
    3-channel NHWC image: the output's last two indices `kw, c`, the
    input's `ow * s + kw, c` over all C channels, both operands' last two
    dimensions packed), each kernel row is copied as one vector of KW * C
    elements (the RGB stem's 9 or 21), up to `run`. Other copies, and
    other runs shorter than 4 elements, are left as they are. It runs after
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
    Grouped, whose fold would transpose the GEMM's [G, M, Fg] result into
    the image's [M, G, Fg], each block computes its [G, rows, Fg] into a
    block of its own and transposes that, in cache, into its rows of the
    image: the blocks write the NHWC output, the fold goes (and the
    epilogue can move into the blocks).
    Where the output is channels first (the fold would transpose the GEMM's
    [M, F] result), the panel is written [K, rows], its copy's innermost
    loop along the output row, and the block computes W [F, K] x
    X_panel^T straight into its [F, rows] of the output: the fold and
    pack-rhs's transpose of W go away. That needs rows enough for whole
    vectors and filters enough for whole register tiles. A group of fewer
    than 2 x `tile-m` filters (ResNeXt's 8), or an image whose output
    pixels are no whole number of 16-lane vectors (14x14: 196; 7x7: 49)
    where the filter is packed once (`filter-packed-once`) or, of fewer
    than `channels-first-min-rows` pixels, in a batch of at least four
    times that many (enough to pay for pack-rhs's per-call transpose of W),
    takes the channels-last block GEMM, its filters as the vector
    dimension, and the fold's transpose stays after it. Every other GEMM is
    left as it is.
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
    Option<"filterPackedOnce", "filter-packed-once", "bool",
           /*default=*/"false",
           "The filter is constant and what is computed from it alone is "
           "hoisted (conv-lower-hoist-constant-weights): pack-rhs's W^T "
           "costs nothing per call, so an image whose output pixels are no "
           "whole number of 16-lane vectors takes the rows-first GEMM">,
    Option<"amxRows", "amx-rows", "bool", /*default=*/"false",
           "Rows first, bf16 and i8 GEMMs: blocks of whole 16-row AMX tiles where "
           "the image allows (else of at least 16 rows), for "
           "conv-lower-amx-tiles">,
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
    and written back on every K step. Where the accumulator is a
    `linalg.fill` and the tiles divide every extent, the parallel
    dimensions are tiled first with the fill fused into each register tile
    and K inside: the tile's accumulators start as splats of the fill's
    value in registers and the fill, then overwritten whole, goes (the tiles
    had read them back from a block the fill wrote first). A K-blocked
    GEMM's first K block is peeled off so that it starts from the fill so.

    Where the operand the register tiles stream (the [K, N] one: each row
    tile reads all of it) is larger than `cache-block-bytes`, K is first
    split into blocks (BLIS's kc) whose [kc, N] slice fits that budget: the
    row tiles then read it from the L2 cache, and the accumulators go back
    to the output once per block. Where that operand's rows lie more than
    512 floats apart (a slice of a larger tensor: a channels-first
    pointwise convolution's image [C, pixels]), N is first tiled by the
    vector tile and each [K, tile] column panel copied contiguous
    (`linalg.copy`) for the row tiles to read: the packed B of a GEMM
    library.
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
           "group dimensions by 1), or N where it is the larger (a batch-1 "
           "linear layer's vector-matrix product has no M), with an "
           "scf.forall, whose iterations can run on different threads; a "
           "linalg.fill accumulator (seen through a reshape too) is fused "
           "into the blocks">,
    Option<"parallelThreads", "parallel-threads", "int64_t",
           /*default=*/"0",
           "With parallel-blocks: the threads that share the blocks in "
           "static chunks. Where the count of about parallel-blocks leaves "
           "one idle part of the time (7 blocks on 2 threads), another "
           "count within 4x of it that divides evenly is taken (0: "
           "parallel-blocks alone)">,
    Option<"amxTiles", "amx-tiles", "bool", /*default=*/"false",
           "Tile the GEMMs in bf16 pairs or i8 quads (conv-lower-pack-"
           "vnni's) for AMX instead of the vector registers: 32 x 32 "
           "register tiles (2 x 2 accumulator tiles of 16 x 16 f32 or i32) "
           "over one 64-byte tile row of K (16 pairs, 16 quads), for "
           "conv-lower-amx-tiles">,
  ];
}

def ConvLowerLegalizeBF16 : Pass<"conv-lower-legalize-bf16", "::mlir::ModuleOp"> {
  let summary = "Hand LLVM no bf16: bf16 values as i16 bits, bf16 arithmetic "
                "in f32";
  let description = [{
    LLVM's x86 backend aborts ("Do not know how to soft promote this
    operator's operand!") on bf16 vectors of some lengths (9, 17, 33, ...)
    where AVX512-BF16 makes bf16 vectors legal types; the im2col copies of a
    convolution with 17 channels make them. On the LLVM dialect, after
    everything else is lowered, this pass (1) widens every operation that
    computes on bf16 to f32 between an fpext and an fptrunc (what the
    backend's soft promotion computes), (2) expands fpext from bf16 into a
    shift of the bits and fptrunc to bf16 into integer rounding to nearest
    even, and (3) makes every remaining bf16 type and constant i16, so loads,
    stores, shuffles and phis move the same bits as integers (IREE's CPU
    backend keeps bf16 buffers as i16 the same way). A bf16 in a public
    function's signature, a call with bf16 values, or an fptrunc from f64 to
    bf16 is reported as an error, not rewritten. The CPU pipeline runs it
    last. With `avx512-bf16` (the target has AVX512-BF16: the CPU pipeline
    sets it with bf16-dot), an f32 vector of 8k lanes is rounded by
    VCVTNEPS2BF16 instead, 16 lanes an instruction (the integer code takes
    about eight a vector): the same rounding to nearest even, NaNs made
    quiet; denormal inputs become zero.
  }];
  let options = [
    Option<"avx512BF16", "avx512-bf16", "bool", /*default=*/"false",
           "The target has AVX512-BF16: f32 -> bf16 vectors of 8k lanes on "
           "VCVTNEPS2BF16">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ConvLowerParallelToThreadChunks
    : Pass<"conv-lower-parallel-to-thread-chunks", "::mlir::ModuleOp"> {
  let summary = "Run each outermost scf.parallel as an omp.parallel region in "
                "which every thread takes one contiguous chunk of the "
                "iterations";
  let description = [{
    The CPU pipeline's parallel loops (the GEMMs' row blocks) have no
    reductions and independent iterations. Each outermost reduction-free
    `scf.parallel` becomes an `omp.parallel` whose body asks the OpenMP ABI
    for its thread number and team size (`omp_get_thread_num`,
    `omp_get_num_threads`, which GCC's libgomp and LLVM's libomp both
    export), takes the balanced chunk `[t * n / T, (t + 1) * n / T)` of the
    loop's `n` iterations (linearized, row major) and runs it as an
    `scf.for`. There is no worksharing loop: unlike `convert-scf-to-openmp`'s
    `omp.wsloop`, which LLVM's OpenMP translation turns into libomp-only
    `__kmpc_for_static_init` calls, nothing here ties the code to one
    runtime (see `conv-lower-omp-parallel-to-gomp`). A body with
    `memref.alloca`s runs in a `memref.alloca_scope` per iteration, so the
    stack does not grow with the chunk. Loops with reductions, and loops
    nested in another parallel loop, are left as they are.
  }];
  let options = [
    Option<"numThreads", "num-threads", "unsigned", /*default=*/"0",
           "Team size asked of the runtime (0: the runtime's default)">,
  ];
  let dependentDialects = [
    "::mlir::omp::OpenMPDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect",
  ];
}

def ConvLowerOmpParallelToGomp
    : Pass<"conv-lower-omp-parallel-to-gomp", "::mlir::ModuleOp"> {
  let summary = "Outline omp.parallel regions (LLVM dialect) into functions "
                "that GOMP_parallel runs on a team of threads";
  let description = [{
    LLVM's OpenMP translation starts a parallel region with
    `__kmpc_fork_call`, which only LLVM's libomp exports. In a process that
    already runs GCC's libgomp (torch), that makes a second thread pool whose
    idle threads spin against the first one's. This pass, run on the LLVM
    dialect after everything else is lowered, moves the body of each
    `omp.parallel` that has no clause but `num_threads` into an internal
    function `void(ptr)`, passes the values it uses from outside in a stack
    struct (constants are cloned instead), and calls
    `GOMP_parallel(fn, data, num_threads, 0)`: the entry point of GCC's
    OpenMP ABI, which libgomp and libomp both export. Whoever links the code
    then chooses the runtime (ConvLower's JIT takes the one the process
    already has). Regions with other clauses, or with OpenMP constructs
    inside them, are reported as errors.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // CONVLOWER_TRANSFORMS_CPU_PASSES_TD
