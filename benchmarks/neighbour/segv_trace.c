/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* segv_trace.c - a preloaded SIGSEGV/SIGBUS handler that prints the faulting stack (debugging aid
 * for issue 19's G7 and reset-class crashes). It runs on an alternate signal stack, in every
 * thread (pthread_create is interposed to give each new thread one), so a stack overflow is
 * reported too: cc -shared -fPIC -o /tmp/segv.so segv_trace.c -ldl; LD_PRELOAD=/tmp/segv.so */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_installed; /* our handler is in place: refuse others */

static void on_segv(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  void *pc[64];
  char m[96];
  int n = backtrace(pc, 64);
  int len = 0;
  const char *h = sig == SIGSEGV ? "== SIGSEGV stack (addr 0x" : "== SIGBUS stack (addr 0x";
  while (h[len]) { m[len] = h[len]; len++; }
  uintptr_t a = (uintptr_t)si->si_addr;
  for (int s = 60; s >= 0; s -= 4) m[len++] = "0123456789abcdef"[(a >> s) & 15];
  m[len++] = ')'; m[len++] = ':'; m[len++] = '\n';
  write(2, m, (size_t)len);
  backtrace_symbols_fd(pc, n, 2);
  g_installed = 0;
  signal(sig, SIG_DFL);
  raise(sig);
}

static void alt_stack(void) {
  stack_t ss;
  ss.ss_size = 1 << 16;
  ss.ss_sp = malloc(ss.ss_size);
  ss.ss_flags = 0;
  if (ss.ss_sp) sigaltstack(&ss, NULL);
}

struct start { void *(*fn)(void *); void *arg; };

static void *trampoline(void *p) {
  struct start s = *(struct start *)p;
  free(p);
  alt_stack();
  return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
  static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  if (!real) real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
                        dlsym(RTLD_NEXT, "pthread_create");
  struct start *s = malloc(sizeof *s);
  if (!s) return real(t, a, fn, arg);
  s->fn = fn;
  s->arg = arg;
  return real(t, a, trampoline, s);
}

/* Others (the CUDA driver) may install their own SIGSEGV/SIGBUS handler later and end in the
 * default action: such a change is refused and reported once. */
int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  static int (*real)(int, const struct sigaction *, struct sigaction *);
  if (!real) real = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
  if (g_installed && act && (sig == SIGSEGV || sig == SIGBUS)) {
    static const char m[] = "== segv_trace: a SIGSEGV/SIGBUS handler change was refused\n";
    write(2, m, sizeof m - 1);
    return old ? real(sig, NULL, old) : 0;
  }
  return real(sig, act, old);
}

__attribute__((constructor)) static void install(void) {
  void *pc[1];
  backtrace(pc, 1); /* load libgcc's unwinder now, not inside the handler */
  alt_stack();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  g_installed = 1;
}
