# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The library's large static tables are zero-initialised, so they lie in .bss (address space
only) instead of .data (stored in the file and in every copy of it the wheel ships): the two handle
tables of the module cache (slot_table.h) are 512 KB each."""

import struct
from pathlib import Path
from typing import Dict

import mgpu_cached

SLOT_TABLE_BYTES = (1 << 16) * 8  # MC_SLOT_MAX_CHUNKS chunk pointers (slot_table.h)


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


def test_no_slot_table_in_data():
    sizes = section_sizes(Path(mgpu_cached.library_path()))
    assert sizes[".bss"] >= 2 * SLOT_TABLE_BYTES, sizes  # both tables are there, zero-filled
    assert sizes[".data"] < SLOT_TABLE_BYTES, sizes      # not one of them is stored
