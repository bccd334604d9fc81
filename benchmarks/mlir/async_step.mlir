// One "async step": two independent kernels on their own `gpu.wait async` streams, joined by a
// blocking `gpu.wait`, then a third kernel; its three intermediate buffers are `gpu.alloc
// host_shared` (cuMemAllocManaged in the stock wrapper) allocated and freed in every step.
// N = 65536 f32 (256 KiB per buffer), 256 blocks x 256 threads, one element per thread:
//   produce_a: h1[i] = 1024 steps of v = v * 0.999 + 0.001 * x[i], from v = 0
//   produce_b: h2[i] = 1024 steps of v = v * 0.998 + 0.002 * y[i], from v = 1
//   combine:   h3[i] = h1[i] * h2[i];  acc[i] += h3[i]
// (about 1024 dependent FMAs per thread: a few microseconds of GPU work per kernel.)
// bench(n, x, y, acc) runs n steps. bench_prealloc(n, x, y, acc, h1, h2, h3) is the same step with
// the three buffers made once by the caller (the reference for an allocator).
//
// C-visible entry points (MemRef1DF32 = { float *allocated, *aligned; int64_t offset, sizes[1], strides[1]; }):
//   void _mlir_ciface_bench(int64_t n, MemRef1DF32 *x, MemRef1DF32 *y, MemRef1DF32 *acc);
//   void _mlir_ciface_bench_prealloc(int64_t n, MemRef1DF32 *x, MemRef1DF32 *y, MemRef1DF32 *acc,
//                                    MemRef1DF32 *h1, MemRef1DF32 *h2, MemRef1DF32 *h3);
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @produce_a(%x: memref<65536xf32>, %h: memref<65536xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %xv = memref.load %x[%i] : memref<65536xf32>
      %k = arith.constant 0.001 : f32
      %add = arith.mulf %xv, %k : f32
      %a = arith.constant 0.999 : f32
      %z = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cK = arith.constant 1024 : index
      %v = scf.for %j = %c0 to %cK step %c1 iter_args(%acc = %z) -> (f32) {
        %m = arith.mulf %acc, %a : f32
        %s = arith.addf %m, %add : f32
        scf.yield %s : f32
      }
      memref.store %v, %h[%i] : memref<65536xf32>
      gpu.return
    }
    gpu.func @produce_b(%y: memref<65536xf32>, %h: memref<65536xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %yv = memref.load %y[%i] : memref<65536xf32>
      %k = arith.constant 0.002 : f32
      %add = arith.mulf %yv, %k : f32
      %a = arith.constant 0.998 : f32
      %one = arith.constant 1.0 : f32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cK = arith.constant 1024 : index
      %v = scf.for %j = %c0 to %cK step %c1 iter_args(%acc = %one) -> (f32) {
        %m = arith.mulf %acc, %a : f32
        %s = arith.addf %m, %add : f32
        scf.yield %s : f32
      }
      memref.store %v, %h[%i] : memref<65536xf32>
      gpu.return
    }
    gpu.func @combine(%h1: memref<65536xf32>, %h2: memref<65536xf32>, %h3: memref<65536xf32>,
                      %acc: memref<65536xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %a = memref.load %h1[%i] : memref<65536xf32>
      %b = memref.load %h2[%i] : memref<65536xf32>
      %p = arith.mulf %a, %b : f32
      memref.store %p, %h3[%i] : memref<65536xf32>
      %o = memref.load %acc[%i] : memref<65536xf32>
      %s = arith.addf %o, %p : f32
      memref.store %s, %acc[%i] : memref<65536xf32>
      gpu.return
    }
  }

  // The step, written out in each caller: a token returned from a function would be waited on
  // with mgpuEventSynchronize on a stream (a lowering quirk, see the ABI notes).
  func.func @step(%x: memref<65536xf32>, %y: memref<65536xf32>, %acc: memref<65536xf32>) {
    %h1 = gpu.alloc host_shared () : memref<65536xf32>
    %h2 = gpu.alloc host_shared () : memref<65536xf32>
    %h3 = gpu.alloc host_shared () : memref<65536xf32>
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %s1 = gpu.wait async
    %t1 = gpu.launch_func async [%s1] @kernels::@produce_a
        blocks in (%c256, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<65536xf32>, %h1 : memref<65536xf32>)
    %s2 = gpu.wait async
    %t2 = gpu.launch_func async [%s2] @kernels::@produce_b
        blocks in (%c256, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%y : memref<65536xf32>, %h2 : memref<65536xf32>)
    gpu.wait [%t1, %t2]
    %s3 = gpu.wait async
    %t3 = gpu.launch_func async [%s3] @kernels::@combine
        blocks in (%c256, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%h1 : memref<65536xf32>, %h2 : memref<65536xf32>, %h3 : memref<65536xf32>,
             %acc : memref<65536xf32>)
    %d1 = gpu.dealloc async [%t3] %h1 : memref<65536xf32>
    %d2 = gpu.dealloc async [%d1] %h2 : memref<65536xf32>
    %d3 = gpu.dealloc async [%d2] %h3 : memref<65536xf32>
    gpu.wait [%d3]
    return
  }

  func.func @step_prealloc(%x: memref<65536xf32>, %y: memref<65536xf32>, %acc: memref<65536xf32>,
                           %h1: memref<65536xf32>, %h2: memref<65536xf32>, %h3: memref<65536xf32>) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %s1 = gpu.wait async
    %t1 = gpu.launch_func async [%s1] @kernels::@produce_a
        blocks in (%c256, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<65536xf32>, %h1 : memref<65536xf32>)
    %s2 = gpu.wait async
    %t2 = gpu.launch_func async [%s2] @kernels::@produce_b
        blocks in (%c256, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%y : memref<65536xf32>, %h2 : memref<65536xf32>)
    gpu.wait [%t1, %t2]
    %s3 = gpu.wait async
    %t3 = gpu.launch_func async [%s3] @kernels::@combine
        blocks in (%c256, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%h1 : memref<65536xf32>, %h2 : memref<65536xf32>, %h3 : memref<65536xf32>,
             %acc : memref<65536xf32>)
    gpu.wait [%t3]
    return
  }

  func.func @bench(%n: index, %x: memref<65536xf32>, %y: memref<65536xf32>,
                   %acc: memref<65536xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      func.call @step(%x, %y, %acc) : (memref<65536xf32>, memref<65536xf32>, memref<65536xf32>) -> ()
    }
    return
  }

  func.func @bench_prealloc(%n: index, %x: memref<65536xf32>, %y: memref<65536xf32>,
                            %acc: memref<65536xf32>, %h1: memref<65536xf32>,
                            %h2: memref<65536xf32>, %h3: memref<65536xf32>)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      func.call @step_prealloc(%x, %y, %acc, %h1, %h2, %h3)
          : (memref<65536xf32>, memref<65536xf32>, memref<65536xf32>, memref<65536xf32>,
             memref<65536xf32>, memref<65536xf32>) -> ()
    }
    return
  }
}
