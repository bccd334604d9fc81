# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""probe_zero.py - does memory that was written, freed and allocated again read as zeros? Per size
and kind, in the stock mode and the cached one (the rule behind the difftest feature fresh_zero).
With --pairs: a buffer of one size written and freed, then one of another size allocated (stock
mode only), and each program prints which words of the new buffer are not zero.

    python3 tests/difftest/probe_zero.py [--fake] [--pairs]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from difftest import MODULE, Setup  # noqa: E402

SIZES = (16, 1024, 4096, 65536, 1 << 20)  # words


def programs() -> str:
    out = []
    for i, (w, k) in enumerate((w, k) for w in SIZES for k in "dh"):
        write = "hwrite b0 85" if k == "h" else "memset32 b0 85 s0\nssync s0"
        read = "hread b1" if k == "h" else "read b1 s0"
        out.append(f"seq {i}\nstream s0\nalloc b0 {w} {k} -\n{write}\nfree b0 -\n"
                   f"alloc b1 {w} {k} -\n{read}\nfree b1 -\nsdestroy s0\nend\n")
    return "".join(out)


PAIR_SIZES = (16, 100, 1000, 4096, 65536)


def pair_programs() -> str:
    out, i = [], 0
    for k in "dh":
        for w1 in PAIR_SIZES:
            for w2 in PAIR_SIZES:
                write = "hwrite b0 85" if k == "h" else "memset32 b0 85 s0\nssync s0"
                read = "hread b2" if k == "h" else "read b2 s0"
                out.append(f"seq {i}\nstream s0\nalloc b9 64 {k} -\nalloc b0 {w1} {k} -\n{write}\n"
                           f"alloc b1 64 {k} -\nfree b0 -\nalloc b2 {w2} {k} -\n{read}\nfree b2 -\n"
                           f"free b1 -\nfree b9 -\nsdestroy s0\nend\n")
                i += 1
    return "".join(out)


def probe_pairs(setup: Setup, tmp: Path) -> None:
    path = tmp / "pairs.txt"
    path.write_text(pair_programs())
    env = dict(os.environ, **setup.env, MGPU_CACHED_DISABLE="1", DIFFTEST_DUMP="1")
    out = subprocess.run([str(setup.runner), str(MODULE), str(path)], env=env,
                         capture_output=True, text=True).stdout
    runs = {int(t[1]): " ".join(t[4:]) for t in (line.split() for line in out.splitlines())
            if t[0] == "Z"}
    i = 0
    for k in "dh":
        for w1 in PAIR_SIZES:
            for w2 in PAIR_SIZES:
                print(f"stock {k} {w1 * 4}B freed, {w2 * 4}B allocated: {runs.get(i, '?')}")
                i += 1


def main() -> int:
    fake = "--fake" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup.make(Path(tmp), fake, 1)
        path = Path(tmp) / "probe.txt"
        path.write_text(programs())
        pairs = [(w, k) for w in SIZES for k in "dh"]
        for mode in ("1", "0"):
            env = dict(os.environ, **setup.env, MGPU_CACHED_DISABLE=mode, DIFFTEST_VERBOSE="1")
            out = subprocess.run([str(setup.runner), str(MODULE), str(path)], env=env,
                                 capture_output=True, text=True).stdout
            zero = {int(t[1]): t[4] for t in (line.split() for line in out.splitlines())
                    if t[0] == "R"}
            name = "stock " if mode == "1" else "cached"
            print(name, " ".join(f"{w * 4}B/{k}:{zero.get(i, '?').split('=')[-1]}"
                                 for i, (w, k) in enumerate(pairs)))
        if "--pairs" in sys.argv:
            probe_pairs(setup, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
