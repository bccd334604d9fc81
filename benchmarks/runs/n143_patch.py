# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Run N143's experimental builds: patch a copy of csrc/ (SRC) into variant NAME (see
h100_session_n143.sh). Exits 1 when a patched line is not found."""
import sys
from pathlib import Path

src, name = Path(sys.argv[1]), sys.argv[2]
PATCHES = {
    "now": [],
    "whole": [("support/blob.c",
               "  for (size_t off = 0, chunk = (size_t)(pg - (a & mask)); off < len; off += chunk, chunk = pg) {",
               "  if (len) return mc_same_bytes(copy, p, len);\n"
               "  for (size_t off = 0, chunk = (size_t)(pg - (a & mask)); off < len; off += chunk, chunk = pg) {")],
    "aligned": [("modules/module_cache.c",
                 "  module_rec *m = calloc(1, sizeof *m);",
                 "  module_rec *m = aligned_alloc(64, (sizeof *m + 63) & ~(size_t)63);\n"
                 "  if (m) memset(m, 0, (sizeof *m + 63) & ~(size_t)63);")],
    "nocmp": [("modules/module_cache.c",
               "  if (!mc_blob_same(m->copy, m->len, m->kind, blob)) return 0;",
               "  (void)mc_blob_same;")],
}
for rel, old, new in PATCHES[name]:
    f = src / rel
    text = f.read_text()
    if old not in text:
        sys.exit(f"{rel}: not found: {old}")
    f.write_text(text.replace(old, new, 1))
