/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* thread.h - per-thread and once-only helpers of the hot paths, and starting the library's own
 * threads.
 *
 * Thread-local variables: the library's are reached with the local-dynamic model (MC_TLS_LOCAL on
 * an extern declaration; static ones get it anyway), and a function that uses one more than once
 * takes its address once (MC_TLS_ADDR): GCC's code for a shared library otherwise calls
 * __tls_get_addr at every use, even for the same variable in the same function (it
 * rematerialises the address rather than keep it in a register); that was 15-25 calls per
 * synchronous launch (benchmarks/fake_instructions.py).
 *
 * Once-only set-up read on every call: mc_once, a pthread_once behind a flag, so the calls after
 * the first make one acquire load and no library call.
 *
 * The library's own threads (the allocator's reclaimers, the module-state
 * scan beside a driver load) with every asynchronous signal blocked, so the program's signals are
 * never delivered to them, and the synchronous faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL) left
 * unblocked: a crash in such a thread reaches the program's handlers (blocked, the kernel kills
 * the process without running them). The caller's own mask is restored before returning. */
#ifndef MGPU_CACHED_SUPPORT_THREAD_H
#define MGPU_CACHED_SUPPORT_THREAD_H

#include <pthread.h>

#define MC_TLS_LOCAL __attribute__((tls_model("local-dynamic")))

/* The address of the thread-local variable `var`, looked up once (see above). */
#define MC_TLS_ADDR(var)                                                                        \
  ({                                                                                            \
    __typeof__(&(var)) mc_tls_p_ = &(var);                                                      \
    __asm__("" : "+r"(mc_tls_p_));                                                              \
    mc_tls_p_;                                                                                  \
  })

/* pthread_once(once, fn), with *done (zero-initialised, atomic) set once fn has run. */
static inline void mc_once(pthread_once_t *once, int *done, void (*fn)(void)) {
  if (__builtin_expect(__atomic_load_n(done, __ATOMIC_ACQUIRE), 1)) return;
  pthread_once(once, fn);
  __atomic_store_n(done, 1, __ATOMIC_RELEASE);
}

/* pthread_create with that mask; returns its result. */
int mc_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
