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
 *
 * Operations (handles: sN streams, eN events, bN buffers of 32-bit words; "-" the NULL stream):
 *   dev D | drain D | stream S | sdestroy S | ssync S | event E | edestroy E | record E S |
 *   wait S E | esync E | alloc B WORDS d|h S | free B S | memset32 B V S | memset16 B V S |
 *   copy DST SRC WORDS S | upload B V S | read B S | hread B | hwrite B V | fill B V S |
 *   add DST SRC WORDS S | scale B K S | slow B V SPINS S
 * (generator.py documents what each does and when a program may use it.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgpu_abi.h"

#define MAXH 4096

static void *g_stream[MAXH], *g_event[MAXH];
static struct { uint32_t *p; int words; } g_buf[MAXH];
static void *g_fn_fill, *g_fn_add, *g_fn_scale, *g_fn_slow;
static int g_cached, g_drop_wait, g_verbose, g_dump, g_cur_dev;
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
  if (i < 0 || !g_stream[i]) {
    fprintf(stderr, "runner: seq %ld: no stream %s\n", (long)g_seq, tok ? tok : "(none)");
    exit(2);
  }
  return g_stream[i];
}

static void launch(void *fn, uint32_t *p, int n, uint64_t x, long long spins, void *stream) {
  uint32_t x32 = (uint32_t)x;
  void *ptr = p, *xp = (void *)(uintptr_t)x;
  void *args[4] = {&ptr, &n, fn == g_fn_add ? (void *)&xp : (void *)&x32, &spins};
  intptr_t grid = (n + 255) / 256;
  if (grid > 1024) grid = 1024;
  if (grid < 1) grid = 1;
  mgpuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 0, stream, args, NULL, fn == g_fn_slow ? 4 : 3);
}

static void keep(void *p) {
  if (g_nkeep == g_capkeep) {
    g_capkeep = g_capkeep ? 2 * g_capkeep : 64;
    g_keep = realloc(g_keep, g_capkeep * sizeof *g_keep);
  }
  g_keep[g_nkeep++] = p;
}

static void drain(int device) {
  mgpuSetDefaultDevice(device);
  void *p = mgpuMemAlloc(4, NULL, 0);
  mgpuMemFree(p, NULL); /* stock: cuMemFree waits for the device; cached: the same promise */
  mgpuSetDefaultDevice(g_cur_dev);
}

/* One operation; returns 0, or -1 on a line it does not understand. */
static int run_op(char *line, long lineno, uint64_t *digest) {
  char *t[8] = {0};
  int n = 0;
  for (char *s = strtok(line, " \t\r\n"); s && n < 8; s = strtok(NULL, " \t\r\n")) t[n++] = s;
  if (!n || t[0][0] == '#') return 0;
  const char *op = t[0];
  int b = n > 1 ? idx(t[1], 'b') : -1;
  if (!strcmp(op, "dev")) {
    g_cur_dev = atoi(t[1]);
    mgpuSetDefaultDevice(g_cur_dev);
  } else if (!strcmp(op, "drain")) {
    drain(atoi(t[1]));
  } else if (!strcmp(op, "stream")) {
    g_stream[idx(t[1], 's')] = mgpuStreamCreate();
  } else if (!strcmp(op, "sdestroy")) {
    mgpuStreamDestroy(stream_of(t[1]));
    g_stream[idx(t[1], 's')] = NULL;
  } else if (!strcmp(op, "ssync")) {
    mgpuStreamSynchronize(stream_of(t[1]));
  } else if (!strcmp(op, "event")) {
    g_event[idx(t[1], 'e')] = mgpuEventCreate();
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
  static char blob[1 << 22];
  size_t bsize = fread(blob, 1, sizeof blob, mf);
  fclose(mf);
  void *module = mgpuModuleLoad(blob, bsize);
  g_fn_fill = mgpuModuleGetFunction(module, "dt_fill");
  g_fn_add = mgpuModuleGetFunction(module, "dt_add");
  g_fn_scale = mgpuModuleGetFunction(module, "dt_scale");
  g_fn_slow = mgpuModuleGetFunction(module, "dt_slow");
  if (!module || !g_fn_fill || !g_fn_add || !g_fn_scale || !g_fn_slow) {
    fprintf(stderr, "runner: cannot load the kernels from %s\n", argv[1]);
    return 2;
  }
  const char *drv = getenv("MGPU_CACHED_CUDA_DRIVER");
  if (drv) {
    void *h = dlopen(drv, RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      *(void **)&g_fake_seed = dlsym(h, "fake_exec_seed");
      *(void **)&g_fake_tick = dlsym(h, "fake_exec_tick");
    }
  }

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
      memset(g_event, 0, sizeof g_event);
      memset(g_buf, 0, sizeof g_buf);
      mgpuSetDefaultDevice(0);
      fprintf(stderr, "@@seq %ld\n", (long)g_seq);
      if (g_fake_seed) g_fake_seed(g_seed * 1000003u + (uint64_t)g_seq);
      alarm((unsigned)timeout);
      continue;
    }
    if (!strncmp(line, "end", 3) && in_seq) {
      alarm(0);
      for (size_t i = 0; i < g_nkeep; ++i) free(g_keep[i]);
      g_nkeep = 0;
      printf("seq %ld done %016llx\n", (long)g_seq, (unsigned long long)digest);
      in_seq = 0;
      continue;
    }
    char copy[512];
    snprintf(copy, sizeof copy, "%s", line);
    if (in_seq && g_fake_tick) g_fake_tick();
    if (in_seq && run_op(line, lineno, &digest) != 0) {
      fprintf(stderr, "runner: seq %ld line %ld not understood: %s", (long)g_seq, lineno, copy);
      return 2;
    }
  }
  return 0;
}
