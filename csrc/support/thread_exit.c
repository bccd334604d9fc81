/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* thread_exit.c - the library's one thread-exit key (see thread_exit.h). State: the key (made
 * once, deleted when the library is unloaded) and each thread's own table of hand-backs (thread-
 * local: no lock). */
#include "support/thread_exit.h"

#include <pthread.h>
#include <stddef.h>

typedef struct exits {
  void (*fn[MC_EXIT_COUNT])(void *); /* this thread's hand-backs; thread-local */
  void *p[MC_EXIT_COUNT];            /* their records; NULL: none */
} exits;

static pthread_once_t g_thread_exit_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key; /* its value: this thread's tl_exits, while any record is registered */
static int g_key_ok;        /* atomic: the key exists */
static _Thread_local exits tl_exits;

/* The key's destructor, run by the exiting thread: every registered hand-back, in slot order. */
static void run_exits(void *unused) {
  (void)unused;
  for (int i = 0; i < MC_EXIT_COUNT; ++i) {
    void *p = tl_exits.p[i];
    void (*fn)(void *) = tl_exits.fn[i];
    tl_exits.p[i] = NULL;
    if (p && fn) fn(p);
  }
}

static void make_key(void) {
  __atomic_store_n(&g_key_ok, pthread_key_create(&g_key, run_exits) == 0, __ATOMIC_RELEASE);
}

/* At dlclose (and exit): no thread exit may run a hand-back of an unloaded library. */
__attribute__((destructor)) static void drop_key(void) {
  if (__atomic_exchange_n(&g_key_ok, 0, __ATOMIC_ACQ_REL)) pthread_key_delete(g_key);
}

int mc_thread_exit_set(mc_exit_slot slot, void (*fn)(void *), void *p) {
  if ((unsigned)slot >= MC_EXIT_COUNT || !p) return -1;
  pthread_once(&g_thread_exit_once, make_key);
  if (!__atomic_load_n(&g_key_ok, __ATOMIC_ACQUIRE)) return -1;
  tl_exits.fn[slot] = fn;
  tl_exits.p[slot] = p;
  if (pthread_setspecific(g_key, &tl_exits) == 0) return 0;
  tl_exits.p[slot] = NULL; /* not in place: the caller keeps (or frees) its record */
  return -1;
}
