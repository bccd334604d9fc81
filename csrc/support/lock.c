/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* lock.c - mc_lock's contended paths (see lock.h): a short spin, then sleeping on the word. */
#include "support/lock.h"

#include <sched.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum { SPINS = 64 }; /* tries before sleeping: a holder of the chain lock between two launches
                        gives it back within a few hundred nanoseconds */

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void sleep_while_two(mc_lock *l) {
#if defined(__linux__)
  /* returns at once if the word is no longer 2 (given back meanwhile), on a wake, or on a
   * signal: the caller looks again in every case */
  syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
#else
  (void)l;
  sched_yield();
#endif
}

void mc_lock_take_slow(mc_lock *l) {
  for (int i = 0; i < SPINS; ++i) {
    relax();
    int free_word = 0;
    if (__atomic_load_n(&l->word, __ATOMIC_RELAXED) == 0 &&
        __atomic_compare_exchange_n(&l->word, &free_word, 1, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED))
      return;
  }
  /* Mark the lock slept on (2) as it is taken: whoever holds it then wakes a sleeper when giving
   * it back. Taken this way the word stays 2, so this holder's give wakes one more sleeper
   * perhaps needlessly (the price of not counting them). */
  while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0) sleep_while_two(l);
}

void mc_lock_wake(mc_lock *l) {
#if defined(__linux__)
  syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
  (void)l;
#endif
}
