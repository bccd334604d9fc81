// scale.mlir - the JIT-path test program: fill a device buffer with 21.0 (gpu.memset), double it
// in a kernel (buf[i] *= 2), copy it back and print it with the runner utils' printMemrefF32.
// On a GPU it prints eight 42s; on the recording fake driver (kernels do not run) eight 21s.
// Lowered by compile.sh for mlir-cpu-runner / mlir-runner (PTX embedded: mgpuModuleLoadJIT).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%buf: memref<8xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %buf[%i] : memref<8xf32>
      %two = arith.constant 2.0 : f32
      %r = arith.mulf %v, %two : f32
      memref.store %r, %buf[%i] : memref<8xf32>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %cst = arith.constant 21.0 : f32
    %host = memref.alloc() : memref<8xf32>
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<8xf32>
    %t2 = gpu.memset async [%t1] %dev, %cst : memref<8xf32>, f32
    %t3 = gpu.launch_func async [%t2] @kernels::@scale blocks in (%c1, %c1, %c1)
        threads in (%c8, %c1, %c1) args(%dev : memref<8xf32>)
    %t4 = gpu.memcpy async [%t3] %host, %dev : memref<8xf32>, memref<8xf32>
    %t5 = gpu.dealloc async [%t4] %dev : memref<8xf32>
    gpu.wait [%t5]
    %u = memref.cast %host : memref<8xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    memref.dealloc %host : memref<8xf32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }
}
