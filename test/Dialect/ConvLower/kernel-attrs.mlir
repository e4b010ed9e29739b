// RUN: conv-opt %s -split-input-file -verify-diagnostics | FileCheck %s
//
// The launch attributes the implicit-GEMM pass records on its kernels are
// declared by the dialect (conv_lower.grid / block / tiles) and verified
// wherever they appear.

// CHECK-LABEL: func.func @launch
// CHECK-SAME: conv_lower.block = array<i64: 128, 1, 1>, conv_lower.grid = array<i64: 13, 2, 1>, conv_lower.tiles = {stages = 3 : i64}
func.func @launch() attributes {conv_lower.grid = array<i64: 13, 2, 1>, conv_lower.block = array<i64: 128, 1, 1>, conv_lower.tiles = {stages = 3 : i64}} {
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

// expected-error @+1 {{'conv_lower.tiles' must be a dictionary}}
func.func @tiles_type() attributes {conv_lower.tiles = 3 : i64} {
  return
}

// -----

// expected-error @+1 {{unknown conv_lower attribute 'conv_lower.grids'}}
func.func @unknown() attributes {conv_lower.grids = array<i64: 1, 1, 1>} {
  return
}
