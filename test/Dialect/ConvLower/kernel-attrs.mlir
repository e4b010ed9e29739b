// RUN: conv-opt %s -split-input-file -verify-diagnostics | FileCheck %s
//
// The launch attributes the implicit-GEMM pass records on its kernels are
// declared by the dialect (conv_lower.grid / block / tiles / tensor_maps) and
// verified wherever they appear; tiles and tensor maps are the dialect's own
// attributes, verified per kernel family and per map mode.

// CHECK-LABEL: func.func @launch
// CHECK-SAME: conv_lower.block = array<i64: 128, 1, 1>, conv_lower.grid = array<i64: 13, 2, 1>, conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [64, 32, 32], warps = [2, 2], stages = 3, a_vectorized = true, b_vectorized = false, store_vector = 4>
func.func @launch() attributes {conv_lower.grid = array<i64: 13, 2, 1>, conv_lower.block = array<i64: 128, 1, 1>, conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [64, 32, 32], warps = [2, 2], stages = 3, a_vectorized = true, b_vectorized = false, store_vector = 4>} {
  return
}

// -----

// expected-error @+1 {{'conv_lower.grid' must be an array<i64> of three positive extents}}
func.func @grid_rank() attributes {conv_lower.grid = array<i64: 13, 2>} {
  return
}

// -----

// expected-error @+1 {{'conv_lower.block' must be an array<i64> of three positive extents}}
func.func @block_positive() attributes {conv_lower.block = array<i64: 0, 1, 1>} {
  return
}

// -----

// expected-error @+1 {{'conv_lower.grid' must be an array<i64> of three positive extents}}
func.func @grid_type() attributes {conv_lower.grid = [1, 1, 1]} {
  return
}

// -----

// expected-error @+1 {{'conv_lower.tiles' must be a #conv_lower.tiles attribute}}
func.func @tiles_type() attributes {conv_lower.tiles = {stages = 3 : i64}} {
  return
}

// -----

// The other families round-trip with their own parameters.
// CHECK-LABEL: func.func @sm90a
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = sm90a_tma_wgmma, block = [128, 64, 64], warpgroups = [1, 2], stages = 4, store_vector = 4, a_gathered = true>
func.func @sm90a() attributes {conv_lower.tiles = #conv_lower.tiles<family = sm90a_tma_wgmma, block = [128, 64, 64], warpgroups = [1, 2], stages = 4, store_vector = 4, a_gathered = true>} {
  return
}
// CHECK-LABEL: func.func @depthwise
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = direct_depthwise, channels_per_thread = 8>
func.func @depthwise() attributes {conv_lower.tiles = #conv_lower.tiles<family = direct_depthwise, channels_per_thread = 8>} {
  return
}

// -----

// expected-error @+1 {{the mma_sync family needs 'warps'}}
func.func @tiles_missing() attributes {conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [64, 32, 32], stages = 3, a_vectorized = true, b_vectorized = true>} {
  return
}

// -----

// expected-error @+1 {{'warpgroups' is not a parameter of the mma_sync family}}
func.func @tiles_foreign() attributes {conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [64, 32, 32], warps = [2, 2], warpgroups = [1, 2], stages = 3, a_vectorized = true, b_vectorized = true>} {
  return
}

// -----

// expected-error @+1 {{'warps' must divide the block's M and N}}
func.func @tiles_warps() attributes {conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [64, 30, 32], warps = [2, 4], stages = 3, a_vectorized = true, b_vectorized = true>} {
  return
}

// -----

// expected-error @+1 {{'stages' must be at least 2 (a ring)}}
func.func @tiles_stages() attributes {conv_lower.tiles = #conv_lower.tiles<family = sm90a_tma_wgmma, block = [128, 64, 64], warpgroups = [1, 2], stages = 1>} {
  return
}

// -----

// expected-error @+1 {{'channels_per_thread' is not a parameter of the sm90a_tma_wgmma family}}
func.func @tiles_depthwise_field() attributes {conv_lower.tiles = #conv_lower.tiles<family = sm90a_tma_wgmma, block = [128, 64, 64], warpgroups = [1, 2], stages = 4, channels_per_thread = 8>} {
  return
}

// -----

// expected-error @+1 {{'store_vector' must be a positive power of two}}
func.func @tiles_store() attributes {conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [64, 32, 32], warps = [2, 2], stages = 3, a_vectorized = true, b_vectorized = true, store_vector = 3>} {
  return
}

// -----

// CHECK-LABEL: func.func @maps
// CHECK-SAME: conv_lower.tensor_maps = [#conv_lower.tensor_map<name = "input_im2col", argument = "input", mode = im2col, dtype = "f16", dims = [64, 8, 8, 1], strides_bytes = [128, 1024, 8192], box = [64, 128], element_strides = [1, 1, 1, 1], lower_corner = [-1, -1], upper_corner = [-1, -1], swizzle = "128B">]
func.func @maps() attributes {conv_lower.tensor_maps = [#conv_lower.tensor_map<name = "input_im2col", argument = "input", mode = im2col, dtype = "f16", dims = [64, 8, 8, 1], strides_bytes = [128, 1024, 8192], box = [64, 128], element_strides = [1, 1, 1, 1], lower_corner = [-1, -1], upper_corner = [-1, -1], swizzle = "128B">]} {
  return
}

// -----

// expected-error @+1 {{'conv_lower.tensor_maps' must be an array of #conv_lower.tensor_map}}
func.func @maps_dictionary() attributes {conv_lower.tensor_maps = [{argument = "input", mode = "im2col"}]} {
  return
}

// -----

// expected-error @+1 {{tensor map 'filter_tiled': 'strides_bytes' must hold the rank - 1 outer dimensions' positive strides}}
func.func @maps_strides() attributes {conv_lower.tensor_maps = [#conv_lower.tensor_map<name = "filter_tiled", argument = "filter", mode = tiled, dtype = "f16", dims = [576, 64], strides_bytes = [1152, 4], box = [64, 64], element_strides = [1, 1], swizzle = "128B">]} {
  return
}

// -----

// expected-error @+1 {{tensor map 'input_im2col': an im2col map needs 'lower_corner' and 'upper_corner' of rank - 2 entries}}
func.func @maps_corners() attributes {conv_lower.tensor_maps = [#conv_lower.tensor_map<name = "input_im2col", argument = "input", mode = im2col, dtype = "f16", dims = [64, 8, 8, 1], strides_bytes = [128, 1024, 8192], box = [64, 128], element_strides = [1, 1, 1, 1], swizzle = "128B">]} {
  return
}

// -----

// expected-error @+1 {{tensor map 'filter_tiled': dtype 'tf32' is not f16, bf16, f32, i8 or i32}}
func.func @maps_dtype() attributes {conv_lower.tensor_maps = [#conv_lower.tensor_map<name = "filter_tiled", argument = "filter", mode = tiled, dtype = "tf32", dims = [576, 64], strides_bytes = [1152], box = [64, 64], element_strides = [1, 1], swizzle = "128B">]} {
  return
}

// -----

// expected-error @+1 {{unknown conv_lower attribute 'conv_lower.grids'}}
func.func @unknown() attributes {conv_lower.grids = array<i64: 1, 1, 1>} {
  return
}
