/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* faults.c - registers, at library load, what each cache forgets when a device's primary context
 * was found reset (context.h, issue 19 item 5): the module cache, the stream and event pools, the
 * caching allocator, the graph execs and chain replay's state. No state of its own. */
#include "memory/allocator.h"
#include "launch/chain.h"
#include "platform/context.h"
#include "launch/graph_launch.h"
#include "modules/module_cache.h"
#include "streams/pool.h"

__attribute__((constructor)) static void mc_faults_register(void) {
  mc_ctx_on_reset(mc_chain_forget_device); /* first: it ends a use of a pooled stream */
  mc_ctx_on_reset(mc_graph_forget_device);
  mc_ctx_on_reset(mc_module_cache_forget_device);
  mc_ctx_on_reset(mc_pool_forget_device);
  mc_ctx_on_reset(mc_alloc_forget_device);
}
