# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Write expected/<name>.txt: what each corpus program must print on a GPU, computed here from the
program's definition (no GPU, no MLIR). Lines are compared as a sorted list (device printf order
between threads is not defined); the runner's own lines ("runner: done", "count ..."), lines
starting with "info " (logged, not compared) and the driver's assertion messages are not part of
them (corpus.py). Run: python3 make_expected.py"""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def g(x: float) -> str:
    """printF32's "%g"."""
    return "%g" % x


def vec(values, fmt=str) -> str:
    return "( " + ", ".join(fmt(v) for v in values) + " )"


def printf():
    out = [f"printf block {b} thread {t} value {t + 0.25:.2f} tag 1234567890123"
           for b in range(2) for t in range(4)]
    return out + [f"printf inline thread {t} square {t * t}" for t in range(3)]


def reductions():
    t = range(100)
    o = 0
    for x in t:
        o |= x
    return [f"all_reduce add {sum(t)}", f"all_reduce maxsi {max(t)}", f"all_reduce or {o}",
            f"all_reduce addf {g(sum(x * 0.5 for x in t))}"]


def subgroup_reduce():
    out = []
    for w in range(4):
        lanes = range(32 * w, 32 * w + 32)
        v = [x % 7 + 100 for x in lanes]
        a = v[0]
        for x in v:
            a &= x
        out.append(f"subgroup_reduce warp (add and maxsi minsi) {w}, "
                   + vec([sum(lanes), a, max(lanes), min(v)]))
    return out


def shuffle():
    v = [lane * 10 + 1 for lane in range(32)]
    xor = [v[lane ^ 5] for lane in range(32)]
    down = [v[lane + 3] if lane + 3 < 32 else -1 for lane in range(32)]
    up = [v[lane - 1] if lane >= 1 else -1 for lane in range(32)]
    idx = [v[31 - lane] for lane in range(32)]
    return [f"shuffle xor 5 {vec(xor)}", f"shuffle down 3 {vec(down)}",
            f"shuffle up 1 {vec(up)}", f"shuffle idx 31-lane {vec(idx)}"]


def memcpy_memset():
    a = [i * 1.5 for i in range(16)]
    return [f"host memset32 {vec([2.5] * 16, g)}", f"host memset16 {vec([7] * 16)}",
            f"host copied {vec(a, g)}", f"kernel doubled {vec([2 * x for x in a], g)}"]


def host_register():
    out = [f"registered row {i}, " + vec([i * 8 + j + 100 for j in range(8)]) for i in range(4)]
    return out + ["registered squares " + vec([(j + 0.5) ** 2 for j in range(8)], g)]


def two_modules():
    return [f"two_modules round {it}, " + vec([3 * (t + 1000 * it) + it for t in range(64)])
            for it in range(3)]


def async_chain():
    chain = [(1 + i) * 2 for i in range(256)]
    join = [(10 + 3 * i) - (5 + i) for i in range(256)]
    out = [f"chain from {r}, " + vec(chain[r:r + 64]) for r in range(0, 256, 64)]
    return out + [f"join from {r}, " + vec(join[r:r + 64]) for r in range(0, 256, 64)]


def concurrent():
    return ["concurrent flags set ( 1, 1 )", "concurrent one saw the other 1",
            "concurrent sum after join 3"]


def wmma():
    A = [[(i + k) % 3 for k in range(16)] for i in range(16)]
    B = [[(k * j) % 5 - 2 for j in range(16)] for k in range(16)]
    D = [[sum(A[i][k] * B[k][j] for k in range(16)) + (i - j) for j in range(16)]
         for i in range(16)]
    return [f"wmma row {i}, " + vec(D[i], g) for i in range(16)]


def tma():
    return [f"tma tile row {r}, " + vec([(16 + r) * 100 + 16 + c for c in range(16)], g)
            for r in range(16)]


def cluster():
    out = []
    for by in range(2):
        for bx in range(6):
            out.append(f"cluster block (cluster_id.x cluster_id.y rank.x clusters.x "
                       f"blocks_per_cluster.x) {by * 6 + bx}, " + vec([bx // 2, by, bx % 2, 3, 2]))
    return out


def assert_pass():
    return ["assert launching", "assert values " + vec(range(8))]


def assert_fail():
    return ["assert launching", "assert values " + vec([-2] * 8)]


PROGRAMS = [printf, reductions, subgroup_reduce, shuffle, memcpy_memset, host_register,
            two_modules, async_chain, concurrent, wmma, tma, cluster, assert_pass, assert_fail]

if __name__ == "__main__":
    for p in PROGRAMS:
        (HERE / "expected" / f"{p.__name__}.txt").write_text("\n".join(p()) + "\n")
        print(p.__name__)
