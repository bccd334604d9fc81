/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* all.c - the flat view of the library, for builds that compile the .c files at csrc/'s top level
 * (review 2's run.sh: one `cc -Icsrc` over them): every layer's .c file as one translation unit,
 * except streams/pool.c, which the link csrc/pool.c stands for (run.sh patches it for R27). The
 * package and the scripts compile the layer folders' files one by one instead and skip csrc/'s top
 * level: two builds of one library. Every .c file of a layer folder is included here exactly once,
 * so file-local names are unique across files; tests/test_layers.py checks both, and that the two
 * builds export the same symbols. */

#include "abi/abi_cuda.c"
#include "abi/abi_rocm.c"
#include "abi/abi_sparse.c"
#include "abi/faults.c"
#include "abi/fork.c"
#include "abi/hooks.c"
#include "abi/public_api.c"
#include "abi/trace_abi.c"
#include "launch/chain.c"
#include "launch/graph_launch.c"
#include "launch/launch.c"
#include "launch/tensor_map.c"
#include "memory/allocator.c"
#include "memory/memory.c"
#include "modules/module_cache.c"
#include "platform/backend_hip.c"
#include "platform/capture.c"
#include "platform/context.c"
#include "platform/driver.c"
#include "sparse/sparse.c"
#include "sparse/sparse_lib.c"
#include "sparse/sparselt.c"
#include "sparse/sparselt_plans.c"
#include "stock/stock.c"
#include "stock/stock_hip.c"
#include "streams/handle_map.c"
#include "support/blob.c"
#include "support/blob_state.c"
#include "support/config.c"
#include "support/reclaim.c"
#include "support/report.c"
#include "support/rodata.c"
#include "support/same_bytes.c"
#include "support/slot_table.c"
#include "support/stats.c"
#include "support/thread.c"
#include "support/thread_exit.c"
#include "trace/trace.c"
#include "trace/trace_gpu.c"
#include "trace/trace_nvtx.c"
