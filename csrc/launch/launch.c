/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* launch.c - kernel launches in the cached mode (see launch.h). No state of its own, no lock:
 * the stream handle is resolved through pool.h for the duration of the driver call. */
#include "launch/launch.h"

#include "platform/backend.h"
#include "platform/capture.h"
#include "launch/chain.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "launch/graph_launch.h"
#include "streams/pool.h"
#include "support/stats.h"
#include "trace/trace.h"

mc_status mc_launch(mc_function *f, const mc_launch_dims *d, CUstream stream, void **params,
                    void **extra) {
  int has_cluster = d->cluster[0] > 0 && d->cluster[1] > 0 && d->cluster[2] > 0;
  const mc_graph_dims *gd = &d->gd;
  /* chain replay's fast path: one more launch of a function already pending on this stream */
  if (!has_cluster && !d->cooperative && !extra && !MC_TRACE_ON() && !mc_ctx_trouble() &&
      mc_chain_append(stream, f, gd, params)) {
    mc_stats_block *sb = mc_stats_mine(); /* one thread-local look-up for both */
    MC_STAT_INC_IN(sb, chain_deferred);
    MC_STAT_INC_IN(sb, launches);
    return MC_OK;
  }
  mc_chain_settle_verify(); /* a module load's context check owed (chain.h); no use held yet */
  /* A stream of ours runs the kernel on the device it was made on, whatever the thread's
   * default device is now; the NULL stream and foreign streams on the default device. */
  mc_stream_use use;
  CUstream handle = stream;
  mc_status st = mc_stream_use_begin(stream, "cuLaunchKernel", &use);
  if (MC_FAILED(st)) return st;
  int device = use.device;
  stream = use.stream;
  /* A launch on one of the library's driver streams goes bare (context.h): no context pushed
   * in a thread with none current; its cuLaunchKernel, or its graph path's capture check and
   * cuGraphLaunch, or chain replay's capture check and deferral, run so, every other driver call
   * of it settles the push first. */
  int chain = mc_chain_enabled();
  /* (GPU trace spans enter the context for their events themselves: trace_gpu.c) */
  int bare = use.rec && (uintptr_t)stream > 2 && !has_cluster && !d->cooperative &&
             mc_backend() == MC_BACKEND_CUDA && mc_ctx_bare_enabled();
  mc_ctx_scope scope;
  st = bare ? mc_ctx_enter_bare(device, &scope) : mc_ctx_enter(device, &scope);
  if (MC_FAILED(st)) {
    mc_stream_use_end(&use);
    return st;
  }
  CUfunction cf = NULL;
  int transient = 0; /* f's module is not cached: no graph exec or chain for it */
  st = mc_function_prepare(f, device, (int)gd->smem, &cf, &transient, &scope);
  if (MC_FAILED(st)) {
    mc_ctx_leave(&scope);
    mc_stream_use_end(&use);
    return st;
  }
  CUresult r;
  const char *call;
  MC_TRACE_GPU_BEGIN(stream, device); /* the driver stream the kernel is enqueued on */
  if (!has_cluster && !d->cooperative) {
    call = "cuLaunchKernel";
    /* The library's own streams (not pinned: the program never enqueues on them behind our
     * back), arguments as an array: through the stream's graph exec where it can
     * (graph_launch.h); otherwise, or if it declines, as the stock wrapper launches. */
    /* Faults (context.h): while a device's context is suspect or broken, every launch takes
     * stock's path (cuLaunchKernel), so it reports what stock reports. */
    int ours = use.rec && !use.pinned && !extra && !transient && !mc_ctx_trouble();
    /* A stream being captured (by the program, through the driver handle) gets stock's
     * cuLaunchKernel, captured into its graph: never a graph launch or a deferred launch. Asked
     * (cuStreamIsCapturing, ~67 ns on the H100) only where one of those paths would be taken. */
    int capturing = -1; /* not asked yet */
#define CAPTURING() (capturing < 0 ? (capturing = mc_stream_capturing(stream)) : capturing)
    /* cst: a failure of earlier deferred launches submitted meanwhile (chain.h), reported as
     * this launch's, as the driver would have reported it at theirs */
    mc_status cst = MC_OK;
    /* Chain replay defers launches, which only the library's tagged handles make safe: the
     * program can enqueue on, query or synchronise a driver handle (pool.h: use.direct) behind
     * the library's back. */
    int defer = chain && ours && !use.direct;
    if (defer && !CAPTURING() && mc_chain_defer(handle, &use, &scope, f, cf, gd, params, &cst)) {
      r = 0; /* deferred */
    } else {
      /* pending goes first (submitted in their own context scope, chain.c) */
      if (chain && !MC_FAILED(cst)) cst = mc_chain_flush();
      /* With the graph path on, a graph launch happens only when this thread made the previous
       * launch too (graph_launch.h); with it off, nothing is recorded. */
      int graph = mc_graph_enabled();
      int alone = graph && mc_graph_launch_enter();
      if (ours && graph && !alone) MC_STAT_INC(graph_contended);
      if (ours && alone && !mc_graph_launch_early(cf) && !CAPTURING() &&
          mc_graph_launch(f, cf, stream, gd, params, 1, NULL, &scope)) {
        r = 0;
      } else {
        r = mc_cu.cuLaunchKernel(cf, gd->grid[0], gd->grid[1], gd->grid[2], gd->block[0],
                                 gd->block[1], gd->block[2], gd->smem, stream, params, extra);
        if (mc_ctx_bare_retry(&scope, r)) /* refused bare: again, pushed */
          r = mc_cu.cuLaunchKernel(cf, gd->grid[0], gd->grid[1], gd->grid[2], gd->block[0],
                                   gd->block[1], gd->block[2], gd->smem, stream, params, extra);
      }
    }
#undef CAPTURING
    if (MC_FAILED(cst)) st = cst;
  } else if (has_cluster && mc_backend() == MC_BACKEND_HIP) { /* HIP has no clusters */
    call = d->cooperative ? "mgpuLaunchKernelCooperative" : "mgpuLaunchClusterKernel";
    r = 0;
    st = MC_FAIL(call, MC_E_UNSUPPORTED);
  } else if (!mc_cu.cuLaunchKernelEx) {
    call = "cuLaunchKernelEx";
    r = 0;
    st = MC_FAIL(call, MC_E_UNSUPPORTED);
  } else {
    CUlaunchAttribute attrs[3];
    unsigned n = 0;
    if (has_cluster) {
      attrs[n].id = MC_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[n].value.clusterDim.x = (unsigned)d->cluster[0];
      attrs[n].value.clusterDim.y = (unsigned)d->cluster[1];
      attrs[n].value.clusterDim.z = (unsigned)d->cluster[2];
      ++n;
      attrs[n].id = MC_CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
      attrs[n].value.clusterSchedulingPolicyPreference = MC_CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
      ++n;
    }
    if (d->cooperative) {
      attrs[n].id = MC_CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[n].value.cooperative = 1;
      ++n;
    }
    CUlaunchConfig cfg;
    cfg.gridDimX = gd->grid[0];
    cfg.gridDimY = gd->grid[1];
    cfg.gridDimZ = gd->grid[2];
    cfg.blockDimX = gd->block[0];
    cfg.blockDimY = gd->block[1];
    cfg.blockDimZ = gd->block[2];
    cfg.sharedMemBytes = gd->smem;
    cfg.hStream = stream;
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    call = "cuLaunchKernelEx";
    r = mc_cu.cuLaunchKernelEx(&cfg, cf, params, extra);
  }
  MC_TRACE_GPU_END(stream, r ? r : MC_FAILED(st));
  mc_ctx_leave(&scope);
  mc_stream_use_end(&use);
  if (MC_FAILED(st)) return st;
  if (r != 0) return MC_FAIL(call, r);
  MC_STAT_INC(launches);
  return MC_OK;
}
