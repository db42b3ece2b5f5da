# SPDX-License-Identifier: Apache-2.0
# Build-time dependencies. libcuda is never linked: src/gpu loads it with dlopen.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)

# cuda.h (types only) from the toolkit: needed to build, on machines without a
# GPU too (the built library runs without one).
find_path(UFILE_CUDA_INCLUDE_DIR cuda.h
  HINTS ${CUDAToolkit_ROOT}/include /usr/local/cuda/include)
if(NOT UFILE_CUDA_INCLUDE_DIR)
  message(FATAL_ERROR
    "cuda.h not found (searched CUDAToolkit_ROOT='${CUDAToolkit_ROOT}', /usr/local/cuda/include "
    "and the compiler's include paths). Building ufile needs the header cuda.h of a CUDA "
    "toolkit (ufile is built and tested with CUDA 13.0), also on a machine without a GPU: the "
    "built library runs without one. On Debian 12, add NVIDIA's repository (its "
    "cuda-keyring package, https://developer.nvidia.com/cuda-downloads) and run "
    "'apt-get install cuda-toolkit-13-0' (README.md has the commands). Then re-run cmake, "
    "adding -DCUDAToolkit_ROOT=DIR where the toolkit is not in /usr/local/cuda.")
endif()

# liburing, linked statically so that libufile has no run-time dependency on it.
find_path(URING_INCLUDE_DIR liburing.h REQUIRED)
find_library(URING_STATIC_LIBRARY NAMES liburing.a REQUIRED)
add_library(uring_static STATIC IMPORTED)
set_target_properties(uring_static PROPERTIES
  IMPORTED_LOCATION ${URING_STATIC_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${URING_INCLUDE_DIR})

# CUDA language is optional: GPU test kernels and benchmarks need nvcc.
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  set(UFILE_HAVE_NVCC ON)
endif()
