// pre: gpu-kernel-outlining,gpu.module(convert-gpu-to-nvvm{has-redux=1})
// gpu.subgroup_reduce (add, and, maxsi, minsi; uniform, i32) over the four full warps of a
// 128-thread block. gpu-lower-to-nvvm-pipeline leaves subgroup_reduce illegal in LLVM 19 and 22;
// convert-gpu-to-nvvm{has-redux=1} lowers it to redux.sync (sm_80+), run on the gpu.module first
// (the `pre:` line above, see compile.sh). Lane 0 of each warp writes its warp's results.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @warps(%out: memref<16xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %tx = gpu.thread_id x
      %t = arith.index_cast %tx : index to i32
      %c7 = arith.constant 7 : i32
      %c100 = arith.constant 100 : i32
      %m = arith.remui %t, %c7 : i32
      %v = arith.addi %m, %c100 : i32
      %add = gpu.subgroup_reduce add %t uniform : (i32) -> (i32)
      %and = gpu.subgroup_reduce and %v uniform : (i32) -> (i32)
      %max = gpu.subgroup_reduce maxsi %t uniform : (i32) -> (i32)
      %min = gpu.subgroup_reduce minsi %v uniform : (i32) -> (i32)
      %lane = arith.remui %tx, %c32 : index
      %warp = arith.divui %tx, %c32 : index
      %first = arith.cmpi eq, %lane, %c0 : index
      scf.if %first {
        %base = arith.muli %warp, %c4 : index
        memref.store %add, %out[%base] : memref<16xi32>
        %i1 = arith.addi %base, %c1 : index
        memref.store %and, %out[%i1] : memref<16xi32>
        %i2 = arith.addi %base, %c2 : index
        memref.store %max, %out[%i2] : memref<16xi32>
        %i3 = arith.addi %base, %c3 : index
        memref.store %min, %out[%i3] : memref<16xi32>
      }
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c128 = arith.constant 128 : index
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<16xi32>
    gpu.wait [%t1]
    gpu.launch_func @kernels::@warps blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%dev : memref<16xi32>)
    %host = memref.alloc () : memref<16xi32>
    %t2 = gpu.wait async
    %t3 = gpu.memcpy async [%t2] %host, %dev : memref<16xi32>, memref<16xi32>
    %t4 = gpu.dealloc async [%t3] %dev : memref<16xi32>
    gpu.wait [%t4]
    scf.for %w = %c0 to %c4 step %c1 {
      %base = arith.muli %w, %c4 : index
      %v = vector.load %host[%base] : memref<16xi32>, vector<4xi32>
      vector.print str "subgroup_reduce warp (add and maxsi minsi) "
      %wi = arith.index_cast %w : index to i32
      vector.print %wi : i32 punctuation <comma>
      vector.print %v : vector<4xi32>
    }
    memref.dealloc %host : memref<16xi32>
    return
  }
}
