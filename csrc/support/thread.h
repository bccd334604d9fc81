/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* thread.h - starting the library's own threads (the allocator's reclaimers, the module-state
 * scan beside a driver load) with every asynchronous signal blocked, so the program's signals are
 * never delivered to them, and the synchronous faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL) left
 * unblocked: a crash in such a thread reaches the program's handlers (blocked, the kernel kills
 * the process without running them). The caller's own mask is restored before returning. */
#ifndef MGPU_CACHED_SUPPORT_THREAD_H
#define MGPU_CACHED_SUPPORT_THREAD_H

#include <pthread.h>

/* pthread_create with that mask; returns its result. */
int mc_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
