# SPDX-License-Identifier: Apache-2.0
add_library(ufile_warnings INTERFACE)
target_compile_options(ufile_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow -Wno-missing-field-initializers>
  $<$<AND:$<COMPILE_LANGUAGE:CXX,C>,$<BOOL:${UFILE_WERROR}>>:-Werror>)
# GCC 12 at -O3 (CMAKE_BUILD_TYPE=Release) reports "literal" + std::string as
# an overlapping memcpy inside libstdc++ (-Wrestrict, GCC bug 105329): a false
# positive in many files, which -Werror turned into a failed build.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(ufile_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()

# UFILE_FUZZ=ON with clang instruments everything for libFuzzer (tests/fuzz).
if(UFILE_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND UFILE_SANITIZE STREQUAL "")
  set(UFILE_SANITIZE fuzzer)
endif()
if(UFILE_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  # GCC 12 reports std::regex and std::function internals as maybe-uninitialized
  # once ASan instruments them (a known false positive), which -Werror turns fatal.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
elseif(UFILE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  # GCC warns that TSan does not model std::atomic_thread_fence (used by the
  # device-I/O protocol headers); the warning is no defect of the code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
  endif()
elseif(UFILE_SANITIZE STREQUAL "fuzzer")
  # clang only (tests/fuzz, UFILE_FUZZ=ON): ASan+UBSan plus libFuzzer's coverage
  # hooks; only the fuzzers themselves link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=fuzzer-no-link,address,undefined)
elseif(NOT UFILE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "UFILE_SANITIZE must be address, thread, fuzzer or empty")
endif()
