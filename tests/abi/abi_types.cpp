// SPDX-License-Identifier: Apache-2.0
// Compile-only check of whichever <cufile.h> is on the include path, with C++'s
// exact type identity (C calls an enum compatible with unsigned int; C++ does
// not, and C++ callers mangle the struct and enum tags into their symbols):
// every signature, member type, typedef, tag and enumerator's enum.
#include <cufile.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <type_traits>

#include "abi_functions.h"
#include "abi_layout.h"
#include "abi_values.h"

#define ABI_SAME(a, ...) (std::is_same<a, __VA_ARGS__>::value)

#define ABI_FN(name, ret, params) \
  static_assert(ABI_SAME(decltype(name), ret params), "signature of " #name);
ABI_FUNCTIONS

#define ABI_ENUM(T, tag) \
  static_assert(std::is_enum<T>::value && ABI_SAME(T, tag), "enum tag of " #T);
#define ABI_STRUCT(T, tag)                                               \
  static_assert(ABI_SAME(T, tag) && std::is_standard_layout<T>::value && \
                    std::is_trivially_copyable<T>::value,                \
                "struct tag of " #T);
#define ABI_ALIAS(T, ...) static_assert(ABI_SAME(T, __VA_ARGS__), "type of " #T);
#define ABI_NESTED(T, m)
#define ABI_MEMBER(T, m, ...)                                                  \
  static_assert(ABI_SAME(decltype(static_cast<T *>(nullptr)->m), __VA_ARGS__), \
                "type of " #T "." #m);
#define ABI_ENUMERATOR(T, e) static_assert(ABI_SAME(decltype(e), T), "enum of " #e);
ABI_DEPENDENCIES
ABI_TYPES
ABI_ENUMERATORS

static_assert(ABI_SAME(decltype(cufileop_status_error), const char *(CUfileOpError)),
              "signature of cufileop_status_error");

// The unversioned close is declared before the header's macro renames it.
#undef cuFileDriverClose
static_assert(ABI_SAME(decltype(cuFileDriverClose), CUfileError_t(void)),
              "signature of cuFileDriverClose");
