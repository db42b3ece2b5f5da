# SPDX-License-Identifier: Apache-2.0
"""Turns a caller's buffer object into an address and a byte length.

Accepted: torch tensors (CUDA or CPU, contiguous), objects with
``__cuda_array_interface__`` (CuPy, Numba), objects with ``__dlpack__``, and host
objects with the buffer protocol (numpy, bytearray, mmap). The memory must stay
alive and unchanged in size until the I/O using it returns: a ``Buffer`` holds a
reference to the object (and the DLPack capsule or Py_buffer) until released,
counts the I/O using it (it cannot be released while one runs) and, dropped
unreleased, releases itself (and its registration) when collected."""
from __future__ import annotations

import ctypes
import math
import threading
from typing import Any, Callable

_PyBUF_WRITABLE = 0x0001


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_api = ctypes.pythonapi
_api.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_api.PyObject_GetBuffer.restype = ctypes.c_int
_api.PyBuffer_Release.argtypes = [ctypes.POINTER(_PyBuffer)]
_api.PyBuffer_Release.restype = None
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


class Buffer:
    """Address ``ptr`` and length ``nbytes`` of a caller's memory; ``device`` is
    True for GPU memory. Call ``release()`` (or use ``with``) after the I/O; a
    released Buffer no longer keeps the memory alive and cannot be used again.
    Thread-safe: I/O takes a use (``acquire``/``done``) and release refuses,
    with BufferError, while one is taken."""

    def __init__(self, ptr: int, nbytes: int, device: bool, keep: Any = None,
                 pybuf: _PyBuffer | None = None, tensor: Any = None):
        self.ptr, self.nbytes, self.device = ptr, nbytes, device
        self._keep, self._pybuf, self._tensor = keep, pybuf, tensor
        self._lock = threading.Lock()
        self._users = 0
        self._on_release: Callable[[int], None] | None = None  # the registration's undo
        self.released = False

    def acquire(self) -> None:
        """Takes a use for one I/O; ValueError once released."""
        with self._lock:
            if self.released:
                raise ValueError("ufile: the Buffer was released (deregister_buffer); "
                                 "its memory may be gone")
            self._users += 1

    def done(self) -> None:
        """Gives back a use taken by acquire()."""
        with self._lock:
            self._users -= 1

    def check(self) -> None:
        """ValueError when a tensor's storage moved or shrank since (resize_)."""
        t = self._tensor
        if t is not None and (t.data_ptr() != self.ptr or
                              t.numel() * t.element_size() < self.nbytes):
            raise ValueError(f"ufile: the tensor's storage moved or shrank since this Buffer "
                             f"was made ({self.ptr:#x}, {self.nbytes} bytes; resize_?): make "
                             "a new one (deregister_buffer, register_buffer)")

    def on_release(self, undo: Callable[[int], None]) -> None:
        """undo(ptr) runs when the Buffer is released without retire() (a
        registered Buffer dropped without deregister_buffer)."""
        self._on_release = undo

    def retire(self) -> None:
        """Marks the Buffer released; BufferError while an I/O uses it, ValueError
        when it was released already. The memory is kept until release()."""
        with self._lock:
            if self._users:
                raise BufferError(f"ufile: the Buffer is in use by {self._users} I/O "
                                  "operation(s): wait for them (their futures) first")
            if self.released:
                raise ValueError("ufile: the Buffer was released already")
            self.released = True
            self._on_release = None  # the caller undoes the registration itself

    def release(self) -> None:
        """Lets go of the memory (and any registration); BufferError while an
        I/O uses the Buffer. A second call does nothing."""
        with self._lock:
            if self._users:
                raise BufferError(f"ufile: the Buffer is in use by {self._users} I/O "
                                  "operation(s): wait for them (their futures) first")
            self.released = True
            pybuf, self._pybuf, self._keep, self._tensor = self._pybuf, None, None, None
            undo, self._on_release = self._on_release, None
        if undo is not None:
            undo(self.ptr)
        if pybuf is not None:
            _api.PyBuffer_Release(ctypes.byref(pybuf))

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to free
            pass

    def __enter__(self) -> "Buffer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _from_torch(t: Any) -> Buffer:
    if not t.is_contiguous():
        raise ValueError("ufile: the tensor must be contiguous")
    return Buffer(t.data_ptr(), t.numel() * t.element_size(), t.is_cuda, keep=t, tensor=t)


def _from_cai(obj: Any) -> Buffer:
    cai = obj.__cuda_array_interface__
    shape = tuple(cai["shape"])
    itemsize = int(cai["typestr"][2:])
    strides = cai.get("strides")
    if strides is not None and tuple(strides) != _c_strides(shape, itemsize):
        raise ValueError("ufile: __cuda_array_interface__ buffer must be C-contiguous")
    return Buffer(int(cai["data"][0] or 0), math.prod(shape) * itemsize, True, keep=obj)


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    out, step = [], itemsize
    for dim in reversed(shape):
        out.append(step)
        step *= dim
    return tuple(reversed(out))


def _from_dlpack(obj: Any) -> Buffer:
    capsule = obj.__dlpack__()
    if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise ValueError("ufile: __dlpack__ returned no unconsumed dltensor capsule")
    # DLManagedTensor starts with its DLTensor.
    t = _DLTensor.from_address(_api.PyCapsule_GetPointer(capsule, b"dltensor"))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    itemsize = (t.dtype.bits * t.dtype.lanes + 7) // 8
    if t.strides and tuple(t.strides[i] * itemsize for i in range(t.ndim)) != \
            _c_strides(shape, itemsize):
        raise ValueError("ufile: DLPack tensor must be C-contiguous")
    kind = t.device.device_type
    if kind not in (_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED):
        raise ValueError(f"ufile: DLPack device type {kind} is not CPU or CUDA memory")
    ptr = (t.data or 0) + t.byte_offset
    return Buffer(ptr, math.prod(shape) * itemsize, kind in (_DL_CUDA, _DL_CUDA_MANAGED),
                  keep=(obj, capsule))


def _from_buffer_protocol(obj: Any, writable: bool) -> Buffer:
    view = _PyBuffer()
    flags = _PyBUF_WRITABLE if writable else 0
    # PyBUF_SIMPLE asks for contiguous bytes; exporters refuse anything else.
    if _api.PyObject_GetBuffer(obj, ctypes.byref(view), flags) != 0:
        raise BufferError("ufile: object refused a contiguous buffer")
    return Buffer(view.buf or 0, view.len, False, keep=obj, pybuf=view)


def _is_torch(obj: Any) -> bool:
    mod = type(obj).__module__
    return mod.startswith("torch") and hasattr(obj, "data_ptr")


def resolve(obj: Any, writable: bool) -> Buffer:
    """The Buffer for obj; writable=True when the I/O writes into it (a read).
    A Buffer passed in is returned as it is: release only what this made."""
    if isinstance(obj, Buffer):  # the caller's: its owner releases it
        if obj.released:
            raise ValueError("ufile: the Buffer was released (deregister_buffer); "
                             "its memory may be gone")
        return obj
    if _is_torch(obj):
        return _from_torch(obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj)
    try:
        return _from_buffer_protocol(obj, writable)
    except (BufferError, TypeError) as exc:
        if hasattr(obj, "__dlpack__"):
            return _from_dlpack(obj)
        raise TypeError(f"ufile: cannot use a {type(obj).__name__} as a buffer "
                        f"(need a tensor, __cuda_array_interface__, __dlpack__ "
                        f"or a contiguous{' writable' if writable else ''} buffer): {exc}") from None
