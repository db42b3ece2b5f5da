# SPDX-License-Identifier: Apache-2.0
"""Loads libufile.so.0 with ctypes and declares the cuFile calls the package uses.

Search order: $UFILE_LIBRARY (a path; when set, the only place, and a path
naming no file is an ImportError), a library bundled beside this file (pip
install with UFILE_LIBRARY set), the path `cmake --install` recorded in
_libpath.py (relative to this folder), then the dynamic linker's own search."""
from __future__ import annotations

import ctypes
import os
import threading

from . import _errors

_LOCK = threading.Lock()
_LIB: ctypes.CDLL | None = None
SONAME = "libufile.so.0"


class CUfileError_t(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class _Handle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("handle", ctypes.c_void_p)]


class CUfileDescr_t(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("handle", _Handle), ("fs_ops", ctypes.c_void_p)]


CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1


def _candidates() -> list[str]:
    """Where to look; $UFILE_LIBRARY, when set, is the only place."""
    env = os.environ.get("UFILE_LIBRARY")
    if env:
        if not os.path.isfile(env):
            what = "a directory" if os.path.isdir(env) else "no file"
            raise ImportError(f"ufile: UFILE_LIBRARY={env} names {what}; set it to the path "
                              f"of {SONAME} (a build tree's build/src/{SONAME}), or unset it "
                              "to use the package's own library")
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, SONAME)]
    try:
        from . import _libpath  # written by `cmake --install`
        out.append(os.path.normpath(os.path.join(here, _libpath.LIBRARY)))
    except ImportError:
        pass
    return out


def _declare(lib: ctypes.CDLL) -> None:
    vp, sz, off = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64
    lib.cuFileDriverOpen.restype = CUfileError_t
    lib.cuFileDriverOpen.argtypes = []
    lib.cuFileHandleRegister.restype = CUfileError_t
    lib.cuFileHandleRegister.argtypes = [ctypes.POINTER(vp), ctypes.POINTER(CUfileDescr_t)]
    lib.cuFileHandleDeregister.restype = None
    lib.cuFileHandleDeregister.argtypes = [vp]
    lib.cuFileBufRegister.restype = CUfileError_t
    lib.cuFileBufRegister.argtypes = [vp, sz, ctypes.c_int]
    lib.cuFileBufDeregister.restype = CUfileError_t
    lib.cuFileBufDeregister.argtypes = [vp]
    for name in ("cuFileRead", "cuFileWrite"):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_ssize_t
        fn.argtypes = [vp, vp, sz, off, off]
    lib.cuFileGetVersion.restype = CUfileError_t
    lib.cuFileGetVersion.argtypes = [ctypes.POINTER(ctypes.c_int)]


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        if not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        return ctypes.CDLL(path, use_errno=True)
    try:
        return ctypes.CDLL(SONAME, use_errno=True)
    except OSError as exc:
        tried.append(f"{SONAME} on the linker path ({exc})")
    raise ImportError("ufile: libufile.so.0 not found; set UFILE_LIBRARY to its path. "
                      "Tried: " + "; ".join(tried))


def lib() -> ctypes.CDLL:
    """The loaded library, declared and opened (cuFileDriverOpen) once per process."""
    global _LIB
    if _LIB is not None:
        return _LIB
    with _LOCK:
        if _LIB is None:
            loaded = _load()
            _declare(loaded)
            st = loaded.cuFileDriverOpen()
            if st.err != 0:
                raise _errors.from_status("cuFileDriverOpen", st.err, None)
            _LIB = loaded
    return _LIB


def library_path() -> str:
    """The file of the library this package calls: the mapping, in
    /proc/self/maps, that holds its cuFileGetVersion. Other libcufile files the
    process maps (NVIDIA's, loaded by torch) do not count."""
    addr = ctypes.cast(lib().cuFileGetVersion, ctypes.c_void_p).value or 0
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            if start <= addr < end and len(parts) == 6:
                return parts[5].strip().removesuffix(" (deleted)")
    raise OSError(f"ufile: no mapping of /proc/self/maps holds cuFileGetVersion ({addr:#x})")


def version() -> int:
    """cuFileGetVersion: 1000 * major + 10 * minor of the cuFile API provided."""
    v = ctypes.c_int(0)
    st = lib().cuFileGetVersion(ctypes.byref(v))
    if st.err != 0:
        raise _errors.from_status("cuFileGetVersion", st.err, None)
    return v.value
