/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// A device-side assert for the differential tester's class `sticky` (tests/difftest): after it,
// every call in the context reports CUDA_ERROR_ASSERT (the executing fake driver models kernels
// named k_assert*, tests/drivers/fake_reset.h).
// Built with CUDA 13.0's nvcc: nvcc -arch=sm_90 -fatbin -o fault.fatbin fault.cu
#include <cassert>
extern "C" __global__ void k_assert_dt(unsigned *p, int n) {
  assert(n < 0);  // n >= 0 always: fails
  if (p && n > 0) p[0] = 1;
}
