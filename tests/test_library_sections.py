# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The library's static data stays small. Its handle tables (slot_table.h) hold a few chunk
pointers and grow on the heap in doubling chunks: a program's first call touches one small chunk,
not a page of zeroes made for 256 slots, nor a 512 KB array of chunk pointers (issue 21's first
call: each page a first call touches is a page fault, ~2 us on the H100's host)."""

import struct
from pathlib import Path
from typing import Dict

import mgpu_cached

OLD_SLOT_TABLE_BYTES = (1 << 16) * 8  # the chunk-pointer array each table had before


def section_sizes(path: Path) -> Dict[str, int]:
    """Name -> size of every section of a 64-bit little-endian ELF file."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "64-bit little-endian ELF"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]  # sh_offset of the section-name table

    def name(off: int) -> str:
        return data[strtab + off:data.index(b"\0", strtab + off)].decode()

    return {name(h[0]): h[5] for h in headers}


def test_static_data_is_small():
    sizes = section_sizes(Path(mgpu_cached.library_path()))
    assert sizes[".bss"] < OLD_SLOT_TABLE_BYTES, sizes  # no table of chunk pointers per slot table
    assert sizes[".data"] < OLD_SLOT_TABLE_BYTES // 4, sizes  # nothing large is stored in the file
