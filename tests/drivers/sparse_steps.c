/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparse_steps.c - runs an MLIR sparse program (benchmarks/mlir/sparse/sparse_gpu.mlir, compiled
 * into tests/data/mlir/sparse_gpu_llvmN.o) step by step against the recording fakes and prints,
 * after the environments are made and after every step, the calls each fake saw in that span:
 *
 *   sparse_steps PROGRAM STEPS     (PROGRAM: matmul24 or spmv; inputs are zeros)
 *   output lines: "<span> drv <call>,<call>,..." and "<span> sp <call>,..." (span: env, 0, 1, ...)
 *
 * The fakes are found by the paths the library loads them from (MGPU_CACHED_CUDA_DRIVER,
 * MGPU_CACHED_CUSPARSELT), opened again with RTLD_NOLOAD: the same instances. The driver's log
 * also holds the calls of the library's own threads (the allocator's reclaimer), made whenever
 * they run. Link: cc sparse_steps.c sparse_gpu_llvm19.o -lmgpu_cached -ldl. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint16_t *alloc, *data; int64_t off, n[2], s[2]; } H2;
typedef struct { float *alloc, *data; int64_t off, n[2], s[2]; } M2;
typedef struct { float *alloc, *data; int64_t off, n[1], s[1]; } M1;
void _mlir_ciface_matmul24(H2 *r, H2 *A, H2 *B, H2 *C);
void _mlir_ciface_spmv(M1 *r, M2 *A, M1 *x, M1 *y);
void mgpuCreateSparseEnv(void);
void mgpuCreateSparseLtEnv(void);

/* Print and clear one fake's log. */
static void dump(const char *env, const char *span, const char *tag) {
  const char *path = getenv(env);
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  size_t (*get)(char *, size_t) = h ? (size_t (*)(char *, size_t))dlsym(h, "fake_log") : NULL;
  void (*reset)(void) = h ? (void (*)(void))dlsym(h, "fake_reset") : NULL;
  static char buf[1 << 16];
  buf[0] = 0;
  if (get && reset) {
    get(buf, sizeof buf);
    reset();
  }
  printf("%s %s %s\n", span, tag, buf);
}

static void dump_both(const char *span) {
  dump("MGPU_CACHED_CUDA_DRIVER", span, "drv");
  dump("MGPU_CACHED_CUSPARSELT", span, "sp");
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  int steps = atoi(argv[2]), lt = !strcmp(argv[1], "matmul24");
  mgpuCreateSparseEnv();
  if (lt) mgpuCreateSparseLtEnv();
  dump_both("env");
  static uint16_t a[256], b[256], c[256];
  static float fa[64 * 32], fx[32], fy[64];
  for (int k = 0; k < steps; ++k) {
    if (lt) {
      H2 A = {a, a, 0, {16, 16}, {16, 1}}, B = {b, b, 0, {16, 16}, {16, 1}};
      H2 C = {c, c, 0, {16, 16}, {16, 1}}, r = {0};
      _mlir_ciface_matmul24(&r, &A, &B, &C);
    } else {
      M2 A = {fa, fa, 0, {64, 32}, {32, 1}};
      M1 x = {fx, fx, 0, {32}, {1}}, y = {fy, fy, 0, {64}, {1}}, r = {0};
      _mlir_ciface_spmv(&r, &A, &x, &y);
    }
    char span[16];
    snprintf(span, sizeof span, "%d", k);
    dump_both(span);
  }
  return 0;
}
