/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile.h must compile on its own, first in the translation unit, twice, as C
 * and as C++, with warnings as errors. The abi_header_* tests compile this file
 * with and without cuda.h on the include path (UFILE_EXPECT_CUDA_H says which);
 * without it the header falls back to its own CUresult and CUstream.
 */
#if defined(UFILE_EXPECT_CUDA_H) != defined(UFILE_EXPECT_NO_CUDA_H)
#if defined(UFILE_EXPECT_CUDA_H) && !__has_include(<cuda.h>)
#error "this variant must see cuda.h"
#elif defined(UFILE_EXPECT_NO_CUDA_H) && __has_include(<cuda.h>)
#error "this variant must not see cuda.h"
#endif
#else
#error "define UFILE_EXPECT_CUDA_H or UFILE_EXPECT_NO_CUDA_H"
#endif

#include <cufile.h>

#if defined(UFILE_EXPECT_CUDA_H) != defined(CUDA_VERSION)
#error "cufile.h did not use cuda.h exactly when it was there"
#endif

/* Use the declarations, so that a header good only for skimming fails. */
int ufile_header_check(CUfileHandle_t fh, void *buf);
int ufile_header_check(CUfileHandle_t fh, void *buf) {
  CUfileError_t status = {CU_FILE_SUCCESS, CUDA_SUCCESS};
  CUfileDescr_t descr = {CU_FILE_HANDLE_TYPE_OPAQUE_FD, {0}, 0};
  CUfileIOParams_t params = {CUFILE_BATCH, {{buf, 0, 0, 4096}}, fh, CUFILE_READ, 0};
  CUfileError_t (*close_fn)(void) = cuFileDriverClose;
  (void)close_fn;
  return IS_CUDA_ERR(status) + IS_CUFILE_ERR(-CU_FILE_INVALID_VALUE) + descr.handle.fd +
         (int)params.u.batch.size + (CUFILE_ERRSTR(5001) != 0);
}
