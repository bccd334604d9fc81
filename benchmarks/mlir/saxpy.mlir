// y[i] = a * x[i] + y[i] for 1024 f32 elements on the GPU (4 blocks x 256 threads).
// x and y must be DEVICE pointers (e.g. from cudaMalloc / cuMemAlloc); the host
// code never dereferences them. The launch is synchronous.
//
// C-visible entry points:
//   typedef struct { float *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } MemRef1DF32;
//   void _mlir_ciface_saxpy(float a, MemRef1DF32 *x, MemRef1DF32 *y);
//   void saxpy(float a,
//              float *x_alloc, float *x_aligned, int64_t x_off, int64_t x_size, int64_t x_stride,
//              float *y_alloc, float *y_aligned, int64_t y_off, int64_t y_size, int64_t y_stride);
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @saxpy_kernel(%a: f32, %x: memref<1024xf32>, %y: memref<1024xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %t = arith.muli %bid, %bdim : index
      %i = arith.addi %t, %tid : index
      %n = arith.constant 1024 : index
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %xv = memref.load %x[%i] : memref<1024xf32>
        %yv = memref.load %y[%i] : memref<1024xf32>
        %ax = arith.mulf %a, %xv : f32
        %r = arith.addf %ax, %yv : f32
        memref.store %r, %y[%i] : memref<1024xf32>
      }
      gpu.return
    }
  }

  func.func @saxpy(%a: f32, %x: memref<1024xf32>, %y: memref<1024xf32>)
      attributes {llvm.emit_c_interface} {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @kernels::@saxpy_kernel
        blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : f32, %x : memref<1024xf32>, %y : memref<1024xf32>)
    return
  }
}
