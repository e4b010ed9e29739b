// A padded 3x3 convolution in torch's layout (NCHW input, FCHW filter), as
// torch-mlir and friends emit it: a zero tensor.pad feeding the linalg conv.
// @main fills the operands with small integers and prints the result.

func.func @conv(%x: tensor<1x3x6x6xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x2x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%n: index, %c: index, %h: index, %w_: index):
    tensor.yield %zero : f32
  } : tensor<1x3x6x6xf32> to tensor<1x3x8x8xf32>
  %empty = tensor.empty() : tensor<1x2x6x6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%padded, %w : tensor<1x3x8x8xf32>, tensor<2x3x3x3xf32>)
         outs(%init : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  return %y : tensor<1x2x6x6xf32>
}

// x[n, c, h, w] = (c + h + w) mod 5 - 2;  w[f, c, kh, kw] = (f + c + kh * kw) mod 3 - 1
#id4 = affine_map<(a, b, c, d) -> (a, b, c, d)>
func.func @pattern(%modulus: i64, %shift: i64, %init: tensor<?x?x?x?xf32>, %square: i1) -> tensor<?x?x?x?xf32> {
  %r = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
       outs(%init : tensor<?x?x?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %last = arith.muli %i2, %i3 : index
    %sum = arith.addi %i2, %i3 : index
    %spatial = arith.select %square, %last, %sum : index
    %a = arith.addi %i0, %i1 : index
    %b = arith.addi %a, %spatial : index
    %bi = arith.index_cast %b : index to i64
    %m = arith.remsi %bi, %modulus : i64
    %s = arith.subi %m, %shift : i64
    %f = arith.sitofp %s : i64 to f32
    linalg.yield %f : f32
  } -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @main() {
  %c5 = arith.constant 5 : i64
  %c3 = arith.constant 3 : i64
  %c2 = arith.constant 2 : i64
  %c1 = arith.constant 1 : i64
  %true = arith.constant true
  %false = arith.constant false
  %xe = tensor.empty() : tensor<1x3x6x6xf32>
  %xd = tensor.cast %xe : tensor<1x3x6x6xf32> to tensor<?x?x?x?xf32>
  %x0 = call @pattern(%c5, %c2, %xd, %false) : (i64, i64, tensor<?x?x?x?xf32>, i1) -> tensor<?x?x?x?xf32>
  %x = tensor.cast %x0 : tensor<?x?x?x?xf32> to tensor<1x3x6x6xf32>
  %we = tensor.empty() : tensor<2x3x3x3xf32>
  %wd = tensor.cast %we : tensor<2x3x3x3xf32> to tensor<?x?x?x?xf32>
  %w0 = call @pattern(%c3, %c1, %wd, %true) : (i64, i64, tensor<?x?x?x?xf32>, i1) -> tensor<?x?x?x?xf32>
  %w = tensor.cast %w0 : tensor<?x?x?x?xf32> to tensor<2x3x3x3xf32>
  %y = call @conv(%x, %w) : (tensor<1x3x6x6xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x6x6xf32>
  %buf = bufferization.to_buffer %y : tensor<1x2x6x6xf32> to memref<1x2x6x6xf32>
  %unranked = memref.cast %buf : memref<1x2x6x6xf32> to memref<*xf32>
  call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
  return
}
