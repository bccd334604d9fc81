/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* cuda_api.h - the CUDA driver declarations for the fake drivers of this folder and programs built
 * beside them (-Itests/drivers): forwards to the library's own, csrc/platform/cuda_api.h. */
#include "../../csrc/platform/cuda_api.h"
