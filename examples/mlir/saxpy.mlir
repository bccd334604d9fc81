// saxpy.mlir - a complete MLIR GPU program (examples/mlir/README.md): y = 2*x + y on 16 floats in
// host_shared (managed) memory, x = 0..15 and y = 1, one kernel launch, then the host prints y,
// one value a line: 1, 3, 5, ..., 31 on a GPU. Entry point main(), for the AOT build and the JIT
// runner alike. (MLIR 19 lowers gpu.dealloc only in its async form, hence the token.)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @saxpy(%a: f32, %x: memref<16xf32>, %y: memref<16xf32>) kernel {
      %i = gpu.thread_id x
      %xv = memref.load %x[%i] : memref<16xf32>
      %yv = memref.load %y[%i] : memref<16xf32>
      %ax = arith.mulf %a, %xv : f32
      %r = arith.addf %ax, %yv : f32
      memref.store %r, %y[%i] : memref<16xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %two = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %x = gpu.alloc host_shared () : memref<16xf32>
    %y = gpu.alloc host_shared () : memref<16xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<16xf32>
      memref.store %one, %y[%i] : memref<16xf32>
    }
    gpu.launch_func @kernels::@saxpy blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%two : f32, %x : memref<16xf32>, %y : memref<16xf32>)
    %t = gpu.wait async
    gpu.wait [%t]
    scf.for %i = %c0 to %c16 step %c1 {
      %v = memref.load %y[%i] : memref<16xf32>
      vector.print %v : f32
    }
    %t0 = gpu.wait async
    %t1 = gpu.dealloc async [%t0] %x : memref<16xf32>
    %t2 = gpu.dealloc async [%t1] %y : memref<16xf32>
    gpu.wait [%t2]
    return
  }
}
