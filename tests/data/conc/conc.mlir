// Concurrency test programs (issue 4), compiled by tests/data/conc/compile.sh with LLVM 19 and 22.
// Every function takes device buffers as memrefs (C interface: _mlir_ciface_<name>).
//
//   spin_pair(flags, out, limit)  two kernels on two `gpu.wait async` chains; each sets its own flag
//                                 and spins (bounded by `limit` polls) until it sees the other's:
//                                 out[i] = polls kernel i needed (== limit: it timed out, no overlap)
//   long_pair(out, n)             two busy kernels (n dependent steps each) on two chains
//   long_one(out, n)              one busy kernel (n steps): the reference for long_pair
//   token_loop(acc, n)            a token carried through an scf.for (n async increments of acc[0]),
//                                 then a blocking gpu.wait on it: the lowering hands the *stream* to
//                                 mgpuEventSynchronize/mgpuEventDestroy
//   join_loop(acc, n)             n iterations of: two new chains incrementing acc[0] and acc[1],
//                                 joined (`gpu.wait async [%a, %b]`: two events) into a third chain
//                                 that adds acc[0]+acc[1] to acc[2], blocking wait on the third. The
//                                 two first chains' streams are never destroyed by the generated code.
//                                 After n iterations acc = {n, n, n(n+1)} (mod 2^32)
//   fill(out, v)                  out[0] = v (one thread), synchronously
module attributes {gpu.container_module} {
  gpu.module @conc_kernels {
    gpu.func @spin(%me: index, %other: index, %flags: memref<2xi32>, %out: memref<2xi32>,
                   %limit: i32) kernel {
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %old = memref.atomic_rmw addi %one, %flags[%me] : (i32, memref<2xi32>) -> i32
      %r:2 = scf.while (%i = %zero) : (i32) -> (i32, i32) {
        %v = memref.atomic_rmw addi %zero, %flags[%other] : (i32, memref<2xi32>) -> i32
        %unseen = arith.cmpi eq, %v, %zero : i32
        %under = arith.cmpi slt, %i, %limit : i32
        %go = arith.andi %unseen, %under : i1
        scf.condition(%go) %i, %v : i32, i32
      } do {
      ^bb0(%i: i32, %v: i32):
        %n = arith.addi %i, %one : i32
        scf.yield %n : i32
      }
      memref.store %r#0, %out[%me] : memref<2xi32>
      gpu.return
    }
    gpu.func @busy(%me: index, %out: memref<2xi32>, %n: i32) kernel {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %a = arith.constant 1664525 : i32
      %b = arith.constant 1013904223 : i32
      %x = scf.for %i = %c0 to %n step %c1 iter_args(%s = %c1) -> (i32) : i32 {
        %m = arith.muli %s, %a : i32
        %t = arith.addi %m, %b : i32
        scf.yield %t : i32
      }
      memref.store %x, %out[%me] : memref<2xi32>
      gpu.return
    }
    gpu.func @inc(%acc: memref<3xi32>, %i: index) kernel {
      %one = arith.constant 1 : i32
      %v = memref.load %acc[%i] : memref<3xi32>
      %w = arith.addi %v, %one : i32
      memref.store %w, %acc[%i] : memref<3xi32>
      gpu.return
    }
    gpu.func @sum(%acc: memref<3xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %x = memref.load %acc[%c0] : memref<3xi32>
      %y = memref.load %acc[%c1] : memref<3xi32>
      %z = memref.load %acc[%c2] : memref<3xi32>
      %xy = arith.addi %x, %y : i32
      %r = arith.addi %z, %xy : i32
      memref.store %r, %acc[%c2] : memref<3xi32>
      gpu.return
    }
    gpu.func @fill(%out: memref<1xi32>, %v: i32) kernel {
      %c0 = arith.constant 0 : index
      memref.store %v, %out[%c0] : memref<1xi32>
      gpu.return
    }
  }

  func.func @spin_pair(%flags: memref<2xi32>, %out: memref<2xi32>, %limit: i32)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %t1 = gpu.wait async
    %a = gpu.launch_func async [%t0] @conc_kernels::@spin blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1)
        args(%c0 : index, %c1 : index, %flags : memref<2xi32>, %out : memref<2xi32>, %limit : i32)
    %b = gpu.launch_func async [%t1] @conc_kernels::@spin blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1)
        args(%c1 : index, %c0 : index, %flags : memref<2xi32>, %out : memref<2xi32>, %limit : i32)
    gpu.wait [%a, %b]
    return
  }

  func.func @long_pair(%out: memref<2xi32>, %n: i32) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %t1 = gpu.wait async
    %a = gpu.launch_func async [%t0] @conc_kernels::@busy blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%c0 : index, %out : memref<2xi32>, %n : i32)
    %b = gpu.launch_func async [%t1] @conc_kernels::@busy blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%c1 : index, %out : memref<2xi32>, %n : i32)
    gpu.wait [%a, %b]
    return
  }

  func.func @long_one(%out: memref<2xi32>, %n: i32) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %a = gpu.launch_func async [%t0] @conc_kernels::@busy blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%c0 : index, %out : memref<2xi32>, %n : i32)
    gpu.wait [%a]
    return
  }

  func.func @token_loop(%acc: memref<3xi32>, %n: index) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %t = scf.for %i = %c0 to %n step %c1 iter_args(%tok = %t0) -> (!gpu.async.token) {
      %k = gpu.launch_func async [%tok] @conc_kernels::@inc blocks in (%c1, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%acc : memref<3xi32>, %c0 : index)
      scf.yield %k : !gpu.async.token
    }
    gpu.wait [%t]
    return
  }

  func.func @join_loop(%acc: memref<3xi32>, %n: index) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %i = %c0 to %n step %c1 {
      %a = gpu.wait async
      %b = gpu.wait async
      %ka = gpu.launch_func async [%a] @conc_kernels::@inc blocks in (%c1, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%acc : memref<3xi32>, %c0 : index)
      %kb = gpu.launch_func async [%b] @conc_kernels::@inc blocks in (%c1, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%acc : memref<3xi32>, %c1 : index)
      %j = gpu.wait async [%ka, %kb]
      %ks = gpu.launch_func async [%j] @conc_kernels::@sum blocks in (%c1, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%acc : memref<3xi32>)
      gpu.wait [%ks]
    }
    return
  }

  func.func @fill(%out: memref<1xi32>, %v: i32) attributes {llvm.emit_c_interface} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @conc_kernels::@fill blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%out : memref<1xi32>, %v : i32)
    return
  }
}
