// alloc_loop(n): n steps of: gpu.alloc host_shared (1 MiB), a kernel fills it with the step
// number, gpu.wait, the host reads element 0 (summed), gpu.dealloc async, gpu.wait.
// Returns the sum of the values read (n*(n-1)/2). Exercises mgpuMemAlloc(host_shared) / mgpuMemFree.
//
// C-visible entry point:  float alloc_loop(int64_t n);   (also _mlir_ciface_alloc_loop)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%m: memref<262144xf32>, %v: f32) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      memref.store %v, %m[%i] : memref<262144xf32>
      gpu.return
    }
  }

  func.func @alloc_loop(%n: i64) -> f32 attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %c1024 = arith.constant 1024 : index
    %zero = arith.constant 0.0 : f32
    %nn = arith.index_cast %n : i64 to index
    %sum = scf.for %i = %c0 to %nn step %c1 iter_args(%acc = %zero) -> (f32) {
      %m = gpu.alloc host_shared () : memref<262144xf32>
      %ii = arith.index_cast %i : index to i64
      %v = arith.sitofp %ii : i64 to f32
      %t0 = gpu.wait async
      %t1 = gpu.launch_func async [%t0] @kernels::@fill
          blocks in (%c1024, %c1, %c1) threads in (%c256, %c1, %c1)
          args(%m : memref<262144xf32>, %v : f32)
      gpu.wait [%t1]
      %r = memref.load %m[%c0] : memref<262144xf32>
      %t2 = gpu.wait async
      %t3 = gpu.dealloc async [%t2] %m : memref<262144xf32>
      gpu.wait [%t3]
      %next = arith.addf %acc, %r : f32
      scf.yield %next : f32
    }
    return %sum : f32
  }
}
