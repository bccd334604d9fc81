#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N110 (one H100, nvidia-h100-x1): run N108 again (the synchronous pairs, 21 rounds, per-round
# ratios to stock) on the final C code after the review mend, to settle run N109's 5-round
# "primed" 1.70x. Carry `.whl`.
exec sh benchmarks/runs/h100_session_n108.sh
