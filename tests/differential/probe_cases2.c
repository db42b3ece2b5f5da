/* SPDX-License-Identifier: Apache-2.0 */
/* Cases with GPU state: statistics with no I/O, BAR size, buffer
 * registration of device, host, pinned, managed and VMM memory, host memory
 * with allow_system_memory off, batch set-up, stream flags. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

static size_t NonZero(const void *p, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) k += ((const unsigned char *)p)[i] != 0;
  return k;
}

static void StatsAll(const char *phase) {
  char step[64];
  int level = -9;
  CUfileError_t e = p_cuFileGetStatsLevel(&level);
  snprintf(step, sizeof step, "%s.level", phase);
  Line(step, e, "level=%d", level);
  CUfileStatsLevel3_t *s = malloc(sizeof *s);
  memset(s, 0, sizeof *s);
  snprintf(step, sizeof step, "%s.l1", phase);
  Line(step, p_cuFileGetStatsL1(&s->detailed.basic), "nonzero_bytes=%zu",
       NonZero(&s->detailed.basic, sizeof s->detailed.basic));
  memset(s, 0, sizeof *s);
  snprintf(step, sizeof step, "%s.l2", phase);
  Line(step, p_cuFileGetStatsL2(&s->detailed), "nonzero_bytes=%zu",
       NonZero(&s->detailed, sizeof s->detailed));
  memset(s, 0, sizeof *s);
  snprintf(step, sizeof step, "%s.l3", phase);
  Line(step, p_cuFileGetStatsL3(s), "num_gpus=%u nonzero_bytes=%zu", s->num_gpus,
       NonZero(s, sizeof *s));
  free(s);
}

void StatsCase(void) {
  StatsAll("closed");
  Line("closed.get_null", p_cuFileGetStatsLevel(NULL), NULL);
  Line("closed.l1_null", p_cuFileGetStatsL1(NULL), NULL);
  Note("closed.count", "use_count=%ld", p_cuFileUseCount());
  /* Downwards: a library that takes levels while closed opens at 0, as one
   * that refuses them. */
  for (int l = 4; l >= -1; --l) {
    char step[32];
    snprintf(step, sizeof step, "closed.set%d", l);
    Line(step, p_cuFileSetStatsLevel(l), NULL);
  }
  Line("open", p_cuFileDriverOpen(), NULL);
  StatsAll("open");
  for (int l = 0; l <= 3; ++l) {
    char step[32];
    snprintf(step, sizeof step, "open.set%d", l);
    Line(step, p_cuFileSetStatsLevel(l), NULL);
    snprintf(step, sizeof step, "open.at%d", l);
    StatsAll(step);
  }
  Line("start", p_cuFileStatsStart(), NULL);
  StatsAll("started");
  Line("reset", p_cuFileStatsReset(), NULL);
  Line("stop", p_cuFileStatsStop(), NULL);
  StatsAll("stopped");
  Line("l2_null", p_cuFileGetStatsL2(NULL), NULL);
  Line("l3_null", p_cuFileGetStatsL3(NULL), NULL);
}

void BarCase(void) {
  if (ProbeCuda()) return;
  int n = 0;
  pc_cuDeviceGetCount(&n);
  size_t kb = 777;
  Line("null", p_cuFileGetBARSizeInKB(0, NULL), NULL);
  Note("null.count", "use_count=%ld", p_cuFileUseCount());
  CUfileError_t e = p_cuFileGetBARSizeInKB(-1, &kb); /* the call first, then kb is read */
  Line("minus1", e, "kb=%zu", kb);
  e = p_cuFileGetBARSizeInKB(n, &kb);
  Line("count", e, "kb=%zu", kb);
  Note("refused.count", "use_count=%ld", p_cuFileUseCount());
  kb = 777;
  e = p_cuFileGetBARSizeInKB(0, &kb);
  Line("gpu0", e, "kb=%zu", kb);
  Note("gpu0.count", "use_count=%ld", p_cuFileUseCount());
}

/* Registration rules for one kind of memory at p (len bytes, 2 MiB here). */
static void Rules(const char *kind, char *p, size_t len) {
  char step[96];
#define STEP(name) (snprintf(step, sizeof step, "%s.%s", kind, name), step)
  Line(STEP("register"), p_cuFileBufRegister(p, len, 0), NULL);
  Line(STEP("double"), p_cuFileBufRegister(p, len, 0), NULL);
  Line(STEP("inside"), p_cuFileBufRegister(p + 4096, 4096, 0), NULL);
  Line(STEP("straddle_end"), p_cuFileBufRegister(p + len - 4096, 8192, 0), NULL);
  Line(STEP("dereg_interior"), p_cuFileBufDeregister(p + 4096), NULL);
  Line(STEP("dereg"), p_cuFileBufDeregister(p), NULL);
  Line(STEP("dereg_again"), p_cuFileBufDeregister(p), NULL);
  Line(STEP("half1"), p_cuFileBufRegister(p, len / 2, 0), NULL);
  Line(STEP("half2_adjacent"), p_cuFileBufRegister(p + len / 2, len / 2, 0), NULL);
  Line(STEP("dereg_half1"), p_cuFileBufDeregister(p), NULL);
  Line(STEP("dereg_half2"), p_cuFileBufDeregister(p + len / 2), NULL);
  Line(STEP("flags_rdma"), p_cuFileBufRegister(p, len, CU_FILE_RDMA_REGISTER), NULL);
  Line(STEP("flags_rdma.dereg"), p_cuFileBufDeregister(p), NULL);
  Line(STEP("flags_relaxed"), p_cuFileBufRegister(p, len, CU_FILE_RDMA_RELAXED_ORDERING), NULL);
  Line(STEP("flags_relaxed.dereg"), p_cuFileBufDeregister(p), NULL);
  Line(STEP("flags_bad"), p_cuFileBufRegister(p, len, 0x100), NULL);
  Line(STEP("flags_bad.dereg"), p_cuFileBufDeregister(p), NULL);
  Line(STEP("len0"), p_cuFileBufRegister(p, 0, 0), NULL);
  Line(STEP("len0.dereg"), p_cuFileBufDeregister(p), NULL);
  Line(STEP("past_end"), p_cuFileBufRegister(p, len + 4096, 0), NULL);
  Line(STEP("past_end.dereg"), p_cuFileBufDeregister(p), NULL);
  Line(STEP("unaligned"), p_cuFileBufRegister(p + 1, 4096, 0), NULL);
  Line(STEP("unaligned.dereg"), p_cuFileBufDeregister(p + 1), NULL);
#undef STEP
}

static char *VmmAlloc(size_t len) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CUmemGenericAllocationHandle h;
  CUdeviceptr va = 0;
  if (pc_cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ||
      len % gran || pc_cuMemCreate(&h, len, &prop, 0) ||
      pc_cuMemAddressReserve(&va, len, 0, 0, 0) || pc_cuMemMap(va, len, 0, h, 0))
    return NULL;
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return pc_cuMemSetAccess(va, len, &access, 1) ? NULL : (char *)(uintptr_t)va;
}

void BufferCase(void) {
  if (ProbeCuda()) return;
  const size_t len = 2 << 20;
  Line("null", p_cuFileBufRegister(NULL, len, 0), NULL);
  Line("dereg_null", p_cuFileBufDeregister(NULL), NULL);
  CUdeviceptr d = 0, m = 0;
  void *pinned = NULL;
  char *host = aligned_alloc(4096, len);
  Note("alloc", "device=%d managed=%d pinned=%d", pc_cuMemAlloc_v2(&d, len),
       pc_cuMemAllocManaged(&m, len, CU_MEM_ATTACH_GLOBAL), pc_cuMemAllocHost_v2(&pinned, len));
  Line("dereg_unknown", p_cuFileBufDeregister(host), NULL);
  Note("dereg_unknown.count", "use_count=%ld", p_cuFileUseCount());
  Rules("device", (char *)(uintptr_t)d, len);
  Rules("host", host, len);
  Rules("pinned", pinned, len);
  /* Managed memory: whether it registers at all (the rules are the device's). */
  Line("managed.register", p_cuFileBufRegister((char *)(uintptr_t)m, len, 0), NULL);
  Line("managed.dereg", p_cuFileBufDeregister((char *)(uintptr_t)m), NULL);
  char *vmm = VmmAlloc(len);
  if (vmm)
    Rules("vmm", vmm, len);
  else
    Note("vmm", "allocation failed");
  Line("device.huge", p_cuFileBufRegister((char *)(uintptr_t)d, SIZE_MAX / 2, 0), NULL);
  Line("device.wrap", p_cuFileBufRegister((char *)(uintptr_t)d, SIZE_MAX, 0), NULL);
}

void SystemMemoryCase(void) {
  if (ProbeCuda()) return;
  const size_t len = 1 << 20;
  Line("set", p_cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY, false), NULL);
  Line("open", p_cuFileDriverOpen(), NULL);
  bool v = true;
  CUfileError_t e = p_cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY, &v);
  Line("get", e, "v=%d", (int)v);
  char *host = aligned_alloc(4096, len);
  void *pinned = NULL;
  CUdeviceptr d = 0;
  pc_cuMemAllocHost_v2(&pinned, len);
  pc_cuMemAlloc_v2(&d, len);
  Line("host", p_cuFileBufRegister(host, len, 0), NULL);
  Line("pinned", p_cuFileBufRegister(pinned, len, 0), NULL);
  Line("device", p_cuFileBufRegister((char *)(uintptr_t)d, len, 0), NULL);
}

void BatchCase(void) {
  if (ProbeCuda()) return;
  CUfileBatchHandle_t b = NULL;
  /* NVIDIA's set-up needs an explicit open; ufile's opens implicitly. */
  CUfileError_t e = p_cuFileBatchIOSetUp(&b, 1);
  Line("closed.setup_1", e, "handle=%s", b ? "set" : "null");
  if (b) p_cuFileBatchIODestroy(b);
  Note("closed.count", "use_count=%ld", p_cuFileUseCount());
  Line("open", p_cuFileDriverOpen(), NULL);
  Note("open.count", "use_count=%ld", p_cuFileUseCount());
  b = NULL;
  /* No NULL handle pointer: NVIDIA's cuFileBatchIOSetUp crashes on it
   * (SIGSEGV); ufile's INVALID_VALUE is in tests/cpu/bad_input_test.cpp. */
  Line("setup0", p_cuFileBatchIOSetUp(&b, 0), NULL);
  size_t max = 0;
  p_cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &max);
  Note("io_batchsize", "%zu", max); /* the limits below are each library's own */
  const unsigned tries[] = {1, (unsigned)max, (unsigned)max + 1, 4096, 4097, 1u << 20};
  static const char *const kLabels[] = {"1", "max", "max+1", "4096", "4097", "1m"};
  for (size_t i = 0; i < sizeof tries / sizeof tries[0]; ++i) {
    char step[32];
    snprintf(step, sizeof step, "setup_%s", kLabels[i]);
    b = NULL;
    e = p_cuFileBatchIOSetUp(&b, tries[i]);
    Line(step, e, "handle=%s", b ? "set" : "null");
    if (e.err == CU_FILE_SUCCESS) p_cuFileBatchIODestroy(b);
  }
  b = NULL;
  Line("setup_keep", p_cuFileBatchIOSetUp(&b, 4), NULL);
  Line("submit_zero", p_cuFileBatchIOSubmit(b, 0, NULL, 0), NULL);
  unsigned nr = 4;
  CUfileIOEvents_t ev[4];
  struct timespec ts = {0, 1000000};
  e = p_cuFileBatchIOGetStatus(b, 0, &nr, ev, &ts);
  Line("status_empty", e, "nr=%u", nr);
  Line("cancel_empty", p_cuFileBatchIOCancel(b), NULL);
  /* NULL arguments last: a library that crashes on one loses no step above. */
  Line("submit_null_entries", p_cuFileBatchIOSubmit(b, 1, NULL, 0), NULL);
  Line("status_null_nr", p_cuFileBatchIOGetStatus(b, 0, NULL, ev, &ts), NULL);
  Line("cancel_null", p_cuFileBatchIOCancel(NULL), NULL);
  p_cuFileBatchIODestroy(b);
  Note("destroy", "done");
  p_cuFileBatchIODestroy(NULL);
  Note("destroy_null", "done");
}

void StreamCase(void) {
  if (ProbeCuda()) return;
  CUstream s = NULL;
  pc_cuStreamCreate(&s, 0);
  for (unsigned f = 0; f <= 16; ++f) {
    char step[32];
    snprintf(step, sizeof step, "null.flags%u", f);
    Line(step, p_cuFileStreamRegister(NULL, f), NULL);
  }
  Line("null.flags_ffff", p_cuFileStreamRegister(NULL, 0xffff), NULL);
  Line("s.flags15", p_cuFileStreamRegister(s, 15), NULL);
  Line("s.again", p_cuFileStreamRegister(s, 0), NULL);
  Line("s.dereg", p_cuFileStreamDeregister(s), NULL);
  Line("s.dereg_again", p_cuFileStreamDeregister(s), NULL);
  Line("null.dereg", p_cuFileStreamDeregister(NULL), NULL);
  Line("forged.dereg", p_cuFileStreamDeregister((CUstream)(uintptr_t)0x1234), NULL);
  Note("count", "use_count=%ld", p_cuFileUseCount());
}
