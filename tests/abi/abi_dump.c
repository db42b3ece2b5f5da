/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prints the ABI of whichever <cufile.h> is on the include path, one fact a
 * line: size, alignment and signedness of every type, offset and size of every
 * member, the value of every enumerator and constant, the functions declared.
 * Built against ours and against NVIDIA's; the two outputs must be identical.
 * Signatures and member types are checked while compiling (_Static_assert on
 * compatible types); abi_types.cpp repeats them with C++'s exact types.
 * Nothing is called or has its address taken, so no library is linked.
 */
#include <cufile.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "abi_functions.h"
#include "abi_layout.h"
#include "abi_values.h"

#define ABI_STR_(x) #x
#define ABI_STR(x) ABI_STR_(x)
#define ABI_SAME(a, ...) __builtin_types_compatible_p(a, __VA_ARGS__)

/* ---- compile-time checks -------------------------------------------------- */

#define ABI_FN(name, ret, params) \
  _Static_assert(ABI_SAME(__typeof__(&name), ret(*) params), "signature of " #name);
ABI_FUNCTIONS
#undef ABI_FN

#define ABI_ENUM(T, tag)
#define ABI_STRUCT(T, tag)
#define ABI_ALIAS(T, ...) _Static_assert(ABI_SAME(T, __VA_ARGS__), "type of " #T);
#define ABI_NESTED(T, m)
#define ABI_MEMBER(T, m, ...) \
  _Static_assert(ABI_SAME(__typeof__(((T *)0)->m), __VA_ARGS__), "type of " #T "." #m);
ABI_DEPENDENCIES
ABI_TYPES
#undef ABI_ENUM
#undef ABI_STRUCT
#undef ABI_ALIAS
#undef ABI_NESTED
#undef ABI_MEMBER

/* ---- facts ---------------------------------------------------------------- */

static void print_type(const char *name, size_t size, size_t align, const char *sign) {
  printf("type %s size %zu align %zu%s%s\n", name, size, align, sign[0] ? " " : "", sign);
}

static void print_member(const char *type, const char *member, size_t offset, size_t size,
                         size_t align) {
  printf("member %s.%s offset %zu size %zu align %zu\n", type, member, offset, size, align);
}

/* Enum signedness matters to callers comparing or widening values. */
#define ABI_ENUM(T, tag) \
  print_type(#T, sizeof(T), _Alignof(T), (long long)(T)-1 < 0 ? "signed" : "unsigned");
#define ABI_STRUCT(T, tag) print_type(#T, sizeof(T), _Alignof(T), "");
#define ABI_ALIAS(T, ...) print_type(#T, sizeof(T), _Alignof(T), "");
#define ABI_LAYOUT_OF(T, m) \
  print_member(#T, #m, offsetof(T, m), sizeof(((T *)0)->m), __alignof__(((T *)0)->m));
#define ABI_NESTED(T, m) ABI_LAYOUT_OF(T, m)
#define ABI_MEMBER(T, m, ...) ABI_LAYOUT_OF(T, m)
#define ABI_ENUMERATOR(T, e) printf("enumerator %s %lld\n", #e, (long long)(e));
#define ABI_MACRO(m) printf("macro %s %lld\n", #m, (long long)(m));
#define ABI_FN(name, ret, params) printf("function %s\n", #name);

static void print_macros(void) {
  ABI_MACROS
#ifdef __CUFILE_H_
  printf("guard __CUFILE_H_\n");
#endif
  /* The status table as the header's own X-macro lists it (names, codes). */
#define CUFILE_OP(code, name, text) printf("status-entry %s %lld\n", #name, (long long)(code));
  CUFILEOP_STATUS_ENTRIES
#undef CUFILE_OP
  /* The helper macros, evaluated. */
  CUfileError_t cuda_err = {CU_FILE_CUDA_DRIVER_ERROR, (CUresult)700};
  CUfileError_t ok = {CU_FILE_SUCCESS, (CUresult)0};
  printf("eval IS_CUFILE_ERR(-5001) %d\n", (int)IS_CUFILE_ERR(-5001));
  printf("eval IS_CUFILE_ERR(5000) %d\n", (int)IS_CUFILE_ERR(5000));
  printf("eval IS_CUFILE_ERR(-5) %d\n", (int)IS_CUFILE_ERR(-5));
  printf("eval IS_CUDA_ERR(cuda) %d\n", (int)IS_CUDA_ERR(cuda_err));
  printf("eval IS_CUDA_ERR(ok) %d\n", (int)IS_CUDA_ERR(ok));
  printf("eval CU_FILE_CUDA_ERR(cuda) %d\n", (int)CU_FILE_CUDA_ERR(cuda_err));
  printf("eval CUFILE_ERRSTR(-5022) %s\n", CUFILE_ERRSTR(-5022) ? "non-null" : "null");
  printf("macro cuFileDriverClose -> %s\n", ABI_STR(cuFileDriverClose));
}

static void print_driver_close(void);

int main(void) {
  ABI_DEPENDENCIES
  ABI_TYPES
  ABI_ENUMERATORS
  print_macros();
  ABI_FUNCTIONS
  print_driver_close();
  return 0;
}

/* Last, because it needs the header's cuFileDriverClose macro gone: the
 * unversioned name is declared too (old binaries link to it). */
#undef cuFileDriverClose
_Static_assert(ABI_SAME(__typeof__(&cuFileDriverClose), CUfileError_t (*)(void)),
               "signature of cuFileDriverClose");

static void print_driver_close(void) {
  printf("function cuFileDriverClose\n");
}
