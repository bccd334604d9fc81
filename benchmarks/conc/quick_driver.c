/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* quick_driver.c - for launch_path_cpu.c: the fake CUDA driver of tests/drivers (fakecuda.c,
 * linked as a dependency, so every other entry point resolves to it), with the entry points the
 * library calls per launch answered at once: cuLaunchKernel (no work), cuStreamIsCapturing (not
 * capturing), cuCtxGetCurrent (this thread's current context as the fake last told it; the
 * context calls below forward and forget it), cuCtxGetId (the fake's id of the last context
 * asked, kept). The fake takes one lock per call, which threads would meet on; here they meet
 * only where the library makes them. Build: cc -O2 -shared -fPIC quick_driver.c
 * -Wl,--no-as-needed -L<dir> -lfakecuda -Wl,-rpath,<dir>, and name it in MGPU_CACHED_CUDA_DRIVER. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

typedef int CUresult;
typedef void *CUcontext;

static void *fake(const char *name) {
  static void *h;
  if (!h) h = dlopen("libfakecuda.so", RTLD_NOW | RTLD_NOLOAD);
  return h ? dlsym(h, name) : NULL;
}

static __thread CUcontext tl_cur;
static __thread int tl_known;

CUresult cuCtxGetCurrent(CUcontext *p) {
  if (!tl_known) {
    CUresult (*f)(CUcontext *) = (CUresult(*)(CUcontext *))fake("cuCtxGetCurrent");
    CUresult r = f ? f(&tl_cur) : 999;
    if (r) return r;
    tl_known = 1;
  }
  *p = tl_cur;
  return 0;
}

#define FORGET(name, type)                                                                        \
  CUresult name(type c) {                                                                         \
    CUresult (*f)(type) = (CUresult(*)(type))fake(#name);                                         \
    tl_known = 0;                                                                                 \
    return f ? f(c) : 999;                                                                        \
  }
FORGET(cuCtxPushCurrent_v2, CUcontext)
FORGET(cuCtxPopCurrent_v2, CUcontext *)
FORGET(cuCtxSetCurrent, CUcontext)

static CUcontext g_id_ctx; /* atomic in effect: written once per context asked */
static unsigned long long g_id;

CUresult cuCtxGetId(CUcontext c, unsigned long long *id) {
  if (c && __atomic_load_n(&g_id_ctx, __ATOMIC_ACQUIRE) == c) {
    *id = g_id;
    return 0;
  }
  CUresult (*f)(CUcontext, unsigned long long *) =
      (CUresult(*)(CUcontext, unsigned long long *))fake("cuCtxGetId");
  CUresult r = f ? f(c, id) : 999;
  if (!r) {
    g_id = *id;
    __atomic_store_n(&g_id_ctx, c, __ATOMIC_RELEASE);
  }
  return r;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned smem, void *stream, void **params, void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)stream;
  (void)params, (void)extra;
  return 0;
}

CUresult cuStreamIsCapturing(void *stream, int *status) {
  (void)stream;
  *status = 0;
  return 0;
}
