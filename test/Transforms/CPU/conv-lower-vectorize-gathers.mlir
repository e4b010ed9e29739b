// RUN: conv-opt %s --conv-lower-vectorize-gathers --canonicalize | FileCheck %s
// RUN: not conv-opt %s --conv-lower-vectorize-gathers="run=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: conv-lower-vectorize-gathers: the run must be positive

#nhwc_in = affine_map<(g, n, oh, ow, c, kh, kw) -> (n, oh + kh, ow + kw, g * 64 + c)>
#nhwc_out = affine_map<(g, n, oh, ow, c, kh, kw) -> (g, n, oh, ow, kh, kw, c)>

// An NHWC panel (conv-lower-im2col-panels' block copy, bufferized): the
// output's innermost index is c, and the input's innermost is g * 64 + c,
// so every (oh, ow, kh, kw) copies one contiguous run of 64 channels: one
// vector read and one vector write each, the other loops by 1.
// CHECK-LABEL: func.func @nhwc_panel
// CHECK-NOT: linalg.generic
// CHECK: scf.for %{{.*}} = %c0 to %c6 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c6 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK:   %[[SRC:.*]] = memref.subview %arg0[0, %{{.*}}, %{{.*}}, 0] [1, 1, 1, 64] [1, 1, 1, 1]
// CHECK:   %[[DST:.*]] = memref.subview %arg1[0, 0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, 0] [1, 1, 1, 1, 1, 1, 64]
// CHECK:   %[[V:.*]] = vector.transfer_read %[[SRC]]{{.*}} {in_bounds = [true]} : memref<1x1x1x64xf32, {{.*}}>, vector<64xf32>
// CHECK:   vector.transfer_write %[[V]], %[[DST]]{{.*}} {in_bounds = [true]} : vector<64xf32>, memref<1x1x1x1x1x1x64xf32
// CHECK-NOT: linalg.generic
func.func @nhwc_panel(%img: memref<1x8x8x64xf32>, %panel: memref<1x1x6x6x3x3x64xf32>) {
  linalg.generic {indexing_maps = [#nhwc_in, #nhwc_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%img : memref<1x8x8x64xf32>) outs(%panel : memref<1x1x6x6x3x3x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

#nchw_in = affine_map<(g, c, kh, kw, n, oh, ow) -> (n, g * 4 + c, kh + oh, kw + ow)>
#nchw_in_s2 = affine_map<(g, c, kh, kw, n, oh, ow) -> (n, g * 4 + c, kh + oh * 2, kw + ow * 2)>
#identity = affine_map<(g, c, kh, kw, n, oh, ow) -> (g, c, kh, kw, n, oh, ow)>

// A channels-first panel ([K, rows], its innermost loop along the output
// row): at stride 1, kw + ow steps one element per ow, so each
// (c, kh, kw, oh) copies one run of 56 (the largest divisor of 56 up to 64).
// CHECK-LABEL: func.func @nchw_panel
// CHECK: vector.transfer_read {{.*}} : memref<1x1x1x56xf32, {{.*}}>, vector<56xf32>
// CHECK: vector.transfer_write {{.*}} : vector<56xf32>, memref<1x1x1x1x1x1x56xf32
// CHECK-NOT: linalg.generic
func.func @nchw_panel(%img: memref<1x4x4x58xf32>, %panel: memref<1x4x3x3x1x2x56xf32>) {
  linalg.generic {indexing_maps = [#nchw_in, #identity], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%img : memref<1x4x4x58xf32>) outs(%panel : memref<1x4x3x3x1x2x56xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// A 3-channel image (the RGB stem, here at stride 2 as im2col-panels
// writes it, the single group's g * 3 + c): each channel run is 3 elements,
// too short for a vector, but a kernel row (kw, c) is 9 contiguous ones in
// both the image (W's stride is C) and the panel: one vector each, the two
// dimensions collapsed.
// CHECK-LABEL: func.func @rgb_kernel_rows
// CHECK-NOT: linalg.generic
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK:   %[[SRC:.*]] = memref.subview %arg0[0, %{{.*}}, %{{.*}}, 0] [1, 1, 3, 3] [1, 1, 1, 1]
// CHECK:   %[[DST:.*]] = memref.subview %arg1[0, 0, %{{.*}}, %{{.*}}, %{{.*}}, 0, 0] [1, 1, 1, 1, 1, 3, 3]
// CHECK:   %[[SRC9:.*]] = memref.collapse_shape %[[SRC]] {{\[}}[0], [1], [2, 3]] {{.*}} into memref<1x1x9xf32, strided<[243, 27, 1], offset: ?>>
// CHECK:   %[[DST9:.*]] = memref.collapse_shape %[[DST]] {{.*}} into memref<1x1x1x1x1x9xf32
// CHECK:   %[[V:.*]] = vector.transfer_read %[[SRC9]]{{.*}} {in_bounds = [true]} : memref<1x1x9xf32, {{.*}}>, vector<9xf32>
// CHECK:   vector.transfer_write %[[V]], %[[DST9]]{{.*}} {in_bounds = [true]} : vector<9xf32>, memref<1x1x1x1x1x9xf32
// CHECK-NOT: linalg.generic
#rgb_s2_in = affine_map<(g, n, oh, ow, c, kh, kw) -> (n, oh * 2 + kh, ow * 2 + kw, g * 3 + c)>
#rgb_s2_out = affine_map<(g, n, oh, ow, c, kh, kw) -> (g, n, oh, ow, kh, kw, c)>
func.func @rgb_kernel_rows(%img: memref<1x9x9x3xf32>, %panel: memref<1x1x4x4x3x3x3xf32>) {
  linalg.generic {indexing_maps = [#rgb_s2_in, #rgb_s2_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%img : memref<1x9x9x3xf32>) outs(%panel : memref<1x1x4x4x3x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// At stride 2 the output row is not contiguous in the image (kw + 2 * ow):
// left as it is. So is a copy whose runs would be under 4 elements where
// the kernel row is not one run either (two groups of 3 channels: the
// image's row holds 6 channels a pixel), and anything that is not a copy.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: vector.transfer_read
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: vector.transfer_read
#rgb_in = affine_map<(g, n, oh, ow, kh, kw, c) -> (n, oh + kh, ow + kw, g * 3 + c)>
#rgb_out = affine_map<(g, n, oh, ow, kh, kw, c) -> (g, n, oh, ow, kh, kw, c)>
#sum = affine_map<(n, oh, ow, kh, kw, c) -> (n, oh, ow, kh, kw, c)>
func.func @left_alone(%img: memref<1x4x5x113xf32>, %panel: memref<1x4x3x3x1x2x56xf32>,
                      %rgb: memref<1x8x8x6xf32>, %rgbpanel: memref<2x1x6x6x3x3x3xf32>,
                      %sums: memref<1x6x6x3x3x3xf32>, %acc: memref<1x6x6x3x3x3xf32>) {
  linalg.generic {indexing_maps = [#nchw_in_s2, #identity], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%img : memref<1x4x5x113xf32>) outs(%panel : memref<1x4x3x3x1x2x56xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#rgb_in, #rgb_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%rgb : memref<1x8x8x6xf32>) outs(%rgbpanel : memref<2x1x6x6x3x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#sum, #sum], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%sums : memref<1x6x6x3x3x3xf32>) outs(%acc : memref<1x6x6x3x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  return
}
