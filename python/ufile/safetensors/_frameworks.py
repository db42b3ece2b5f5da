# SPDX-License-Identifier: Apache-2.0
"""Tensor construction for framework="pt" (torch) and framework="np" (numpy),
under the names the safetensors package accepts for them."""
from __future__ import annotations

from typing import Any

from ._format import DTYPES, SafetensorError, TensorInfo


def normalize_device(device: Any) -> str:
    """"cpu", "cuda", "cuda:N", an int N or a torch.device -> "cpu" or "cuda:N".
    A CUDA device that torch cannot use here is a ValueError saying why."""
    if isinstance(device, int) and not isinstance(device, bool):
        text = f"cuda:{device}" if device >= 0 else repr(device)
    else:
        text = str(device)
    if text == "cpu":
        return text
    if text != "cuda" and not (text.startswith("cuda:") and text[5:].isdigit()):
        raise ValueError(f"ufile.safetensors: unsupported device {device!r} "
                         "(cpu, cuda, cuda:N, N)")
    torch = _torch_for(device)
    if text == "cuda":
        return f"cuda:{torch.cuda.current_device()}"
    count = torch.cuda.device_count()
    if int(text[5:]) >= count:
        raise ValueError(f"ufile.safetensors: device {device!r}: torch sees {count} CUDA "
                         f"device{'s' if count != 1 else ''} (cuda:0 to cuda:{count - 1})")
    return text


def _torch_for(device: Any) -> Any:
    """torch, where it can place tensors on a CUDA device; else ValueError."""
    try:
        import torch
    except ImportError as exc:
        raise ValueError(f"ufile.safetensors: device {device!r} needs torch with CUDA, "
                         f"which is not importable: {exc}") from None
    if not torch.cuda.is_available():
        why = ("was built without CUDA" if torch.version.cuda is None
               else "sees no usable CUDA device (no GPU, no driver, or "
                    "CUDA_VISIBLE_DEVICES hides them)")
        raise ValueError(f"ufile.safetensors: device {device!r} needs CUDA, but torch "
                         f"{torch.__version__} {why}; use device='cpu'")
    return torch


class Torch:
    name = "pt"

    def __init__(self) -> None:
        import torch
        self.torch = torch

    def dtype(self, info: TensorInfo, path: str) -> Any:
        dt = getattr(self.torch, DTYPES[info.dtype][1], None)
        if dt is None:
            raise SafetensorError(f"{path}, tensor {info.name!r}: dtype {info.dtype} has no "
                                  f"equivalent in torch {self.torch.__version__}")
        return dt

    def bytes_buffer(self, n: int, device: str) -> Any:
        return self.torch.empty(n, dtype=self.torch.uint8, device=device)

    def empty(self, info: TensorInfo, path: str, device: str) -> Any:
        """New storage for the tensor; an empty one is made as the safetensors
        package makes it (torch.zeros), a shape torch cannot hold is an error."""
        dt = self.dtype(info, path)
        if info.nbytes:
            return self.torch.empty(info.shape, dtype=dt, device=device)
        return _empty(lambda: self._zeros(info.shape, dt, device), info, path)

    def _zeros(self, shape: tuple, dt: Any, device: str) -> Any:
        """An empty tensor of ``shape``; where torch's contiguous strides would
        pass 2**63 (``[0, 2**62, 4]``), one with zero strides, which an empty
        tensor may have (it has no element to address)."""
        try:
            return self.torch.zeros(shape, dtype=dt, device=device)
        except RuntimeError:
            return self.torch.empty(0, dtype=dt, device=device).as_strided(
                shape, (0,) * len(shape))

    @staticmethod
    def ptr(t: Any) -> int:
        return t.data_ptr()

    def from_bytes(self, buf: Any, off: int, info: TensorInfo, path: str) -> Any:
        """A view of buf[off:off+nbytes] as the tensor when aligned, else a copy."""
        dt = self.dtype(info, path)
        if info.nbytes == 0:
            return self.empty(info, path, str(buf.device))
        raw = buf[off:off + info.nbytes]
        if off % DTYPES[info.dtype][0] == 0:
            return raw.view(dt).view(info.shape)
        out = self.torch.empty(info.shape, dtype=dt, device=buf.device)
        self.byte_view(out).copy_(raw)
        return out

    @staticmethod
    def byte_view(t: Any) -> Any:
        import torch
        return t.reshape(-1).view(torch.uint8)


class Numpy:
    name = "np"

    def __init__(self) -> None:
        import numpy
        self.np = numpy

    def dtype(self, info: TensorInfo, path: str) -> Any:
        name = DTYPES[info.dtype][2]
        if name is None:
            raise SafetensorError(f"{path}, tensor {info.name!r}: dtype {info.dtype} has no "
                                  f"numpy equivalent")
        return self.np.dtype(name)

    def bytes_buffer(self, n: int, device: str) -> Any:
        self._cpu_only(device)
        return self.np.empty(n, dtype=self.np.uint8)

    def empty(self, info: TensorInfo, path: str, device: str) -> Any:
        self._cpu_only(device)
        dt = self.dtype(info, path)
        if info.nbytes:
            return self.np.empty(info.shape, dtype=dt)
        return _empty(lambda: self.np.zeros(info.shape, dtype=dt), info, path)

    @staticmethod
    def ptr(a: Any) -> int:
        return a.__array_interface__["data"][0]

    def from_bytes(self, buf: Any, off: int, info: TensorInfo, path: str) -> Any:
        dt = self.dtype(info, path)
        if info.nbytes == 0:
            return self.empty(info, path, "cpu")
        raw = buf[off:off + info.nbytes]
        if off % dt.itemsize == 0:
            return raw.view(dt).reshape(info.shape)
        return raw.copy().view(dt).reshape(info.shape)

    @staticmethod
    def _cpu_only(device: str) -> None:
        if device != "cpu":
            raise ValueError(f"ufile.safetensors: framework='np' loads to the CPU, "
                             f"not {device!r}")


def _empty(make: Any, info: TensorInfo, path: str) -> Any:
    """make() of an empty tensor; its failure for a shape the framework cannot
    hold (dimensions past 2**63, or multiplying past it) as SafetensorError."""
    try:
        return make()
    except (RuntimeError, ValueError, TypeError, OverflowError) as exc:
        raise SafetensorError(f"{path}, tensor {info.name!r}: cannot make a tensor of "
                              f"shape {list(info.shape)} ({info.dtype}): {exc}") from None


# The names the safetensors package accepts for each framework ufile supports.
TORCH_NAMES = ("pt", "torch", "pytorch")
NUMPY_NAMES = ("np", "numpy")
# The package's other frameworks, which ufile does not load.
OTHER_NAMES = ("tf", "tensorflow", "jax", "flax", "mlx")


def get(framework: str) -> Any:
    """The framework named as the safetensors package names it: "pt", "torch" or
    "pytorch"; "np" or "numpy"."""
    if framework in TORCH_NAMES:
        return Torch()
    if framework in NUMPY_NAMES:
        return Numpy()
    known = " (a framework of the safetensors package that ufile does not load)" \
        if framework in OTHER_NAMES else ""
    raise ValueError(f"ufile.safetensors: unsupported framework {framework!r}{known}; "
                     f"torch: {', '.join(TORCH_NAMES)}; numpy: {', '.join(NUMPY_NAMES)}")
