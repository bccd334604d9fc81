/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fake_recording.h - what the fake drivers (fakecuda.c, fakehip.c) share: one mutex over all
 * state, a count and a log of calls by entry-point name, injected failures, the registry of
 * handles the fake made (so a bogus pointer is rejected without being dereferenced), and the test
 * control interface fake_count / fake_reset / fake_log / fake_fail.
 *
 * The including file defines, before including it: NSYM and k_fields[] (its symbol table's
 * entry-point names, indexed IDX_<name>), and after it a function
 *   static int fake_before_call(void);   (lock held; a nonzero result is returned by the call)
 * Entry points start with BEGIN(name) and leave through RETURN(v).
 */
#ifndef MGPU_CACHED_TEST_FAKE_RECORDING_H
#define MGPU_CACHED_TEST_FAKE_RECORDING_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* guards everything below */
static long g_counts[NSYM];
static char g_log[1 << 16];
static size_t g_loglen;
static int g_fail_field = -1, g_fail_result, g_fail_after;

static void *g_objs[1 << 14];
static int g_nobjs;
static int known(const void *p) {
  for (int i = 0; i < g_nobjs; ++i)
    if (g_objs[i] == p) return 1;
  return 0;
}
static void remember(void *p) {
  if (g_nobjs < (int)(sizeof g_objs / sizeof *g_objs)) g_objs[g_nobjs++] = p;
}

static int fake_before_call(void);
#ifdef FAKE_CALL_HOOK
static int FAKE_CALL_HOOK(int idx); /* lock held; a nonzero result fails the call (after counting) */
#endif

/* Count and log a call; returns an injected failure result or 0. Lock held. */
static int enter_call(int idx) {
  int early = fake_before_call();
  if (early) return early;
  g_counts[idx]++;
  size_t n = strlen(k_fields[idx]);
  if (g_loglen + n + 2 < sizeof g_log) {
    memcpy(g_log + g_loglen, k_fields[idx], n);
    g_loglen += n;
    g_log[g_loglen++] = ',';
    g_log[g_loglen] = 0;
  }
#ifdef FAKE_CALL_HOOK /* fakecuda.c: fake_capture.h refuses unsafe calls during a capture */
  int hooked = FAKE_CALL_HOOK(idx);
  if (hooked) return hooked;
#endif
  if (g_fail_field == idx) {
    if (g_fail_after > 0) {
      g_fail_after--;
      return 0;
    }
    g_fail_field = -1;
    return g_fail_result;
  }
  return 0;
}

/* Scheduling jitter (tests of interleavings with the library's own threads): with
 * FAKECUDA_JITTER_US=N every call made on a thread other than the process's main thread first
 * sleeps a random 0..N-1 microseconds, as a preemption of that thread legally could (with
 * FAKECUDA_JITTER_ALL=1 the main thread's calls too). Read once; off by default. */
static void fake_jitter(void) {
  static int us = -1, all = -1; /* benign race: every thread computes the same values */
  if (us < 0) {
    const char *v = getenv("FAKECUDA_JITTER_US"), *a = getenv("FAKECUDA_JITTER_ALL");
    all = a && *a == '1';
    us = v ? atoi(v) : 0;
  }
  if (us <= 0 || (!all && syscall(SYS_gettid) == getpid())) return;
  static __thread unsigned seed;
  if (!seed) seed = (unsigned)syscall(SYS_gettid) * 2654435761u ^ (unsigned)time(NULL);
  struct timespec t = {0, (long)(rand_r(&seed) % (unsigned)us) * 1000L};
  nanosleep(&t, NULL);
}

#define BEGIN(name)                                                                               \
  fake_jitter();                                                                                  \
  pthread_mutex_lock(&g_lock);                                                                    \
  int injected_ = enter_call(IDX_##name);                                                         \
  if (injected_) {                                                                                \
    pthread_mutex_unlock(&g_lock);                                                                \
    return injected_;                                                                             \
  }
#define RETURN(v)                                                                                 \
  do {                                                                                            \
    int rv_ = (v);                                                                                \
    pthread_mutex_unlock(&g_lock);                                                                \
    return rv_;                                                                                   \
  } while (0)

/* ---- test control interface ---- */
EXPORT long fake_count(const char *field) {
  pthread_mutex_lock(&g_lock);
  long v = -1;
  for (int i = 0; i < NSYM; ++i)
    if (strcmp(k_fields[i], field) == 0) v = g_counts[i];
  pthread_mutex_unlock(&g_lock);
  return v;
}
EXPORT void fake_reset(void) {
  pthread_mutex_lock(&g_lock);
  memset(g_counts, 0, sizeof g_counts);
  g_loglen = 0;
  g_log[0] = 0;
  g_fail_field = -1;
  pthread_mutex_unlock(&g_lock);
}
EXPORT size_t fake_log(char *buf, size_t size) {
  pthread_mutex_lock(&g_lock);
  size_t n = g_loglen < size - 1 ? g_loglen : size - 1;
  memcpy(buf, g_log, n);
  buf[n] = 0;
  pthread_mutex_unlock(&g_lock);
  return n;
}
/* Make the call `field` fail with `result` after `after` successful calls. */
EXPORT int fake_fail(const char *field, int result, int after) {
  pthread_mutex_lock(&g_lock);
  int ok = -1;
  for (int i = 0; i < NSYM; ++i)
    if (strcmp(k_fields[i], field) == 0) {
      g_fail_field = i;
      g_fail_result = result;
      g_fail_after = after;
      ok = 0;
    }
  pthread_mutex_unlock(&g_lock);
  return ok;
}

/* The extent of a test blob: an ELF up to its section header table's end, else text up to its
 * NUL (fakecuda.c adds the fatbin header). */
static size_t elf_or_text_extent(const unsigned char *p) {
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, p + 0x28, 8);
    memcpy(&shentsize, p + 0x3A, 2);
    memcpy(&shnum, p + 0x3C, 2);
    return (size_t)(shoff + (uint64_t)shentsize * shnum);
  }
  return strlen((const char *)p);
}

#endif
