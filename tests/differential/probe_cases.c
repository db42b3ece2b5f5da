/* SPDX-License-Identifier: Apache-2.0 */
/* Cases without memory: driver open/close and use count, version,
 * properties, every parameter getter/setter with its range and the slab
 * arrays, before and after open. */
#include <stdint.h>
#include <string.h>

#include "probe.h"

#define ERR(call) Line(#call, call, NULL)

static void Props(const char *step) {
  CUfileDrvProps_t p;
  memset(&p, 0xab, sizeof p);
  CUfileError_t e = p_cuFileDriverGetProperties(&p);
  if (e.err != CU_FILE_SUCCESS) {
    Line(step, e, NULL);
    return;
  }
  Line(step, e,
       "nvfs=%u.%u poll_thresh=%zu max_direct_io=%zu dstatus=0x%x dcontrol=0x%x fflags=0x%x "
       "cache=%u per_buffer=%u pinned=%u batch=%u batch_timeout=%u",
       p.nvfs.major_version, p.nvfs.minor_version, p.nvfs.poll_thresh_size,
       p.nvfs.max_direct_io_size, p.nvfs.dstatusflags, p.nvfs.dcontrolflags, p.fflags,
       p.max_device_cache_size, p.per_buffer_cache_size, p.max_device_pinned_mem_size,
       p.max_batch_io_size, p.max_batch_io_timeout_msecs);
}

static void UseCount(const char *step) { Note(step, "use_count=%ld", p_cuFileUseCount()); }

static void DriverCase(void) {
  UseCount("closed.count");
  Line("close_unopened", p_cuFileDriverClose_v2(), NULL);
  Line("open1", p_cuFileDriverOpen(), NULL);
  UseCount("open1.count");
  Line("open2", p_cuFileDriverOpen(), NULL);
  UseCount("open2.count");
  Line("close1", p_cuFileDriverClose_v2(), NULL);
  UseCount("close1.count");
  Line("close2", p_cuFileDriverClose_v2(), NULL);
  UseCount("close2.count");
  Line("close3", p_cuFileDriverClose_v2(), NULL);
  /* An implicit open (first use), then another library's open/close pair. */
  Props("implicit.props");
  UseCount("implicit.count");
  Line("implicit.open", p_cuFileDriverOpen(), NULL);
  UseCount("implicit.open.count");
  Line("implicit.close", p_cuFileDriverClose_v2(), NULL);
  UseCount("implicit.close.count");
  Line("implicit.close2", p_cuFileDriverClose_v2(), NULL);
  UseCount("implicit.close2.count");
}

static void VersionPropsCase(void) {
  int v = -7;
  CUfileError_t e = p_cuFileGetVersion(&v);
  Line("version", e, "v=%d", v);
  Line("version_null", p_cuFileGetVersion(NULL), NULL);
  Line("props_null", p_cuFileDriverGetProperties(NULL), NULL);
  UseCount("props_null.count");
  Line("open", p_cuFileDriverOpen(), NULL);
  Props("props");
  Line("poll_mode", p_cuFileDriverSetPollMode(true, 8), NULL);
  Line("max_direct_io", p_cuFileDriverSetMaxDirectIOSize(8192), NULL);
  Line("max_direct_io_6", p_cuFileDriverSetMaxDirectIOSize(6), NULL);
  Line("max_direct_io_0", p_cuFileDriverSetMaxDirectIOSize(0), NULL);
  Line("max_cache", p_cuFileDriverSetMaxCacheSize(65536), NULL);
  Line("max_cache_0", p_cuFileDriverSetMaxCacheSize(0), NULL);
  Line("max_pinned", p_cuFileDriverSetMaxPinnedMemSize(65536), NULL);
  Line("max_pinned_huge", p_cuFileDriverSetMaxPinnedMemSize(SIZE_MAX), NULL);
  Props("props_after_set");
  Line("close", p_cuFileDriverClose_v2(), NULL);
  Line("closed.poll_mode", p_cuFileDriverSetPollMode(false, 4), NULL);
  UseCount("closed.count");
}

static const int kSizeParams = CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS + 1;
static const int kBoolParams = CUFILE_PARAM_STREAM_MEMOPS_BYPASS + 1;
static const int kStringParams = CUFILE_PARAM_LOG_DIR + 1;

static void Getters(const char *phase) {
  char step[96];
  for (int i = 0; i <= kSizeParams; ++i) {
    size_t v = 12345, lo = 777, hi = 777;
    snprintf(step, sizeof step, "%s.size%d", phase, i);
    CUfileError_t e = p_cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)i, &v);
    Line(step, e, "v=%zu", v);
    snprintf(step, sizeof step, "%s.minmax%d", phase, i);
    e = p_cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)i, &lo, &hi);
    Line(step, e, "min=%zu max=%zu", lo, hi);
  }
  for (int i = 0; i <= kBoolParams; ++i) {
    bool v = true;
    snprintf(step, sizeof step, "%s.bool%d", phase, i);
    CUfileError_t e = p_cuFileGetParameterBool((CUFileBoolConfigParameter_t)i, &v);
    Line(step, e, "v=%d", (int)v);
  }
  for (int i = 0; i <= kStringParams; ++i) {
    char s[4096] = "untouched";
    snprintf(step, sizeof step, "%s.string%d", phase, i);
    CUfileError_t e = p_cuFileGetParameterString((CUFileStringConfigParameter_t)i, s, sizeof s);
    Line(step, e, "v='%s'", s);
  }
}

static void ParamGettersCase(void) {
  Getters("closed");
  UseCount("closed.count");
  Line("open", p_cuFileDriverOpen(), NULL);
  Getters("open");
  size_t v;
  bool b;
  char s[8] = "x";
  Line("null.size", p_cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, NULL), NULL);
  Line("null.bool", p_cuFileGetParameterBool(CUFILE_PARAM_PROFILE_NVTX, NULL), NULL);
  Line("null.minmax", p_cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, &v, NULL),
       NULL);
  Line("string.len0", p_cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, 0), NULL);
  CUfileError_t e = p_cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, 1);
  Line("string.len1", e, "s='%s'", s);
  Line("string.null", p_cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, NULL, 8), NULL);
  (void)b;
}

/* For each size parameter: min-1, min, max, max+1, an odd value, then get. */
static void SizeSetters(void) {
  char step[96];
  for (int i = 0; i < kSizeParams; ++i) {
    size_t lo = 0, hi = 0, v = 0;
    if (p_cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)i, &lo, &hi).err)
      continue;
    /* Steps are named by label: the two libraries' ranges differ. */
    const size_t tries[] = {lo - 1, lo, hi, hi + 1, lo + 6, SIZE_MAX};
    static const char *const kLabels[] = {"min-1", "min", "max", "max+1", "min+6", "SIZE_MAX"};
    for (size_t t = 0; t < sizeof tries / sizeof tries[0]; ++t) {
      snprintf(step, sizeof step, "set.size%d.%s", i, kLabels[t]);
      Line(step, p_cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)i, tries[t]), NULL);
    }
    snprintf(step, sizeof step, "set.size%d.get", i);
    CUfileError_t e = p_cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)i, &v);
    Line(step, e, "v=%zu", v);
  }
  Line("set.size.unknown", p_cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)kSizeParams, 4),
       NULL);
}

static void BoolStringSetters(void) {
  char step[96];
  for (int i = 0; i <= kBoolParams; ++i) {
    bool v = false;
    snprintf(step, sizeof step, "set.bool%d", i);
    Line(step, p_cuFileSetParameterBool((CUFileBoolConfigParameter_t)i, true), NULL);
    snprintf(step, sizeof step, "set.bool%d.get", i);
    CUfileError_t e = p_cuFileGetParameterBool((CUFileBoolConfigParameter_t)i, &v);
    Line(step, e, "v=%d", (int)v);
  }
  static const char *const kStrings[] = {"info", "WARN", "bogus", "", "/tmp"};
  for (int i = 0; i <= kStringParams; ++i)
    for (size_t t = 0; t < sizeof kStrings / sizeof kStrings[0]; ++t) {
      char s[4096] = "untouched";
      snprintf(step, sizeof step, "set.string%d.'%s'", i, kStrings[t]);
      Line(step, p_cuFileSetParameterString((CUFileStringConfigParameter_t)i, kStrings[t]), NULL);
      snprintf(step, sizeof step, "set.string%d.'%s'.get", i, kStrings[t]);
      CUfileError_t e = p_cuFileGetParameterString((CUFileStringConfigParameter_t)i, s, sizeof s);
      Line(step, e, "v='%s'", s);
    }
  Line("set.string.null", p_cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, NULL), NULL);
}

static void ParamSettersCase(void) {
  SizeSetters();
  BoolStringSetters();
  UseCount("closed.count");
  Line("open", p_cuFileDriverOpen(), NULL);
  Line("open.set.size", p_cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64), NULL);
  Line("open.set.bool", p_cuFileSetParameterBool(CUFILE_PARAM_PROFILE_NVTX, true), NULL);
  Line("open.set.string", p_cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "INFO"), NULL);
  Getters("staged_open");
}

static void Slabs(const char *step) {
  size_t sizes[20], counts[20];
  for (int len = 0; len <= 17; ++len) {
    memset(sizes, 0, sizeof sizes);
    memset(counts, 0, sizeof counts);
    CUfileError_t e = p_cuFileGetParameterPosixPoolSlabArray(sizes, counts, len);
    if (e.err != CU_FILE_SUCCESS) continue;
    char buf[1024] = "";
    size_t at = 0;
    for (int i = 0; i < len && at < sizeof buf - 64; ++i)
      at += (size_t)snprintf(buf + at, sizeof buf - at, "%zu:%zu ", sizes[i], counts[i]);
    Line(step, e, "len=%d %s", len, buf);
    return;
  }
  Note(step, "no length accepted");
}

static void SlabCase(void) {
  Slabs("closed.get");
  size_t s[17], c[17];
  Line("get.len0", p_cuFileGetParameterPosixPoolSlabArray(s, c, 0), NULL);
  Line("get.null", p_cuFileGetParameterPosixPoolSlabArray(NULL, c, 3), NULL);
  /* Four sizes from 4 MiB to 16 GiB (KiB), counts 10/5/3/2. */
  size_t big[] = {4096, 65536, 1048576, 16777216}, bigc[] = {10, 5, 3, 2};
  Line("set.4mib_16gib", p_cuFileSetParameterPosixPoolSlabArray(big, bigc, 4), NULL);
  Slabs("set.4mib_16gib.get");
  size_t one[] = {1024}, onec[] = {8};
  Line("set.one", p_cuFileSetParameterPosixPoolSlabArray(one, onec, 1), NULL);
  Slabs("set.one.get");
  size_t odd[] = {6}, zero[] = {0}, huge[] = {(size_t)1 << 40}, tib[] = {(size_t)1 << 31};
  Line("set.size6", p_cuFileSetParameterPosixPoolSlabArray(odd, onec, 1), NULL);
  Line("set.size0", p_cuFileSetParameterPosixPoolSlabArray(zero, onec, 1), NULL);
  Line("set.size2tib", p_cuFileSetParameterPosixPoolSlabArray(tib, onec, 1), NULL);
  Line("set.size1pib", p_cuFileSetParameterPosixPoolSlabArray(huge, onec, 1), NULL);
  Line("set.count0", p_cuFileSetParameterPosixPoolSlabArray(one, zero, 1), NULL);
  size_t manyc[] = {1000000};
  Line("set.count1m", p_cuFileSetParameterPosixPoolSlabArray(one, manyc, 1), NULL);
  size_t down[] = {1024, 4}, downc[] = {1, 2};
  Line("set.descending", p_cuFileSetParameterPosixPoolSlabArray(down, downc, 2), NULL);
  Slabs("set.descending.get");
  for (int i = 0; i < 17; ++i) {
    s[i] = 4 * (size_t)(i + 1);
    c[i] = 1;
  }
  Line("set.len16", p_cuFileSetParameterPosixPoolSlabArray(s, c, 16), NULL);
  Line("set.len17", p_cuFileSetParameterPosixPoolSlabArray(s, c, 17), NULL);
  Line("set.len0", p_cuFileSetParameterPosixPoolSlabArray(s, c, 0), NULL);
  Line("set.null", p_cuFileSetParameterPosixPoolSlabArray(NULL, c, 1), NULL);
  Slabs("closed.final");
  Line("open", p_cuFileDriverOpen(), NULL);
  Slabs("open.get");
  Line("open.set", p_cuFileSetParameterPosixPoolSlabArray(one, onec, 1), NULL);
}

void StatsCase(void);
void BarCase(void);
void BufferCase(void);
void BatchCase(void);
void StreamCase(void);
void SystemMemoryCase(void);

const ProbeCase kProbeCases[] = {
    {"driver", DriverCase},         {"version_props", VersionPropsCase},
    {"param_get", ParamGettersCase}, {"param_set", ParamSettersCase},
    {"slabs", SlabCase},            {"stats", StatsCase},
    {"bar", BarCase},               {"buffers", BufferCase},
    {"system_memory", SystemMemoryCase}, {"batch", BatchCase},
    {"stream", StreamCase},
};
const size_t kNumProbeCases = sizeof kProbeCases / sizeof kProbeCases[0];
