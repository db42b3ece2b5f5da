/* SPDX-License-Identifier: Apache-2.0 */
/* The differential probe: one program, run once against NVIDIA's
 * libcufile.so.0 and once against ufile's, each in its own process, printing
 * one line per call (the call, its status, its outputs) so that the two
 * outputs can be compared line by line (differential_test.sh). Every case
 * runs in a forked child of its own: a crash in one library's case is a
 * line ("crashed"), not a lost run. The library and libcuda are dlopen'ed. */
#ifndef UFILE_DIFF_PROBE_H_
#define UFILE_DIFF_PROBE_H_

#include <cuda.h>
#include <cufile.h>
#include <stddef.h>
#include <stdio.h>

/* The cuFile entry points, resolved from the library under test. */
#define PROBE_FUNCS(X)                                                                        \
  X(cuFileHandleRegister) X(cuFileHandleDeregister) X(cuFileBufRegister)                     \
  X(cuFileBufDeregister) X(cuFileDriverOpen) X(cuFileDriverClose_v2) X(cuFileUseCount)       \
  X(cuFileDriverGetProperties) X(cuFileDriverSetPollMode) X(cuFileDriverSetMaxDirectIOSize) \
  X(cuFileDriverSetMaxCacheSize) X(cuFileDriverSetMaxPinnedMemSize) X(cuFileBatchIOSetUp)   \
  X(cuFileBatchIOSubmit) X(cuFileBatchIOGetStatus) X(cuFileBatchIOCancel)                   \
  X(cuFileBatchIODestroy) X(cuFileStreamRegister) X(cuFileStreamDeregister)                 \
  X(cuFileGetVersion) X(cuFileGetParameterSizeT) X(cuFileGetParameterBool)                  \
  X(cuFileGetParameterString) X(cuFileSetParameterSizeT) X(cuFileSetParameterBool)          \
  X(cuFileSetParameterString) X(cuFileGetParameterMinMaxValue)                              \
  X(cuFileSetParameterPosixPoolSlabArray) X(cuFileGetParameterPosixPoolSlabArray)           \
  X(cuFileSetStatsLevel) X(cuFileGetStatsLevel) X(cuFileStatsStart) X(cuFileStatsStop)      \
  X(cuFileStatsReset) X(cuFileGetStatsL1) X(cuFileGetStatsL2) X(cuFileGetStatsL3)           \
  X(cuFileGetBARSizeInKB)

#define PROBE_DECLARE(f) extern __typeof__(f) *p_##f;
PROBE_FUNCS(PROBE_DECLARE)
#undef PROBE_DECLARE

/* The libcuda calls the cases use (device, managed, pinned and VMM memory). */
#define PROBE_CUDA_FUNCS(X)                                                                    \
  X(cuInit) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
  X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocManaged) X(cuMemAllocHost_v2) X(cuMemFreeHost) \
  X(cuMemCreate) X(cuMemAddressReserve) X(cuMemMap) X(cuMemSetAccess)                        \
  X(cuMemGetAllocationGranularity) X(cuStreamCreate)

#define PROBE_CUDA_DECLARE(f) extern __typeof__(f) *pc_##f;
PROBE_CUDA_FUNCS(PROBE_CUDA_DECLARE)
#undef PROBE_CUDA_DECLARE

/* Sets up CUDA in the current process (a case's child): device 0's primary
 * context current. 0, or -1 (printed) without a usable GPU. */
int ProbeCuda(void);

/* One output line: "<case>.<step> err=<op> cu=<cuda><extra>". */
void Line(const char *step, CUfileError_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A line with no status (void calls, values). */
void Note(const char *step, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs fn(arg) in a forked child of the case: a call sequence that must not
 * see what the case did before (NVIDIA's getters open its driver). A crash
 * there is a line "<case>.<step> crashed: ...". */
void Isolated(const char *step, void (*fn)(void *), void *arg);
/* A page shared with such children (their results), or NULL. */
void *SharedPage(void);

/* The cases (probe_cases.c, probe_cases2.c), each run in its own process. */
typedef struct {
  const char *name;
  void (*run)(void);
} ProbeCase;
extern const ProbeCase kProbeCases[];
extern const size_t kNumProbeCases;
extern const char *g_case;

#endif
