# SPDX-License-Identifier: Apache-2.0
"""Copies the library named by $UFILE_LIBRARY (if set) into the built package,
as libufile.so.0 beside ufile/_lib.py, which looks there first."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        lib = os.environ.get("UFILE_LIBRARY")
        if not lib:
            return
        if not os.path.isfile(lib):
            raise SystemExit(f"UFILE_LIBRARY={lib} is not a file")
        dest = os.path.join(self.build_lib, "ufile", "libufile.so.0")
        shutil.copyfile(os.path.realpath(lib), dest)
        os.chmod(dest, 0o755)


setup(cmdclass={"build_py": BuildPyWithLibrary})
