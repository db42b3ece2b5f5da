# SPDX-License-Identifier: Apache-2.0
"""Tells which implementation a libcufile file is, by reading its ELF headers
(never by loading it: NVIDIA's library would run its constructors).

- ufile's: carries an ELF note of owner "ufile" (type 1, description the
  version), which both of ufile's shared libraries have.
- NVIDIA's: a shared object with SONAME libcufile.so.<n> that defines
  cuFileDriverOpen and cuFileHandleRegister, has no ufile note, and holds
  NVIDIA's kernel-driver strings (it talks to nvidia-fs: "nvidia-fs" or
  "nvidia_fs").
- anything else (not ELF, another SONAME, no cuFile functions, a cuFile
  library without NVIDIA's strings) is "unknown", which no command changes."""
from __future__ import annotations

import dataclasses
import mmap
import os
import struct

UFILE, NVIDIA, UNKNOWN = "ufile", "nvidia", "unknown"
_SHT_DYNSYM, _SHT_DYNAMIC, _SHT_NOTE = 11, 6, 7
_DT_SONAME = 14
_CUFILE_SYMBOLS = (b"cuFileDriverOpen", b"cuFileHandleRegister")
_NVIDIA_MARKERS = (b"nvidia-fs", b"nvidia_fs")


@dataclasses.dataclass
class Identity:
    kind: str           # UFILE, NVIDIA or UNKNOWN
    detail: str         # version, or why it is unknown
    soname: str = ""

    def describe(self) -> str:
        if self.kind == UFILE:
            return f"ufile {self.detail}"
        if self.kind == NVIDIA:
            return "NVIDIA's libcufile"
        return f"not recognised ({self.detail})"


class _Malformed(Exception):
    pass


def _sections(data, e: str) -> list[tuple]:
    shoff, = struct.unpack_from(e + "Q", data, 0x28)
    shentsize, shnum = struct.unpack_from(e + "HH", data, 0x3A)
    if shentsize != 64 or shoff > len(data) or shnum * 64 > len(data) - shoff:
        raise _Malformed("section headers outside the file")
    # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link
    return [struct.unpack_from(e + "IIQQQQI", data, shoff + i * 64) for i in range(shnum)]


def _cstr(data, off: int) -> bytes:
    if off >= len(data):
        return b""
    end = data.find(b"\0", off)
    return bytes(data[off:end if end >= 0 else len(data)])


def _notes(data, e: str, off: int, size: int):
    pos, end = off, off + size
    while pos + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from(e + "III", data, pos)
        dpos = pos + 12 + ((namesz + 3) & ~3)
        nxt = dpos + ((descsz + 3) & ~3)
        if nxt > end:
            raise _Malformed("a note outside its section")
        yield bytes(data[pos + 12:pos + 12 + namesz]), ntype, bytes(data[dpos:dpos + descsz])
        pos = nxt


def _read(data, e: str):
    """(soname, defined symbols, ufile version or None); the rules of
    tools/ufile-check/lib_identity.cpp, so that both say the same."""
    soname, defined, version = "", set(), None
    secs = _sections(data, e)
    for _, stype, _, _, off, size, link in secs:
        if stype not in (_SHT_NOTE, _SHT_DYNAMIC, _SHT_DYNSYM):
            continue
        if off > len(data) or size > len(data) - off:
            raise _Malformed("a section outside the file")
        if stype == _SHT_NOTE:
            for name, ntype, desc in _notes(data, e, off, size):
                if name == b"ufile\0" and ntype == 1:
                    version = desc.split(b"\0")[0].decode(errors="replace")
            continue
        if link >= len(secs):
            raise _Malformed("a section linked to no section")
        stroff = secs[link][4]
        if stype == _SHT_DYNAMIC:
            for i in range(0, size - 15, 16):
                tag, val = struct.unpack_from(e + "qQ", data, off + i)
                if tag == _DT_SONAME:
                    soname = _cstr(data, stroff + val).decode(errors="replace")
        else:
            for i in range(0, size - 23, 24):
                st_name, _, _, st_shndx = struct.unpack_from(e + "IBBH", data, off + i)
                if st_shndx != 0:
                    defined.add(_cstr(data, stroff + st_name))
    return soname, defined, version


def _parse(data) -> Identity:
    if data[:4] != b"\x7fELF":
        return Identity(UNKNOWN, "not an ELF file")
    if data[4] != 2 or data[5] != 1:
        return Identity(UNKNOWN, "not a 64-bit little-endian ELF file")
    e = "<"
    etype, = struct.unpack_from(e + "H", data, 16)
    if etype != 3:
        return Identity(UNKNOWN, "ELF file, not a shared object")
    try:
        soname, defined, ufile_version = _read(data, e)
    except _Malformed as exc:
        return Identity(UNKNOWN, f"malformed ELF file: {exc}")
    if ufile_version is not None:
        return Identity(UFILE, ufile_version, soname)
    if not soname.startswith("libcufile.so"):
        return Identity(UNKNOWN, f"SONAME {soname or 'none'}, not libcufile.so.*", soname)
    if not all(s in defined for s in _CUFILE_SYMBOLS):
        return Identity(UNKNOWN, "does not define the cuFile functions", soname)
    if not any(data.find(m) >= 0 for m in _NVIDIA_MARKERS):
        return Identity(UNKNOWN, "a cuFile library, but neither ufile's nor NVIDIA's", soname)
    return Identity(NVIDIA, "", soname)


def identify(path: str) -> Identity:
    """What the file at path (symbolic links followed) is; never raises for a
    malformed or unreadable file: that is UNKNOWN with the reason."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < 64:
                return Identity(UNKNOWN, "too short for an ELF file")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _parse(data)
    except OSError as exc:
        return Identity(UNKNOWN, f"unreadable: {exc.strerror or exc}")
    except (struct.error, IndexError, ValueError, OverflowError) as exc:  # not expected
        return Identity(UNKNOWN, f"malformed ELF file: {exc}")
