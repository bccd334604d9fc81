/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* trace_nvtx.c - NVTX ranges for profilers (see trace.h): when a tool such as Nsight Systems sets
 * NVTX_INJECTION64_PATH, each mgpu* call pushes a range (a launch's named after its kernel), so
 * the tool's timeline shows MLIR kernels by name. Nothing is linked: this is the loader side of
 * NVTX's injection protocol (nvtx3/nvtxDetail/nvtxInit.h, nvtxImpl.h, version 3), loaded with
 * dlopen the first time a range is pushed. The tool's InitializeInjectionNvtx2 receives our export
 * table and fills the function slots of the modules it asks for; only RangePushA and RangePop of
 * the core module are ever called. Without the variable, or if the tool declines, nothing happens.
 *
 * Thread safety: the slots are written by the tool during initialisation, under g_nvtx_once; they are
 * read afterwards without a lock.
 */
#include "trace/trace.h"

#include "support/config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef void (*nvtx_fn)(void);
typedef nvtx_fn **nvtx_table;

/* Module and callback ids, and the table sizes, of NVTX 3 (nvtxTypes.h). */
enum { CB_CORE = 1, CB_CUDA = 2, CB_OPENCL = 3, CB_CUDART = 4, CB_CORE2 = 5, CB_SYNC = 6 };
enum { CORE_RangePushA = 9, CORE_RangePop = 11 };
enum { ETID_CALLBACKS = 1, ETID_VERSIONINFO = 3, NVTX_VERSION_3 = 3 };
static const unsigned k_sizes[7] = {0, 16, 9, 15, 7, 16, 7}; /* NVTX_CBID_<module>_SIZE */
#define NVTX_SLOTS 16

typedef struct {
  size_t struct_size;
  int (*GetModuleFunctionTable)(int module, nvtx_table *out_table, unsigned *out_size);
} export_callbacks;
typedef struct {
  size_t struct_size;
  uint32_t version, reserved0;
  void (*SetInjectionNvtxVersion)(uint32_t version);
} export_version;

static nvtx_fn g_nvtx_slots[7][NVTX_SLOTS];        /* the tool's functions, per module and id */
static nvtx_fn *g_tables[7][NVTX_SLOTS + 1];  /* pointers to the slots (+ a NULL at the end) */
static int g_nvtx_enabled;                         /* atomic: 1 once the tool accepted */
static int g_wanted;                          /* NVTX_INJECTION64_PATH was set (constructor) */
static pthread_once_t g_nvtx_once = PTHREAD_ONCE_INIT;

static int get_module_table(int module, nvtx_table *out_table, unsigned *out_size) {
  if (module < CB_CORE || module > CB_SYNC) return 0;
  if (out_table) *out_table = g_tables[module];
  if (out_size) *out_size = k_sizes[module] - 1;
  return 1;
}
static void set_injection_version(uint32_t version) { (void)version; }

static const export_callbacks k_callbacks = {sizeof(export_callbacks), get_module_table};
static const export_version k_version = {sizeof(export_version), NVTX_VERSION_3, 0,
                                         set_injection_version};

static const void *get_export_table(uint32_t id) {
  return id == ETID_CALLBACKS ? (const void *)&k_callbacks
         : id == ETID_VERSIONINFO ? (const void *)&k_version : NULL;
}

static void load(void) {
  const char *path = mc_config()->nvtx_injection;
  if (!path || !*path) return;
  for (int m = CB_CORE; m <= CB_SYNC; ++m)
    for (unsigned i = 1; i < k_sizes[m]; ++i) g_tables[m][i] = &g_nvtx_slots[m][i];
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  typedef int (*init_fn)(const void *(*get)(uint32_t));
  init_fn init = (init_fn)dlsym(lib, "InitializeInjectionNvtx2");
  if (!init || !init(get_export_table)) {
    dlclose(lib);
    return;
  }
  __atomic_store_n(&g_nvtx_enabled, 1, __ATOMIC_RELEASE); /* the library stays loaded */
}

int mc_trace_nvtx_init(void) {
  g_wanted = mc_config_is_set(MC_CFG_nvtx_injection);
  return g_wanted;
}

int mc_trace_nvtx_enabled(void) {
  if (!g_wanted) return 0;
  pthread_once(&g_nvtx_once, load);
  return __atomic_load_n(&g_nvtx_enabled, __ATOMIC_ACQUIRE);
}

void mc_trace_nvtx_push(const char *name) {
  nvtx_fn f = g_nvtx_slots[CB_CORE][CORE_RangePushA];
  if (f) ((int (*)(const char *))f)(name);
}

void mc_trace_nvtx_pop(void) {
  nvtx_fn f = g_nvtx_slots[CB_CORE][CORE_RangePop];
  if (f) ((int (*)(void))f)();
}
