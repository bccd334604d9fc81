/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// Kernels of the differential tester (tests/difftest): visible effects on 32-bit words, with the
// same arithmetic as the executing fake driver's C versions (tests/drivers/fake_exec.h).
// Built with CUDA 13.0's nvcc: nvcc -arch=sm_90 -fatbin -o kernels.fatbin kernels.cu
// Every kernel takes (p, n, x): a buffer, its length in words, and a third argument.

extern "C" __global__ void dt_fill(unsigned *p, int n, unsigned v) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = v ^ ((unsigned)i * 0x9E3779B1u);
}

extern "C" __global__ void dt_add(unsigned *dst, int n, const unsigned *src) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] = dst[i] * 3u + src[i];
}

extern "C" __global__ void dt_scale(unsigned *p, int n, unsigned k) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = p[i] * k + 1u;
}

// Waits about `spins` microseconds, then writes: keeps its stream busy so that a missing order
// between streams shows on the GPU (the write lands after work that should have followed it).
extern "C" __global__ void dt_slow(unsigned *p, int n, unsigned v, long long spins) {
  for (long long r = 0; r < spins; ++r) __nanosleep(1000);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = v + (unsigned)i;
}
