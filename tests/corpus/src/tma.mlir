// chip: sm_90a
// TMA: a tiled tensor map of a 64x32 f32 device buffer (nvgpu.tma.create.descriptor ->
// mgpuTensorMapEncodeTiledMemref), box 16x16; one thread loads the tile at (16, 16) into shared
// memory with cp.async.bulk.tensor (nvgpu.tma.async.load) completing on an mbarrier, the block
// waits on the barrier and copies the tile out. global[r][c] = r * 100 + c, so the tile holds
// rows 16..31, columns 16..31 (a descriptor with swapped dimensions or strides reads others).
module attributes {gpu.container_module} {
  memref.global "private" @tile : memref<16x16xf32, 3> = uninitialized {alignment = 128 : i64}
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %c1024 = arith.constant 1024 : index
    %h = memref.alloc () : memref<64x32xf32>
    %ho = memref.alloc () : memref<16x16xf32>
    scf.for %r = %c0 to %c64 step %c1 {
      scf.for %c = %c0 to %c32 step %c1 {
        %ri = arith.index_cast %r : index to i32
        %ci = arith.index_cast %c : index to i32
        %k100 = arith.constant 100 : i32
        %rk = arith.muli %ri, %k100 : i32
        %v = arith.addi %rk, %ci : i32
        %f = arith.sitofp %v : i32 to f32
        memref.store %f, %h[%r, %c] : memref<64x32xf32>
      }
    }
    %t0 = gpu.wait async
    %g, %t1 = gpu.alloc async [%t0] () : memref<64x32xf32>
    %o, %t2 = gpu.alloc async [%t1] () : memref<16x16xf32>
    %t3 = gpu.memcpy async [%t2] %g, %h : memref<64x32xf32>, memref<64x32xf32>
    gpu.wait [%t3]
    %gu = memref.cast %g : memref<64x32xf32> to memref<*xf32>
    %desc = nvgpu.tma.create.descriptor %gu box[%c16, %c16] : memref<*xf32>
        -> !nvgpu.tensormap.descriptor<tensor = memref<16x16xf32, 3>, swizzle = none,
                                       l2promo = none, oob = zero, interleave = none>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %sh = memref.get_global @tile : memref<16x16xf32, 3>
      %bar = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
      %is0 = arith.cmpi eq, %tx, %c0 : index
      scf.if %is0 {
        nvgpu.mbarrier.init %bar[%c0], %c1 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
      }
      gpu.barrier
      scf.if %is0 {
        nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %c1024 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
        nvgpu.tma.async.load %desc[%c16, %c16], %bar[%c0] to %sh
            : !nvgpu.tensormap.descriptor<tensor = memref<16x16xf32, 3>, swizzle = none,
                                          l2promo = none, oob = zero, interleave = none>,
              !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
            -> memref<16x16xf32, 3>
      }
      %phase = arith.constant false
      %ticks = arith.constant 10000000 : index
      nvgpu.mbarrier.try_wait.parity %bar[%c0], %phase, %ticks : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
      %r = arith.divui %tx, %c16 : index
      %c = arith.remui %tx, %c16 : index
      %v = memref.load %sh[%r, %c] : memref<16x16xf32, 3>
      memref.store %v, %o[%r, %c] : memref<16x16xf32>
      gpu.terminator
    }
    %t4 = gpu.wait async
    %t5 = gpu.memcpy async [%t4] %ho, %o : memref<16x16xf32>, memref<16x16xf32>
    %t6 = gpu.dealloc async [%t5] %g : memref<64x32xf32>
    %t7 = gpu.dealloc async [%t6] %o : memref<16x16xf32>
    gpu.wait [%t7]
    scf.for %r = %c0 to %c16 step %c1 {
      %row = vector.load %ho[%r, %c0] : memref<16x16xf32>, vector<16xf32>
      vector.print str "tma tile row "
      %ri = arith.index_cast %r : index to i32
      vector.print %ri : i32 punctuation <comma>
      vector.print %row : vector<16xf32>
    }
    memref.dealloc %h : memref<64x32xf32>
    memref.dealloc %ho : memref<16x16xf32>
    return
  }
}
