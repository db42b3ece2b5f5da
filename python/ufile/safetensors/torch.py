# SPDX-License-Identifier: Apache-2.0
"""``from ufile.safetensors.torch import load_file`` as with safetensors.torch."""
from . import SafetensorError, load_file, safe_open
from ._save import save, save_file

__all__ = ["SafetensorError", "load_file", "safe_open", "save_file", "save"]
