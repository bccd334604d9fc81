# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""generator.py - random mgpu* programs for the differential tester (runner.c runs them).

A program is text, one operation a line, over numbered handles (sN streams, eN events, bN buffers
of 32-bit words, "-" the NULL stream), between a line ``seq ID`` and a line ``end``:

    dev D                 mgpuSetDefaultDevice(D); later handles belong to device D
    drain D               a device barrier: on device D, mgpuMemAlloc(4, NULL) + mgpuMemFree(p, NULL)
    stream S / sdestroy S / ssync S          mgpuStreamCreate / Destroy / Synchronize
    event E / edestroy E / esync E           mgpuEventCreate / Destroy / Synchronize
    record E S / wait S E                    mgpuEventRecord(E, S) / mgpuStreamWaitEvent(S, E)
    alloc B WORDS d|h S   mgpuMemAlloc(WORDS*4, S, host_shared = h)
    free B S              mgpuMemFree(B, S)
    memset32 B V S / memset16 B V S          the whole buffer
    copy DST SRC WORDS S  mgpuMemcpy device to device
    upload B V S          mgpuMemcpy from a host buffer holding a pattern made from V
    read B S              mgpuMemcpy to a host buffer, mgpuStreamSynchronize(S); digested
    hread B / hwrite B V  the host reads (digested) / writes a host_shared buffer directly
    fill B V S / scale B K S / slow B V SPINS S / add DST SRC WORDS S    kernel launches
                          (tests/difftest/kernels.cu; slow waits ~SPINS us on the GPU first)

Every program the generator writes is *deterministic under the stock library*: its digest (what
the host reads) is the same however the GPU interleaves the streams' work. The stock facts relied
on: work on one stream runs in order; mgpuStreamWaitEvent(S, E) orders S's later work after the
work before E's latest record; mgpuStreamSynchronize / mgpuEventSynchronize return when that work
is done; work enqueued after the host learnt that work T is done runs after T; cuMemAlloc is
synchronous; cuMemFree (any stream) waits for the whole device. The generator tracks a vector clock per stream, per event record and for the host, and
each buffer's unordered accesses, and emits an operation only if

 1. it writes a buffer: every earlier access of the buffer is ordered before it;
    it reads a buffer: every earlier write of it is ordered before it (no data races);
 2. a read (kernel argument, copy source, read, hread, scale) covers only words written before
    (or fresh zeros, feature ``fresh_zero``);
 3. hread/hwrite touch host_shared buffers only, after the host learnt that the conflicting GPU
    accesses finished (ssync, esync, drain, or a read's own synchronisation);
 4. it uses handles of the current device (syncs and destroys: any device), live handles only,
    never the NULL stream for copies, memsets, launches or reads (the stock wrapper has no
    current context there);
 5. the NULL-stream free is a barrier for the buffer's device (the stock cuMemFree waits for the
    device; the library promises the same: README, caching allocator), and so is ``drain``.

Without features (profile ``ordered``) programs also follow MLIR's stream-ordered rules: a buffer
allocated on stream A is used elsewhere only after a join with A (an event recorded on A after the
alloc, or the host synchronising A); a free on stream F comes after every use of the buffer is
ordered before F's position; memory is written before it is read. Features, each a race that MLIR's
rules forbid but the stock library makes deterministic (profile ``stock`` = cross_free and
cross_alloc):

 - ``cross_free``: free a buffer on any stream while other streams still use it (the stock free
   waits for the device), then typically allocate the same size again and use it elsewhere
   (review exp0/R1);
 - ``cross_alloc``: use a buffer allocated on stream A on another stream without joining A
   (cuMemAlloc is synchronous; review exp1/R2 when A still runs the previous owner's kernel);
 - ``fresh_zero`` (not in the stock profile): read freshly allocated memory and expect zeros, as
   the review's exp3/exp4 saw and as the fake driver does. *Not a stock guarantee*: on the H100
   the stock cuMemAlloc/cuMemAllocManaged hand out a freed range with its old contents whenever
   other allocations are live (benchmarks/results/h100-difftest/probe-pairs.txt), so a library
   need not zero either; the feature stays for experiments on the fake driver.

Every program ends with a drain of each device used, a read of every live, fully written buffer,
frees on the NULL stream, and the destruction of every live stream and event.

Classes (issue 19, "the good neighbour"; `classes`, each adds its operations to the random ones;
runner.c says what each operation does):

 - ``modglobal``: ``modg B S`` loads modglobal.fatbin, launches dt_bump (writes B from a
   module-scope counter, then increments it) and unloads, as LLVM <= 20 code does per launch;
   a fresh load starts the counter at 0, so stock always writes counter 0.
 - ``pressure``: buffers of memory units (``ualloc B K S``, at most 8 units held; only memset and
   freed, never read) and another user's ``foreign K`` cuMemAlloc; a unit counts as held from its
   allocation until the host knows its free finished (the free on the NULL stream, or a sync of
   the free's stream and of every stream that used it), so under stock every allocation succeeds.
 - ``capture``: another library's thread begins a GLOBAL-mode capture (``capbegin``), the program
   goes on with what stock does without breaking it (launches, memsets, stream and event
   creation and destruction, host accesses, a second thread's launches; no allocation, free,
   copy, synchronisation, record or wait) and the library ends the capture (``capend``); both
   results are compared.
 - ``threads``: ``par S`` .. ``join``: a second program thread runs the ``@1`` lines (stream
   operations on S, on buffers the main thread leaves alone meanwhile) while the main thread goes
   on with other streams and buffers and ``tsync S`` races the launches (review R27).
 - ``reset`` / ``sticky``: once per program (one device; stock freezes device 0's context): a
   drain, then ``reset 0`` (cuDevicePrimaryCtxReset) or ``fault S`` (a device-side assert on S,
   then mgpuStreamSynchronize(S)); every handle of the device is dead from then on (no operation
   names it again), and the program goes on with new ones. What is compared: the digest (reads,
   NULL handles, the reset's result) and which operations reported which errors.
Two devices (``devices=2``) combine with every class but reset and sticky.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence

FEATURES = ("cross_free", "cross_alloc", "fresh_zero")
CLASSES = ("modglobal", "pressure", "capture", "threads", "reset", "sticky")
UNITS = 8  # memory units a program may hold (class pressure)
# in a capture window: what the stock calls do without breaking another thread's GLOBAL capture
_CAPTURE_SAFE = {"fill", "add", "scale", "slow", "memset32", "memset16", "stream", "event",
                 "edestroy", "sdestroy", "hread", "hwrite", "par", "@1", "join", "dev", "capend"}
# operations that may name a buffer of memory units
_BIG_OK = {"memset32", "memset16", "free"}
PROFILES: Dict[str, Sequence[str]] = {"ordered": (), "stock": ("cross_free", "cross_alloc")}
# Sizes in words: pairs that share one size class of the caching allocator (4000 B and 4096 B,
# 400 B and 512 B), so freed blocks are handed out again.
SIZES = (16, 100, 128, 1000, 1024, 4000, 4096)

Clock = Dict[str, int]


def _join(a: Clock, b: Clock) -> Clock:
    out = dict(a)
    for k, v in b.items():
        if out.get(k, 0) < v:
            out[k] = v
    return out


@dataclass
class _Access:
    write: bool
    stream: Optional[str]  # None: the host (ordered before everything enqueued later)
    pos: int = 0


@dataclass
class _Stream:
    dev: int
    alive: bool = True
    length: int = 0  # operations (and alloc/free positions) enqueued so far
    vc: Clock = field(default_factory=dict)  # what its next operation is ordered after


@dataclass
class _Event:
    dev: int
    alive: bool = True
    vc: Clock = field(default_factory=dict)  # of its latest record ({} never recorded)


@dataclass
class _Buffer:
    dev: int
    words: int
    host_shared: bool
    init: int  # words [0, init) hold written data (or known zeros)
    accesses: List[_Access] = field(default_factory=list)  # not yet known ordered before all
    alive: bool = True
    units: int = 0  # class pressure: memory units (words unknown to the model), else 0


class Model:
    """The ordering model of one program: streams, events and buffers with vector clocks, the
    host's clock, and `_apply`, which checks one operation against the rules above (with the
    features `allow`) and performs it. The generator and the checker share it."""

    def __init__(self, devices: int = 1, allow: Iterable[str] = (),
                 classes: Iterable[str] = ()) -> None:
        self.devices = devices
        self.allow = frozenset(allow)
        self.classes = frozenset(classes)
        unknown = self.allow - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown features {sorted(unknown)} (known: {FEATURES})")
        if self.classes - set(CLASSES):
            raise ValueError(f"unknown classes {sorted(self.classes - set(CLASSES))} "
                             f"(known: {CLASSES})")
        self._reset()

    def _reset(self) -> None:
        self.cur = 0
        self.used_devs = {0}
        self.H: Clock = {}
        self.streams: Dict[str, _Stream] = {}
        self.events: Dict[str, _Event] = {}
        self.bufs: Dict[str, _Buffer] = {}
        self.capturing = False  # between capbegin and capend
        self.par: Optional[str] = None  # the second thread's stream, between par and join
        self.par_bufs: set = set()  # buffers the second thread's lines named (this block)
        self.par_main: set = set()  # buffers the main thread's lines named (this block)
        self.pending_units: List = []  # [(units, [(stream, pos), ...])]: freed, maybe in use
        self.dead_devs: set = set()  # a reset or a sticky error happened there

    def held_units(self) -> int:
        """Units of live buffers, and of freed ones the host does not know finished."""
        self.pending_units = [(u, w) for u, w in self.pending_units
                              if any(self.H.get(st, 0) < pos for st, pos in w)]
        return sum(b.units for b in self.bufs.values() if b.alive) + \
            sum(u for u, _ in self.pending_units)

    def _allowed(self, t: List[str]) -> bool:
        """The class rules that restrict which operation may come where (no change made)."""
        op = t[0]
        if self.capturing and op not in _CAPTURE_SAFE:
            return False
        names = [x for x in t[1:] if x[:1] == "b" and x[1:].isdigit()]
        if op not in _BIG_OK and any(self.bufs[x].units for x in names if x in self.bufs):
            return False
        if op in ("par", "capbegin", "reset", "fault") and self.par is not None:
            return False
        if op in ("@1", "join") and self.par is None:
            return False
        if op == "@1":
            inner = t[1:]
            if inner[0] not in ("memset32", "memset16", "fill", "slow", "scale", "add", "copy",
                                "upload", "modg") or inner[-1] != self.par:
                return False
            return not (set(names) & self.par_main)
        if self.par is not None:
            if op in ("drain", "join", "tsync"):
                return op != "drain"
            if op == "free" and t[2] == "-":
                return False
            if self.par in t[1:] or set(names) & self.par_bufs:
                return False
        return True

    def _view(self, s: str) -> Clock:
        st = self.streams[s]
        v = _join(st.vc, self.H)
        v[s] = st.length + 1
        return v

    def _enqueue(self, s: str) -> int:
        st = self.streams[s]
        st.vc = self._view(s)
        st.length += 1
        return st.length

    @staticmethod
    def _known(v: Clock, a: _Access) -> bool:
        return a.stream is None or v.get(a.stream, 0) >= a.pos

    def _ordered(self, b: _Buffer, write: bool, v: Clock) -> bool:
        return all(self._known(v, a) for a in b.accesses if write or a.write)

    def _ok_on(self, c: str, reads: Sequence[_Buffer], writes: Sequence[_Buffer]) -> bool:
        v = self._view(c)
        return all(self._ordered(b, False, v) for b in reads) and \
            all(self._ordered(b, True, v) for b in writes)

    def _touch(self, b: _Buffer, write: bool, s: Optional[str], pos: int) -> None:
        a = _Access(write, s, pos)
        if write:
            b.accesses = [a]  # ordered after all earlier ones (checked), which it now stands for
        else:
            b.accesses.append(a)

    def _barrier(self, dev: int) -> None:
        for name, st in self.streams.items():
            if st.dev == dev:
                self.H[name] = max(self.H.get(name, 0), st.length)

    def _live(self, table: Dict, dev: Optional[int] = None) -> List[str]:
        return [k for k, x in table.items() if x.alive and (dev is None or x.dev == dev)]

    def _stream(self, tok: str, any_dev: bool = False) -> Optional[str]:
        st = self.streams.get(tok)
        return tok if st and st.alive and (any_dev or st.dev == self.cur) else None

    def _buf(self, tok: str) -> Optional[_Buffer]:
        b = self.bufs.get(tok)
        return b if b and b.alive and b.dev == self.cur else None

    def _access(self, s: str, reads: Sequence[_Buffer], writes: Sequence[_Buffer]) -> bool:
        if not self._stream(s) or not self._ok_on(s, reads, writes):
            return False
        pos = self._enqueue(s)
        for b in reads:
            if b not in writes:
                self._touch(b, False, s, pos)
        for b in writes:
            self._touch(b, True, s, pos)
        return True

    def _apply(self, t: List[str]) -> bool:
        """Check one operation against the rules (with the features and classes) and perform
        it; False (nothing done) if it breaks one."""
        if not self._allowed(t):
            return False
        if t[0] == "@1":  # on the second thread: on its stream's device
            cur = self.cur
            self.cur = self.streams[self.par].dev
            ok = self._apply_op(t[1:])
            self.cur = cur
            if ok:
                self.par_bufs |= {x for x in t[2:] if x[:1] == "b" and x[1:].isdigit()}
            return ok
        ok = self._apply_op(t)
        if ok and self.par is not None:
            self.par_main |= {x for x in t[1:] if x[:1] == "b" and x[1:].isdigit()}
        return ok

    def _kill_device(self, dev: int) -> None:
        """A reset or a sticky error: no handle of `dev` is usable (or named) any more."""
        for table in (self.streams, self.events, self.bufs):
            for x in table.values():
                if x.dev == dev:
                    x.alive = False
        self.pending_units = []
        self.dead_devs.add(dev)

    def _apply_op(self, t: List[str]) -> bool:  # noqa: C901 (one branch per operation)
        op = t[0]
        if op == "dev":
            self.cur = int(t[1])
            self.used_devs.add(self.cur)
            return 0 <= self.cur < self.devices
        if op == "drain":
            self._barrier(int(t[1]))
            return True
        if op == "stream":
            self.streams[t[1]] = _Stream(self.cur, vc=dict(self.H))
            return True
        if op == "sdestroy" or op == "ssync":
            if not self._stream(t[1], any_dev=True):
                return False
            st = self.streams[t[1]]
            if op == "ssync":
                self.H = _join(self.H, _join(st.vc, {t[1]: st.length}))
            else:
                st.alive = False
            return True
        if op == "event":
            self.events[t[1]] = _Event(self.cur)
            return True
        if op in ("edestroy", "esync"):
            e = self.events.get(t[1])
            if not e or not e.alive:
                return False
            if op == "esync":
                self.H = _join(self.H, e.vc)
            else:
                e.alive = False
            return True
        if op in ("record", "wait"):
            e_tok, s_tok = (t[1], t[2]) if op == "record" else (t[2], t[1])
            e = self.events.get(e_tok)
            if not e or not e.alive or e.dev != self.cur or not self._stream(s_tok):
                return False
            st = self.streams[s_tok]
            if op == "record":
                st.vc = _join(st.vc, self.H)
                e.vc = _join(st.vc, {s_tok: st.length})
            else:
                st.vc = _join(st.vc, e.vc)
            return True
        if op == "alloc":
            words, s = int(t[2]), t[4]
            if s != "-" and not self._stream(s):
                return False
            buf = _Buffer(self.cur, words, t[3] == "h", words if "fresh_zero" in self.allow else 0)
            if s != "-" and "cross_alloc" not in self.allow:
                buf.accesses = [_Access(True, s, self._enqueue(s))]
            else:
                buf.accesses = [_Access(True, None)]
            self.bufs[t[1]] = buf
            return True
        if op == "free":
            b = self.bufs.get(t[1])
            if not b or not b.alive:
                return False
            pend = None
            if b.units and t[2] != "-" and t[2] in self.streams:
                # held until the host knows that its users and its free finished
                pend = (b.units, [(a.stream, a.pos) for a in b.accesses if a.stream] +
                        [(t[2], self.streams[t[2]].length + 1)])
            if t[2] == "-":
                self._barrier(b.dev)
            elif b.dev != self.cur or not self._stream(t[2]):
                return False
            elif "cross_free" not in self.allow:
                if not self._ok_on(t[2], [], [b]):
                    return False
                self._enqueue(t[2])
            if pend:
                self.pending_units.append(pend)
            b.alive = False
            return True
        if op in ("memset32", "memset16", "upload", "fill", "slow"):
            b = self._buf(t[1])
            if not b or not self._access(t[-1], [], [b]):
                return False
            b.init = b.words
            return True
        if op == "scale":
            b = self._buf(t[1])
            return bool(b) and b.init >= b.words and self._access(t[3], [b], [b])
        if op in ("copy", "add"):
            d, src, m = self._buf(t[1]), self._buf(t[2]), int(t[3])
            if not d or not src or d is src or m > min(d.words, src.words) or src.init < m:
                return False
            if op == "add" and d.init < m:
                return False
            if not self._access(t[4], [src, d] if op == "add" else [src], [d]):
                return False
            d.init = max(d.init, m)
            return True
        if op == "read":
            b = self._buf(t[1])
            if not b or b.init < b.words or not self._access(t[2], [b], []):
                return False
            st = self.streams[t[2]]
            self.H = _join(self.H, _join(st.vc, {t[2]: st.length}))
            return True
        if op in ("hread", "hwrite"):
            b = self._buf(t[1])
            write = op == "hwrite"
            if not b or not b.host_shared or not self._ordered(b, write, self.H):
                return False
            if not write and b.init < b.words:
                return False
            self._touch(b, write, None, 0)
            if write:
                b.init = b.words
            return True
        if op == "modg":
            b = self._buf(t[1])
            if not b or not self._access(t[2], [], [b]):
                return False
            b.init = b.words
            return True
        if op == "ualloc":
            k, s = int(t[2]), t[3]
            if k < 1 or self.held_units() + k > UNITS or (s != "-" and not self._stream(s)):
                return False
            buf = _Buffer(self.cur, 0, False, 0, units=k)
            if s != "-" and "cross_alloc" not in self.allow:
                buf.accesses = [_Access(True, s, self._enqueue(s))]
            else:
                buf.accesses = [_Access(True, None)]
            self.bufs[t[1]] = buf
            return True
        if op == "foreign":
            k = int(t[1])
            return 1 <= k and self.held_units() + k <= UNITS
        if op == "capbegin":
            if self.capturing:
                return False
            self.capturing = True
            return True
        if op == "capend":
            if not self.capturing:
                return False
            self.capturing = False
            return True
        if op == "par":
            if not self._stream(t[1], any_dev=True):
                return False
            self.par, self.par_bufs, self.par_main = t[1], set(), set()
            return True
        if op == "join":
            self.par = None
            return True
        if op == "tsync":
            return bool(self._stream(t[1], any_dev=True))
        if op == "reset":
            d = int(t[1])
            if not 0 <= d < self.devices:
                return False
            self._kill_device(d)
            return True
        if op == "fault":
            if not self._stream(t[1]):
                return False
            self._kill_device(self.cur)
            return True
        return False


class Generator(Model):
    """Programs from a seed; `allow` names the features (FEATURES) the programs may use. Each
    operation is chosen among those the model allows and performed through Model._apply."""

    def __init__(self, seed: int, devices: int = 1, allow: Iterable[str] = (),
                 spins: Sequence[int] = (0,), max_ops: int = 50,
                 sizes: Sequence[int] = SIZES, classes: Iterable[str] = ()) -> None:
        self.rng = random.Random(seed)
        self.sizes = tuple(sizes)
        self.spins = tuple(spins)
        self.max_ops = max_ops
        classes = frozenset(classes)
        if classes & {"reset", "sticky"}:
            devices = 1  # the stock library works on device 0 only (its frozen context)
        super().__init__(devices, allow, classes)

    def _reset(self) -> None:
        super()._reset()
        self.out: List[str] = []
        self.n = {"s": 0, "e": 0, "b": 0}
        self.realloc: Optional[_Buffer] = None  # a buffer just freed: allocate its size again
        self.fresh: Optional[str] = None  # a buffer just allocated again: use it soon

    def _new(self, kind: str) -> str:
        name = f"{kind}{self.n[kind]}"
        self.n[kind] += 1
        return name

    def _emit(self, line: str) -> None:
        self.out.append(line)

    def _do(self, line: str) -> bool:
        """Perform and emit an operation the generator chose as allowed; False (nothing emitted)
        if a class rule forbids it here (capture window, second thread)."""
        if not self._allowed(line.split()):
            return False
        ok = self._apply(line.split())
        assert ok, f"the generator chose an operation its model rejects: {line}"
        self._emit(line)
        return True

    # ---- choices ----
    def _main_streams(self) -> List[str]:
        """Live streams of the current device that the main thread may use now."""
        return [x for x in self._live(self.streams, self.cur) if x != self.par]

    def _pick_stream(self) -> Optional[str]:
        live = self._main_streams()
        return self.rng.choice(live) if live else None

    def _join(self, c: str, reads: Sequence[_Buffer], writes: Sequence[_Buffer]) -> None:
        """Order stream c after the accesses that the operation conflicts with, as MLIR's async
        lowering does: an event recorded on their stream and waited for on c (or the host
        synchronising that stream, or a drain when it was destroyed)."""
        if self.capturing:
            return  # no record, wait or synchronisation during another library's capture
        v = self._view(c)
        todo = {a.stream for b in reads for a in b.accesses if a.write and not self._known(v, a)}
        todo |= {a.stream for b in writes for a in b.accesses if not self._known(v, a)}
        for t in sorted(x for x in todo if x):
            st = self.streams[t]
            if not st.alive:
                self.op_drain(self.cur)
            elif self.rng.random() < 0.2:
                self.op_ssync(t)
            else:
                es = self._live(self.events, self.cur)
                if not es or (len(es) < 3 and self.rng.random() < 0.3):
                    self.op_event()
                    es = self._live(self.events, self.cur)
                e = self.rng.choice(es)
                self.op_record(e, t)
                self.op_wait(c, e)

    def _gpu_op(self, kind: str, reads: Sequence[_Buffer], writes: Sequence[_Buffer],
                line_fn, on: Optional[str] = None) -> bool:
        """Emit a stream operation reading `reads` and writing `writes` (rule 1): on a stream on
        which it is ordered already, or on another one (`on`) after joining it."""
        streams = self._main_streams()
        if not streams:
            return False
        self.rng.shuffle(streams)
        ordered = [c for c in streams if self._ok_on(c, reads, writes)]
        c = ordered[0] if ordered and self.rng.random() < 0.5 else streams[0]
        c = on or c
        if not self._ok_on(c, reads, writes):
            self._join(c, reads, writes)
            if not self._ok_on(c, reads, writes):
                return False
        return self._do(line_fn(c))

    def _value(self) -> int:
        return self.rng.randrange(1, 1 << 32)

    # ---- operations ----
    def op_dev(self) -> bool:
        if self.devices < 2:
            return False
        return self._do(f"dev {self.rng.randrange(self.devices)}")

    def op_stream(self) -> bool:
        if len(self._live(self.streams, self.cur)) >= 4:
            return False
        return self._do(f"stream {self._new('s')}")

    def op_sdestroy(self) -> bool:
        live = self._live(self.streams)
        if len(live) < 2:
            return False
        return self._do(f"sdestroy {self.rng.choice(live)}")

    def op_ssync(self, s: Optional[str] = None) -> bool:
        live = self._live(self.streams)
        if not live:
            return False
        return self._do(f"ssync {s or self.rng.choice(live)}")

    def op_event(self) -> bool:
        if len(self._live(self.events, self.cur)) >= 3:
            return False
        return self._do(f"event {self._new('e')}")

    def op_edestroy(self) -> bool:
        live = self._live(self.events)
        if not live:
            return False
        return self._do(f"edestroy {self.rng.choice(live)}")

    def op_record(self, e: Optional[str] = None, s: Optional[str] = None) -> bool:
        es, s = self._live(self.events, self.cur), s or self._pick_stream()
        if not es or not s:
            return False
        return self._do(f"record {e or self.rng.choice(es)} {s}")

    def op_wait(self, s: Optional[str] = None, e: Optional[str] = None) -> bool:
        es, s = self._live(self.events, self.cur), s or self._pick_stream()
        if not es or not s:
            return False
        return self._do(f"wait {s} {e or self.rng.choice(es)}")

    def op_esync(self) -> bool:
        live = self._live(self.events)
        if not live:
            return False
        return self._do(f"esync {self.rng.choice(live)}")

    def op_drain(self, d: Optional[int] = None) -> bool:
        d = self.rng.choice(sorted(self.used_devs)) if d is None else d
        return self._do(f"drain {d}")

    def op_alloc(self, words: Optional[int] = None, host_shared: Optional[bool] = None,
                 s: Optional[str] = None) -> bool:
        if len(self._live(self.bufs)) >= 6:
            return False
        words = words or self.rng.choice(self.sizes)
        hs = self.rng.random() < 0.3 if host_shared is None else host_shared
        if s is None:
            s = self._pick_stream() if self.rng.random() < 0.7 else None
        elif s == "-":
            s = None
        b = self._new("b")
        self.fresh = b
        return self._do(f"alloc {b} {words} {'h' if hs else 'd'} {s or '-'}")

    def op_free(self, b: Optional[str] = None, on: Optional[str] = None) -> bool:
        live = self._live(self.bufs)
        if not live:
            return False
        b = b or self.rng.choice(live)
        buf = self.bufs[b]
        s = None
        if on and ("cross_free" in self.allow or self._ok_on(on, [], [buf])):
            s = on
        elif buf.dev == self.cur and self.rng.random() < 0.75:
            streams = self._live(self.streams, self.cur)
            self.rng.shuffle(streams)
            last = {a.stream for a in buf.accesses}
            streams.sort(key=lambda c: c in last)  # another stream than its users' first
            for c in streams:
                if "cross_free" in self.allow or self._ordered(buf, True, self._view(c)):
                    s = c
                    break
        self.realloc = buf
        return self._do(f"free {b} {s or '-'}")

    def _writable(self, host: bool = False) -> List[str]:
        return [k for k, b in self.bufs.items() if b.alive and b.dev == self.cur and
                (b.host_shared or not host) and not b.units and k not in self.par_bufs]

    def _readable(self, words: int = 0) -> List[str]:
        return [k for k, b in self.bufs.items() if b.alive and b.dev == self.cur and
                b.init >= (words or b.words) and not b.units and k not in self.par_bufs]

    def _full_write(self, line_fn) -> bool:
        cands = self._writable()
        if self.fresh in cands and self.rng.random() < 0.7:
            cands = [self.fresh]
        if not cands:
            return False
        b = self.rng.choice(cands)
        return self._gpu_op("w", [], [self.bufs[b]], lambda s: line_fn(b, s))

    def op_memset32(self) -> bool:
        return self._full_write(lambda b, s: f"memset32 {b} {self._value()} {s}")

    def op_memset16(self) -> bool:
        return self._full_write(lambda b, s: f"memset16 {b} {self._value() & 0xFFFF} {s}")

    def op_upload(self) -> bool:
        return self._full_write(lambda b, s: f"upload {b} {self._value()} {s}")

    def op_fill(self) -> bool:
        return self._full_write(lambda b, s: f"fill {b} {self._value()} {s}")

    def op_slow(self) -> bool:
        return self._full_write(
            lambda b, s: f"slow {b} {self._value()} {self.rng.choice(self.spins)} {s}")

    def op_scale(self) -> bool:
        cands = self._readable()
        if not cands:
            return False
        b = self.rng.choice(cands)
        buf = self.bufs[b]
        k = self.rng.randrange(2, 1000)
        return self._gpu_op("rw", [buf], [buf], lambda s: f"scale {b} {k} {s}")

    def _pair(self, kernel: bool) -> bool:
        dsts = self._writable()
        srcs = [k for k in self._live(self.bufs, self.cur)
                if not self.bufs[k].units and k not in self.par_bufs]
        if not dsts or len(srcs) < 2:
            return False
        d = self.rng.choice(dsts)
        src = self.rng.choice([x for x in srcs if x != d])
        dbuf, sbuf = self.bufs[d], self.bufs[src]
        m = min(dbuf.words, sbuf.words)
        if sbuf.init < m or (kernel and dbuf.init < m):
            return False
        if kernel:
            return self._gpu_op("rw", [sbuf, dbuf], [dbuf], lambda s: f"add {d} {src} {m} {s}")
        return self._gpu_op("rw", [sbuf], [dbuf], lambda s: f"copy {d} {src} {m} {s}")

    def op_copy(self) -> bool:
        return self._pair(kernel=False)

    def op_add(self) -> bool:
        return self._pair(kernel=True)

    def op_read(self, b: Optional[str] = None) -> bool:
        cands = [b] if b else self._readable()
        if not cands:
            return False
        b = self.rng.choice(cands)
        return self._gpu_op("r", [self.bufs[b]], [], lambda s: f"read {b} {s}")

    def op_hread(self) -> bool:
        cands = [k for k in self._readable() if self.bufs[k].host_shared and
                 self._ordered(self.bufs[k], False, self.H)]
        if not cands:
            return False
        return self._do(f"hread {self.rng.choice(cands)}")

    def op_hwrite(self) -> bool:
        cands = [k for k in self._writable(host=True) if self._ordered(self.bufs[k], True, self.H)]
        if self.fresh in cands and self.rng.random() < 0.7:
            cands = [self.fresh]
        if not cands:
            return False
        return self._do(f"hwrite {self.rng.choice(cands)} {self._value()}")

    def op_hazard(self) -> bool:
        """The shapes of the review's exp0 (feature cross_free: a kernel on B writes p, p is freed
        on A, allocated again and written on C) and exp1 (cross_alloc: a kernel on A writes p, p is
        freed and allocated again on A, written on C without a join), among random operations."""
        feats = [f for f in ("cross_free", "cross_alloc") if f in self.allow]
        if not feats:
            return False
        while len(self._live(self.streams, self.cur)) < 3 and self.op_stream():
            pass
        streams = self._live(self.streams, self.cur)
        if len(streams) < 2 or len(self._live(self.bufs)) >= 5:
            return False
        kind = self.rng.choice(feats)
        words = self.rng.choice(self.sizes)
        hs = kind == "cross_free" and self.rng.random() < 0.3
        self.rng.shuffle(streams)
        a, b_, c = streams[0], streams[1], streams[-1]
        if not self.op_alloc(words, hs, "-"):
            return False
        b = self.fresh
        buf = self.bufs[b]
        writer = b_ if kind == "cross_free" else a
        spin = self.rng.choice(self.spins)
        self._gpu_op("w", [], [buf], lambda s: f"slow {b} {self._value()} {spin} {s}", on=writer)
        if self.rng.random() < 0.5:
            self.op_scale()
        self.op_free(b, on=a)
        if self.realloc is not buf:
            return True
        self.realloc = None
        if not self.op_alloc(words, hs, a if kind == "cross_alloc" else None):
            return True
        nb = self.fresh
        nbuf = self.bufs[nb]
        if self._gpu_op("w", [], [nbuf], lambda s: f"memset32 {nb} {self._value()} {s}", on=c):
            if self.rng.random() < 0.5:
                self.op_read(nb)
        return True

    # ---- the classes' operations ----
    def op_modg(self) -> bool:
        return self._full_write(lambda b, s: f"modg {b} {s}")

    def op_ualloc(self, s: Optional[str] = None) -> bool:
        free = UNITS - self.held_units()
        if free < 1 or len(self._live(self.bufs)) >= 7 or self.cur != 0:
            return False
        k = self.rng.randint(1, free)
        if s is None:
            s = self._pick_stream() if self.rng.random() < 0.6 else "-"
        b = self._new("b")
        if not self._do(f"ualloc {b} {k} {s or '-'}"):
            return False
        if self.rng.random() < 0.7:  # the memory is used (stock: it exists)
            self._gpu_op("w", [], [self.bufs[b]],
                         lambda c: f"memset32 {b} {self._value()} {c}", on=s if s != "-" else None)
        return True

    def _settle_units(self) -> None:
        """Make the host know that freed units are no longer in use (a sync of their streams)."""
        for _, waits in list(self.pending_units):
            for st, pos in waits:
                if self.H.get(st, 0) < pos and self.streams[st].alive:
                    self.op_ssync(st)
                elif self.H.get(st, 0) < pos:
                    self.op_drain(self.streams[st].dev)

    def op_foreign(self) -> bool:
        if self.capturing or self.par is not None:
            return False
        if self.rng.random() < 0.7:
            self._settle_units()
        free = UNITS - self.held_units()
        if free < 1:
            return False
        k = free if self.rng.random() < 0.6 else self.rng.randint(1, free)
        return self._do(f"foreign {k}")

    def op_pressure(self) -> bool:
        """Review G9 / G4: units allocated, used and freed (on a stream or NULL), then another
        user's allocation or the program's own of another size, as large as stock allows."""
        if self.cur != 0 or self.capturing or self.par is not None:
            return False
        bufs = []
        for _ in range(self.rng.randint(1, 2)):
            n = self.n["b"]
            if self.op_ualloc():
                bufs.append(f"b{n}")
        for b in bufs:
            s = self._pick_stream() if self.rng.random() < 0.6 else None
            self.op_free(b, on=s)
        self._settle_units()
        if self.rng.random() < 0.5:
            return self.op_foreign()
        return self.op_ualloc()

    def op_capture(self) -> bool:
        """Another library captures (GLOBAL mode) while the program goes on (review G2, G3)."""
        if self.capturing or self.par is not None or self.dead_devs:
            return False
        if not self._do("capbegin"):
            return False
        names = [o for o in ("fill", "add", "scale", "slow", "memset32", "memset16", "stream",
                             "event", "edestroy", "sdestroy", "hread", "hwrite", "dev")
                 if o in self._WEIGHTS]
        if "modglobal" in self.classes:
            names.append("fill")
        for _ in range(self.rng.randint(1, 8)):
            if "threads" in self.classes and self.rng.random() < 0.15:
                self.op_par(launches_only=True)
            else:
                getattr(self, f"op_{self.rng.choice(names)}")()
        return self._do("capend")

    def op_par(self, launches_only: bool = False) -> bool:
        """A second program thread launches on stream S while the main thread goes on (R27)."""
        if self.par is not None:
            return False
        streams = self._main_streams()
        cands = self._writable()
        if not streams or not cands:
            return False
        s = self.rng.choice(streams)
        mine = self.rng.sample(cands, min(len(cands), self.rng.randint(1, 2)))
        for b in mine:  # order S after the buffers' earlier users, before the block
            self._join(s, [self.bufs[b]], [self.bufs[b]])
            if not self._ok_on(s, [self.bufs[b]], [self.bufs[b]]):
                return False
        if not self._do(f"par {s}"):
            return False
        kinds = ["fill", "memset32", "memset16", "slow", "scale", "add", "copy"]
        if not launches_only:
            kinds += ["upload"] + (["modg"] if "modglobal" in self.classes else [])
        main_ops = ["fill", "memset32", "scale", "add", "read", "hread", "hwrite", "alloc",
                    "stream", "event", "record", "wait", "esync"]
        if launches_only:
            main_ops = ["fill", "memset32", "scale", "hread", "hwrite"]
        for _ in range(self.rng.randint(2, 10)):
            if self.rng.random() < 0.55:
                self._second(self.rng.choice(kinds), s, mine)
            elif self.rng.random() < 0.4:
                self._do(f"tsync {s}")
            else:
                getattr(self, f"op_{self.rng.choice(main_ops)}")()
        return self._do("join")

    def _second(self, kind: str, s: str, mine: List[str]) -> bool:
        b = self.rng.choice(mine)
        buf = self.bufs[b]
        v = self._value()
        if kind in ("scale",) and buf.init < buf.words:
            kind = "fill"
        if kind in ("add", "copy"):
            if len(mine) < 2:
                kind = "fill"
            else:
                src = [x for x in mine if x != b][0]
                m = min(buf.words, self.bufs[src].words)
                if self.bufs[src].init < m or (kind == "add" and buf.init < m):
                    kind = "fill"
                else:
                    return self._do(f"@1 {kind} {b} {src} {m} {s}")
        line = {"fill": f"fill {b} {v} {s}", "memset32": f"memset32 {b} {v} {s}",
                "memset16": f"memset16 {b} {v & 0xFFFF} {s}", "upload": f"upload {b} {v} {s}",
                "slow": f"slow {b} {v} {self.rng.choice(self.spins)} {s}",
                "scale": f"scale {b} {self.rng.randrange(2, 1000)} {s}",
                "modg": f"modg {b} {s}"}[kind]
        return self._do("@1 " + line)

    def op_reset(self) -> bool:
        """cuDevicePrimaryCtxReset between complete calls (review G7)."""
        if self.dead_devs or self.capturing or self.par is not None:
            return False
        self.op_drain(0)
        return self._do("reset 0")

    def op_fault(self) -> bool:
        """A device-side assert, then the later calls' errors (review G12)."""
        if self.dead_devs or self.capturing or self.par is not None:
            return False
        streams = self._live(self.streams, 0)
        if not streams or self.cur != 0:
            return False
        self.op_drain(0)
        return self._do(f"fault {self.rng.choice(streams)}")

    _CLASS_WEIGHTS = {
        "modglobal": {"modg": 6},
        "pressure": {"ualloc": 2, "foreign": 2, "pressure": 4},
        "capture": {"capture": 4},
        "threads": {"par": 5},
        "reset": {},
        "sticky": {},
    }

    _WEIGHTS = {
        "dev": 2, "stream": 4, "sdestroy": 1, "ssync": 3, "event": 3, "edestroy": 1, "record": 5,
        "wait": 5, "esync": 2, "drain": 1, "alloc": 6, "free": 5, "memset32": 3, "memset16": 1,
        "upload": 2, "fill": 5, "slow": 4, "scale": 3, "copy": 3, "add": 4, "read": 4,
        "hread": 2, "hwrite": 2, "hazard": 3,
    }

    def program(self, seq: int) -> List[str]:
        """The lines of program `seq` (from `seq ID` to `end`)."""
        self._reset()
        self._emit(f"seq {seq}")
        table = dict(self._WEIGHTS)
        for c in sorted(self.classes):
            table.update(self._CLASS_WEIGHTS[c])
        ops = list(table)
        weights = [table[o] for o in ops]
        for _ in range(2):
            self.op_stream()
        target = self.rng.randrange(self.max_ops // 4, self.max_ops + 1)
        # reset / sticky: once, somewhere in the middle
        ends = [c for c in ("reset", "sticky") if c in self.classes]
        end_at = self.rng.randrange(target // 3, 2 * target // 3 + 1) if ends else -1
        end_op = self.rng.choice(ends) if ends else None
        tries = 0
        while len(self.out) < target and tries < 20 * self.max_ops:
            tries += 1
            if end_op and len(self.out) >= end_at and not self.dead_devs:
                if (self.op_reset() if end_op == "reset" else self.op_fault()):
                    target = len(self.out) + self.rng.randrange(3, 15)
                continue
            if self.realloc is not None and self.rng.random() < 0.7:
                # the freed block's size and kind again: the allocator hands the block out
                r, self.realloc = self.realloc, None
                if r.dev == self.cur and self.op_alloc(r.words, r.host_shared):
                    continue
            self.realloc = None if self.rng.random() < 0.5 else self.realloc
            name = self.rng.choices(ops, weights)[0]
            getattr(self, f"op_{name}")()
        self._epilogue()
        self._emit("end")
        return self.out

    def _epilogue(self) -> None:
        assert not self.capturing and self.par is None
        for d in sorted(self.used_devs):
            self._do(f"drain {d}")
        for d in sorted(self.used_devs):
            bufs = self._live(self.bufs, d)
            if not bufs:
                continue
            if self.cur != d:
                self._do(f"dev {d}")
            if not self._live(self.streams, d):
                self.op_stream()
            for b in bufs:
                if self.bufs[b].init >= self.bufs[b].words and not self.bufs[b].units:
                    self.op_read(b)
            for b in bufs:
                self._do(f"free {b} -")
        for s in self._live(self.streams):
            self._do(f"sdestroy {s}")
        for e in self._live(self.events):
            self._do(f"edestroy {e}")


def generate(seed: int, count: int, devices: int = 1, allow: Iterable[str] = (),
             spins: Sequence[int] = (0,), max_ops: int = 50, first: int = 0,
             sizes: Sequence[int] = SIZES, classes: Iterable[str] = ()) -> List[List[str]]:
    """`count` programs, numbered from `first`; program i depends only on (seed, i, options)."""
    out = []
    for i in range(first, first + count):
        g = Generator(seed * 1_000_003 + i, devices, allow, spins, max_ops, sizes, classes)
        out.append(g.program(i))
    return out


_CREATES = {"stream": "s", "event": "e", "alloc": "b", "ualloc": "b"}
_DESTROYS = {"sdestroy", "edestroy", "free"}


def well_formed(program: Sequence[str]) -> bool:
    """Every handle an operation names was made before and not destroyed since (what a smaller
    program made by deleting lines must keep; generated programs always are)."""
    live = set()
    for line in program[1:-1]:
        t = line.split()
        if t[:1] == ["@1"]:
            t = t[1:]
        if not t:
            continue
        if t[0] in _CREATES:
            if t[1] in live:
                return False
            live.add(t[1])
            rest = t[2:]
        else:
            rest = t[1:]
        for tok in rest:
            if tok[:1] in "seb" and tok[1:].isdigit() and tok not in live:
                return False
        if t[0] in _DESTROYS:
            live.discard(t[1])
    return True


class Checker(Model):
    """Replays a program through the model and tells whether it keeps the rules above with the
    features `allow` (used to keep minimised programs in their class, and to check the
    generator itself)."""

    def check(self, program: Sequence[str]) -> Optional[str]:
        """None if the program keeps the rules, else the first line that breaks one."""
        if not well_formed(program):
            return "a handle used before it is made or after it is destroyed"
        self._reset()
        for line in program[1:-1]:
            if line.split() and not self._apply(line.split()):
                return line
        return None


