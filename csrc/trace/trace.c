/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* trace.c - the timeline trace's state and writer (see trace.h): configuration from the
 * environment, records kept in per-thread chunks under a global bound, the name tables, the
 * at-exit and fork handling, and the Chrome trace-event JSON writer.
 *
 * Memory: records live in chunks of MC_TRACE_CHUNK; a thread claims a whole chunk with one atomic
 * add on g_nchunks and fills it alone, publishing each record with a release store of the chunk's
 * count, so keeping a record takes no lock. At most g_max_chunks chunks are ever claimed; records
 * beyond are counted in g_trace_dropped (the first records of a run are kept).
 *
 * Locking rule: g_write_lock serialises the writer (which reads chunks while threads may still
 * add records: it reads only published records). g_name_lock guards inserts into the name table;
 * lookups are lock-free (slots are published with release stores). The function map is a table of
 * single 64-bit atomic words (function handle and name id packed; a few probes from the handle's
 * hash), so it needs no lock: when its probes are full a slot is overwritten, which can only make
 * a lookup miss (the launch is then named by its function handle). No driver call is made under any lock of this file.
 *
 * Exit: the writer runs from an atexit handler registered at the first traced call (and again by
 * trace_gpu.c once the driver is up, so that it runs before the driver's own exit handler), from
 * the library destructor, and again whenever records were added after a write (atexit handlers
 * registered during exit still run), so calls made in global destructors, a program that calls
 * exit() from a destructor, and the JIT runner (which runs no library destructors) are covered.
 * A write is skipped when nothing changed since the last one.
 *
 * Fork: the child starts with an empty trace (its own file, see trace.h) and forgets the parent's
 * GPU events.
 */
#include "trace/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "platform/backend.h"
#include "support/config.h"
#include "support/stats.h"
#include "include/mgpu_cached.h"

#define MC_TRACE_CHUNK 256
#define MC_TRACE_NAMES 4096        /* distinct kernel names (ids 1..4095) */
#define MC_TRACE_NAME_SLOTS 8192   /* open-addressed index of the name table */
#define MC_TRACE_FN_SLOTS 8192     /* function handle -> name id */
#define MC_TRACE_GPU_TID 0x40000000 /* GPU stream tracks: above any Linux thread id */

int mc_trace_on;  /* written once by the constructor */
int mc_trace_gpu; /* written once by the constructor */
static const mc_trace_gpu_ops *g_gpu; /* written once at library load (trace_gpu.c) */

void mc_trace_gpu_set_ops(const mc_trace_gpu_ops *ops) { g_gpu = ops; }

typedef struct chunk {
  uint32_t n; /* records published (release store by the owner, acquire load by the writer) */
  mc_trace_rec recs[MC_TRACE_CHUNK];
} chunk;

static char g_path[4096];        /* MGPU_CACHED_TRACE; empty: NVTX only (constructor) */
static pid_t g_init_pid;         /* process that read the environment (fork: child differs) */
static chunk **g_chunks;         /* g_max_chunks slots; a slot is written once by its claimer */
static uint32_t g_max_chunks;    /* constructor */
static uint32_t g_nchunks;       /* atomic: chunks claimed (may pass g_max_chunks once) */
static uint64_t g_trace_dropped;       /* atomic: records not kept (bound reached or no memory) */
static uint32_t g_generation;    /* atomic: bumped in a forked child: thread chunks are stale */
static uint32_t g_seq;           /* atomic: launch/copy numbers */
static int g_used;               /* atomic: a traced call happened in this process */
static int g_exit_registered;    /* atomic: the first at-exit registration was made */
static int g_rearm;              /* atomic: 1 after a write; the next record registers a writer */
static pthread_mutex_t g_write_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_written_count = UINT64_MAX; /* records in the last write (under g_write_lock) */
static uint64_t g_written_dropped;            /* dropped count of the last write (same) */

static pthread_mutex_t g_name_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *g_trace_names[MC_TRACE_NAMES]; /* id -> name (strdup'd, never freed) */
static uint32_t g_nnames = 1;               /* under g_name_lock; id 0 = none */
static uint32_t g_name_slots[MC_TRACE_NAME_SLOTS]; /* atomic: name ids by hash, 0 = empty */
static uint64_t g_fn_slots[MC_TRACE_FN_SLOTS];     /* atomic: function << 16 | name id */

static _Thread_local mc_trace_span *tl_current; /* span in progress on this thread */
static _Thread_local int tl_bypass;             /* the next entry point is a wrapper's call */
static _Thread_local uint8_t tl_depth;
static _Thread_local uint32_t tl_tid;
static _Thread_local chunk *tl_chunk;
static _Thread_local uint32_t tl_chunk_gen;

static void trace_flush_at_exit(void);
static void write_trace(int may_call_driver);

/* ---- configuration (constructor) and fork ---- */

void mc_trace_fork_child(void) {
  if (!g_chunks) return;
  pthread_mutex_init(&g_write_lock, NULL);
  pthread_mutex_init(&g_name_lock, NULL);
  /* the parent's records stay behind (copy-on-write memory, not freed: other threads' chunks
   * may be in any state); the child claims chunks from the start again */
  for (uint32_t i = 0; i < g_max_chunks; ++i) g_chunks[i] = NULL;
  __atomic_store_n(&g_nchunks, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_trace_dropped, 0, __ATOMIC_RELAXED);
  __atomic_fetch_add(&g_generation, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&g_used, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_rearm, 0, __ATOMIC_RELAXED);
  g_written_count = UINT64_MAX;
  g_written_dropped = 0;
  tl_tid = 0; /* the forking thread has a new id in the child */
  if (g_gpu) g_gpu->forget();
}

/* The variables are parsed by config.c (MC_CONFIG_VARS), but only when one of the two that turn
 * the trace on is set at all, so that an untraced process reads its configuration at its first
 * call as before. */
__attribute__((constructor)) static void mc_trace_init(void) {
  int nvtx = mc_trace_nvtx_init();
  if (mc_config_is_set(MC_CFG_trace_file)) {
    const mc_config_t *cfg = mc_config();
    unsigned long long limit = cfg->trace_limit; /* at most MC_CFG_TRACE_LIMIT_MAX (config.c) */
    g_max_chunks = (uint32_t)((limit + MC_TRACE_CHUNK - 1) / MC_TRACE_CHUNK);
    g_chunks = calloc(g_max_chunks ? g_max_chunks : 1, sizeof *g_chunks);
    if (g_chunks && cfg->trace_file && strlen(cfg->trace_file) < sizeof g_path - 32) {
      strcpy(g_path, cfg->trace_file);
      g_init_pid = getpid();
      mc_trace_gpu = cfg->trace_gpu;
    }
  }
  mc_trace_on = g_path[0] != 0 || nvtx;
  if (mc_trace_on) mc_stats_observer = mc_trace_stat; /* stats.h: a call notes its counters */
}

__attribute__((destructor)) static void mc_trace_fini(void) {
  if (mc_trace_on) write_trace(0);
}

/* ---- spans ---- */

uint64_t mc_trace_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint32_t thread_id(void) {
  if (!tl_tid) tl_tid = (uint32_t)syscall(SYS_gettid);
  return tl_tid;
}

int mc_trace_take(void) {
  if (tl_bypass) {
    tl_bypass = 0;
    return 0;
  }
  return 1;
}

void mc_trace_register_exit(void) { atexit(trace_flush_at_exit); }

void mc_trace_begin(mc_trace_span *sp, mc_trace_call_id call) {
  if (!__atomic_load_n(&g_used, __ATOMIC_RELAXED)) {
    __atomic_store_n(&g_used, 1, __ATOMIC_RELAXED);
    if (!__atomic_exchange_n(&g_exit_registered, 1, __ATOMIC_ACQ_REL)) mc_trace_register_exit();
  }
  memset(&sp->rec, 0, sizeof sp->rec);
  sp->rec.call = (uint16_t)call;
  sp->rec.tid = thread_id();
  sp->rec.depth = tl_depth++;
  sp->outer = tl_current;
  sp->nvtx = 0;
  tl_current = sp;
  sp->rec.t0 = mc_trace_now();
}

static const char *const k_call_names[] = {
#define MC_TRACE_NAME(name) "mgpu" #name,
    MC_TRACE_CALLS(MC_TRACE_NAME)
#undef MC_TRACE_NAME
};

void mc_trace_bypass(void) {
  mc_trace_span *sp = tl_current;
  if (sp && mc_trace_nvtx_enabled()) {
    const char *n = sp->rec.name ? mc_trace_name(sp->rec.name) : NULL;
    mc_trace_nvtx_push(n ? n : k_call_names[sp->rec.call]);
    sp->nvtx = 1;
  }
  tl_bypass = 1;
}

void mc_trace_end(mc_trace_span *sp) {
  sp->rec.t1 = mc_trace_now();
  tl_bypass = 0; /* in case the entry point called was not ours */
  tl_depth = sp->rec.depth;
  tl_current = sp->outer;
  if (sp->nvtx) mc_trace_nvtx_pop();
  if (g_path[0]) mc_trace_keep(&sp->rec);
  if (mc_trace_gpu && g_gpu && (sp->rec.call == MC_TR_StreamSynchronize ||
                                sp->rec.call == MC_TR_EventSynchronize))
    g_gpu->poll(32); /* after the span: its work is done, its events read cheaply */
}

mc_trace_span *mc_trace_current(void) { return tl_current; }

void mc_trace_stat(int id) {
  mc_trace_span *sp = tl_current;
  if (sp && id >= 0 && id < 64) sp->rec.notes |= 1ULL << id;
}

uint32_t mc_trace_next_seq(void) { return __atomic_add_fetch(&g_seq, 1, __ATOMIC_RELAXED); }

int mc_trace_keep(const mc_trace_rec *rec) {
  if (!g_chunks) return -1;
  uint32_t gen = __atomic_load_n(&g_generation, __ATOMIC_RELAXED);
  chunk *c = tl_chunk;
  if (!c || tl_chunk_gen != gen || c->n == MC_TRACE_CHUNK) {
    tl_chunk = NULL;
    uint32_t idx = __atomic_load_n(&g_nchunks, __ATOMIC_RELAXED) < g_max_chunks
                       ? __atomic_fetch_add(&g_nchunks, 1, __ATOMIC_RELAXED)
                       : g_max_chunks;
    c = idx < g_max_chunks ? malloc(sizeof *c) : NULL;
    if (!c) {
      __atomic_fetch_add(&g_trace_dropped, 1, __ATOMIC_RELAXED);
      return -1;
    }
    c->n = 0;
    __atomic_store_n(&g_chunks[idx], c, __ATOMIC_RELEASE);
    tl_chunk = c;
    tl_chunk_gen = gen;
  }
  uint32_t n = c->n;
  c->recs[n] = *rec;
  __atomic_store_n(&c->n, n + 1, __ATOMIC_RELEASE);
  if (__atomic_load_n(&g_rearm, __ATOMIC_RELAXED) &&
      __atomic_exchange_n(&g_rearm, 0, __ATOMIC_ACQ_REL))
    mc_trace_register_exit(); /* a record after a write (exit in progress): write again */
  return 0;
}

/* ---- names ---- */

static uint32_t hash_str(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

const char *mc_trace_name(uint32_t id) {
  return id && id < MC_TRACE_NAMES ? __atomic_load_n(&g_trace_names[id], __ATOMIC_ACQUIRE) : NULL;
}

uint32_t mc_trace_name_id(const char *name) {
  if (!name) return 0;
  uint32_t h = hash_str(name);
  for (int locked = 0; locked < 2; ++locked) {
    if (locked) pthread_mutex_lock(&g_name_lock);
    for (uint32_t i = 0; i < MC_TRACE_NAME_SLOTS; ++i) {
      uint32_t *slot = &g_name_slots[(h + i) & (MC_TRACE_NAME_SLOTS - 1)];
      uint32_t id = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
      if (!id) {
        if (!locked) break; /* not there: insert under the lock (found again if raced) */
        if (g_nnames >= MC_TRACE_NAMES) break;
        char *copy = strdup(name);
        if (!copy) break;
        id = g_nnames++;
        __atomic_store_n(&g_trace_names[id], copy, __ATOMIC_RELEASE);
        __atomic_store_n(slot, id, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&g_name_lock);
        return id;
      }
      if (strcmp(mc_trace_name(id), name) == 0) {
        if (locked) pthread_mutex_unlock(&g_name_lock);
        return id;
      }
    }
    if (locked) pthread_mutex_unlock(&g_name_lock);
  }
  return 0;
}

#define FN_PROBES 8 /* slots tried from a function's hash slot */

static uint32_t fn_hash(uint64_t key) { /* handles may be small tagged integers: mix them */
  return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 40) & (MC_TRACE_FN_SLOTS - 1);
}

void mc_trace_function_name(const void *function, uint32_t name) {
  uint64_t key = (uint64_t)(uintptr_t)function & ((1ULL << 48) - 1);
  if (!key) return;
  uint64_t word = key << 16 | (name & 0xFFFF);
  uint32_t h = fn_hash(key);
  for (uint32_t i = 0; i < FN_PROBES; ++i) {
    uint64_t *slot = &g_fn_slots[(h + i) & (MC_TRACE_FN_SLOTS - 1)];
    uint64_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if ((v >> 16) == key) {
      if (v != word) __atomic_store_n(slot, word, __ATOMIC_RELAXED);
      return;
    }
    if (!v && __atomic_compare_exchange_n(slot, &v, word, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return;
  }
  __atomic_store_n(&g_fn_slots[h], word, __ATOMIC_RELAXED); /* full: replace the first */
}

uint32_t mc_trace_function_lookup(const void *function) {
  uint64_t key = (uint64_t)(uintptr_t)function & ((1ULL << 48) - 1);
  if (!key) return 0;
  uint32_t h = fn_hash(key);
  for (uint32_t i = 0; i < FN_PROBES; ++i) {
    uint64_t v = __atomic_load_n(&g_fn_slots[(h + i) & (MC_TRACE_FN_SLOTS - 1)], __ATOMIC_RELAXED);
    if ((v >> 16) == key) return (uint32_t)(v & 0xFFFF);
    if (!v) return 0;
  }
  return 0;
}

/* ---- the writer ---- */

typedef struct { const char *a, *b, *res; } arg_names; /* NULL: not recorded */
/* Names of rec.a / rec.b / rec.res per call; a name starting with '#' is a number, else a hex
 * handle or address. */
static arg_names call_args(int call) {
  switch (call) {
  case MC_TR_ModuleLoad: return (arg_names){"blob", "#size", "module"};
  case MC_TR_ModuleLoadJIT: return (arg_names){"blob", "#opt_level", "module"};
  case MC_TR_ModuleUnload: return (arg_names){"module", NULL, NULL};
  case MC_TR_ModuleGetFunction: return (arg_names){"module", NULL, "function"};
  case MC_TR_LaunchKernel:
  case MC_TR_LaunchKernelCooperative:
  case MC_TR_LaunchClusterKernel: return (arg_names){"function", NULL, NULL};
  case MC_TR_StreamCreate: return (arg_names){NULL, NULL, "stream"};
  case MC_TR_EventCreate: return (arg_names){NULL, NULL, "event"};
  case MC_TR_StreamWaitEvent:
  case MC_TR_EventDestroy:
  case MC_TR_EventSynchronize:
  case MC_TR_EventRecord: return (arg_names){"event", NULL, NULL};
  case MC_TR_MemAlloc: return (arg_names){"#bytes", "#host_shared", "ptr"};
  case MC_TR_MemFree: return (arg_names){"ptr", NULL, NULL};
  case MC_TR_Memcpy:
  case MC_TR_Memset32:
  case MC_TR_Memset16: return (arg_names){"dst", "#bytes", NULL};
  case MC_TR_MemHostRegister: return (arg_names){"ptr", "#bytes", NULL};
  case MC_TR_MemHostUnregister: return (arg_names){"ptr", NULL, NULL};
  case MC_TR_MemHostRegisterMemRef:
  case MC_TR_MemHostUnregisterMemRef: return (arg_names){"descriptor", "#rank", NULL};
  case MC_TR_SetDefaultDevice: return (arg_names){"#device", NULL, NULL};
  case MC_TR_TensorMapEncodeTiledMemref: return (arg_names){"descriptor", "#rank", "map"};
  case MC_TR_ModuleGetGlobal: return (arg_names){"module", NULL, NULL};
  default: return (arg_names){NULL, NULL, NULL};
  }
}

static int has_stream(int call) {
  switch (call) {
  case MC_TR_LaunchKernel: case MC_TR_LaunchKernelCooperative: case MC_TR_LaunchClusterKernel:
  case MC_TR_StreamDestroy: case MC_TR_StreamSynchronize: case MC_TR_StreamWaitEvent:
  case MC_TR_EventRecord: case MC_TR_MemAlloc: case MC_TR_MemFree: case MC_TR_Memcpy:
  case MC_TR_Memset32: case MC_TR_Memset16: return 1;
  default: return 0;
  }
}

static int is_launch(int call) {
  return call == MC_TR_LaunchKernel || call == MC_TR_LaunchKernelCooperative ||
         call == MC_TR_LaunchClusterKernel;
}

static void put_ts(FILE *f, const char *key, uint64_t ns) {
  fprintf(f, "\"%s\":%llu.%03llu", key, (unsigned long long)(ns / 1000),
          (unsigned long long)(ns % 1000));
}

static void put_str(FILE *f, const char *s) { /* a JSON string (names come from programs) */
  fputc('"', f);
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void put_arg(FILE *f, const char *name, uint64_t v) {
  if (name[0] == '#') fprintf(f, ",\"%s\":%llu", name + 1, (unsigned long long)v);
  else fprintf(f, ",\"%s\":\"0x%llx\"", name, (unsigned long long)v);
}

typedef struct { uint64_t stream; int16_t device; } track;

static uint32_t track_of(track *tracks, uint32_t *ntracks, uint64_t stream, int16_t device) {
  for (uint32_t i = 0; i < *ntracks; ++i)
    if (tracks[i].stream == stream && tracks[i].device == device) return i;
  tracks[*ntracks].stream = stream;
  tracks[*ntracks].device = device;
  return (*ntracks)++;
}

static int cmp_rec(const void *x, const void *y) {
  const mc_trace_rec *a = *(const mc_trace_rec *const *)x, *b = *(const mc_trace_rec *const *)y;
  if (a->t0 != b->t0) return a->t0 < b->t0 ? -1 : 1;
  if (a->t1 != b->t1) return a->t1 > b->t1 ? -1 : 1; /* the enclosing span first */
  return a->depth < b->depth ? -1 : a->depth > b->depth;
}

static void write_rec(FILE *f, const mc_trace_rec *r, int pid, track *tracks,
                      uint32_t *ntracks) {
  const char *kname = r->name ? mc_trace_name(r->name) : NULL;
  if (r->kind == MC_TRACE_GPU_SPAN) {
    uint32_t t = track_of(tracks, ntracks, r->res, r->device);
    const char *what = kname ? kname : r->call == MC_TR_Memcpy ? "memcpy"
                                   : r->call == MC_TR_Memset32 ? "memset32"
                                   : r->call == MC_TR_Memset16 ? "memset16" : "kernel";
    fputs("{\"name\":", f);
    put_str(f, what);
    fprintf(f, ",\"cat\":\"gpu\",\"ph\":\"X\",");
    put_ts(f, "ts", r->t0);
    fputc(',', f);
    put_ts(f, "dur", r->t1 - r->t0);
    fprintf(f, ",\"pid\":%d,\"tid\":%u,\"args\":{\"stream\":\"0x%llx\",\"driver_stream\":"
               "\"0x%llx\",\"device\":%d,\"%s\":%u,\"call\":\"%s\"",
            pid, MC_TRACE_GPU_TID + t, (unsigned long long)r->stream, (unsigned long long)r->res,
            r->device, is_launch(r->call) ? "launch" : "copy", r->seq, k_call_names[r->call]);
    if (!is_launch(r->call)) fprintf(f, ",\"bytes\":%llu", (unsigned long long)r->a);
    fputs("}},\n", f);
    /* a flow arrow from the launching call to the span */
    fprintf(f, "{\"name\":\"enqueue\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%u,\"pid\":%d,"
               "\"tid\":%u,", r->seq, pid, r->tid);
    put_ts(f, "ts", r->b);
    fprintf(f, "},\n{\"name\":\"enqueue\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%u,"
               "\"pid\":%d,\"tid\":%u,", r->seq, pid, MC_TRACE_GPU_TID + t);
    put_ts(f, "ts", r->t0);
    fputs("},\n", f);
    return;
  }
  fprintf(f, "{\"name\":\"%s\",\"cat\":\"mgpu\",\"ph\":\"X\",", k_call_names[r->call]);
  put_ts(f, "ts", r->t0);
  fputc(',', f);
  put_ts(f, "dur", r->t1 - r->t0);
  fprintf(f, ",\"pid\":%d,\"tid\":%u,\"args\":{\"depth\":%u", pid, r->tid, r->depth);
  arg_names an = call_args(r->call);
  if (kname) {
    fputs(",\"kernel\":", f);
    put_str(f, kname);
  }
  if (is_launch(r->call)) {
    fprintf(f, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%d,\"launch\":%u", r->grid[0],
            r->grid[1], r->grid[2], r->block[0], r->block[1], r->block[2], r->smem, r->seq);
  } else if (r->seq) {
    fprintf(f, ",\"copy\":%u", r->seq);
  }
  if (has_stream(r->call)) fprintf(f, ",\"stream\":\"0x%llx\"", (unsigned long long)r->stream);
  if (an.a) put_arg(f, an.a, r->a);
  if (an.b) put_arg(f, an.b, r->b);
  if (an.res) put_arg(f, an.res, r->res);
  if (r->flags & MC_TRACE_F_GPU) fputs(",\"gpu\":true", f);
  if (r->notes) {
    fputs(",\"counters\":[", f);
    int first = 1;
    for (int i = 0; i < 64; ++i)
      if (r->notes & (1ULL << i)) {
        const char *n = mgpu_cached_stats_name(i);
        if (!n) continue;
        fprintf(f, "%s\"%s\"", first ? "" : ",", n);
        first = 0;
      }
    fputc(']', f);
  }
  fputs("}},\n", f);
}

/* The output path of this process: "%p" replaced by the pid; a forked child adds ".<pid>". */
static void output_path(char *out, size_t size) {
  int pid = (int)getpid();
  size_t o = 0;
  int had_p = 0;
  for (const char *s = g_path; *s && o + 16 < size; ++s) {
    if (s[0] == '%' && s[1] == 'p') {
      o += (size_t)snprintf(out + o, size - o, "%d", pid);
      ++s;
      had_p = 1;
    } else {
      out[o++] = *s;
    }
  }
  out[o] = 0;
  if (!had_p && pid != g_init_pid) snprintf(out + o, size - o, ".%d", pid);
}

/* Write the file (skipped when nothing changed). `may_call_driver`: finished GPU spans may be
 * read back first (not from the library destructor, which may run after the driver's). */
static void write_trace(int may_call_driver) {
  if (!g_path[0] || !__atomic_load_n(&g_used, __ATOMIC_RELAXED)) return;
  pthread_mutex_lock(&g_write_lock);
  if (mc_trace_gpu && g_gpu && may_call_driver) g_gpu->drain(200);
  uint32_t nc = __atomic_load_n(&g_nchunks, __ATOMIC_ACQUIRE);
  if (nc > g_max_chunks) nc = g_max_chunks;
  uint64_t total = 0;
  for (uint32_t i = 0; i < nc; ++i) {
    chunk *c = __atomic_load_n(&g_chunks[i], __ATOMIC_ACQUIRE);
    if (c) total += __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
  }
  uint64_t dropped = __atomic_load_n(&g_trace_dropped, __ATOMIC_RELAXED);
  uint64_t gpu_dropped = mc_trace_gpu && g_gpu ? g_gpu->dropped() + g_gpu->pending() : 0;
  if (total == g_written_count && dropped + gpu_dropped == g_written_dropped) {
    pthread_mutex_unlock(&g_write_lock);
    return;
  }
  const mc_trace_rec **order = malloc((total ? total : 1) * sizeof *order);
  track *tracks = calloc(total + 1, sizeof *tracks);
  uint32_t *tids = calloc(total + 1, sizeof *tids);
  char path[sizeof g_path + 32], tmp[sizeof path + 32];
  output_path(path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  FILE *f = (order && tracks && tids) ? fopen(tmp, "w") : NULL;
  if (!f) {
    pthread_mutex_unlock(&g_write_lock);
    fprintf(stderr, "mgpu-cached: cannot write the trace '%s': %s\n", path,
            (order && tracks && tids) ? strerror(errno) : "out of memory");
    free(order), free(tracks), free(tids);
    return;
  }
  uint64_t n = 0;
  for (uint32_t i = 0; i < nc && n < total; ++i) {
    chunk *c = __atomic_load_n(&g_chunks[i], __ATOMIC_ACQUIRE);
    uint32_t k = c ? __atomic_load_n(&c->n, __ATOMIC_ACQUIRE) : 0;
    for (uint32_t j = 0; j < k && n < total; ++j) order[n++] = &c->recs[j];
  }
  qsort(order, n, sizeof *order, cmp_rec);
  int pid = (int)getpid();
  fputs("{\"traceEvents\":[\n", f);
  fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
          pid);
  char pname[256];
  snprintf(pname, sizeof pname, "%s (mgpu-cached)", program_invocation_short_name);
  put_str(f, pname);
  fputs("}},\n", f);
  uint32_t ntids = 0, ntracks = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const mc_trace_rec *r = order[i];
    uint32_t j = 0;
    while (j < ntids && tids[j] != r->tid) ++j;
    if (j == ntids) {
      tids[ntids++] = r->tid;
      fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{"
                 "\"name\":\"%s %u\"}},\n",
              pid, r->tid, (int)r->tid == pid ? "main thread" : "thread", r->tid);
    }
    if (r->kind == MC_TRACE_GPU_SPAN) {
      uint32_t before = ntracks;
      uint32_t t = track_of(tracks, &ntracks, r->res, r->device);
      if (t == before) {
        fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{"
                   "\"name\":\"GPU %d stream %u\",\"stream\":\"0x%llx\"}},\n",
                pid, MC_TRACE_GPU_TID + t, r->device, t + 1, (unsigned long long)r->res);
        fprintf(f, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                   "\"args\":{\"sort_index\":%u}},\n",
                pid, MC_TRACE_GPU_TID + t, 1000000 + t);
      }
    }
  }
  for (uint64_t i = 0; i < n; ++i) write_rec(f, order[i], pid, tracks, &ntracks);
  fprintf(f, "{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
             "\"args\":{\"labels\":\"mgpu-cached trace\"}}\n", pid);
  fprintf(f, "],\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"mgpu-cached\","
             "\"version\":\"%s\",\"mode\":\"%s\",\"backend\":\"%s\",\"gpu_spans\":%s,"
             "\"pid\":%d,\"records\":%llu,\"dropped_records\":%llu,\"dropped_gpu_spans\":%llu,"
             "\"limit\":%llu,\"clock\":\"CLOCK_MONOTONIC\"}}\n",
          mgpu_cached_version(), mc_disabled() ? "stock" : "cached", mc_backend_name(),
          mc_trace_gpu ? "true" : "false", pid, (unsigned long long)n,
          (unsigned long long)dropped, (unsigned long long)gpu_dropped,
          (unsigned long long)g_max_chunks * MC_TRACE_CHUNK);
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    fprintf(stderr, "mgpu-cached: cannot write the trace '%s': %s\n", path, strerror(errno));
    unlink(tmp);
  } else {
    g_written_count = total;
    g_written_dropped = dropped + gpu_dropped;
    __atomic_store_n(&g_rearm, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_write_lock);
  free(order), free(tracks), free(tids);
}

/* At exit: only the first at-exit write reads GPU spans back. It is the one registered last
 * before exit began, after the driver was initialised (trace_gpu.c), so it runs before the
 * driver's own exit handler; later ones may run after it. */
static void trace_flush_at_exit(void) {
  static int writes; /* at-exit writes so far (exit runs handlers on one thread) */
  write_trace(writes++ == 0);
}

/* Write the trace now (it is written at exit anyway): 0, or -1 when tracing is off. */
__attribute__((visibility("default"))) int mgpu_cached_trace_write(void) {
  if (!g_path[0]) return -1;
  write_trace(1);
  return 0;
}
