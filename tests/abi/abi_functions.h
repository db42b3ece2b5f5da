/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The expected C signature of every function of the CUDA 13.0 cuFile API,
 * as an X-macro: ABI_FN(name, return type, parameter types). Written here
 * once and checked against whichever cufile.h is on the include path, by
 * abi_dump.c (C: compatible types) and abi_types.cpp (C++: identical types).
 * cuFileDriverClose is checked apart: the header maps that name to
 * cuFileDriverClose_v2 with a macro.
 */
#ifndef UFILE_TESTS_ABI_FUNCTIONS_H
#define UFILE_TESTS_ABI_FUNCTIONS_H

#define ABI_FUNCTIONS                                                                            \
  ABI_FN(cuFileHandleRegister, CUfileError_t, (CUfileHandle_t *, CUfileDescr_t *))               \
  ABI_FN(cuFileHandleDeregister, void, (CUfileHandle_t))                                         \
  ABI_FN(cuFileBufRegister, CUfileError_t, (const void *, size_t, int))                          \
  ABI_FN(cuFileBufDeregister, CUfileError_t, (const void *))                                     \
  ABI_FN(cuFileRead, ssize_t, (CUfileHandle_t, void *, size_t, off_t, off_t))                    \
  ABI_FN(cuFileWrite, ssize_t, (CUfileHandle_t, const void *, size_t, off_t, off_t))             \
  ABI_FN(cuFileDriverOpen, CUfileError_t, (void))                                                \
  ABI_FN(cuFileDriverClose_v2, CUfileError_t, (void))                                            \
  ABI_FN(cuFileUseCount, long, (void))                                                           \
  ABI_FN(cuFileDriverGetProperties, CUfileError_t, (CUfileDrvProps_t *))                         \
  ABI_FN(cuFileDriverSetPollMode, CUfileError_t, (bool, size_t))                                 \
  ABI_FN(cuFileDriverSetMaxDirectIOSize, CUfileError_t, (size_t))                                \
  ABI_FN(cuFileDriverSetMaxCacheSize, CUfileError_t, (size_t))                                   \
  ABI_FN(cuFileDriverSetMaxPinnedMemSize, CUfileError_t, (size_t))                               \
  ABI_FN(cuFileBatchIOSetUp, CUfileError_t, (CUfileBatchHandle_t *, unsigned))                   \
  ABI_FN(cuFileBatchIOSubmit, CUfileError_t,                                                     \
         (CUfileBatchHandle_t, unsigned, CUfileIOParams_t *, unsigned int))                      \
  ABI_FN(cuFileBatchIOGetStatus, CUfileError_t,                                                  \
         (CUfileBatchHandle_t, unsigned, unsigned *, CUfileIOEvents_t *, struct timespec *))     \
  ABI_FN(cuFileBatchIOCancel, CUfileError_t, (CUfileBatchHandle_t))                              \
  ABI_FN(cuFileBatchIODestroy, void, (CUfileBatchHandle_t))                                      \
  ABI_FN(cuFileReadAsync, CUfileError_t,                                                         \
         (CUfileHandle_t, void *, size_t *, off_t *, off_t *, ssize_t *, CUstream))              \
  ABI_FN(cuFileWriteAsync, CUfileError_t,                                                        \
         (CUfileHandle_t, void *, size_t *, off_t *, off_t *, ssize_t *, CUstream))              \
  ABI_FN(cuFileStreamRegister, CUfileError_t, (CUstream, unsigned))                              \
  ABI_FN(cuFileStreamDeregister, CUfileError_t, (CUstream))                                      \
  ABI_FN(cuFileGetVersion, CUfileError_t, (int *))                                               \
  ABI_FN(cuFileGetParameterSizeT, CUfileError_t, (CUFileSizeTConfigParameter_t, size_t *))       \
  ABI_FN(cuFileGetParameterBool, CUfileError_t, (CUFileBoolConfigParameter_t, bool *))           \
  ABI_FN(cuFileGetParameterString, CUfileError_t, (CUFileStringConfigParameter_t, char *, int))  \
  ABI_FN(cuFileGetParameterMinMaxValue, CUfileError_t,                                           \
         (CUFileSizeTConfigParameter_t, size_t *, size_t *))                                     \
  ABI_FN(cuFileSetParameterSizeT, CUfileError_t, (CUFileSizeTConfigParameter_t, size_t))         \
  ABI_FN(cuFileSetParameterBool, CUfileError_t, (CUFileBoolConfigParameter_t, bool))             \
  ABI_FN(cuFileSetParameterString, CUfileError_t, (CUFileStringConfigParameter_t, const char *)) \
  ABI_FN(cuFileSetStatsLevel, CUfileError_t, (int))                                              \
  ABI_FN(cuFileGetStatsLevel, CUfileError_t, (int *))                                            \
  ABI_FN(cuFileStatsStart, CUfileError_t, (void))                                                \
  ABI_FN(cuFileStatsStop, CUfileError_t, (void))                                                 \
  ABI_FN(cuFileStatsReset, CUfileError_t, (void))                                                \
  ABI_FN(cuFileGetStatsL1, CUfileError_t, (CUfileStatsLevel1_t *))                               \
  ABI_FN(cuFileGetStatsL2, CUfileError_t, (CUfileStatsLevel2_t *))                               \
  ABI_FN(cuFileGetStatsL3, CUfileError_t, (CUfileStatsLevel3_t *))                               \
  ABI_FN(cuFileGetBARSizeInKB, CUfileError_t, (int, size_t *))                                   \
  ABI_FN(cuFileSetParameterPosixPoolSlabArray, CUfileError_t,                                    \
         (const size_t *, const size_t *, int))                                                  \
  ABI_FN(cuFileGetParameterPosixPoolSlabArray, CUfileError_t, (size_t *, size_t *, int))

#endif /* UFILE_TESTS_ABI_FUNCTIONS_H */
