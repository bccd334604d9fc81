/* segv_trace.c - a preloaded SIGSEGV handler that prints the faulting stack (debugging aid for
 * the review's G7 crash): cc -shared -fPIC -o /tmp/segv.so segv_trace.c; LD_PRELOAD=/tmp/segv.so */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig) {
  void *pc[64];
  int n = backtrace(pc, 64);
  static const char m[] = "== SIGSEGV stack:\n";
  write(2, m, sizeof m - 1);
  backtrace_symbols_fd(pc, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) { signal(SIGSEGV, on_segv); }
