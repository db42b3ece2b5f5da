# SPDX-License-Identifier: Apache-2.0
# Build-time dependencies. libcuda is never linked: src/gpu loads it with dlopen.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)

# cuda.h (types only) from the toolkit.
find_path(UFILE_CUDA_INCLUDE_DIR cuda.h
  HINTS ${CUDAToolkit_ROOT}/include /usr/local/cuda/include
  REQUIRED)

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
