# SPDX-License-Identifier: Apache-2.0
"""``from ufile.safetensors.numpy import load_file`` as with safetensors.numpy."""
from __future__ import annotations

import os
from typing import Any

from . import SafetensorError, load, safe_open
from ._save import save_file_numpy as save_file
from ._save import save_numpy as save

__all__ = ["SafetensorError", "load_file", "safe_open", "save_file", "save"]


def load_file(filename: str | os.PathLike, **options: Any) -> dict[str, Any]:
    """All tensors of one file as numpy arrays."""
    return load(filename, framework="np", device="cpu", **options)
