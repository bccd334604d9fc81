// Launches an empty GPU kernel %n times (synchronously) from the host.
// C-visible entry points (both emitted, identical ABI since there are no memrefs):
//   void bench(int64_t n);
//   void _mlir_ciface_bench(int64_t n);
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @empty() kernel {
      gpu.return
    }
  }

  func.func @bench(%n: index) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      gpu.launch_func @kernels::@empty
          blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    }
    return
  }
}
