/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// Kernels for the GPU tests. Built here with the CUDA toolkit (commands in tests/data/README.md);
// the tests use the committed outputs, so running them needs no toolkit.
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void fill_smem(float *out, int n) {
  extern __shared__ float buf[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = (float)i;
  __syncthreads();
  if (i < n) out[i] = buf[threadIdx.x] + 1.0f;
}

extern "C" __global__ void empty() {}
