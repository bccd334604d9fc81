/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// Module-scope state for the differential tester's class `modglobal` (tests/difftest): a counter
// that each launch of dt_bump reads and increments; a fresh load starts it at 0.
// Built with CUDA 13.0's nvcc: nvcc -arch=sm_90 -fatbin -o modglobal.fatbin modglobal.cu
__device__ unsigned dt_counter = 0;

// One thread: writes the counter value it saw into every word (mixed with the index), then
// increments the counter.
extern "C" __global__ void dt_bump(unsigned *p, int n) {
  if (blockIdx.x || threadIdx.x) return;
  unsigned c = dt_counter;
  for (int i = 0; i < n; ++i) p[i] = (c * 0x01000193u) ^ (unsigned)i;
  dt_counter = c + 1;
}
