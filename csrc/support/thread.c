/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* thread.c - starting the library's own threads with the program's signals blocked (see
 * thread.h). No state, no lock. */
#include "support/thread.h"

#include <signal.h>

int mc_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int e = pthread_create(t, attr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return e;
}
