// Tensor cores through gpu.subgroup_mma_*: one warp computes D = A * B + C for 16x16 f16 A and
// B and f32 C (wmma.mma.sync m16n16k16), loading and storing the fragments from global memory.
// A[i][k] = (i + k) % 3, B[k][j] = (k * j) % 5 - 2, C[i][j] = i - j: every value exact in f16/f32.
// A and B are made by a kernel (f16 arithmetic on the host would need the compiler runtime's
// __truncsfhf2 / __extendhfsf2, which older libgcc lacks).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @init_ab(%a: memref<16x16xf16>, %b: memref<16x16xf16>) kernel {
      %c3 = arith.constant 3 : index
      %c5 = arith.constant 5 : index
      %two = arith.constant 2.0 : f16
      %i = gpu.thread_id y
      %j = gpu.thread_id x
      %s = arith.addi %i, %j : index
      %am = arith.remui %s, %c3 : index
      %ai = arith.index_cast %am : index to i32
      %af = arith.sitofp %ai : i32 to f16
      memref.store %af, %a[%i, %j] : memref<16x16xf16>
      %p = arith.muli %i, %j : index
      %bm = arith.remui %p, %c5 : index
      %bi = arith.index_cast %bm : index to i32
      %bf0 = arith.sitofp %bi : i32 to f16
      %bf = arith.subf %bf0, %two : f16
      memref.store %bf, %b[%i, %j] : memref<16x16xf16>
      gpu.return
    }
    gpu.func @mma(%a: memref<16x16xf16>, %b: memref<16x16xf16>, %c: memref<16x16xf32>,
                  %d: memref<16x16xf32>) kernel {
      %c0 = arith.constant 0 : index
      %fa = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index}
          : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
      %fb = gpu.subgroup_mma_load_matrix %b[%c0, %c0] {leadDimension = 16 : index}
          : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
      %fc = gpu.subgroup_mma_load_matrix %c[%c0, %c0] {leadDimension = 16 : index}
          : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
      %fd = gpu.subgroup_mma_compute %fa, %fb, %fc
          : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp">
          -> !gpu.mma_matrix<16x16xf32, "COp">
      gpu.subgroup_mma_store_matrix %fd, %d[%c0, %c0] {leadDimension = 16 : index}
          : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %hc = memref.alloc () : memref<16x16xf32>
    %hd = memref.alloc () : memref<16x16xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c16 step %c1 {
        %ii = arith.index_cast %i : index to i32
        %ji = arith.index_cast %j : index to i32
        %cm = arith.subi %ii, %ji : i32
        %cf = arith.sitofp %cm : i32 to f32
        memref.store %cf, %hc[%i, %j] : memref<16x16xf32>
      }
    }
    %t0 = gpu.wait async
    %da, %t1 = gpu.alloc async [%t0] () : memref<16x16xf16>
    %db, %t2 = gpu.alloc async [%t1] () : memref<16x16xf16>
    %dc, %t3 = gpu.alloc async [%t2] () : memref<16x16xf32>
    %dd, %t4 = gpu.alloc async [%t3] () : memref<16x16xf32>
    %t5 = gpu.launch_func async [%t4] @kernels::@init_ab blocks in (%c1, %c1, %c1)
        threads in (%c16, %c16, %c1) args(%da : memref<16x16xf16>, %db : memref<16x16xf16>)
    %t7 = gpu.memcpy async [%t5] %dc, %hc : memref<16x16xf32>, memref<16x16xf32>
    %t8 = gpu.launch_func async [%t7] @kernels::@mma blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%da : memref<16x16xf16>, %db : memref<16x16xf16>, %dc : memref<16x16xf32>,
             %dd : memref<16x16xf32>)
    %t9 = gpu.memcpy async [%t8] %hd, %dd : memref<16x16xf32>, memref<16x16xf32>
    %t10 = gpu.dealloc async [%t9] %da : memref<16x16xf16>
    %t11 = gpu.dealloc async [%t10] %db : memref<16x16xf16>
    %t12 = gpu.dealloc async [%t11] %dc : memref<16x16xf32>
    %t13 = gpu.dealloc async [%t12] %dd : memref<16x16xf32>
    gpu.wait [%t13]
    scf.for %i = %c0 to %c16 step %c1 {
      %row = vector.load %hd[%i, %c0] : memref<16x16xf32>, vector<16xf32>
      vector.print str "wmma row "
      %ii = arith.index_cast %i : index to i32
      vector.print %ii : i32 punctuation <comma>
      vector.print %row : vector<16xf32>
    }
    memref.dealloc %hc : memref<16x16xf32>
    memref.dealloc %hd : memref<16x16xf32>
    return
  }
}
