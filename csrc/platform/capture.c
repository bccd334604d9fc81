/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* capture.c - the calling thread's depth of relaxed-mode brackets (capture.h): a bracket inside
 * another (the reclaimer's whole life, a poll inside a round) leaves the mode alone. */
#include "platform/capture.h"

_Thread_local unsigned mc_relaxed_depth;
