/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* rodata.h - whether a blob lies in a read-only segment of a loaded object (the executable or a
 * shared library), and a generation number of the set of loaded objects, for cache hits that need
 * not compare a blob's bytes.
 *
 * Both come from the loader (dl_iterate_phdr): a PT_LOAD segment without PF_W holds the file's
 * bytes from the object's load to its unload; the loader counts objects unloaded (dlpi_subs)
 * since the program started. A load never changes the bytes of an object already loaded (it maps
 * the new object into free address space), an unload may (its pages can be mapped again by the
 * next load, with other bytes), so the generation is the count of unloads (plus one, never 0): it
 * stays the same exactly as long as no object is unloaded. A blob found in such a segment under
 * generation g therefore holds the same bytes for as long as the generation is still g, whatever
 * is dlopened meanwhile (Python imports, the driver's own helper libraries). What this assumes:
 * the program does not make a loaded object's read-only segment writable again (mprotect), move
 * it (mremap) or map something else over it (mmap MAP_FIXED, munmap) and then write there. The
 * loader itself writes a read-only segment only to apply text relocations while it loads the
 * object, and the GPU blobs MLIR embeds are constant byte arrays, which carry none.
 */
#ifndef MGPU_CACHED_RODATA_H
#define MGPU_CACHED_RODATA_H

#include <stddef.h>
#include <stdint.h>

/* The generation of the set of loaded objects (dlpi_subs + 1: at least 1; it moves when an object
 * is unloaded), or 0 where the loader does not report its counters. O(1): one dl_iterate_phdr call that
 * stops at the first object, which takes and releases the loader's list lock (a recursive mutex
 * that dlopen and dlclose hold only while they link or unlink an object), counted in and out (two
 * atomic increments on a counter shared by few threads) so that fork can wait for it (rodata.c);
 * no system call. */
uint64_t mc_rodata_generation(void);

/* Whether [p, p + len) lies entirely inside one PT_LOAD segment without PF_W (within the bytes its
 * file holds, p_filesz) of a loaded object: the generation seen while walking the loaded objects
 * (under the loader's lock, so the answer and the generation belong together), else 0. The name of
 * the object (the executable: "") is copied into name (if given, truncated to name_size). Walks
 * every loaded object: call it when the generation has changed, not on every hit. */
uint64_t mc_rodata_find(const void *p, size_t len, char *name, size_t name_size);

/* The read-only segment holding the byte at p (as mc_rodata_find): its generation, else 0, and in
 * *avail the number of bytes from p to the end of the segment's file bytes (all readable while the
 * generation holds; 0 when not found). For a blob whose length is not known yet: its header can
 * be read up to there without probing the memory (blob.h, mc_blob_identify_in). *in_main (if
 * given): 1 when that segment is the executable's (the first object the loader lists, unnamed),
 * which no dlclose can unload: its bytes stay as they are for the life of the process, whatever
 * the generation does. */
uint64_t mc_rodata_lookup(const void *p, size_t *avail, char *name, size_t name_size,
                          int *in_main);

/* Fork handlers (fork.c): prepare waits until no thread is inside dl_iterate_phdr through this
 * file and holds further calls off; parent and child let them go again. */
void mc_rodata_fork_prepare(void);
void mc_rodata_fork_parent(void);
void mc_rodata_fork_child(void);

#endif
