# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""attribution_variants.py SRC_CSRC OUT_DIR - copies of the library's csrc/ with one family of the
driver calls the library adds per MLIR call removed, for attributing a benchmark row's cost (never
for use: each removes a protection issue 19 needs):

  noverify   mc_ctx_verify / mc_ctx_alive make no cuCtxGetId (the context-reset check)
  norelax    mc_relaxed_enter / leave make no cuThreadExchangeStreamCaptureMode (capture safety)
  nocap      mc_stream_capturing makes no cuStreamIsCapturing (answers "not capturing")
  all3       the three together
  blocking   the reclaimer's waits (fence events, the clearing stream) block instead of spinning
             (CU_EVENT_BLOCKING_SYNC events): whether its spinning slows the program's calls
  noquery    a given-back driver stream or event is taken for complete without cuStreamQuery /
             cuEventQuery (what the proof that a stream the program may still feed through its
             driver handle is idle costs; right only where every given-back object is idle)

Writes OUT_DIR/<variant>/csrc. Exit 1 when an anchor is not found once (the source changed)."""
import shutil
import sys
from pathlib import Path

EDITS = {
    "noverify": [("platform/context.c", "void mc_ctx_verify(int device) {\n",
                  "void mc_ctx_verify(int device) {\n  if (device >= 0) return; /* attribution */\n"),
                 ("platform/context.c", "int mc_ctx_alive(int device) {\n",
                  "int mc_ctx_alive(int device) {\n  if (device >= 0) return 1; /* attribution */\n")],
    "norelax": [("platform/capture.h", "  r->depth = depth;\n  r->swapped = 0;\n  r->counted = 0;\n",
                 "  r->depth = depth;\n  r->swapped = 0;\n  r->counted = 0;\n  return; /* attribution */\n")],
    "nocap": [("platform/capture.h", "  CUstreamCaptureStatus st = MC_CU_STREAM_CAPTURE_STATUS_NONE;\n",
               "  CUstreamCaptureStatus st = MC_CU_STREAM_CAPTURE_STATUS_NONE;\n  if (stream || !stream) return 0; /* attribution */\n")],
}
EDITS["all3"] = EDITS["noverify"] + EDITS["norelax"] + EDITS["nocap"]
EDITS["blocking"] = [
    ("memory/allocator.c", "mc_cu.cuEventCreate(&d->fev[d->nfev], MC_CU_EVENT_DISABLE_TIMING)",
     "mc_cu.cuEventCreate(&d->fev[d->nfev], MC_CU_EVENT_DISABLE_TIMING | 0x1)"),
    ("memory/allocator.c", "  if (!bad && mc_cu.cuStreamSynchronize(zs) != 0) bad = 1;\n",
     "  if (!bad) { CUevent be = NULL; /* attribution */\n"
     "    bad = mc_cu.cuEventCreate(&be, MC_CU_EVENT_DISABLE_TIMING | 0x1) != 0 ||\n"
     "          mc_cu.cuEventRecord(be, zs) != 0 || mc_cu.cuEventSynchronize(be) != 0;\n"
     "    if (be) mc_cu.cuEventDestroy(be); }\n")]

EDITS["noquery"] = [
    ("streams/pool.c", "static int query_ready(mc_obj_kind kind, void *h) { /* the caller is in relaxed mode */\n",
     "static int query_ready(mc_obj_kind kind, void *h) { /* the caller is in relaxed mode */\n"
     "  if (h || !h) return 1; /* attribution */\n")]


def main() -> int:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    for name, edits in EDITS.items():
        dst = out / name / "csrc"
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
        for rel, old, new in edits:
            p = dst / rel
            text = p.read_text()
            if text.count(old) != 1:
                sys.stderr.write(f"{name}: anchor not found once in {rel}: {old[:50]!r}\n")
                return 1
            p.write_text(text.replace(old, new))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
