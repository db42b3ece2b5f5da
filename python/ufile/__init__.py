# SPDX-License-Identifier: Apache-2.0
"""ufile: the cuFile API (GPUDirect Storage, implemented in user space) from Python.

``ufile.File`` reads and writes files from and to GPU or host memory through
libufile; ``ufile.safetensors`` loads safetensors checkpoints with it.
The library is loaded with ctypes on first use (see docs/PYTHON.md for how it is found)."""
from ._errors import CuFileError
from ._file import File, deregister_buffer, register_buffer
from ._lib import library_path, version

__all__ = ["CuFileError", "File", "register_buffer", "deregister_buffer",
           "library_path", "version"]
__version__ = "0.1.0"
