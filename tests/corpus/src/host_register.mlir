// gpu.host_register of ranked host memrefs (rank 2, i32, and rank 1, f32, cast to unranked:
// mgpuMemHostRegisterMemRef), kernels that read and write them in place through the host
// pointer, then gpu.host_unregister (mgpuMemHostUnregisterMemRef).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add100(%m: memref<4x8xi32>) kernel {
      %b = gpu.block_id x
      %t = gpu.thread_id x
      %v = memref.load %m[%b, %t] : memref<4x8xi32>
      %c = arith.constant 100 : i32
      %w = arith.addi %v, %c : i32
      memref.store %w, %m[%b, %t] : memref<4x8xi32>
      gpu.return
    }
    gpu.func @square(%m: memref<8xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<8xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %m[%t] : memref<8xf32>
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %half = arith.constant 0.5 : f32
    // page-aligned, so that the two registrations never share a page (the driver registers whole
    // pages and refuses a range registered already)
    %m = memref.alloc () {alignment = 4096 : i64} : memref<4x8xi32>
    %f = memref.alloc () {alignment = 4096 : i64} : memref<8xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %i8 = arith.muli %i, %c8 : index
        %k = arith.addi %i8, %j : index
        %ki = arith.index_cast %k : index to i32
        memref.store %ki, %m[%i, %j] : memref<4x8xi32>
      }
    }
    scf.for %j = %c0 to %c8 step %c1 {
      %ji = arith.index_cast %j : index to i32
      %jf = arith.sitofp %ji : i32 to f32
      %v = arith.addf %jf, %half : f32
      memref.store %v, %f[%j] : memref<8xf32>
    }
    %mu = memref.cast %m : memref<4x8xi32> to memref<*xi32>
    %fu = memref.cast %f : memref<8xf32> to memref<*xf32>
    gpu.host_register %mu : memref<*xi32>
    gpu.host_register %fu : memref<*xf32>
    gpu.launch_func @kernels::@add100 blocks in (%c4, %c1, %c1) threads in (%c8, %c1, %c1)
        args(%m : memref<4x8xi32>)
    gpu.launch_func @kernels::@square blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1)
        args(%f : memref<8xf32>)
    scf.for %i = %c0 to %c4 step %c1 {
      %row = vector.load %m[%i, %c0] : memref<4x8xi32>, vector<8xi32>
      vector.print str "registered row "
      %ii = arith.index_cast %i : index to i32
      vector.print %ii : i32 punctuation <comma>
      vector.print %row : vector<8xi32>
    }
    %fv = vector.load %f[%c0] : memref<8xf32>, vector<8xf32>
    vector.print str "registered squares "
    vector.print %fv : vector<8xf32>
    gpu.host_unregister %mu : memref<*xi32>
    gpu.host_unregister %fu : memref<*xf32>
    memref.dealloc %m : memref<4x8xi32>
    memref.dealloc %f : memref<8xf32>
    return
  }
}
