/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* graph_stream_shim.c - tells a benchmark which driver stream the library's chain replay launches
 * its graphs on (issue 21 item 2: chain_pair_probe.c sets each chain against the hand-made graph on
 * the same driver stream). It defines cuGraphLaunch only, which notes its stream and forwards to
 * the driver's; every other entry point the library looks up in it (dlsym on its handle) is found
 * in the driver it is linked against (libcuda, its DT_NEEDED), so the rest of the library's calls
 * reach the driver directly. Point MGPU_CACHED_CUDA_DRIVER at it; graph_stream_shim_last() is the
 * stream of the latest cuGraphLaunch through it (NULL before the first).
 *
 *   cc -shared -fPIC -O2 -o graph_stream_shim.so graph_stream_shim.c -L<driver dir> -lcuda -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

typedef int (*graph_launch_fn)(void *exec, void *stream);

static graph_launch_fn g_real;
static void *volatile g_last;

EXPORT int cuGraphLaunch(void *exec, void *stream) {
  if (!g_real) { /* the next definition after this object: the driver's */
    g_real = (graph_launch_fn)dlsym(RTLD_NEXT, "cuGraphLaunch");
    if (!g_real) return 999; /* CUDA_ERROR_UNKNOWN */
  }
  g_last = stream;
  return g_real(exec, stream);
}

EXPORT void *graph_stream_shim_last(void) { return g_last; }
