/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* runner.c - runs one program of the conformance corpus (tests/corpus/obj/<name>_llvmN.o).
 *
 * Each program defines `void entry(void)` (MLIR's func.func @entry) and prints its results with
 * vector.print (the print* functions below, written as MLIR's CRunnerUtils prints them, so the
 * programs need no MLIR library) and gpu.printf (printed by the CUDA driver at synchronisation).
 * Build: cc -std=c11 runner.c obj/<name>_llvmN.o $(mgpu-cached --ldflags) -ldl -o prog
 * Prints "runner: done" after entry() returned and exits 0. With RUNNER_FAKE_COUNTS=name1,name2
 * and MGPU_CACHED_CUDA_DRIVER naming the recording fake driver, it then prints the fake's call
 * counts as "count NAME VALUE" (tests/test_corpus.py).
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void entry(void);

/* MLIR's vector.print lowering calls these (mlir/lib/ExecutionEngine/CRunnerUtils.cpp). */
void printI64(int64_t i) { printf("%" PRId64, i); }
void printU64(uint64_t u) { printf("%" PRIu64, u); }
void printF32(float f) { printf("%g", f); }
void printF64(double d) { printf("%lg", d); }
void printString(const char *s) { fputs(s, stdout); }
void printOpen(void) { fputs("( ", stdout); }
void printClose(void) { fputs(" )", stdout); }
void printComma(void) { fputs(", ", stdout); }
void printNewline(void) { fputc('\n', stdout); }

static void report_fake_counts(void) {
  const char *names = getenv("RUNNER_FAKE_COUNTS");
  const char *drv = getenv("MGPU_CACHED_CUDA_DRIVER");
  if (!names || !drv) return;
  void *h = dlopen(drv, RTLD_NOW | RTLD_NOLOAD);
  long (*count)(const char *) = h ? (long (*)(const char *))dlsym(h, "fake_count") : NULL;
  if (!count) return;
  char buf[2048];
  snprintf(buf, sizeof buf, "%s", names);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) printf("count %s %ld\n", t, count(t));
}

int main(void) {
  /* Whole lines reach the pipe, so that the driver's device printf output (written at a
   * synchronisation, on this thread) never lands inside a line of ours. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  entry();
  fflush(stdout);
  report_fake_counts();
  printf("runner: done\n");
  return 0;
}
