/* module_cache.c - module cache and function resolution (see module_cache.h).
 *
 * Locking rule: g_cache.lock guards the hash table, the list of unreferenced modules, every
 * module's refs, in_table, idle links, extra list and resolved[] flags, and all driver calls that
 * load, unload or resolve. Fields marked immutable are
 * written before the object is published (inserted in a handle set, which uses release stores) and
 * never change, so lock-free readers (mgpuModuleGetFunction's first scan, launches) may read them.
 * A cache hit holds the lock only to find the module and take a reference (which keeps it from
 * being retired); the byte comparison with the private copy (immutable) runs outside the lock, so
 * threads that load modules per launch (LLVM <= 20 code) do not serialise on it. resolved[d] is set
 * once, under the lock, with a release store, and may be read without the lock (acquire).
 * fn[] and smem[] of a function are atomics: fn[d] is written once, under the lock; smem[d] only
 * grows and may be raised twice by racing launches, which is harmless.
 */
#include "module_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"
#include "config.h"
#include "context.h"
#include "driver.h"
#include "handle_set.h"
#include "report.h"
#include "stats.h"

#define MC_BUCKETS 256

struct mc_function {
  mc_module *module;  /* owner; immutable */
  char *name;         /* owned copy; immutable */
  uint64_t name_hash; /* immutable */
  CUkernel kernel;    /* library-level kernel; immutable */
  CUfunction *fn;     /* [ndev] per-device function; atomic, written once under the lock */
  int *smem;          /* [ndev] dynamic shared memory limit set so far; atomic, only grows */
  mc_function *next;  /* next in module->extra; under the lock */
};

struct mc_module {
  const void *key;       /* blob address (cache key); immutable */
  unsigned char *copy;   /* private copy of the blob, for hit verification; immutable, owned */
  size_t len;            /* blob length from its header; immutable */
  mc_blob_kind kind;     /* immutable */
  int jit, opt_level;    /* loaded through mgpuModuleLoadJIT at this level; immutable */
  CUlibrary lib;         /* driver library; immutable, unloaded once dead */
  size_t nfuncs;         /* kernels enumerated at load; immutable */
  mc_function **funcs;   /* [nfuncs]; immutable */
  mc_function *extra;    /* kernels found later by name (old drivers); under the lock */
  unsigned char *resolved; /* [ndev] all kernels resolved on that device; set under the lock */
  int refs;              /* loads minus unloads; under the lock */
  int in_table;          /* reachable through the hash table; under the lock */
  int idle;              /* in the list of unreferenced modules; under the lock */
  mc_module *idle_prev, *idle_next; /* that list, oldest first; under the lock */
  int dead;              /* atomic: unloaded from the driver; handles to it now fail */
  mc_module *next;       /* hash chain; under the lock */
};

static struct {
  pthread_mutex_t lock;               /* see the locking rule above */
  mc_module *buckets[MC_BUCKETS];     /* chains of modules in the table */
  mc_module *idle_head, *idle_tail;   /* cached modules nobody references, oldest first */
  size_t nidle;                       /* length of that list */
} g_cache = {PTHREAD_MUTEX_INITIALIZER, {0}, NULL, NULL, 0};

static mc_handle_set g_modules = MC_HANDLE_SET_INIT;   /* every mc_module made */
static mc_handle_set g_functions = MC_HANDLE_SET_INIT; /* every mc_function made */

static size_t bucket_of(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 32;
  return (size_t)(x % MC_BUCKETS);
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static int ndev(void) {
  int n = mc_device_count();
  return n > 0 ? n : 1;
}

static mc_function *function_new(mc_module *m, CUkernel k, const char *name) {
  mc_function *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->fn = calloc((size_t)ndev(), sizeof *f->fn);
  f->smem = calloc((size_t)ndev(), sizeof *f->smem);
  f->name = strdup(name ? name : "");
  if (!f->fn || !f->smem || !f->name) {
    free(f->fn);
    free(f->smem);
    free(f->name);
    free(f);
    return NULL;
  }
  f->module = m;
  f->kernel = k;
  f->name_hash = hash_name(f->name);
  return f;
}

/* Resolve one function on `device` (its context current). Lock held. */
static mc_status resolve_function_locked(mc_function *f, int device) {
  if (__atomic_load_n(&f->fn[device], __ATOMIC_ACQUIRE)) return MC_OK;
  CUfunction cf = NULL;
  MC_CU_TRY("cuKernelGetFunction", mc_cu.cuKernelGetFunction(&cf, f->kernel));
  __atomic_store_n(&f->fn[device], cf, __ATOMIC_RELEASE);
  MC_STAT_INC(function_resolves);
  return MC_OK;
}

/* Resolve every kernel of `m` on `device` (its context current). Lock held. */
static mc_status resolve_module_locked(mc_module *m, int device) {
  if (__atomic_load_n(&m->resolved[device], __ATOMIC_ACQUIRE)) return MC_OK;
  for (size_t i = 0; i < m->nfuncs; ++i) {
    mc_status st = resolve_function_locked(m->funcs[i], device);
    if (MC_FAILED(st)) return st;
  }
  for (mc_function *f = m->extra; f; f = f->next) {
    mc_status st = resolve_function_locked(f, device);
    if (MC_FAILED(st)) return st;
  }
  __atomic_store_n(&m->resolved[device], 1, __ATOMIC_RELEASE);
  return MC_OK;
}

/* Unload a module nobody references any more. Lock held. */
static void retire_locked(mc_module *m) {
  if (__atomic_load_n(&m->dead, __ATOMIC_ACQUIRE)) return;
  mc_cu.cuLibraryUnload(m->lib); /* failures (e.g. at exit) are of no consequence here */
  __atomic_store_n(&m->dead, 1, __ATOMIC_RELEASE);
  MC_STAT_INC(driver_module_unloads);
  mc_debug("unloaded module of blob %p (%zu bytes)", m->key, m->len);
}

/* The list of cached modules nobody references (kept for the next load of their blob, which LLVM
 * <= 20 code makes on every launch), oldest first, at most MGPU_CACHED_MODULE_CACHE long. */
static void idle_remove_locked(mc_module *m) {
  if (!m->idle) return;
  if (m->idle_prev) m->idle_prev->idle_next = m->idle_next;
  else g_cache.idle_head = m->idle_next;
  if (m->idle_next) m->idle_next->idle_prev = m->idle_prev;
  else g_cache.idle_tail = m->idle_prev;
  m->idle_prev = m->idle_next = NULL;
  m->idle = 0;
  g_cache.nidle--;
}

static void idle_push_locked(mc_module *m) {
  m->idle_prev = g_cache.idle_tail;
  m->idle_next = NULL;
  if (g_cache.idle_tail) g_cache.idle_tail->idle_next = m;
  else g_cache.idle_head = m;
  g_cache.idle_tail = m;
  m->idle = 1;
  g_cache.nidle++;
}

static void unlink_locked(mc_module *m) {
  mc_module **pp = &g_cache.buckets[bucket_of(m->key)];
  while (*pp && *pp != m) pp = &(*pp)->next;
  if (*pp) *pp = m->next;
  m->next = NULL;
  m->in_table = 0;
}

/* Unload the oldest unreferenced modules beyond the limit. Lock held. */
static void evict_idle_locked(void) {
  size_t cap = mc_config()->module_cache;
  while (g_cache.nidle > cap) {
    mc_module *m = g_cache.idle_head;
    idle_remove_locked(m);
    unlink_locked(m);
    retire_locked(m);
    MC_STAT_INC(module_evictions);
  }
}

/* Enumerate the library's kernels into m->funcs. Drivers before 12.4 cannot enumerate; their
 * kernels are then found by name in mc_module_get_function. Lock held. */
static mc_status enumerate_locked(mc_module *m) {
  if (!mc_cu.cuLibraryGetKernelCount || !mc_cu.cuLibraryEnumerateKernels || !mc_cu.cuKernelGetName)
    return MC_OK;
  unsigned int count = 0;
  MC_CU_TRY("cuLibraryGetKernelCount", mc_cu.cuLibraryGetKernelCount(&count, m->lib));
  if (!count) return MC_OK;
  CUkernel *ks = calloc(count, sizeof *ks);
  m->funcs = calloc(count, sizeof *m->funcs);
  if (!ks || !m->funcs) {
    free(ks);
    return MC_FAIL("mgpuModuleLoad", MC_E_NO_MEMORY);
  }
  CUresult r = mc_cu.cuLibraryEnumerateKernels(ks, count, m->lib);
  if (r != 0) {
    free(ks);
    return MC_FAIL("cuLibraryEnumerateKernels", r);
  }
  for (unsigned int i = 0; i < count; ++i) {
    const char *name = NULL;
    r = mc_cu.cuKernelGetName(&name, ks[i]);
    if (r != 0) {
      free(ks);
      return MC_FAIL("cuKernelGetName", r);
    }
    mc_function *f = function_new(m, ks[i], name);
    if (!f || mc_handle_set_insert(&g_functions, f) != 0) {
      free(ks);
      return MC_FAIL("mgpuModuleLoad", MC_E_NO_MEMORY);
    }
    m->funcs[m->nfuncs++] = f;
  }
  free(ks);
  return MC_OK;
}

/* Load a blob into the driver as a new module. Lock held. */
static mc_status load_locked(const void *blob, mc_blob_kind kind, size_t len, int jit,
                             int opt_level, mc_module **out, char *log, size_t log_size) {
  mc_module *m = calloc(1, sizeof *m);
  if (!m) return MC_FAIL("mgpuModuleLoad", MC_E_NO_MEMORY);
  m->resolved = calloc((size_t)ndev(), 1);
  if (!m->resolved) {
    free(m);
    return MC_FAIL("mgpuModuleLoad", MC_E_NO_MEMORY);
  }
  m->key = blob;
  m->jit = jit;
  m->opt_level = opt_level;

  CUresult r;
  if (jit) {
    char errlog[4096];
    errlog[0] = 0;
    CUjit_option opts[3] = {MC_CU_JIT_ERROR_LOG_BUFFER, MC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            MC_CU_JIT_OPTIMIZATION_LEVEL};
    void *vals[3] = {errlog, (void *)(uintptr_t)sizeof errlog, (void *)(intptr_t)opt_level};
    r = mc_cu.cuLibraryLoadData(&m->lib, blob, opts, vals, 3, NULL, NULL, 0);
    if (r != 0 && log && log_size) {
      strncpy(log, errlog, log_size - 1);
      log[log_size - 1] = 0;
    }
  } else {
    r = mc_cu.cuLibraryLoadData(&m->lib, blob, NULL, NULL, 0, NULL, NULL, 0);
  }
  if (r != 0) {
    free(m->resolved);
    free(m);
    return MC_FAIL("cuLibraryLoadData", r);
  }
  MC_STAT_INC(driver_module_loads);
  /* Copied once the driver accepted the bytes (their extent was checked by mc_blob_identify).
   * Without a copy the module is simply not cached. */
  if (kind != MC_BLOB_UNKNOWN && len && (m->copy = malloc(len)) != NULL) {
    memcpy(m->copy, blob, len);
  } else {
    kind = MC_BLOB_UNKNOWN;
    len = 0;
  }
  m->len = len;
  m->kind = kind;
  mc_status st = enumerate_locked(m);
  if (MC_FAILED(st) || mc_handle_set_insert(&g_modules, m) != 0) {
    /* Kernels already published stay valid memory; the module is marked dead. */
    mc_cu.cuLibraryUnload(m->lib);
    m->dead = 1;
    return MC_FAILED(st) ? st : MC_FAIL("mgpuModuleLoad", MC_E_NO_MEMORY);
  }
  m->refs = 1;
  if (kind != MC_BLOB_UNKNOWN) {
    size_t b = bucket_of(blob);
    m->next = g_cache.buckets[b];
    g_cache.buckets[b] = m;
    m->in_table = 1;
  }
  mc_debug("loaded %s blob %p (%zu bytes, %zu kernels)", mc_blob_kind_name(kind), blob, len,
           m->nfuncs);
  *out = m;
  return MC_OK;
}

/* Resolve the kernels for the calling thread's default device, when that works. Failures are not
 * fatal here: the first launch resolves again and reports. Lock held. */
static void resolve_for_thread_device_locked(mc_module *m) {
  int device = mc_thread_device();
  if (device < 0 || device >= mc_device_count() || __atomic_load_n(&m->resolved[device], __ATOMIC_ACQUIRE))
    return;
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope);
  if (!MC_FAILED(st)) {
    st = resolve_module_locked(m, device);
    mc_ctx_leave(&scope);
  }
  if (MC_FAILED(st)) mc_debug("eager resolution on device %d failed: %s", device, st.call);
}

mc_status mc_module_load(const void *blob, int jit, int opt_level, mc_module **out, char *log,
                         size_t log_size) {
  *out = NULL;
  MC_STAT_INC(module_loads);
  if (!blob) return MC_FAIL(jit ? "mgpuModuleLoadJIT" : "mgpuModuleLoad", MC_E_NULL_ARGUMENT);
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  if (!mc_cu.cuLibraryLoadData || !mc_cu.cuLibraryUnload || !mc_cu.cuKernelGetFunction ||
      !mc_cu.cuLibraryGetKernel)
    return MC_FAIL("cuLibraryLoadData", MC_E_UNSUPPORTED);

  /* The format by its magic only: lengths come from headers, which are trusted only once the
   * driver has accepted the bytes (load_locked); a hit compares the cached copy's length. */
  mc_blob_kind kind = mc_blob_format(blob);

  pthread_mutex_lock(&g_cache.lock);
rescan:
  if (kind != MC_BLOB_UNKNOWN) {
    for (mc_module *m = g_cache.buckets[bucket_of(blob)]; m; m = m->next) {
      if (m->key != blob || m->jit != jit || m->opt_level != opt_level) continue;
      m->refs++; /* held while the bytes are compared outside the lock: never retired meanwhile */
      idle_remove_locked(m);
      pthread_mutex_unlock(&g_cache.lock);
      /* The copy's header is compared first, so a different blob at this address stops the
       * comparison at its first differing byte, within its own bytes (a shorter blob differs no
       * later than its length field or, for PTX, its terminating NUL). */
      int same = m->kind == kind;
      if (same) {
        mc_stat_add(MC_STAT_verify_bytes, (int64_t)m->len);
        same = memcmp(m->copy, blob, m->len) == 0;
      }
      if (same) {
        int device = mc_thread_device();
        if (device >= 0 && device < mc_device_count() &&
            !__atomic_load_n(&m->resolved[device], __ATOMIC_ACQUIRE)) {
          pthread_mutex_lock(&g_cache.lock);
          resolve_for_thread_device_locked(m);
          pthread_mutex_unlock(&g_cache.lock);
        }
        MC_STAT_INC(module_hits);
        *out = m;
        return MC_OK;
      }
      /* A different blob now lives at this address: the old module must never be returned. */
      pthread_mutex_lock(&g_cache.lock);
      m->refs--;
      if (m->in_table) {
        MC_STAT_INC(module_stale);
        mc_debug("blob at %p changed (was %zu bytes): replacing its module", blob, m->len);
        unlink_locked(m);
      }
      if (m->refs == 0) retire_locked(m);
      goto rescan; /* the table may have changed while the lock was released */
    }
  }
  /* A miss: the blob's length from its header, checked to lie in mapped memory. */
  size_t len = 0;
  if (kind != MC_BLOB_UNKNOWN) kind = mc_blob_identify(blob, &len);
  if (kind == MC_BLOB_CORRUPT) {
    pthread_mutex_unlock(&g_cache.lock);
    return MC_FAIL(jit ? "mgpuModuleLoadJIT" : "mgpuModuleLoad", MC_E_BAD_IMAGE);
  }
  mc_module *m = NULL;
  st = load_locked(blob, kind, len, jit, opt_level, &m, log, log_size);
  if (!MC_FAILED(st)) resolve_for_thread_device_locked(m);
  pthread_mutex_unlock(&g_cache.lock);
  if (MC_FAILED(st)) return st;
  MC_STAT_INC(module_misses);
  *out = m;
  return MC_OK;
}

mc_status mc_module_unload(mc_module *m) {
  MC_STAT_INC(module_unloads);
  if (!m) return MC_FAIL("mgpuModuleUnload", MC_E_NULL_ARGUMENT);
  if (!mc_handle_set_contains(&g_modules, m))
    return MC_FAIL("mgpuModuleUnload", MC_E_UNKNOWN_HANDLE);
  pthread_mutex_lock(&g_cache.lock);
  mc_status st = MC_OK;
  if (m->refs <= 0 || __atomic_load_n(&m->dead, __ATOMIC_ACQUIRE)) {
    st = MC_FAIL("mgpuModuleUnload", MC_E_STALE_HANDLE);
  } else if (--m->refs == 0 && !m->in_table) {
    retire_locked(m); /* replaced at its address, or never cacheable: really unload */
  } else if (m->refs == 0) {
    idle_push_locked(m); /* kept for the next load of its blob, within the limit */
    evict_idle_locked();
  }
  pthread_mutex_unlock(&g_cache.lock);
  return st;
}

static mc_function *find_function(mc_function **fs, size_t n, mc_function *list, const char *name,
                                  uint64_t h) {
  for (size_t i = 0; i < n; ++i)
    if (fs[i]->name_hash == h && strcmp(fs[i]->name, name) == 0) return fs[i];
  for (mc_function *f = list; f; f = f->next)
    if (f->name_hash == h && strcmp(f->name, name) == 0) return f;
  return NULL;
}

mc_status mc_module_get_function(mc_module *m, const char *name, mc_function **out) {
  *out = NULL;
  MC_STAT_INC(function_lookups);
  if (!m || !name) return MC_FAIL("mgpuModuleGetFunction", MC_E_NULL_ARGUMENT);
  if (!mc_handle_set_contains(&g_modules, m))
    return MC_FAIL("mgpuModuleGetFunction", MC_E_UNKNOWN_HANDLE);
  if (__atomic_load_n(&m->dead, __ATOMIC_ACQUIRE))
    return MC_FAIL("mgpuModuleGetFunction", MC_E_STALE_HANDLE);
  uint64_t h = hash_name(name);
  mc_function *f = find_function(m->funcs, m->nfuncs, NULL, name, h); /* immutable: no lock */
  if (f) {
    *out = f;
    return MC_OK;
  }
  /* Not enumerated at load: ask the driver by name (old drivers; unknown names fail here). */
  pthread_mutex_lock(&g_cache.lock);
  mc_status st = MC_OK;
  f = find_function(NULL, 0, m->extra, name, h);
  if (!f) {
    CUkernel k = NULL;
    CUresult r = mc_cu.cuLibraryGetKernel(&k, m->lib, name);
    if (r != 0) {
      st = MC_FAIL("cuLibraryGetKernel", r);
    } else {
      f = function_new(m, k, name);
      if (!f || mc_handle_set_insert(&g_functions, f) != 0) {
        st = MC_FAIL("mgpuModuleGetFunction", MC_E_NO_MEMORY);
        f = NULL;
      } else {
        f->next = m->extra;
        m->extra = f;
      }
    }
  }
  pthread_mutex_unlock(&g_cache.lock);
  *out = f;
  return st;
}

mc_status mc_function_prepare(mc_function *f, int device, int smem, CUfunction *out) {
  if (!f) return MC_FAIL("mgpuLaunchKernel", MC_E_NULL_ARGUMENT);
  if (!mc_handle_set_contains(&g_functions, f))
    return MC_FAIL("mgpuLaunchKernel", MC_E_UNKNOWN_HANDLE);
  if (__atomic_load_n(&f->module->dead, __ATOMIC_ACQUIRE))
    return MC_FAIL("mgpuLaunchKernel", MC_E_STALE_HANDLE);
  CUfunction cf = __atomic_load_n(&f->fn[device], __ATOMIC_ACQUIRE);
  if (!cf) { /* first launch on this device: resolve every kernel of the module here */
    pthread_mutex_lock(&g_cache.lock);
    mc_status st = resolve_module_locked(f->module, device);
    if (!MC_FAILED(st)) st = resolve_function_locked(f, device);
    pthread_mutex_unlock(&g_cache.lock);
    if (MC_FAILED(st)) return st;
    cf = __atomic_load_n(&f->fn[device], __ATOMIC_ACQUIRE);
  }
  if (smem > 0 && smem > __atomic_load_n(&f->smem[device], __ATOMIC_RELAXED)) {
    int optin = 0;
    mc_status st = mc_device_max_smem_optin(device, &optin);
    if (MC_FAILED(st)) return st;
    if (optin < smem) /* the stock wrapper's warning; the launch goes ahead as there */
      mc_message("Requested shared memory (%dkb) is larger than maximum allowed shared memory "
                 "(%dkb) for this device", smem, optin);
    MC_CU_TRY("cuFuncSetAttribute",
              mc_cu.cuFuncSetAttribute(cf, MC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
    __atomic_store_n(&f->smem[device], smem, __ATOMIC_RELAXED);
    MC_STAT_INC(smem_attribute_sets);
  }
  *out = cf;
  return MC_OK;
}

/* ---- ROCm-only export (abi_rocm.c): globals of a cached module ---- */

mc_status mc_module_get_global(mc_module *m, const char *name, void **ptr, size_t *bytes) {
  if (!m || !name) return MC_FAIL("mgpuModuleGetGlobal", MC_E_NULL_ARGUMENT);
  if (!mc_handle_set_contains(&g_modules, m))
    return MC_FAIL("mgpuModuleGetGlobal", MC_E_UNKNOWN_HANDLE);
  if (__atomic_load_n(&m->dead, __ATOMIC_ACQUIRE))
    return MC_FAIL("mgpuModuleGetGlobal", MC_E_STALE_HANDLE);
  if (!mc_cu_extra.cuLibraryGetGlobal) return MC_FAIL("cuLibraryGetGlobal", MC_E_UNSUPPORTED);
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(mc_thread_device(), &scope);
  if (MC_FAILED(st)) return st;
  CUdeviceptr d = 0;
  size_t n = 0;
  CUresult r = mc_cu_extra.cuLibraryGetGlobal(&d, &n, m->lib, name); /* m->lib is immutable */
  mc_ctx_leave(&scope);
  if (r != 0) return MC_FAIL("cuLibraryGetGlobal", r);
  if (ptr) *ptr = (void *)(uintptr_t)d;
  if (bytes) *bytes = n;
  return MC_OK;
}
