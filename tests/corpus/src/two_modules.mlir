// Two gpu.modules (two fatbins, two mgpuModuleLoad), the second with two kernels; launches
// alternate between them three times: x = (x * 3 + i) from module @b after a fill from module @a.
module attributes {gpu.container_module} {
  gpu.module @a {
    gpu.func @fill(%buf: memref<64xi32>, %base: i32) kernel {
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %v = arith.addi %ti, %base : i32
      memref.store %v, %buf[%t] : memref<64xi32>
      gpu.return
    }
  }
  gpu.module @b {
    gpu.func @triple(%buf: memref<64xi32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %buf[%t] : memref<64xi32>
      %c3 = arith.constant 3 : i32
      %w = arith.muli %v, %c3 : i32
      memref.store %w, %buf[%t] : memref<64xi32>
      gpu.return
    }
    gpu.func @add(%buf: memref<64xi32>, %k: i32) kernel {
      %t = gpu.thread_id x
      %v = memref.load %buf[%t] : memref<64xi32>
      %w = arith.addi %v, %k : i32
      memref.store %w, %buf[%t] : memref<64xi32>
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c64 = arith.constant 64 : index
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<64xi32>
    gpu.wait [%t1]
    %host = memref.alloc () : memref<64xi32>
    scf.for %it = %c0 to %c3 step %c1 {
      %iti = arith.index_cast %it : index to i32
      %c1000 = arith.constant 1000 : i32
      %base = arith.muli %iti, %c1000 : i32
      gpu.launch_func @a::@fill blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%dev : memref<64xi32>, %base : i32)
      gpu.launch_func @b::@triple blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%dev : memref<64xi32>)
      gpu.launch_func @b::@add blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%dev : memref<64xi32>, %iti : i32)
      %t2 = gpu.wait async
      %t3 = gpu.memcpy async [%t2] %host, %dev : memref<64xi32>, memref<64xi32>
      gpu.wait [%t3]
      %v = vector.load %host[%c0] : memref<64xi32>, vector<64xi32>
      vector.print str "two_modules round "
      vector.print %iti : i32 punctuation <comma>
      vector.print %v : vector<64xi32>
    }
    %t4 = gpu.wait async
    %t5 = gpu.dealloc async [%t4] %dev : memref<64xi32>
    gpu.wait [%t5]
    memref.dealloc %host : memref<64xi32>
    return
  }
}
