// A 66x66 f64 Laplacian (Jacobi) step on the GPU, called from a host loop through a function.
// One launch per step: 8 blocks x 512 threads, one thread per interior point (64x64), each
//   out[r][c] = in[r][c] + 0.1 * (in[r-1][c] + in[r+1][c] + in[r][c-1] + in[r][c+1] - 4 in[r][c]);
// the boundary rows/columns are never written (the caller initialises both buffers with them).
// bench(n, a, b) runs n steps, swapping a and b after each (n even: the result is in a).
// a and b must be memory the GPU can address (the harness uses mgpuMemAlloc host_shared).
//
// C-visible entry point:
//   typedef struct { double *allocated, *aligned; int64_t offset, sizes[2], strides[2]; } MemRef2DF64;
//   void _mlir_ciface_bench(int64_t n, MemRef2DF64 *a, MemRef2DF64 *b);
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @laplace(%in: memref<66x66xf64>, %out: memref<66x66xf64>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c4096 = arith.constant 4096 : index
      %inb = arith.cmpi ult, %i, %c4096 : index
      scf.if %inb {
        %q = arith.divui %i, %c64 : index
        %m = arith.remui %i, %c64 : index
        %r = arith.addi %q, %c1 : index
        %c = arith.addi %m, %c1 : index
        %rm = arith.subi %r, %c1 : index
        %rp = arith.addi %r, %c1 : index
        %cm = arith.subi %c, %c1 : index
        %cp = arith.addi %c, %c1 : index
        %v = memref.load %in[%r, %c] : memref<66x66xf64>
        %up = memref.load %in[%rm, %c] : memref<66x66xf64>
        %dn = memref.load %in[%rp, %c] : memref<66x66xf64>
        %lf = memref.load %in[%r, %cm] : memref<66x66xf64>
        %rt = memref.load %in[%r, %cp] : memref<66x66xf64>
        %s1 = arith.addf %up, %dn : f64
        %s2 = arith.addf %s1, %lf : f64
        %s3 = arith.addf %s2, %rt : f64
        %four = arith.constant 4.0 : f64
        %v4 = arith.mulf %four, %v : f64
        %lap = arith.subf %s3, %v4 : f64
        %k = arith.constant 0.1 : f64
        %d = arith.mulf %k, %lap : f64
        %nv = arith.addf %v, %d : f64
        memref.store %nv, %out[%r, %c] : memref<66x66xf64>
      }
      gpu.return
    }
  }

  func.func @step(%in: memref<66x66xf64>, %out: memref<66x66xf64>) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c512 = arith.constant 512 : index
    gpu.launch_func @kernels::@laplace
        blocks in (%c8, %c1, %c1) threads in (%c512, %c1, %c1)
        args(%in : memref<66x66xf64>, %out : memref<66x66xf64>)
    return
  }

  func.func @bench(%n: index, %a: memref<66x66xf64>, %b: memref<66x66xf64>)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a, %y = %b)
        -> (memref<66x66xf64>, memref<66x66xf64>) {
      func.call @step(%x, %y) : (memref<66x66xf64>, memref<66x66xf64>) -> ()
      scf.yield %y, %x : memref<66x66xf64>, memref<66x66xf64>
    }
    return
  }
}
