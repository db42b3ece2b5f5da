#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: packaging_test.sh STEP WORK BUILD_DIR SOURCE_DIR GENERATOR C_COMPILER
# Steps (CTest fixtures run them in this order):
#   install                 cmake --install BUILD_DIR into WORK/prefix; check the layout
#   cmake-build, cmake-run  examples/ as its own project, find_package(ufile)
#   pc-build, pc-run        the same with pkg-config (CMake's module, then plain cc)
#   dropin-build, dropin-run  linked to the drop-in libcufile.so.0 (ufile::cufile),
#                           run with LD_LIBRARY_PATH, as a program built for NVIDIA's
#   devio-build, devio-run  docs/DEVICE_IO.md's example (CUDA) with find_package(ufile);
#                           exit 77 without nvcc, without a GPU, or when not built
set -eu
step=$1 work=$2 build=$3 src=$4 gen=$5 cc=$6
prefix=$work/prefix
unset DESTDIR
say() { echo "packaging: $*"; }

configure_examples() { # DIR [cmake args...]
  dir=$1
  shift
  rm -rf "$dir"
  cmake -S "$src/examples" -B "$dir" -G "$gen" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
  cmake --build "$dir"
}

case $step in
  install)
    rm -rf "$prefix"
    cmake --install "$build" --prefix "$prefix"
    for f in lib/libufile.so lib/libufile.so.0 lib/ufile/libcufile.so.0 include/ufile/cufile.h \
      lib/cmake/ufile/ufileConfig.cmake lib/cmake/ufile/ufileConfigVersion.cmake \
      lib/cmake/ufile/ufileTargets.cmake lib/pkgconfig/ufile.pc; do
      [ -e "$prefix/$f" ] || { say "FAIL: $f not installed"; exit 1; }
    done
    [ ! -e "$prefix/include/cufile.h" ] || { say "FAIL: include/cufile.h would shadow CUDA's"; exit 1; }
    [ ! -e "$prefix/lib/libcufile.so.0" ] || { say "FAIL: lib/libcufile.so.0 would shadow NVIDIA's"; exit 1; }
    # The installed Python package finds the installed drop-in (through _libpath.py).
    pkg=$(find "$prefix" -name _libpath.py -path '*/ufile/*')
    if command -v python3 >/dev/null; then
      got=$(PYTHONPATH=$(dirname "$(dirname "$pkg")") UFILE_DROPIN= python3 -c \
        'from ufile import dropin; print(dropin.find_dropin(None))')
      [ "$(realpath "$got")" = "$(realpath "$prefix/lib/ufile/libcufile.so.0")" ] ||
        { say "FAIL: the installed package's drop-in is $got"; exit 1; }
    fi
    say "ok: installed into $prefix"
    ;;
  cmake-build)
    configure_examples "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix"
    say "ok: built against find_package(ufile)"
    ;;
  cmake-run)
    "$work/cmake/hello_cufile" "$work"
    ;;
  pc-build)
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    configure_examples "$work/pc" -DUFILE_EXAMPLES_PKGCONFIG=ON
    # And as a Makefile would, with nothing but the compiler and pkg-config.
    # shellcheck disable=SC2046 # word splitting of the flags is meant
    "$cc" -std=gnu11 -Wall -Wextra -Werror $(pkg-config --cflags ufile) \
      "$src/examples/hello_cufile.c" $(pkg-config --libs ufile) -o "$work/pc/hello_cufile_cc"
    say "ok: built with pkg-config ($(pkg-config --cflags --libs ufile))"
    ;;
  pc-run)
    "$work/pc/hello_cufile" "$work"
    LD_LIBRARY_PATH=$prefix/lib "$work/pc/hello_cufile_cc" "$work"
    ;;
  dropin-build)
    # No RUNPATH: the loader must find libcufile.so.0 through LD_LIBRARY_PATH alone.
    configure_examples "$work/dropin" -DCMAKE_PREFIX_PATH="$prefix" -DUFILE_EXAMPLES_DROPIN=ON \
      -DCMAKE_SKIP_BUILD_RPATH=ON
    needed=$(readelf -d "$work/dropin/hello_cufile" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    case " $(echo $needed) " in
      *" libcufile.so.0 "*) say "ok: built against the drop-in; NEEDED: $(echo $needed)" ;;
      *) say "FAIL: NEEDED lacks libcufile.so.0: $(echo $needed)"; exit 1 ;;
    esac
    ;;
  dropin-run)
    export LD_LIBRARY_PATH=$prefix/lib/ufile
    found=$(ldd "$work/dropin/hello_cufile" | sed -n 's/.*libcufile\.so\.0 => \([^ ]*\).*/\1/p')
    [ "$found" = "$prefix/lib/ufile/libcufile.so.0" ] ||
      { say "FAIL: libcufile.so.0 resolves to '$found'"; exit 1; }
    "$work/dropin/hello_cufile" "$work"
    ;;
  devio-build)
    # docs/DEVICE_IO.md's example: a CUDA kernel through the installed headers
    # and libufile's exported ufile_devio_* functions.
    nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    [ -x "$nvcc" ] || { say "skipped: no nvcc to build the device I/O example"; exit 77; }
    rm -rf "$work/devio"
    cmake -S "$src/tests/packaging/devio_example" -B "$work/devio" -G "$gen" \
      -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
    cmake --build "$work/devio"
    say "ok: built docs/DEVICE_IO.md's example against find_package(ufile)"
    ;;
  devio-run)
    [ -x "$work/devio/devio_example" ] ||
      { say "skipped: $work/devio/devio_example not built (packaging_devio_build)"; exit 77; }
    "$work/devio/devio_example" "$work"
    ;;
  *)
    echo "unknown step $step" >&2
    exit 2
    ;;
esac
