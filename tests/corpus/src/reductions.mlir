// gpu.all_reduce (add, maxsi, a custom region, f32 add) over a block of 100 threads (four warps,
// the last one partial). Thread 0 writes the results; the host prints them.
module attributes {gpu.container_module} {
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c100 = arith.constant 100 : index
    %c128 = arith.constant 128 : index
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<3xi32>
    %devf, %t2 = gpu.alloc async [%t1] () : memref<1xf32>
    gpu.wait [%t2]
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c100, %sy = %c1, %sz = %c1) {
      %t = arith.index_cast %tx : index to i32
      %sum = gpu.all_reduce add %t uniform {} : (i32) -> (i32)
      %max = gpu.all_reduce maxsi %t uniform {} : (i32) -> (i32)
      %or = gpu.all_reduce %t {
      ^bb0(%a: i32, %b: i32):
        %r = arith.ori %a, %b : i32
        gpu.yield %r : i32
      } : (i32) -> (i32)
      %f = arith.sitofp %t : i32 to f32
      %half = arith.constant 0.5 : f32
      %fh = arith.mulf %f, %half : f32
      %fsum = gpu.all_reduce add %fh uniform {} : (f32) -> (f32)
      %is0 = arith.cmpi eq, %tx, %c0 : index
      scf.if %is0 {
        memref.store %sum, %dev[%c0] : memref<3xi32>
        memref.store %max, %dev[%c1] : memref<3xi32>
        memref.store %or, %dev[%c2] : memref<3xi32>
        memref.store %fsum, %devf[%c0] : memref<1xf32>
      }
      gpu.terminator
    }
    %host = memref.alloc () : memref<3xi32>
    %hostf = memref.alloc () : memref<1xf32>
    %t3 = gpu.wait async
    %t4 = gpu.memcpy async [%t3] %host, %dev : memref<3xi32>, memref<3xi32>
    %t5 = gpu.memcpy async [%t4] %hostf, %devf : memref<1xf32>, memref<1xf32>
    %t6 = gpu.dealloc async [%t5] %dev : memref<3xi32>
    %t7 = gpu.dealloc async [%t6] %devf : memref<1xf32>
    gpu.wait [%t7]
    %sum = memref.load %host[%c0] : memref<3xi32>
    %max = memref.load %host[%c1] : memref<3xi32>
    %or = memref.load %host[%c2] : memref<3xi32>
    %fsum = memref.load %hostf[%c0] : memref<1xf32>
    vector.print str "all_reduce add "
    vector.print %sum : i32
    vector.print str "all_reduce maxsi "
    vector.print %max : i32
    vector.print str "all_reduce or "
    vector.print %or : i32
    vector.print str "all_reduce addf "
    vector.print %fsum : f32
    memref.dealloc %host : memref<3xi32>
    memref.dealloc %hostf : memref<1xf32>
    return
  }
}
