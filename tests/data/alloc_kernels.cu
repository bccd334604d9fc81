/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// Kernels for the caching allocator's GPU tests (tests/gpu/test_allocator_gpu.py). Built here with
// the CUDA toolkit (command in tests/data/README.md); the tests use the committed alloc_kernels.fatbin.

// Keeps writing `value` into out[0..n) until the host sets *flag (mapped pinned memory) or
// `max_rounds` rounds have passed (so a broken test cannot hang the GPU), then writes it once more.
extern "C" __global__ void spin_write(volatile int *flag, int *out, int n, int value,
                                      long long max_rounds) {
  for (long long r = 0; r < max_rounds && *flag == 0; ++r) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
      out[i] = value;
    __nanosleep(1000);
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = value;
}

// y[i] = a * x[i] + y[i]
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}
