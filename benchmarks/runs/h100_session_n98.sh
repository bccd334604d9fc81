#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N98 (one H100, nvidia-h100-x1, a fresh machine): run N96 again with 12 rounds (the reclaimer
# gathers frees only after a free on a stream the library enqueued work on and has not
# synchronised since; the README's async rows and alloc_loop beside gathering off, the session's
# starting tree and the tree before issue 19). Carry `.gpu`, `.whl`.
ROUNDS=12 exec sh benchmarks/runs/h100_session_n96.sh
