# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The library's small C interface (``mgpu_cached.h``), read through cffi.

Loading the library does not load the CUDA driver; :meth:`Runtime.driver_error` does, and
reports why it failed on a machine without one.
"""

from __future__ import annotations

import os
from typing import Dict, List, NamedTuple, Optional

import cffi

from ._paths import library_path

_CDEF = """
const char *mgpu_cached_version(void);
int mgpu_cached_enabled(void);
const char *mgpu_cached_backend(void);
const char *mgpu_cached_driver_path(void);
const char *mgpu_cached_driver_error(void);
int mgpu_cached_stats_count(void);
const char *mgpu_cached_stats_name(int i);
const char *mgpu_cached_stats_description(int i);
int mgpu_cached_stats_read(uint64_t *values, int n);
uint64_t mgpu_cached_allocator_release(void);
int mgpu_cached_config_count(void);
const char *mgpu_cached_config_name(int i);
const char *mgpu_cached_config_default(int i);
const char *mgpu_cached_config_value(int i);
const char *mgpu_cached_config_help(int i);
int mgpu_cached_config_explicit(int i);
"""


class Setting(NamedTuple):
    """One environment variable the library reads, as the library parsed it."""
    name: str
    default: str
    value: str       # the value in use (the default where unset or invalid)
    explicit: bool   # set to a valid value
    help: str


class Runtime:
    """One loaded copy of the runtime library (by default the installed one)."""

    def __init__(self, path: Optional[os.PathLike] = None) -> None:
        self.path = str(path) if path is not None else str(library_path())
        self._ffi = cffi.FFI()
        self._ffi.cdef(_CDEF)
        self._lib = self._ffi.dlopen(self.path)

    def _str(self, ptr) -> Optional[str]:
        return None if ptr == self._ffi.NULL else self._ffi.string(ptr).decode()

    @property
    def version(self) -> str:
        return self._str(self._lib.mgpu_cached_version()) or ""

    @property
    def enabled(self) -> bool:
        """False when MGPU_CACHED_DISABLE makes every call behave like the stock wrapper."""
        return bool(self._lib.mgpu_cached_enabled())

    @property
    def backend(self) -> str:
        return self._str(self._lib.mgpu_cached_backend()) or ""

    @property
    def driver_path(self) -> str:
        return self._str(self._lib.mgpu_cached_driver_path()) or ""

    def driver_error(self) -> Optional[str]:
        """None if the CUDA driver loads, else why not (this loads it)."""
        return self._str(self._lib.mgpu_cached_driver_error())

    def descriptions(self) -> Dict[str, str]:
        n = self._lib.mgpu_cached_stats_count()
        return {self._str(self._lib.mgpu_cached_stats_name(i)) or "":
                self._str(self._lib.mgpu_cached_stats_description(i)) or "" for i in range(n)}

    def config(self) -> List[Setting]:
        """Every environment variable the library reads: name, default, value in use, whether it
        was set (validly), what it does. Reading it parses the environment (once per library
        instance) and reports invalid values on stderr."""
        lib = self._lib
        return [Setting(self._str(lib.mgpu_cached_config_name(i)) or "",
                        self._str(lib.mgpu_cached_config_default(i)) or "",
                        self._str(lib.mgpu_cached_config_value(i)) or "",
                        bool(lib.mgpu_cached_config_explicit(i)),
                        self._str(lib.mgpu_cached_config_help(i)) or "")
                for i in range(lib.mgpu_cached_config_count())]

    def allocator_release(self) -> int:
        """Give the caching allocator's kept blocks back to the driver; returns how many."""
        return int(self._lib.mgpu_cached_allocator_release())

    def stats(self) -> Dict[str, int]:
        """Counters of this process: cache hits and misses, loads, live and pooled objects..."""
        n = self._lib.mgpu_cached_stats_count()
        values = self._ffi.new("uint64_t[]", n)
        got = self._lib.mgpu_cached_stats_read(values, n)
        names = [self._str(self._lib.mgpu_cached_stats_name(i)) or "" for i in range(got)]
        return {name: int(values[i]) for i, name in enumerate(names)}


_RUNTIME: Optional[Runtime] = None


def runtime() -> Runtime:
    """The installed library, loaded once per process."""
    global _RUNTIME
    if _RUNTIME is None:
        _RUNTIME = Runtime()
    return _RUNTIME


def stats() -> Dict[str, int]:
    """Statistics of the installed library in this process."""
    return runtime().stats()
