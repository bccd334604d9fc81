// Async chains with tokens: alloc -> memset -> kernel -> kernel -> memcpy -> dealloc on one
// stream, each op waiting on the previous token; then a fork/join: two streams each run a kernel
// on their own buffer; `gpu.wait async [a, b]` joins them (a new stream waiting on an event of each:
// the lowering accepts one dependency per launch), a third kernel runs after the join, the result
// is copied back and the host waits on the last token only.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add_tid(%buf: memref<256xi32>) kernel {
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %t = gpu.thread_id x
      %bn = arith.muli %b, %n : index
      %i = arith.addi %bn, %t : index
      %v = memref.load %buf[%i] : memref<256xi32>
      %ii = arith.index_cast %i : index to i32
      %w = arith.addi %v, %ii : i32
      memref.store %w, %buf[%i] : memref<256xi32>
      gpu.return
    }
    gpu.func @double(%buf: memref<256xi32>) kernel {
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %t = gpu.thread_id x
      %bn = arith.muli %b, %n : index
      %i = arith.addi %bn, %t : index
      %v = memref.load %buf[%i] : memref<256xi32>
      %w = arith.addi %v, %v : i32
      memref.store %w, %buf[%i] : memref<256xi32>
      gpu.return
    }
    gpu.func @combine(%x: memref<256xi32>, %y: memref<256xi32>) kernel {
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %t = gpu.thread_id x
      %bn = arith.muli %b, %n : index
      %i = arith.addi %bn, %t : index
      %v = memref.load %x[%i] : memref<256xi32>
      %w = memref.load %y[%i] : memref<256xi32>
      %s = arith.subi %w, %v : i32
      memref.store %s, %x[%i] : memref<256xi32>
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c16 = arith.constant 16 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1 : i32
    %five = arith.constant 5 : i32
    %host = memref.alloc () : memref<256xi32>
    // one chain: ((1 + i) * 2) for i in 0..255
    %s0 = gpu.wait async
    %d, %s1 = gpu.alloc async [%s0] () : memref<256xi32>
    %s2 = gpu.memset async [%s1] %d, %one : memref<256xi32>, i32
    %s3 = gpu.launch_func async [%s2] @kernels::@add_tid blocks in (%c4, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%d : memref<256xi32>)
    %s4 = gpu.launch_func async [%s3] @kernels::@double blocks in (%c4, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%d : memref<256xi32>)
    %s5 = gpu.memcpy async [%s4] %host, %d : memref<256xi32>, memref<256xi32>
    %s6 = gpu.dealloc async [%s5] %d : memref<256xi32>
    gpu.wait [%s6]
    scf.for %r = %c0 to %c256 step %c64 {
      %v = vector.load %host[%r] : memref<256xi32>, vector<64xi32>
      vector.print str "chain from "
      %ri = arith.index_cast %r : index to i32
      vector.print %ri : i32 punctuation <comma>
      vector.print %v : vector<64xi32>
    }
    // fork / join: x = 5 + i on stream a, y = (5 + i) * 2 + i on stream b, x = y - x after both
    %a0 = gpu.wait async
    %b0 = gpu.wait async
    %x, %a1 = gpu.alloc async [%a0] () : memref<256xi32>
    %y, %b1 = gpu.alloc async [%b0] () : memref<256xi32>
    %a2 = gpu.memset async [%a1] %x, %five : memref<256xi32>, i32
    %b2 = gpu.memset async [%b1] %y, %five : memref<256xi32>, i32
    %a3 = gpu.launch_func async [%a2] @kernels::@add_tid blocks in (%c16, %c1, %c1)
        threads in (%c16, %c1, %c1) args(%x : memref<256xi32>)
    %b3 = gpu.launch_func async [%b2] @kernels::@add_tid blocks in (%c16, %c1, %c1)
        threads in (%c16, %c1, %c1) args(%y : memref<256xi32>)
    %b4 = gpu.launch_func async [%b3] @kernels::@double blocks in (%c16, %c1, %c1)
        threads in (%c16, %c1, %c1) args(%y : memref<256xi32>)
    %b5 = gpu.launch_func async [%b4] @kernels::@add_tid blocks in (%c16, %c1, %c1)
        threads in (%c16, %c1, %c1) args(%y : memref<256xi32>)
    %j = gpu.wait async [%a3, %b5]
    %a4 = gpu.launch_func async [%j] @kernels::@combine blocks in (%c16, %c1, %c1)
        threads in (%c16, %c1, %c1) args(%x : memref<256xi32>, %y : memref<256xi32>)
    %a5 = gpu.memcpy async [%a4] %host, %x : memref<256xi32>, memref<256xi32>
    %a6 = gpu.dealloc async [%a5] %x : memref<256xi32>
    %a7 = gpu.dealloc async [%a6] %y : memref<256xi32>
    gpu.wait [%a7]
    scf.for %r = %c0 to %c256 step %c64 {
      %v = vector.load %host[%r] : memref<256xi32>, vector<64xi32>
      vector.print str "join from "
      %ri = arith.index_cast %r : index to i32
      vector.print %ri : i32 punctuation <comma>
      vector.print %v : vector<64xi32>
    }
    memref.dealloc %host : memref<256xi32>
    return
  }
}
