// gpu.shuffle xor / down / up / idx across one warp (32 lanes, width 32), value = lane * 10 + 1.
// A lane whose source is out of range (valid = false) stores -1 instead of the value returned.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @shuffles(%out: memref<4x32xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %tx = gpu.thread_id x
      %lane = arith.index_cast %tx : index to i32
      %ten = arith.constant 10 : i32
      %one = arith.constant 1 : i32
      %three = arith.constant 3 : i32
      %five = arith.constant 5 : i32
      %w = arith.constant 32 : i32
      %neg = arith.constant -1 : i32
      %m = arith.muli %lane, %ten : i32
      %v = arith.addi %m, %one : i32
      %x, %xv = gpu.shuffle xor %v, %five, %w : i32
      %d, %dv = gpu.shuffle down %v, %three, %w : i32
      %u, %uv = gpu.shuffle up %v, %one, %w : i32
      %src = arith.subi %w, %one : i32
      %src2 = arith.subi %src, %lane : i32
      %i, %iv = gpu.shuffle idx %v, %src2, %w : i32
      %x2 = arith.select %xv, %x, %neg : i32
      %d2 = arith.select %dv, %d, %neg : i32
      %u2 = arith.select %uv, %u, %neg : i32
      %i2 = arith.select %iv, %i, %neg : i32
      memref.store %x2, %out[%c0, %tx] : memref<4x32xi32>
      memref.store %d2, %out[%c1, %tx] : memref<4x32xi32>
      memref.store %u2, %out[%c2, %tx] : memref<4x32xi32>
      memref.store %i2, %out[%c3, %tx] : memref<4x32xi32>
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c32 = arith.constant 32 : index
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<4x32xi32>
    gpu.wait [%t1]
    gpu.launch_func @kernels::@shuffles blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%dev : memref<4x32xi32>)
    %host = memref.alloc () : memref<4x32xi32>
    %t2 = gpu.wait async
    %t3 = gpu.memcpy async [%t2] %host, %dev : memref<4x32xi32>, memref<4x32xi32>
    %t4 = gpu.dealloc async [%t3] %dev : memref<4x32xi32>
    gpu.wait [%t4]
    %x = vector.load %host[%c0, %c0] : memref<4x32xi32>, vector<32xi32>
    %d = vector.load %host[%c1, %c0] : memref<4x32xi32>, vector<32xi32>
    %u = vector.load %host[%c2, %c0] : memref<4x32xi32>, vector<32xi32>
    %i = vector.load %host[%c3, %c0] : memref<4x32xi32>, vector<32xi32>
    vector.print str "shuffle xor 5 "
    vector.print %x : vector<32xi32>
    vector.print str "shuffle down 3 "
    vector.print %d : vector<32xi32>
    vector.print str "shuffle up 1 "
    vector.print %u : vector<32xi32>
    vector.print str "shuffle idx 31-lane "
    vector.print %i : vector<32xi32>
    memref.dealloc %host : memref<4x32xi32>
    return
  }
}
