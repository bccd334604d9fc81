/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparse_lib.c - finding and loading cuSPARSE and cuSPARSELt at run time (see sparse_lib.h).
 *
 * Locking: each library's table is filled once under its pthread_once and read-only afterwards.
 */
#include "sparse/sparse_lib.h"

#include "support/config.h"
#include "support/report.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

mc_cusparse_fns mc_sp;
mc_cusparselt_fns mc_splt;

typedef struct sp_lib {
  const char *what;          /* "cuSPARSE" */
  const char *env;           /* path override variable */
  const char *const *names;  /* file names, most preferred first */
  const char *const *wheels; /* folders below site-packages/nvidia holding lib/<name> */
  pthread_once_t once;
  int ok;                    /* written once under `once` */
  char path[2400];           /* the file loaded */
  char error[4096];          /* why nothing loaded: every place tried */
} sp_lib;

static const char *const k_sp_names[] = {"libcusparse.so.12", "libcusparse.so.11", "libcusparse.so",
                                         NULL};
static const char *const k_sp_wheels[] = {"cu13", "cu12", "cusparse", NULL};
static const char *const k_lt_names[] = {"libcusparseLt.so.0", "libcusparseLt.so", NULL};
static const char *const k_lt_wheels[] = {"cusparselt", NULL};

static sp_lib g_sp = {"cuSPARSE", "MGPU_CACHED_CUSPARSE", k_sp_names, k_sp_wheels,
                      PTHREAD_ONCE_INIT, 0, "", ""};
static sp_lib g_lt = {"cuSPARSELt", "MGPU_CACHED_CUSPARSELT", k_lt_names, k_lt_wheels,
                      PTHREAD_ONCE_INIT, 0, "", ""};

static void note(sp_lib *l, const char *fmt, const char *a) {
  size_t n = strlen(l->error);
  if (n + 8 >= sizeof l->error) return;
  if (snprintf(l->error + n, sizeof l->error - n, fmt, a) < 0) l->error[n] = 0;
}

/* dlopen one candidate; on success keep its path. */
static void *try_open(sp_lib *l, const char *file) {
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (h && snprintf(l->path, sizeof l->path, "%s", file) < 0) l->path[0] = 0;
  return h;
}

/* Every name in `dir`; NULL if none loads. */
static void *try_dir(sp_lib *l, const char *dir) {
  char file[2400];
  for (const char *const *n = l->names; *n; ++n) {
    snprintf(file, sizeof file, "%s/%s", dir, *n);
    if (access(file, F_OK) != 0) continue;
    void *h = try_open(l, file);
    if (h) return h;
    note(l, "%s (", file);
    note(l, "%s); ", dlerror());
  }
  return NULL;
}

/* site-packages folders matching `pattern` (glob), each with nvidia/<wheel>/lib. */
static void *try_site_glob(sp_lib *l, const char *pattern) {
  glob_t g;
  if (glob(pattern, GLOB_NOSORT | GLOB_ONLYDIR, NULL, &g) != 0) return NULL;
  void *h = NULL;
  char dir[2200];
  for (size_t i = 0; i < g.gl_pathc && !h; ++i)
    for (const char *const *w = l->wheels; *w && !h; ++w) {
      snprintf(dir, sizeof dir, "%s/nvidia/%s/lib", g.gl_pathv[i], *w);
      h = try_dir(l, dir);
    }
  globfree(&g);
  return h;
}

static void *search(sp_lib *l) {
  const char *override = l == &g_lt ? mc_config()->cusparselt_path : mc_config()->cusparse_path;
  if (override && *override) {
    void *h = try_open(l, override);
    if (!h) {
      note(l, "%s=", l->env);
      note(l, "%s: ", override);
      note(l, "%s", dlerror());
    }
    return h;
  }
  for (const char *const *n = l->names; *n; ++n) { /* LD_LIBRARY_PATH, ldconfig, rpath */
    void *h = try_open(l, *n);
    if (h) return h;
  }
  note(l, "%s", "the loader's search path (LD_LIBRARY_PATH, ldconfig); ");
  const char *roots[] = {mc_config_foreign_env("CUDA_HOME"), mc_config_foreign_env("CUDA_PATH"),
                         "/usr/local/cuda", mc_config_foreign_env("CONDA_PREFIX")};
  char dir[2200];
  for (size_t i = 0; i < sizeof roots / sizeof *roots; ++i) {
    if (!roots[i] || !*roots[i]) continue;
    const char *subs[] = {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"};
    for (size_t j = 0; j < sizeof subs / sizeof *subs; ++j) {
      snprintf(dir, sizeof dir, "%s/%s", roots[i], subs[j]);
      void *h = try_dir(l, dir);
      if (h) return h;
    }
    note(l, "%s/{lib64,lib,targets/*/lib}; ", roots[i]);
  }
  /* Wheels in the site-packages this library was installed into: <site>/mgpu_cached/lib[/x]. */
  Dl_info info;
  if (dladdr((void *)&search, &info) && info.dli_fname) {
    char base[1024];
    snprintf(base, sizeof base, "%s", info.dli_fname);
    for (int up = 0; up < 4; ++up) {
      char *slash = strrchr(base, '/');
      if (!slash) break;
      *slash = 0;
      for (const char *const *w = l->wheels; *w; ++w) {
        snprintf(dir, sizeof dir, "%s/nvidia/%s/lib", base, *w);
        void *h = try_dir(l, dir);
        if (h) return h;
      }
    }
    note(l, "%s", "site-packages/nvidia/*/lib beside mgpu_cached; ");
  }
  const char *patterns[] = {"/usr/local/lib/python3*/*-packages", "/usr/lib/python3*/*-packages",
                            NULL, NULL, NULL};
  char user[1024], venv[1024], conda[1024];
  const char *home = mc_config_foreign_env("HOME"), *ve = mc_config_foreign_env("VIRTUAL_ENV"),
             *cp = mc_config_foreign_env("CONDA_PREFIX");
  int np = 2;
  if (ve && *ve) {
    snprintf(venv, sizeof venv, "%s/lib/python3*/site-packages", ve);
    patterns[np++] = venv;
  }
  if (cp && *cp) {
    snprintf(conda, sizeof conda, "%s/lib/python3*/site-packages", cp);
    patterns[np++] = conda;
  }
  if (home && *home) {
    snprintf(user, sizeof user, "%s/.local/lib/python3*/site-packages", home);
    patterns[np++] = user;
  }
  for (int i = 0; i < np; ++i) {
    void *h = try_site_glob(l, patterns[i]);
    if (h) return h;
  }
  note(l, "%s", "python3 site-/dist-packages (system, $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local)");
  return NULL;
}


static void load_cusparse(void) {
  void *h = search(&g_sp);
  if (!h) return;
#define X(field, name, ret, params, args, required)                                              \
  mc_sp.field = (ret(*) params)dlsym(h, #name);                                                  \
  if (!mc_sp.field && required) {                                                                \
    snprintf(g_sp.error, sizeof g_sp.error, "%s lacks %s", g_sp.path, #name);                    \
    return;                                                                                      \
  }
  MC_CUSPARSE_SYMBOLS(X)
#undef X
  mc_debug("cuSPARSE loaded from %s", g_sp.path);
  __atomic_store_n(&g_sp.ok, 1, __ATOMIC_RELEASE);
}

static int g_lt_version;

static void load_cusparselt(void) {
  void *h = search(&g_lt);
  if (!h) return;
#define X(field, name, ret, params, args, required)                                              \
  mc_splt.field = (ret(*) params)dlsym(h, #name);                                                \
  if (!mc_splt.field && required) {                                                              \
    snprintf(g_lt.error, sizeof g_lt.error, "%s lacks %s", g_lt.path, #name);                    \
    return;                                                                                      \
  }
  MC_CUSPARSELT_SYMBOLS(X)
#undef X
  int major = 0, minor = 0, patch = 0;
  mc_splt.cusparseLtGetProperty(MC_LIB_PROPERTY_MAJOR, &major);
  mc_splt.cusparseLtGetProperty(MC_LIB_PROPERTY_MINOR, &minor);
  mc_splt.cusparseLtGetProperty(MC_LIB_PROPERTY_PATCH, &patch);
  g_lt_version = major * 1000 + minor * 100 + patch;
  mc_debug("cuSPARSELt %d.%d.%d loaded from %s", major, minor, patch, g_lt.path);
  __atomic_store_n(&g_lt.ok, 1, __ATOMIC_RELEASE);
}

mc_status mc_cusparse_load(void) {
  pthread_once(&g_sp.once, load_cusparse);
  return __atomic_load_n(&g_sp.ok, __ATOMIC_ACQUIRE) ? MC_OK
                                                     : MC_FAIL("dlopen(cuSPARSE)", MC_E_NO_LIBRARY);
}

mc_status mc_cusparselt_load(void) {
  pthread_once(&g_lt.once, load_cusparselt);
  return __atomic_load_n(&g_lt.ok, __ATOMIC_ACQUIRE)
             ? MC_OK
             : MC_FAIL("dlopen(cuSPARSELt)", MC_E_NO_LIBRARY);
}

const char *mc_cusparse_error(void) { return g_sp.error; }
const char *mc_cusparselt_error(void) { return g_lt.error; }
int mc_cusparselt_version(void) { return g_lt_version; }

size_t mc_splt_struct_bytes(void) {
  unsigned long long n = mc_config()->cusparselt_struct_bytes;
  if (n > 0) return (size_t)n;
  return g_lt_version < 600 ? 11024 : 512;
}

int mc_splt_compute_type(int code) {
  if (g_lt_version < 600) return code;
  return code == 0 ? 1 : code == 1 ? 0 : code; /* 16F <-> 32I; anything else as given */
}

const char *mc_sparse_status_name(int status) {
  const char *s = NULL;
  if (__atomic_load_n(&g_sp.ok, __ATOMIC_ACQUIRE)) s = mc_sp.cusparseGetErrorString(status);
  if (s) return s;
  switch (status) {
  case 0: return "success";
  case 1: return "initialization error";
  case 2: return "out of memory";
  case 3: return "invalid value";
  case 4: return "architecture mismatch";
  case 6: return "execution failed";
  case 7: return "internal error";
  case 10: return "operation not supported";
  default: return "<unknown cuSPARSE status>";
  }
}
