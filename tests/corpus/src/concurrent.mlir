// Two kernels that wait on each other: launched on two streams with no dependency between them,
// each sets its own flag and spins (bounded: 2^22 polls) until it sees the other's flag. Run
// concurrently, both see the other's flag; run one after the other (as LLVM 19 code may make the
// stock library do: it unloads the module right after each launch), only the second one does, and
// nothing hangs. Whichever happens, both flags are set and at least one kernel saw the other's:
// those lines are compared; the `info` line says which happened and is only logged. A third
// kernel runs after a join of both tokens (gpu.wait async [a, b]) and computes
// flag a + flag b + (seen by a | seen by b): 3 if it ran after both.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @handshake(%flags: memref<4xi32>, %mine: index, %theirs: index, %seen: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %limit = arith.constant 4194304 : index
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %t = gpu.thread_id x
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %old = memref.atomic_rmw assign %one, %flags[%mine] : (i32, memref<4xi32>) -> i32
        %r:2 = scf.while (%i = %c0, %got = %zero) : (index, i32) -> (index, i32) {
          %more = arith.cmpi ult, %i, %limit : index
          %no = arith.cmpi eq, %got, %zero : i32
          %go = arith.andi %more, %no : i1
          scf.condition(%go) %i, %got : index, i32
        } do {
        ^bb0(%i: index, %got: i32):
          %v = memref.atomic_rmw addi %zero, %flags[%theirs] : (i32, memref<4xi32>) -> i32
          %n = arith.addi %i, %c1 : index
          scf.yield %n, %v : index, i32
        }
        memref.store %r#1, %flags[%seen] : memref<4xi32>
      }
      gpu.return
    }
    gpu.func @sum(%flags: memref<4xi32>, %out: memref<1xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %a = memref.load %flags[%c0] : memref<4xi32>
      %b = memref.load %flags[%c1] : memref<4xi32>
      %c = memref.load %flags[%c2] : memref<4xi32>
      %d = memref.load %flags[%c3] : memref<4xi32>
      %ab = arith.addi %a, %b : i32
      %cd = arith.ori %c, %d : i32
      %s = arith.addi %ab, %cd : i32
      memref.store %s, %out[%c0] : memref<1xi32>
      gpu.return
    }
  }
  func.func @entry() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0 : i32
    %hf = memref.alloc () : memref<4xi32>
    %hs = memref.alloc () : memref<1xi32>
    %s0 = gpu.wait async
    %flags, %s1 = gpu.alloc async [%s0] () : memref<4xi32>
    %out, %s2 = gpu.alloc async [%s1] () : memref<1xi32>
    %s3 = gpu.memset async [%s2] %flags, %zero : memref<4xi32>, i32
    gpu.wait [%s3]
    %a0 = gpu.wait async
    %b0 = gpu.wait async
    %a1 = gpu.launch_func async [%a0] @kernels::@handshake blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%flags : memref<4xi32>, %c0 : index, %c1 : index, %c2 : index)
    %b1 = gpu.launch_func async [%b0] @kernels::@handshake blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%flags : memref<4xi32>, %c1 : index, %c0 : index, %c3 : index)
    %j = gpu.wait async [%a1, %b1]
    %a2 = gpu.launch_func async [%j] @kernels::@sum blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%flags : memref<4xi32>, %out : memref<1xi32>)
    %a3 = gpu.memcpy async [%a2] %hf, %flags : memref<4xi32>, memref<4xi32>
    %a4 = gpu.memcpy async [%a3] %hs, %out : memref<1xi32>, memref<1xi32>
    %a5 = gpu.dealloc async [%a4] %flags : memref<4xi32>
    %a6 = gpu.dealloc async [%a5] %out : memref<1xi32>
    gpu.wait [%a6]
    %fv = vector.load %hf[%c0] : memref<4xi32>, vector<2xi32>
    vector.print str "concurrent flags set "
    vector.print %fv : vector<2xi32>
    %sa = memref.load %hf[%c2] : memref<4xi32>
    %sb = memref.load %hf[%c3] : memref<4xi32>
    %any = arith.ori %sa, %sb : i32
    vector.print str "concurrent one saw the other "
    vector.print %any : i32
    %all = vector.load %hf[%c0] : memref<4xi32>, vector<4xi32>
    vector.print str "info concurrent (flag a, flag b, seen by a, seen by b) "
    vector.print %all : vector<4xi32>
    %s = memref.load %hs[%c0] : memref<1xi32>
    vector.print str "concurrent sum after join "
    vector.print %s : i32
    memref.dealloc %hf : memref<4xi32>
    memref.dealloc %hs : memref<1xi32>
    return
  }
}
