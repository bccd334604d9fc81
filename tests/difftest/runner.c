/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* runner.c - the differential tester's interpreter: runs programs of mgpu* calls (the text format
 * written by generator.py, one operation a line) through the mgpu* C ABI and prints one digest
 * per program. difftest.py runs it once with MGPU_CACHED_DISABLE=1 (stock behaviour) and once in
 * the cached mode, and compares the digests.
 *
 *   runner MODULE [FILE]      MODULE: the kernels' fatbin (tests/difftest/kernels.fatbin); FILE:
 *                             the programs (default: stdin)
 *
 * Output: stdout gets "seq ID done DIGEST" after each program (DIGEST: FNV-1a over every `read` and
 * `hread`, with its line number), or "seq ID hang" when it ran past DIFFTEST_TIMEOUT seconds
 * (default 60; the runner then exits); a crash leaves the line out. stderr gets "@@seq ID" before
 * each program, so the library's error messages can be told apart by program. With
 * DIFFTEST_VERBOSE=1 each read also prints "R ID LINE HASH zero=0|1" (1: all its words are zero);
 * with DIFFTEST_DUMP=1, "Z ID LINE WORDS RUNS..." (which words are zero).
 * When the CUDA driver is the executing fake (its fake_exec_seed is found in the library named by
 * MGPU_CACHED_CUDA_DRIVER), the fake's interleaving is reseeded before each program from
 * DIFFTEST_SEED and the program's id, and the fake gets a tick (fake_exec_tick: background
 * progress) before each operation, so a program replays alone as it ran among others.
 * DIFFTEST_PLANT=drop_wait plants a defect for the tester's self-check: in the cached mode only,
 * mgpuStreamWaitEvent is not called.
 * A NULL handle from mgpuMemAlloc, mgpuStreamCreate, mgpuEventCreate or mgpuModuleLoad is part of
 * the digest (the line and 'N'); a later operation on a NULL buffer is skipped (and digested).
 *
 * The classes of issue 19 (generator.py): the runner itself also plays "another CUDA user in the
 * process", calling the driver directly (dlopen of MGPU_CACHED_CUDA_DRIVER, else libcuda.so.1;
 * it retains device 0's primary context once at start, before any program):
 *   modg B S        LLVM <= 20 style: mgpuModuleLoad(modglobal.fatbin, found beside MODULE),
 *                   launch dt_bump (reads and increments a module-scope counter) on S, unload
 *   ualloc B K S    mgpuMemAlloc of K memory units (device memory; DIFFTEST_PRESSURE=1 sets the
 *                   unit and a limit: on the fake, fake_set_memory_limit(used + 8 units + 2 MiB),
 *                   unit 1 MiB; on a GPU a ballast cuMemAlloc leaves 8 units of 64 MiB + 1 GiB free)
 *   foreign K       another user's cuMemAlloc of K units, then cuMemFree; the result is digested
 *   capbegin/capend another library's thread begins (cuStreamBeginCapture, GLOBAL mode, then a
 *                   captured cuMemsetD32Async) / ends (cuStreamEndCapture) a capture of its own
 *                   stream; both results are digested (on a fake without the capture API:
 *                   fake_capture_begin/end)
 *   par S / @1 OP / join   a second program thread: after `par S` it runs the `@1` lines (stream
 *                   operations on S) in order, concurrently with the main thread, until `join`
 *   tsync S         mgpuStreamSynchronize(S) racing the second thread's launches on S
 *   reset D         cuDevicePrimaryCtxReset(D) (what cudaDeviceReset does; the result digested
 *                   if it failed); later launches load the kernels' module anew each time
 *                   (LLVM <= 20 style), and so do they after a line "# reset D" (the stock
 *                   reference run of difftest.py)
 *   fault S         launch k_assert_dt (fault.fatbin: a device-side assert) on S, then
 *                   mgpuStreamSynchronize(S) (which reports it)
 * After a program with `reset` or `fault` the runner prints "stop" and exits (the stock library
 * cannot work in that process any more); difftest.py starts a new one for the next program.
 * DIFFTEST_LINEMARK=1 writes "@@line N" to stderr before each operation, and "@@end ID" after
 * each program, so the errors the library reports can be told apart by operation.
 * `runner MODULE --caps` prints the classes this library + driver can run ("caps ...").
 *
 * Operations (handles: sN streams, eN events, bN buffers of 32-bit words; "-" the NULL stream):
 *   dev D | drain D | stream S | sdestroy S | ssync S | event E | edestroy E | record E S |
 *   wait S E | esync E | alloc B WORDS d|h S | free B S | memset32 B V S | memset16 B V S |
 *   copy DST SRC WORDS S | upload B V S | read B S | hread B | hwrite B V | fill B V S |
 *   add DST SRC WORDS S | scale B K S | slow B V SPINS S | modg B S | ualloc B K S | foreign K |
 *   capbegin | capend | par S | @1 OP | join | tsync S | reset D | fault S
 * (generator.py documents what each does and when a program may use it.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgpu_abi.h"

#define MAXH 4096

static void *g_stream[MAXH], *g_event[MAXH];
static char g_smade[MAXH]; /* stream N was made in this program (its handle may be NULL) */
static int g_sdev[MAXH];   /* the device current when stream N was made */
static struct { uint32_t *p; int words; } g_buf[MAXH];
static void *g_fn_fill, *g_fn_add, *g_fn_scale, *g_fn_slow, *g_fn_fault;
static int g_cached, g_drop_wait, g_verbose, g_dump, g_linemark;
static _Thread_local int g_cur_dev; /* per program thread, as the library's default device */
static int g_stop; /* the program reset a context or faulted: stop after it */
static int g_reload; /* after a reset (or where stock's reference run had one): launches load the
                      * module anew each time (LLVM <= 20 style), as the old one is gone */
static char *g_blob; /* kernels.fatbin */
static size_t g_bsize;
static char *g_mg_blob; /* modglobal.fatbin */
static size_t g_mg_size;
static pthread_mutex_t g_keep_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the driver, called directly by "another CUDA user" (the runner itself) ---- */
typedef unsigned long long dptr_t;
static struct {
  int (*Init)(unsigned);
  int (*PrimaryCtxRetain)(void **, int);
  int (*CtxPush)(void *);
  int (*CtxPop)(void **);
  int (*MemAlloc)(dptr_t *, size_t);
  int (*MemFree)(dptr_t);
  int (*MemGetInfo)(size_t *, size_t *);
  int (*StreamCreate)(void **, unsigned);
  int (*BeginCapture)(void *, int);
  int (*EndCapture)(void *, void **);
  int (*GraphDestroy)(void *);
  int (*MemsetD32Async)(dptr_t, unsigned, size_t, void *);
  int (*PrimaryCtxReset)(int);
  void (*fake_set_memory_limit)(size_t);
  size_t (*fake_memory_used)(void);
  void (*fake_capture_begin)(void *);
  int (*fake_capture_end)(void);
  void (*fake_set_sticky)(int, int);
} D;
static void *g_ctx0;      /* device 0's primary context, retained at start */
static size_t g_unit = 1; /* bytes of one memory unit (ualloc, foreign) */
static void (*g_fake_seed)(uint64_t), (*g_fake_tick)(void);
static uint64_t g_seed;
static volatile sig_atomic_t g_seq;
static void **g_keep; /* host buffers of uploads, freed at the end of a program */
static size_t g_nkeep, g_capkeep;

static void on_alarm(int sig) {
  (void)sig;
  char line[64];
  int n = snprintf(line, sizeof line, "seq %ld hang\n", (long)g_seq);
  if (write(1, line, (size_t)n) < 0) _exit(4);
  _exit(3);
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

/* A handle the program got was NULL (or another outcome worth comparing): into the digest. */
static void note(uint64_t *digest, long lineno, int code) {
  *digest = fnv(fnv(*digest, &lineno, sizeof lineno), &code, sizeof code);
}

static int all_zero(const void *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (((const unsigned char *)p)[i]) return 0;
  return 1;
}

/* DIFFTEST_DUMP=1: which words of a read are zero, as runs "start-end:z|n" (at most 24 runs). */
static void dump_runs(long lineno, const uint32_t *w, int n) {
  printf("Z %ld %ld %d", (long)g_seq, lineno, n);
  int runs = 0;
  for (int i = 0; i < n && runs < 24; ++runs) {
    int j = i, z = w[i] == 0;
    while (j < n && (w[j] == 0) == z) ++j;
    printf(" %d-%d:%c", i, j - 1, z ? 'z' : 'n');
    i = j;
  }
  printf("\n");
}

static uint32_t pattern(uint32_t v, int i) { return (v + (uint32_t)i) * 0x85EBCA6Bu ^ (v >> 3); }

static int idx(const char *tok, char kind) {
  if (!tok || tok[0] != kind) return -1;
  int i = atoi(tok + 1);
  return (i >= 0 && i < MAXH) ? i : -1;
}
static void *stream_of(const char *tok) {
  if (tok && tok[0] == '-') return NULL;
  int i = idx(tok, 's');
  if (i >= 0 && g_smade[i]) return g_stream[i]; /* NULL if mgpuStreamCreate failed */
  {
    fprintf(stderr, "runner: seq %ld: no stream %s\n", (long)g_seq, tok ? tok : "(none)");
    exit(2);
  }
  return g_stream[i];
}

static void launch(void *fn, uint32_t *p, int n, uint64_t x, long long spins, void *stream) {
  if (g_reload) { /* after a reset: load, launch, unload */
    const char *name = fn == g_fn_fill ? "dt_fill" : fn == g_fn_add ? "dt_add"
                       : fn == g_fn_scale ? "dt_scale" : "dt_slow";
    void *m = mgpuModuleLoad(g_blob, g_bsize);
    void *f = m ? mgpuModuleGetFunction(m, name) : NULL;
    int slow = fn == g_fn_slow, add = fn == g_fn_add;
    uint32_t x32 = (uint32_t)x;
    void *ptr = p, *xp = (void *)(uintptr_t)x;
    void *args[4] = {&ptr, &n, add ? (void *)&xp : (void *)&x32, &spins};
    intptr_t grid = (n + 255) / 256;
    grid = grid > 1024 ? 1024 : grid < 1 ? 1 : grid;
    mgpuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, stream, args, NULL, slow ? 4 : 3);
    if (m) mgpuModuleUnload(m);
    return;
  }
  uint32_t x32 = (uint32_t)x;
  void *ptr = p, *xp = (void *)(uintptr_t)x;
  void *args[4] = {&ptr, &n, fn == g_fn_add ? (void *)&xp : (void *)&x32, &spins};
  intptr_t grid = (n + 255) / 256;
  if (grid > 1024) grid = 1024;
  if (grid < 1) grid = 1;
  mgpuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 0, stream, args, NULL, fn == g_fn_slow ? 4 : 3);
}

static void keep(void *p) {
  pthread_mutex_lock(&g_keep_lock);
  if (g_nkeep == g_capkeep) {
    g_capkeep = g_capkeep ? 2 * g_capkeep : 64;
    g_keep = realloc(g_keep, g_capkeep * sizeof *g_keep);
  }
  g_keep[g_nkeep++] = p;
  pthread_mutex_unlock(&g_keep_lock);
}

/* A one-thread launch of a (p, n) kernel. */
static void launch1(void *fn, uint32_t *p, int n, void *stream) {
  void *ptr = p;
  unsigned unused = 0; /* a third slot: the fake driver reads three arguments of dt_* kernels */
  void *args[3] = {&ptr, &n, &unused};
  mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL, 2);
}

/* ---- another library's capture, on a thread of its own (capbegin / capend) ---- */
static struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  int cmd, result, started; /* cmd: 0 none, 1 begin, 2 end; result of the last one */
  void *stream;             /* its own stream (device 0) */
  dptr_t buf;               /* its own buffer, written by the captured work */
} F = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, 0};

static int foreign_capture(int cmd) { /* on F's thread */
  if (!F.stream) { /* first use: its stream and buffer */
    D.CtxPush(g_ctx0);
    int r = D.StreamCreate(&F.stream, 1);
    if (!r && D.MemAlloc) r = D.MemAlloc(&F.buf, 4096);
    if (r) return 1000 + r;
  }
  if (D.BeginCapture && D.EndCapture) {
    if (cmd == 1) {
      int r = D.BeginCapture(F.stream, 0 /* CU_STREAM_CAPTURE_MODE_GLOBAL */);
      if (!r && D.MemsetD32Async) r = D.MemsetD32Async(F.buf, 7, 1024, F.stream);
      return r;
    }
    void *graph = NULL;
    int r = D.EndCapture(F.stream, &graph);
    if (graph && D.GraphDestroy) D.GraphDestroy(graph);
    return r * 2 + (graph != NULL);
  }
  if (cmd == 1) return D.fake_capture_begin(F.stream), 0;
  return D.fake_capture_end() * 2;
}
static void *foreign_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&F.m);
  for (;;) {
    while (!F.cmd) pthread_cond_wait(&F.c, &F.m);
    pthread_mutex_unlock(&F.m);
    int r = foreign_capture(F.cmd);
    pthread_mutex_lock(&F.m);
    F.result = r;
    F.cmd = 0;
    pthread_cond_broadcast(&F.c);
  }
  return NULL;
}
static int foreign_call(int cmd) { /* main thread: run cmd on F's thread, wait for it */
  pthread_mutex_lock(&F.m);
  if (!F.started) {
    pthread_t t;
    pthread_create(&t, NULL, foreign_main, NULL);
    F.started = 1;
  }
  F.cmd = cmd;
  pthread_cond_broadcast(&F.c);
  while (F.cmd) pthread_cond_wait(&F.c, &F.m);
  int r = F.result;
  pthread_mutex_unlock(&F.m);
  return r;
}

/* ---- the second program thread (par S / @1 OP / join) ---- */
#define TQ 512
static struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  char *line[TQ];
  long lineno[TQ];
  int head, tail, busy, started, dev;
} T = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, {0}, 0, 0, 0, 0, 0};
static int run_op(char *line, long lineno, uint64_t *digest);
static void *second_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&T.m);
  for (;;) {
    while (T.head == T.tail) pthread_cond_wait(&T.c, &T.m);
    char *line = T.line[T.head % TQ];
    long lineno = T.lineno[T.head % TQ];
    T.busy = 1;
    pthread_mutex_unlock(&T.m);
    uint64_t ignored = 0;
    if (!strncmp(line, "#dev ", 5)) {
      g_cur_dev = atoi(line + 5);
      mgpuSetDefaultDevice(g_cur_dev);
    } else {
      if (g_fake_tick) g_fake_tick();
      if (run_op(line, lineno, &ignored) != 0) {
        fprintf(stderr, "runner: seq %ld line %ld not understood on the second thread\n",
                (long)g_seq, lineno);
        exit(2);
      }
    }
    free(line);
    pthread_mutex_lock(&T.m);
    T.head++;
    T.busy = 0;
    pthread_cond_broadcast(&T.c);
  }
  return NULL;
}
static void second_post(const char *line, long lineno) {
  pthread_mutex_lock(&T.m);
  if (!T.started) {
    pthread_t t;
    pthread_create(&t, NULL, second_main, NULL);
    T.started = 1;
  }
  while (T.tail - T.head >= TQ) pthread_cond_wait(&T.c, &T.m);
  T.line[T.tail % TQ] = strdup(line);
  T.lineno[T.tail % TQ] = lineno;
  T.tail++;
  pthread_cond_broadcast(&T.c);
  pthread_mutex_unlock(&T.m);
}
static void second_join(void) {
  pthread_mutex_lock(&T.m);
  while (T.head != T.tail || T.busy) pthread_cond_wait(&T.c, &T.m);
  pthread_mutex_unlock(&T.m);
}

/* The driver's entry points for the other user; what the classes need is there or not. */
static void load_driver(void) {
  const char *path = getenv("MGPU_CACHED_CUDA_DRIVER");
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (!h) h = dlopen(path ? path : "libcuda.so.1", RTLD_NOW);
  if (!h) return;
#define SYM(field, name) *(void **)&D.field = dlsym(h, name)
  SYM(Init, "cuInit");
  SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(CtxPush, "cuCtxPushCurrent_v2");
  SYM(CtxPop, "cuCtxPopCurrent_v2");
  SYM(MemAlloc, "cuMemAlloc_v2");
  SYM(MemFree, "cuMemFree_v2");
  SYM(MemGetInfo, "cuMemGetInfo_v2");
  SYM(StreamCreate, "cuStreamCreate");
  SYM(BeginCapture, "cuStreamBeginCapture_v2");
  SYM(EndCapture, "cuStreamEndCapture");
  SYM(GraphDestroy, "cuGraphDestroy");
  SYM(MemsetD32Async, "cuMemsetD32Async");
  SYM(PrimaryCtxReset, "cuDevicePrimaryCtxReset_v2");
  if (!D.PrimaryCtxReset) SYM(PrimaryCtxReset, "cuDevicePrimaryCtxReset");
  SYM(fake_set_memory_limit, "fake_set_memory_limit");
  SYM(fake_memory_used, "fake_memory_used");
  SYM(fake_capture_begin, "fake_capture_begin");
  SYM(fake_capture_end, "fake_capture_end");
  SYM(fake_set_sticky, "fake_set_sticky");
  *(void **)&g_fake_seed = dlsym(h, "fake_exec_seed");
  *(void **)&g_fake_tick = dlsym(h, "fake_exec_tick");
#undef SYM
  if (D.Init && D.PrimaryCtxRetain && D.CtxPush && D.CtxPop && !D.Init(0))
    D.PrimaryCtxRetain(&g_ctx0, 0);
}

/* DIFFTEST_PRESSURE=1: the memory unit, and a device with 8 units (+ a margin) free. */
static void setup_pressure(void) {
  const char *u = getenv("DIFFTEST_UNIT_MB"), *mg = getenv("DIFFTEST_MARGIN_MB");
  if (D.fake_set_memory_limit && D.fake_memory_used) {
    g_unit = (size_t)(u ? atof(u) * 1048576 : 1048576);
    size_t margin = (size_t)(mg ? atof(mg) * 1048576 : 2 * 1048576);
    D.fake_set_memory_limit(D.fake_memory_used() + 8 * g_unit + margin);
    return;
  }
  g_unit = (size_t)(u ? atof(u) * 1048576 : 64 * 1048576);
  size_t margin = (size_t)(mg ? atof(mg) * 1048576 : 1024.0 * 1048576);
  size_t free_b = 0, total = 0;
  if (!g_ctx0 || !D.MemGetInfo || !D.MemAlloc) return;
  D.CtxPush(g_ctx0);
  if (!D.MemGetInfo(&free_b, &total) && free_b > 8 * g_unit + margin) {
    dptr_t ballast = 0; /* held until exit */
    int r = D.MemAlloc(&ballast, free_b - 8 * g_unit - margin);
    if (r) fprintf(stderr, "runner: the ballast allocation failed (%d)\n", r);
  }
  D.CtxPop(NULL);
}

static int caps_capture(void) {
  return g_ctx0 && D.StreamCreate &&
         ((D.BeginCapture && D.EndCapture) || (D.fake_capture_begin && D.fake_capture_end));
}

static void drain(int device) {
  mgpuSetDefaultDevice(device);
  void *p = mgpuMemAlloc(4, NULL, 0);
  mgpuMemFree(p, NULL); /* stock: cuMemFree waits for the device; cached: the same promise */
  mgpuSetDefaultDevice(g_cur_dev);
}

/* One operation; returns 0, or -1 on a line it does not understand. */
static int run_op(char *line, long lineno, uint64_t *digest) {
  char *t[8] = {0}, *save = NULL;
  int n = 0;
  for (char *s = strtok_r(line, " \t\r\n", &save); s && n < 8; s = strtok_r(NULL, " \t\r\n", &save))
    t[n++] = s;
  if (n >= 2 && !strcmp(t[0], "#") && !strcmp(t[1], "reset")) g_reload = 1; /* stock's view */
  if (!n || t[0][0] == '#') return 0;
  if (!strcmp(t[0], "@1")) { /* the rest of the line runs on the second program thread */
    char rest[512] = "";
    for (int i = 1; i < n; ++i) {
      strcat(rest, t[i]);
      strcat(rest, " ");
    }
    second_post(rest, lineno);
    return 0;
  }
  const char *op = t[0];
  int b = n > 1 ? idx(t[1], 'b') : -1;
  /* an operation on a buffer that mgpuMemAlloc returned as NULL (the digest has it): skipped, so
   * that neither mode writes through NULL (a crash, or on a GPU a sticky error for the rest) */
  int b2 = (!strcmp(op, "copy") || !strcmp(op, "add")) && n > 2 ? idx(t[2], 'b') : -1;
  if (b >= 0 && strcmp(op, "alloc") && strcmp(op, "ualloc") && strcmp(op, "free") &&
      (!g_buf[b].p || (b2 >= 0 && !g_buf[b2].p))) {
    note(digest, lineno, 'S');
    return 0;
  }
  if (!strcmp(op, "dev")) {
    g_cur_dev = atoi(t[1]);
    mgpuSetDefaultDevice(g_cur_dev);
  } else if (!strcmp(op, "drain")) {
    drain(atoi(t[1]));
  } else if (!strcmp(op, "stream")) {
    int i = idx(t[1], 's');
    g_stream[i] = mgpuStreamCreate();
    g_smade[i] = 1;
    g_sdev[i] = g_cur_dev;
    if (!g_stream[i]) note(digest, lineno, 'N');
  } else if (!strcmp(op, "sdestroy")) {
    mgpuStreamDestroy(stream_of(t[1]));
    g_stream[idx(t[1], 's')] = NULL;
    g_smade[idx(t[1], 's')] = 0;
  } else if (!strcmp(op, "ssync")) {
    mgpuStreamSynchronize(stream_of(t[1]));
  } else if (!strcmp(op, "event")) {
    g_event[idx(t[1], 'e')] = mgpuEventCreate();
    if (!g_event[idx(t[1], 'e')]) note(digest, lineno, 'N');
  } else if (!strcmp(op, "edestroy")) {
    mgpuEventDestroy(g_event[idx(t[1], 'e')]);
  } else if (!strcmp(op, "record")) {
    mgpuEventRecord(g_event[idx(t[1], 'e')], stream_of(t[2]));
  } else if (!strcmp(op, "wait")) {
    if (!(g_drop_wait && g_cached)) mgpuStreamWaitEvent(stream_of(t[1]), g_event[idx(t[2], 'e')]);
  } else if (!strcmp(op, "esync")) {
    mgpuEventSynchronize(g_event[idx(t[1], 'e')]);
  } else if (!strcmp(op, "alloc") && b >= 0 && n == 5) {
    g_buf[b].words = atoi(t[2]);
    g_buf[b].p = mgpuMemAlloc((uint64_t)g_buf[b].words * 4, stream_of(t[4]), t[3][0] == 'h');
    if (!g_buf[b].p) note(digest, lineno, 'N');
  } else if (!strcmp(op, "free") && b >= 0) {
    mgpuMemFree(g_buf[b].p, stream_of(t[2]));
    g_buf[b].p = NULL;
  } else if (!strcmp(op, "memset32") && b >= 0) {
    mgpuMemset32(g_buf[b].p, (unsigned)strtoul(t[2], NULL, 0), (size_t)g_buf[b].words, stream_of(t[3]));
  } else if (!strcmp(op, "memset16") && b >= 0) {
    mgpuMemset16(g_buf[b].p, (unsigned short)strtoul(t[2], NULL, 0), (size_t)g_buf[b].words * 2,
                 stream_of(t[3]));
  } else if (!strcmp(op, "copy") && b >= 0) {
    mgpuMemcpy(g_buf[b].p, g_buf[idx(t[2], 'b')].p, (size_t)atoi(t[3]) * 4, stream_of(t[4]));
  } else if (!strcmp(op, "upload") && b >= 0) {
    uint32_t v = (uint32_t)strtoul(t[2], NULL, 0), *h = malloc((size_t)g_buf[b].words * 4);
    for (int i = 0; i < g_buf[b].words; ++i) h[i] = pattern(v, i);
    keep(h);
    mgpuMemcpy(g_buf[b].p, h, (size_t)g_buf[b].words * 4, stream_of(t[3]));
  } else if (!strcmp(op, "read") && b >= 0) {
    size_t bytes = (size_t)g_buf[b].words * 4;
    uint32_t *h = malloc(bytes);
    memset(h, 0xEE, bytes);
    void *s = stream_of(t[2]);
    mgpuMemcpy(h, g_buf[b].p, bytes, s);
    mgpuStreamSynchronize(s);
    uint64_t one = fnv(0xCBF29CE484222325ull, h, bytes);
    *digest = fnv(fnv(*digest, &lineno, sizeof lineno), &one, sizeof one);
    if (g_verbose) printf("R %ld %ld %016llx zero=%d\n", (long)g_seq, lineno, (unsigned long long)one, all_zero(h, bytes));
    if (g_dump) dump_runs(lineno, h, g_buf[b].words);
    free(h);
  } else if (!strcmp(op, "hread") && b >= 0) {
    uint64_t one = fnv(0xCBF29CE484222325ull, g_buf[b].p, (size_t)g_buf[b].words * 4);
    *digest = fnv(fnv(*digest, &lineno, sizeof lineno), &one, sizeof one);
    if (g_verbose)
      printf("R %ld %ld %016llx zero=%d\n", (long)g_seq, lineno, (unsigned long long)one,
             all_zero(g_buf[b].p, (size_t)g_buf[b].words * 4));
    if (g_dump) dump_runs(lineno, g_buf[b].p, g_buf[b].words);
  } else if (!strcmp(op, "hwrite") && b >= 0) {
    uint32_t v = (uint32_t)strtoul(t[2], NULL, 0);
    for (int i = 0; i < g_buf[b].words; ++i) g_buf[b].p[i] = pattern(v, i);
  } else if (!strcmp(op, "fill") && b >= 0) {
    launch(g_fn_fill, g_buf[b].p, g_buf[b].words, strtoul(t[2], NULL, 0), 0, stream_of(t[3]));
  } else if (!strcmp(op, "add") && b >= 0) {
    launch(g_fn_add, g_buf[b].p, atoi(t[3]), (uint64_t)(uintptr_t)g_buf[idx(t[2], 'b')].p, 0,
           stream_of(t[4]));
  } else if (!strcmp(op, "scale") && b >= 0) {
    launch(g_fn_scale, g_buf[b].p, g_buf[b].words, strtoul(t[2], NULL, 0), 0, stream_of(t[3]));
  } else if (!strcmp(op, "slow") && b >= 0) {
    launch(g_fn_slow, g_buf[b].p, g_buf[b].words, strtoul(t[2], NULL, 0), atoll(t[3]),
           stream_of(t[4]));
  } else if (!strcmp(op, "modg") && b >= 0) { /* LLVM <= 20: load, launch, unload */
    void *m = mgpuModuleLoad(g_mg_blob, g_mg_size);
    if (!m) note(digest, lineno, 'N');
    void *f = m ? mgpuModuleGetFunction(m, "dt_bump") : NULL;
    launch1(f, g_buf[b].p, g_buf[b].words, stream_of(t[2]));
    if (m) mgpuModuleUnload(m);
  } else if (!strcmp(op, "ualloc") && b >= 0 && n == 4) {
    size_t bytes = g_unit * (size_t)atoi(t[2]);
    g_buf[b].words = (int)(bytes / 4);
    g_buf[b].p = mgpuMemAlloc(bytes, stream_of(t[3]), 0);
    if (!g_buf[b].p) note(digest, lineno, 'N');
  } else if (!strcmp(op, "foreign") && n == 2) { /* another user's cuMemAlloc */
    int r = 9999;
    dptr_t p = 0;
    if (g_ctx0 && D.MemAlloc && !D.CtxPush(g_ctx0)) {
      r = D.MemAlloc(&p, g_unit * (size_t)atoi(t[1]));
      if (!r) D.MemFree(p);
      D.CtxPop(NULL);
    }
    note(digest, lineno, r);
    if (g_verbose) printf("F %ld %ld foreign=%d\n", (long)g_seq, lineno, r);
  } else if (!strcmp(op, "capbegin") || !strcmp(op, "capend")) {
    int r = caps_capture() ? foreign_call(op[3] == 'b' ? 1 : 2) : 9999;
    note(digest, lineno, r);
    if (g_verbose) printf("C %ld %ld %s=%d\n", (long)g_seq, lineno, op, r);
  } else if (!strcmp(op, "par") && n == 2) {
    int i = idx(t[1], 's');
    char dev[32];
    snprintf(dev, sizeof dev, "#dev %d", i >= 0 ? g_sdev[i] : 0);
    second_post(dev, lineno);
  } else if (!strcmp(op, "join")) {
    second_join();
  } else if (!strcmp(op, "tsync")) {
    mgpuStreamSynchronize(stream_of(t[1]));
  } else if (!strcmp(op, "reset") && n == 2) {
    int r = D.PrimaryCtxReset ? D.PrimaryCtxReset(atoi(t[1])) : 9999;
    if (r) note(digest, lineno, r); /* (stock's reference run has no reset: see difftest.py) */
    if (g_verbose) printf("X %ld %ld reset=%d\n", (long)g_seq, lineno, r);
    g_stop = 1;
    g_reload = 1;
  } else if (!strcmp(op, "fault") && n == 2) {
    launch1(g_fn_fault, NULL, 1, stream_of(t[1]));
    mgpuStreamSynchronize(stream_of(t[1])); /* the error shows (on a GPU: asynchronously) */
    g_stop = 1;
  } else {
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODULE [PROGRAMS]\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *dis = getenv("MGPU_CACHED_DISABLE"), *plant = getenv("DIFFTEST_PLANT");
  g_cached = !(dis && *dis == '1');
  g_drop_wait = plant && !strcmp(plant, "drop_wait");
  g_verbose = getenv("DIFFTEST_VERBOSE") && *getenv("DIFFTEST_VERBOSE") == '1';
  g_dump = getenv("DIFFTEST_DUMP") && *getenv("DIFFTEST_DUMP") == '1';
  g_seed = getenv("DIFFTEST_SEED") ? strtoull(getenv("DIFFTEST_SEED"), NULL, 0) : 1;
  int timeout = getenv("DIFFTEST_TIMEOUT") ? atoi(getenv("DIFFTEST_TIMEOUT")) : 60;
  signal(SIGALRM, on_alarm);

  FILE *mf = fopen(argv[1], "rb");
  if (!mf) {
    perror(argv[1]);
    return 2;
  }
  static char blob[1 << 22], mg_blob[1 << 20], fault_blob[1 << 20];
  size_t bsize = fread(blob, 1, sizeof blob, mf);
  fclose(mf);
  g_blob = blob;
  g_bsize = bsize;
  void *module = mgpuModuleLoad(blob, bsize);
  g_fn_fill = mgpuModuleGetFunction(module, "dt_fill");
  g_fn_add = mgpuModuleGetFunction(module, "dt_add");
  g_fn_scale = mgpuModuleGetFunction(module, "dt_scale");
  g_fn_slow = mgpuModuleGetFunction(module, "dt_slow");
  if (!module || !g_fn_fill || !g_fn_add || !g_fn_scale || !g_fn_slow) {
    fprintf(stderr, "runner: cannot load the kernels from %s\n", argv[1]);
    return 2;
  }
  /* the classes' modules, beside MODULE: modglobal.fatbin (read; loaded per modg), fault.fatbin */
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s", argv[1]);
  snprintf(path, sizeof path, "%s/modglobal.fatbin", dirname(dir));
  if ((mf = fopen(path, "rb"))) {
    g_mg_size = fread(mg_blob, 1, sizeof mg_blob, mf);
    g_mg_blob = mg_blob;
    fclose(mf);
  }
  snprintf(dir, sizeof dir, "%s", argv[1]);
  snprintf(path, sizeof path, "%s/fault.fatbin", dirname(dir));
  if ((mf = fopen(path, "rb"))) {
    size_t fsize = fread(fault_blob, 1, sizeof fault_blob, mf);
    fclose(mf);
    void *fm = mgpuModuleLoad(fault_blob, fsize);
    g_fn_fault = fm ? mgpuModuleGetFunction(fm, "k_assert_dt") : NULL;
  }
  load_driver();
  const char *drv = getenv("MGPU_CACHED_CUDA_DRIVER");
  int fake = drv && g_fake_tick;
  if (argc > 2 && !strcmp(argv[2], "--caps")) {
    /* the fake models module state for dt_bump (fake_exec.h), sticky errors with fake_reset.h */
    printf("caps threads%s%s%s%s%s\n", g_mg_blob ? " modglobal" : "",
           caps_capture() ? " capture" : "",
           g_ctx0 && D.MemAlloc && (fake ? D.fake_set_memory_limit != NULL : D.MemGetInfo != NULL)
               ? " pressure" : "",
           g_ctx0 && D.PrimaryCtxReset ? " reset" : "",
           g_fn_fault && (!fake || D.fake_set_sticky) ? " sticky" : "");
    return 0;
  }
  if (getenv("DIFFTEST_PRESSURE") && *getenv("DIFFTEST_PRESSURE") == '1') setup_pressure();
  g_linemark = getenv("DIFFTEST_LINEMARK") && *getenv("DIFFTEST_LINEMARK") == '1';

  FILE *in = argc > 2 ? fopen(argv[2], "r") : stdin;
  if (!in) {
    perror(argv[2]);
    return 2;
  }
  char line[512];
  long lineno = 0;
  uint64_t digest = 0;
  int in_seq = 0;
  while (fgets(line, sizeof line, in)) {
    ++lineno;
    if (!strncmp(line, "seq ", 4)) {
      g_seq = atol(line + 4);
      in_seq = 1;
      digest = 0xCBF29CE484222325ull;
      lineno = 0;
      g_cur_dev = 0;
      memset(g_stream, 0, sizeof g_stream); /* handles are per program */
      memset(g_smade, 0, sizeof g_smade);
      g_reload = 0;
      memset(g_event, 0, sizeof g_event);
      memset(g_buf, 0, sizeof g_buf);
      mgpuSetDefaultDevice(0);
      fprintf(stderr, "@@seq %ld\n", (long)g_seq);
      if (g_fake_seed) g_fake_seed(g_seed * 1000003u + (uint64_t)g_seq);
      alarm((unsigned)timeout);
      continue;
    }
    if (!strncmp(line, "end", 3) && in_seq) {
      second_join();
      alarm(0);
      for (size_t i = 0; i < g_nkeep; ++i) free(g_keep[i]);
      g_nkeep = 0;
      if (g_linemark) fprintf(stderr, "@@end %ld\n", (long)g_seq);
      printf("seq %ld done %016llx\n", (long)g_seq, (unsigned long long)digest);
      in_seq = 0;
      if (g_stop) { /* a reset or a sticky error: nothing works in this process any more */
        printf("stop\n");
        exit(0);
      }
      continue;
    }
    char copy[512];
    snprintf(copy, sizeof copy, "%s", line);
    if (in_seq && g_linemark) fprintf(stderr, "@@line %ld\n", lineno);
    if (in_seq && g_fake_tick && strncmp(line, "@1", 2)) g_fake_tick();
    if (in_seq && run_op(line, lineno, &digest) != 0) {
      fprintf(stderr, "runner: seq %ld line %ld not understood: %s", (long)g_seq, lineno, copy);
      return 2;
    }
  }
  return 0;
}
