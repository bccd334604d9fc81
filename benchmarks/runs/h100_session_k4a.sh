#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run K4a on the H100 (the session's final tree): benchmarks/runs/final_tree.sh
# with this session's starting tree as `start-d234ea0`. Carry `.whl`, `.gpu`. Logs under $OUT.
exec sh benchmarks/runs/final_tree.sh start-d234ea0
