/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* lock.h - mc_lock, a mutual-exclusion lock for the library's hottest critical section (chain
 * replay's, chain.c: taken at every deferred launch, issue 21 item 2).
 *
 * Uncontended, taking it is one compare-and-swap and giving it back one exchange, both inline:
 * pthread_mutex_lock / pthread_mutex_unlock reach the same two atomic instructions through a call
 * into libc and its checks for the mutex kinds (about 100 instructions a pair, measured with
 * callgrind against the fake driver). Contended, a taker spins briefly, then sleeps in the kernel
 * (a private futex) until the holder gives the lock back, so the lock may be held across a driver
 * call as a mutex may. The word: 0 free, 1 taken, 2 taken and perhaps slept on (the holder's give
 * then wakes one sleeper).
 *
 * What it is not: recursive, robust, owner-checked or fair; a thread must not take it twice, and
 * every take is matched by a give in the same thread. Fork: a child re-initialises (MC_LOCK_INIT) a
 * lock its parent's prepare handler held. Linux (futex); elsewhere a contended taker yields and
 * tries again. No state beyond the word: nothing to destroy. */
#ifndef MGPU_CACHED_SUPPORT_LOCK_H
#define MGPU_CACHED_SUPPORT_LOCK_H

typedef struct mc_lock {
  int word; /* atomic: 0 free, 1 taken, 2 taken with sleepers perhaps */
} mc_lock;

#define MC_LOCK_INIT {0}

void mc_lock_take_slow(mc_lock *l);
void mc_lock_wake(mc_lock *l);

static inline void mc_lock_take(mc_lock *l) {
  int free_word = 0;
  if (__builtin_expect(__atomic_compare_exchange_n(&l->word, &free_word, 1, 0, __ATOMIC_ACQUIRE,
                                                   __ATOMIC_RELAXED),
                       1))
    return;
  mc_lock_take_slow(l);
}

static inline void mc_lock_give(mc_lock *l) {
  if (__builtin_expect(__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2, 0)) mc_lock_wake(l);
}

#endif
