// chip: sm_90a
// Thread-block clusters: gpu.launch_func with `clusters in (2, 1, 1)` over 6 x 2 blocks
// (mgpuLaunchClusterKernel). Each block records its cluster id, its rank in the cluster and the
// clusters per grid (gpu.cluster_id / cluster_block_id / cluster_dim), and the blocks per cluster
// (gpu.cluster_dim_blocks; LLVM 19 parses it but cannot lower it to NVVM, "failed to legalize
// operation 'gpu.cluster_dim_blocks'", so its line reads the same register, %cluster_nctaid.x,
// through nvvm.read.ptx.sreg.cluster.nctaid.x).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ids(%out: memref<12x5xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c6 = arith.constant 6 : index
      %t = gpu.thread_id x
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %bx = gpu.block_id x
        %by = gpu.block_id y
        %byx = arith.muli %by, %c6 : index
        %b = arith.addi %byx, %bx : index
        %cx = gpu.cluster_id x
        %cy = gpu.cluster_id y
        %rx = gpu.cluster_block_id x
        %dx = gpu.cluster_dim x
        %cxi = arith.index_cast %cx : index to i32
        %cyi = arith.index_cast %cy : index to i32
        %rxi = arith.index_cast %rx : index to i32
        %dxi = arith.index_cast %dx : index to i32
        //@19 %nxi = nvvm.read.ptx.sreg.cluster.nctaid.x : i32
        //@22 %nx = gpu.cluster_dim_blocks x
        //@22 %nxi = arith.index_cast %nx : index to i32
        memref.store %cxi, %out[%b, %c0] : memref<12x5xi32>
        memref.store %cyi, %out[%b, %c1] : memref<12x5xi32>
        memref.store %rxi, %out[%b, %c2] : memref<12x5xi32>
        memref.store %dxi, %out[%b, %c3] : memref<12x5xi32>
        memref.store %nxi, %out[%b, %c4] : memref<12x5xi32>
      }
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c6 = arith.constant 6 : index
    %c12 = arith.constant 12 : index
    %c32 = arith.constant 32 : index
    %host = memref.alloc () : memref<12x5xi32>
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<12x5xi32>
    gpu.wait [%t1]
    gpu.launch_func @kernels::@ids clusters in (%c2, %c1, %c1) blocks in (%c6, %c2, %c1)
        threads in (%c32, %c1, %c1) args(%dev : memref<12x5xi32>)
    %t2 = gpu.wait async
    %t3 = gpu.memcpy async [%t2] %host, %dev : memref<12x5xi32>, memref<12x5xi32>
    %t4 = gpu.dealloc async [%t3] %dev : memref<12x5xi32>
    gpu.wait [%t4]
    scf.for %b = %c0 to %c12 step %c1 {
      %row = vector.load %host[%b, %c0] : memref<12x5xi32>, vector<5xi32>
      vector.print str "cluster block (cluster_id.x cluster_id.y rank.x clusters.x blocks_per_cluster.x) "
      %bi = arith.index_cast %b : index to i32
      vector.print %bi : i32 punctuation <comma>
      vector.print %row : vector<5xi32>
    }
    memref.dealloc %host : memref<12x5xi32>
    return
  }
}
