// Device asserts: cf.assert in a kernel (lowered to a call of __assertfail by LLVM 22; LLVM 19
// cannot lower cf.assert in device code, see README.md, so its `//@19` lines make the same call
// with LLVM dialect ops). Each thread asserts that its value (block * 32 + thread) is not the bad
// value passed by the host; here no thread fails (the bad value is 1000): the program runs to the end.
// The host prints a line before the launch and the first values after it; a fired assert must be
// reported the same way with the cached library as with the stock one (the GPU test compares).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    //@19 llvm.mlir.global internal constant @msg("value is not the bad one\00") {addr_space = 0 : i32}
    //@19 llvm.mlir.global internal constant @file("assert.mlir\00") {addr_space = 0 : i32}
    //@19 llvm.mlir.global internal constant @func("check\00") {addr_space = 0 : i32}
    //@19 llvm.func @__assertfail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) attributes {passthrough = ["noreturn"]}
    gpu.func @check(%buf: memref<64xi32>, %bad: i32) kernel {
      %b = gpu.block_id x
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %b32 = arith.muli %b, %c32 : index
      %i = arith.addi %b32, %t : index
      %v = arith.index_cast %i : index to i32
      %ok = arith.cmpi ne, %v, %bad : i32
      //@22 cf.assert %ok, "value is not the bad one"
      //@19 %true = arith.constant true
      //@19 %failed = arith.xori %ok, %true : i1
      //@19 scf.if %failed {
      //@19   %m = llvm.mlir.addressof @msg : !llvm.ptr
      //@19   %fl = llvm.mlir.addressof @file : !llvm.ptr
      //@19   %fn = llvm.mlir.addressof @func : !llvm.ptr
      //@19   %line = llvm.mlir.constant(15 : i32) : i32
      //@19   %one = llvm.mlir.constant(1 : i64) : i64
      //@19   llvm.call @__assertfail(%m, %fl, %line, %fn, %one) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()
      //@19 }
      memref.store %v, %buf[%i] : memref<64xi32>
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %bad = arith.constant 1000 : i32
    %minus = arith.constant -1 : i32
    %host = memref.alloc () : memref<64xi32>
    %c64 = arith.constant 64 : index
    %minus2 = arith.constant -2 : i32
    scf.for %i = %c0 to %c64 step %c1 {
      memref.store %minus2, %host[%i] : memref<64xi32>
    }
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<64xi32>
    %t2 = gpu.memset async [%t1] %dev, %minus : memref<64xi32>, i32
    gpu.wait [%t2]
    vector.print str "assert launching\n"
    gpu.launch_func @kernels::@check blocks in (%c2, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%dev : memref<64xi32>, %bad : i32)
    %t3 = gpu.wait async
    %t4 = gpu.memcpy async [%t3] %host, %dev : memref<64xi32>, memref<64xi32>
    %t5 = gpu.dealloc async [%t4] %dev : memref<64xi32>
    gpu.wait [%t5]
    %v = vector.load %host[%c0] : memref<64xi32>, vector<8xi32>
    vector.print str "assert values "
    vector.print %v : vector<8xi32>
    memref.dealloc %host : memref<64xi32>
    return
  }
}
