// Module-scope state (issue 19, item 1): a memref.global in a gpu.module that the kernel
// increments. step(out) launches count_up once: out[0] = counter; counter += 1. A fresh load of
// the module starts from counter = 7 (the global's initial value), so with code that loads the
// module around every launch (LLVM <= 20) every step sees 7, as with the stock library; with
// code that loads it once (LLVM >= 21, in a global constructor) the steps see 7, 8, 9, ...
module attributes {gpu.container_module} {
  gpu.module @state_kernels {
    memref.global "private" @counter : memref<1xi32> = dense<7>
    gpu.func @count_up(%out: memref<1xi32>) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1 : i32
      %g = memref.get_global @counter : memref<1xi32>
      %v = memref.load %g[%c0] : memref<1xi32>
      memref.store %v, %out[%c0] : memref<1xi32>
      %n = arith.addi %v, %one : i32
      memref.store %n, %g[%c0] : memref<1xi32>
      gpu.return
    }
  }
  func.func @step(%out: memref<1xi32>) attributes {llvm.emit_c_interface} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @state_kernels::@count_up blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<1xi32>)
    return
  }
}
