/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* ctor_load.c - a module loaded in a global constructor of a library being dlopened (the dynamic
 * loader's lock is held while it runs), as LLVM >= 21 code in a dlopened library does (issue 21
 * item 5: a large image's module-state scan runs on a helper thread beside the driver load, which
 * must never need that lock). Built twice by tests/test_module_devices.py:
 *   -DCTOR_LIB: the library; its constructor reads the blob file named by $CTOR_BLOB, loads it with
 *               mgpuModuleLoad and looks up $CTOR_KERNEL; ctor_module() gives the module.
 *   otherwise:  the program: dlopens the library given as argv[1], prints "ok" if it loaded a
 *               module and found the kernel. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef CTOR_LIB
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleGetFunction(void *module, const char *name);

static void *g_module, *g_function;

__attribute__((constructor)) static void load_in_ctor(void) {
  FILE *f = fopen(getenv("CTOR_BLOB"), "rb");
  if (!f) return;
  static unsigned char blob[4 << 20];
  size_t n = fread(blob, 1, sizeof blob, f);
  fclose(f);
  g_module = mgpuModuleLoad(blob, n);
  if (g_module) g_function = mgpuModuleGetFunction(g_module, getenv("CTOR_KERNEL"));
}

int ctor_loaded(void) { return g_module && g_function; }
#else
int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  int (*loaded)(void) = (int (*)(void))dlsym(h, "ctor_loaded");
  if (!loaded || !loaded()) return 1;
  puts("ok");
  return 0;
}
#endif
