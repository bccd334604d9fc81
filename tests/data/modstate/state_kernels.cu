/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// Module-scope state for the classification tests (blob_state.h) and the GPU test of issue 19
// item 1: a zero-initialised and an initialised __device__ variable, a __constant__ table, a
// __device__ const array. Built with CUDA 13.0: nvcc -arch=sm_90 -cubin|-ptx|-fatbin.

__device__ unsigned g_counter = 0;
__device__ unsigned g_init = 5;
__constant__ int c_tab[4];
__device__ const int d_const[3] = {1,2,3};
extern "C" __global__ void bump(unsigned *out, int i) { out[0] = atomicAdd(&g_counter, 1) + g_init + c_tab[i] + d_const[i]; }
