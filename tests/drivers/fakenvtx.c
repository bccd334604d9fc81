/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fakenvtx.c - a stand-in for a profiler's NVTX injection library (what Nsight Systems names in
 * NVTX_INJECTION64_PATH), for the CPU tests of trace_nvtx.c: InitializeInjectionNvtx2 asks the
 * loader for its core function table and installs RangePushA / RangePop, which log the range
 * names ("pop" for a pop); fakenvtx_log() returns the log, comma-separated. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*nvtx_fn)(void);
typedef struct {
  size_t struct_size;
  int (*GetModuleFunctionTable)(int module, nvtx_fn ***out_table, unsigned *out_size);
} callbacks;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_log[1 << 14];
static size_t g_len;

static void add(const char *s) {
  pthread_mutex_lock(&g_lock);
  size_t n = strlen(s);
  if (g_len + n + 2 < sizeof g_log) {
    if (g_len) g_log[g_len++] = ',';
    memcpy(g_log + g_len, s, n);
    g_len += n;
    g_log[g_len] = 0;
  }
  pthread_mutex_unlock(&g_lock);
}
static int push(const char *name) { add(name ? name : "(null)"); return 0; }
static int pop(void) { add("pop"); return 0; }

EXPORT int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t id)) {
  const callbacks *cb = get_export_table(1); /* NVTX_ETID_CALLBACKS */
  nvtx_fn **table = NULL;
  unsigned size = 0;
  if (!cb || !cb->GetModuleFunctionTable(1 /* core */, &table, &size) || size < 15) return 0;
  *table[9] = (nvtx_fn)push;  /* NVTX_CBID_CORE_RangePushA */
  *table[11] = (nvtx_fn)pop;  /* NVTX_CBID_CORE_RangePop */
  return 1;
}

EXPORT const char *fakenvtx_log(void) { return g_log; }
