// sparse_gpu.mlir - MLIR sparse programs that the sparsifier lowers to the cuSPARSE / cuSPARSELt
// library path (enable-gpu-libgen): each function takes dense inputs, converts the sparse operand
// inside, computes on the GPU through the mgpu* sparse entry points and returns a dense result.
// The C driver sparse_main.c checks every result against a CPU reference. compile.sh lowers it.
#CSR = #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>
#NV_24 = #sparse_tensor.encoding<{
  map = ( i, j ) -> ( i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4])
}>
#trait_SDDMM = {
  indexing_maps = [
    affine_map<(i,j,k) -> (i,k)>,
    affine_map<(i,j,k) -> (k,j)>,
    affine_map<(i,j,k) -> (i,j)>
  ],
  iterator_types = ["parallel", "parallel", "reduction"],
  doc = "S(i,j) += spy[S(i,j)] x SUM_k A(i,k) B(k,j)"
}
module {
  // y = A x + y  (cusparseSpMV)
  func.func @spmv(%Ad: tensor<64x32xf32>, %x: tensor<32xf32>, %y: tensor<64xf32>) -> tensor<64xf32>
      attributes { llvm.emit_c_interface } {
    %A = sparse_tensor.convert %Ad : tensor<64x32xf32> to tensor<64x32xf32, #CSR>
    %r = linalg.matvec ins(%A, %x: tensor<64x32xf32, #CSR>, tensor<32xf32>)
                       outs(%y: tensor<64xf32>) -> tensor<64xf32>
    bufferization.dealloc_tensor %A : tensor<64x32xf32, #CSR>
    return %r : tensor<64xf32>
  }

  // C = A B + C  (cusparseSpMM)
  func.func @spmm(%Ad: tensor<64x32xf32>, %B: tensor<32x16xf32>, %C: tensor<64x16xf32>) -> tensor<64x16xf32>
      attributes { llvm.emit_c_interface } {
    %A = sparse_tensor.convert %Ad : tensor<64x32xf32> to tensor<64x32xf32, #CSR>
    %r = linalg.matmul ins(%A, %B: tensor<64x32xf32, #CSR>, tensor<32x16xf32>)
                       outs(%C: tensor<64x16xf32>) -> tensor<64x16xf32>
    bufferization.dealloc_tensor %A : tensor<64x32xf32, #CSR>
    return %r : tensor<64x16xf32>
  }

  // S(i,j) += (A B)(i,j) where S has an entry  (cusparseSDDMM)
  func.func @sddmm(%Sd: tensor<32x32xf32>, %A: tensor<32x16xf32>, %B: tensor<16x32xf32>) -> tensor<32x32xf32>
      attributes { llvm.emit_c_interface } {
    %S = sparse_tensor.convert %Sd : tensor<32x32xf32> to tensor<32x32xf32, #CSR>
    %R = linalg.generic #trait_SDDMM
      ins(%A, %B: tensor<32x16xf32>, tensor<16x32xf32>)
      outs(%S: tensor<32x32xf32, #CSR>) {
        ^bb(%a: f32, %b: f32, %s: f32):
           %f0 = arith.constant 0.0 : f32
           %u = sparse_tensor.unary %s : f32 to f32
             present={
                ^bb0(%p: f32):
                  %mul = arith.mulf %a, %b : f32
                  sparse_tensor.yield %mul : f32
             }
             absent={}
           %r = sparse_tensor.reduce %s, %u, %f0 : f32 {
              ^bb0(%p: f32, %q: f32):
                %add = arith.addf %p, %q : f32
                sparse_tensor.yield %add : f32
            }
           linalg.yield %r : f32
      } -> tensor<32x32xf32, #CSR>
    %D = sparse_tensor.convert %R : tensor<32x32xf32, #CSR> to tensor<32x32xf32>
    bufferization.dealloc_tensor %R : tensor<32x32xf32, #CSR>
    return %D : tensor<32x32xf32>
  }

  // C = A B with A, B and C sparse  (cusparseSpGEMM)
  func.func @spgemm(%Ad: tensor<32x32xf32>, %Bd: tensor<32x32xf32>) -> tensor<32x32xf32>
      attributes { llvm.emit_c_interface } {
    %A = sparse_tensor.convert %Ad : tensor<32x32xf32> to tensor<32x32xf32, #CSR>
    %B = sparse_tensor.convert %Bd : tensor<32x32xf32> to tensor<32x32xf32, #CSR>
    %E = tensor.empty() : tensor<32x32xf32, #CSR>
    %C = linalg.matmul ins(%A, %B: tensor<32x32xf32, #CSR>, tensor<32x32xf32, #CSR>)
                       outs(%E: tensor<32x32xf32, #CSR>) -> tensor<32x32xf32, #CSR>
    %D = sparse_tensor.convert %C : tensor<32x32xf32, #CSR> to tensor<32x32xf32>
    bufferization.dealloc_tensor %A : tensor<32x32xf32, #CSR>
    bufferization.dealloc_tensor %B : tensor<32x32xf32, #CSR>
    bufferization.dealloc_tensor %C : tensor<32x32xf32, #CSR>
    return %D : tensor<32x32xf32>
  }

  // D = A B + C with A 2:4 structured sparse, f16  (cuSPARSELt)
  func.func @matmul24(%Ad: tensor<16x16xf16>, %B: tensor<16x16xf16>, %C: tensor<16x16xf16>) -> tensor<16x16xf16>
      attributes { llvm.emit_c_interface } {
    %A = sparse_tensor.convert %Ad : tensor<16x16xf16> to tensor<16x16xf16, #NV_24>
    %D = linalg.matmul ins(%A, %B: tensor<16x16xf16, #NV_24>, tensor<16x16xf16>)
                       outs(%C: tensor<16x16xf16>) -> tensor<16x16xf16>
    bufferization.dealloc_tensor %A : tensor<16x16xf16, #NV_24>
    return %D : tensor<16x16xf16>
  }
}
