# SPDX-License-Identifier: Apache-2.0
"""Copies the library named by $UFILE_LIBRARY (if set) into the built package,
as libufile.so.0 beside ufile/_lib.py, which looks there first; and ufile's
drop-in libcufile.so.0 ($UFILE_DROPIN, else the one beside $UFILE_LIBRARY, as a
build tree has it), which `python -m ufile.dropin enable` links to. Without
$UFILE_LIBRARY the package bundles no library, whatever an earlier build left
in build/."""
import importlib.util
import os
import shutil
import sys

import setuptools
from setuptools import setup
from setuptools.command.build_py import build_py


def _check_wheel_support() -> None:
    """setuptools before 70.1 builds wheels, and pip's metadata step, with the
    separate `wheel` package; without it pip only says "invalid command
    'bdist_wheel'". Say what is missing and what to do instead."""
    if not {"bdist_wheel", "dist_info"} & set(sys.argv[1:]):
        return
    if (importlib.util.find_spec("setuptools.command.bdist_wheel")
            or importlib.util.find_spec("wheel")):
        return
    raise SystemExit(
        f"ufile: cannot build a wheel: {sys.executable} has setuptools "
        f"{setuptools.__version__}, which needs the 'wheel' package, and it has none. Make the "
        f"virtual environment with Debian's /usr/bin/python3 (python3-pip brings "
        f"python3-wheel), or install wheel into this one, or let pip fetch build tools "
        f"(drop --no-index --no-build-isolation).")


_check_wheel_support()


def _is_ufile(path):
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_ufile_elf",
                                                  os.path.join(here, "ufile", "_elf.py"))
    elf = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = elf  # dataclasses looks its module up there
    spec.loader.exec_module(elf)
    return elf.identify(path).kind == elf.UFILE


class BuildPyWithLibrary(build_py):
    def run(self):
        # pip builds in this folder's build/; what an earlier install put there
        # (a bundled library above all) must not reach this one's wheel.
        shutil.rmtree(os.path.join(self.build_lib, "ufile"), ignore_errors=True)
        super().run()
        lib = os.environ.get("UFILE_LIBRARY")
        if not lib:
            return
        if not os.path.isfile(lib):
            raise SystemExit(f"UFILE_LIBRARY={lib} is not a file")
        self._bundle(lib, "libufile.so.0")
        dropin = os.environ.get("UFILE_DROPIN")
        if dropin and not os.path.isfile(dropin):
            raise SystemExit(f"UFILE_DROPIN={dropin} is not a file")
        beside = os.path.join(os.path.dirname(lib), "libcufile.so.0")
        if dropin or _is_ufile(beside):  # never NVIDIA's file beside an installed libufile
            self._bundle(dropin or beside, "libcufile.so.0")

    def _bundle(self, src, name):
        dest = os.path.join(self.build_lib, "ufile", name)
        shutil.copyfile(os.path.realpath(src), dest)
        os.chmod(dest, 0o755)


setup(cmdclass={"build_py": BuildPyWithLibrary})
