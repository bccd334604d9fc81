#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N157 (one H100, nvidia-h100-x1): runs N155 and N156 again on another machine, 16 processes
# per tree: exactly run N156's script (the session's final C code against its starting tree,
# chain_pair_probe.c, streams rotated, K = 10 and 100). Carry `.gpu` and `.whl`.
exec sh benchmarks/runs/h100_session_n156.sh "$@"
