// gpu.printf from 2 blocks x 4 threads of an outlined kernel (launch_func), with i32, i64 and
// f32 arguments; then from an inline gpu.launch. The driver prints device output at the next
// synchronisation; line order between threads is not defined (the runner compares sorted lines).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @hello(%base: f32, %tag: i64) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %ti = arith.index_cast %t : index to i32
      %bi = arith.index_cast %b : index to i32
      %tf = arith.sitofp %ti : i32 to f32
      %v = arith.addf %tf, %base : f32
      //@19 gpu.printf "printf block %d thread %d value %.2f tag %lld\n" %bi, %ti, %v, %tag : i32, i32, f32, i64
      //@22 gpu.printf "printf block %d thread %d value %.2f tag %lld\n", %bi, %ti, %v, %tag : i32, i32, f32, i64
      gpu.return
    }
  }
  func.func @entry() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %base = arith.constant 0.25 : f32
    %tag = arith.constant 1234567890123 : i64
    gpu.launch_func @kernels::@hello blocks in (%c2, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%base : f32, %tag : i64)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c3, %sy = %c1, %sz = %c1) {
      %ti = arith.index_cast %tx : index to i32
      %sq = arith.muli %ti, %ti : i32
      //@19 gpu.printf "printf inline thread %d square %d\n" %ti, %sq : i32, i32
      //@22 gpu.printf "printf inline thread %d square %d\n", %ti, %sq : i32, i32
      gpu.terminator
    }
    return
  }
}
