// gpu.memset (f32 -> mgpuMemset32, i16 -> mgpuMemset16) and gpu.memcpy host->device,
// device->device and device->host, then a kernel that doubles a device buffer.
// Lines starting with "host " depend on copies and memsets only (no kernel): the CPU test checks
// them against the recording fake driver too.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @double(%buf: memref<16xf32>) kernel {
      %tx = gpu.thread_id x
      %v = memref.load %buf[%tx] : memref<16xf32>
      %d = arith.addf %v, %v : f32
      memref.store %d, %buf[%tx] : memref<16xf32>
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %fill = arith.constant 2.5 : f32
    %fill16 = arith.constant 7 : i16
    %step = arith.constant 1.5 : f32
    %a = memref.alloc () : memref<16xf32>
    %r = memref.alloc () : memref<16xf32>
    %r16 = memref.alloc () : memref<16xi16>
    scf.for %i = %c0 to %c16 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      %v = arith.mulf %f, %step : f32
      memref.store %v, %a[%i] : memref<16xf32>
    }
    %t0 = gpu.wait async
    %d1, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    %d2, %t2 = gpu.alloc async [%t1] () : memref<16xf32>
    %d3, %t3 = gpu.alloc async [%t2] () : memref<16xi16>
    %t4 = gpu.memset async [%t3] %d1, %fill : memref<16xf32>, f32
    %t5 = gpu.memcpy async [%t4] %r, %d1 : memref<16xf32>, memref<16xf32>
    gpu.wait [%t5]
    %v1 = vector.load %r[%c0] : memref<16xf32>, vector<16xf32>
    vector.print str "host memset32 "
    vector.print %v1 : vector<16xf32>
    %t6 = gpu.wait async
    %t7 = gpu.memset async [%t6] %d3, %fill16 : memref<16xi16>, i16
    %t8 = gpu.memcpy async [%t7] %r16, %d3 : memref<16xi16>, memref<16xi16>
    %t9 = gpu.memcpy async [%t8] %d2, %a : memref<16xf32>, memref<16xf32>
    %t10 = gpu.memcpy async [%t9] %d1, %d2 : memref<16xf32>, memref<16xf32>
    %t11 = gpu.memcpy async [%t10] %r, %d1 : memref<16xf32>, memref<16xf32>
    gpu.wait [%t11]
    %v2 = vector.load %r16[%c0] : memref<16xi16>, vector<16xi16>
    vector.print str "host memset16 "
    vector.print %v2 : vector<16xi16>
    %v3 = vector.load %r[%c0] : memref<16xf32>, vector<16xf32>
    vector.print str "host copied "
    vector.print %v3 : vector<16xf32>
    gpu.launch_func @kernels::@double blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%d1 : memref<16xf32>)
    %t12 = gpu.wait async
    %t13 = gpu.memcpy async [%t12] %r, %d1 : memref<16xf32>, memref<16xf32>
    %t14 = gpu.dealloc async [%t13] %d1 : memref<16xf32>
    %t15 = gpu.dealloc async [%t14] %d2 : memref<16xf32>
    %t16 = gpu.dealloc async [%t15] %d3 : memref<16xi16>
    gpu.wait [%t16]
    %v4 = vector.load %r[%c0] : memref<16xf32>, vector<16xf32>
    vector.print str "kernel doubled "
    vector.print %v4 : vector<16xf32>
    memref.dealloc %a : memref<16xf32>
    memref.dealloc %r : memref<16xf32>
    memref.dealloc %r16 : memref<16xi16>
    return
  }
}
