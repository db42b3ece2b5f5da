/* SPDX-License-Identifier: Apache-2.0 */
/* Cases without memory: driver open/close and use count, version,
 * properties, the slab arrays before and after open (the other parameters:
 * probe_params.c). */
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

/* One slab array set in a child of its own (each sees the default pool),
 * and read back where get is set. */
typedef struct {
  const char *step;
  size_t *sizes, *counts;
  int len, get;
} SlabTry;

static void SlabTryChild(void *arg) {
  const SlabTry *t = arg;
  char get[96];
  Line(t->step, p_cuFileSetParameterPosixPoolSlabArray(t->sizes, t->counts, t->len), NULL);
  snprintf(get, sizeof get, "%s.get", t->step);
  if (t->get) Slabs(get);
}

static void SlabSet(const char *step, size_t *sizes, size_t *counts, int len, int get) {
  SlabTry t = {step, sizes, counts, len, get};
  Isolated(step, SlabTryChild, &t);
}

static void SlabCase(void) {
  Slabs("closed.get");
  size_t s[17], c[17];
  Line("get.len0", p_cuFileGetParameterPosixPoolSlabArray(s, c, 0), NULL);
  Line("get.null", p_cuFileGetParameterPosixPoolSlabArray(NULL, c, 3), NULL);
  /* Four sizes from 4 MiB to 16 GiB (KiB), counts 10/5/3/2. */
  size_t big[] = {4096, 65536, 1048576, 16777216}, bigc[] = {10, 5, 3, 2};
  SlabSet("set.4mib_16gib", big, bigc, 4, 1);
  size_t one[] = {1024}, onec[] = {8};
  SlabSet("set.one", one, onec, 1, 1);
  size_t odd[] = {6}, zero[] = {0}, huge[] = {(size_t)1 << 40}, tib[] = {(size_t)1 << 31};
  SlabSet("set.size6", odd, onec, 1, 0);
  SlabSet("set.size0", zero, onec, 1, 0);
  SlabSet("set.size2tib", tib, onec, 1, 0);
  SlabSet("set.size1pib", huge, onec, 1, 0);
  SlabSet("set.count0", one, zero, 1, 0);
  size_t manyc[] = {1000000};
  SlabSet("set.count1m", one, manyc, 1, 0);
  size_t down[] = {1024, 4}, downc[] = {1, 2};
  SlabSet("set.descending", down, downc, 2, 1);
  for (int i = 0; i < 17; ++i) {
    s[i] = 4 * (size_t)(i + 1);
    c[i] = 1;
  }
  SlabSet("set.len16", s, c, 16, 1);
  SlabSet("set.len17", s, c, 17, 0);
  SlabSet("set.len0", s, c, 0, 0);
  SlabSet("set.null", NULL, c, 1, 0);
  /* Set before open, kept at open; refused while open. */
  Line("staged", p_cuFileSetParameterPosixPoolSlabArray(one, onec, 1), NULL);
  Line("open", p_cuFileDriverOpen(), NULL);
  Slabs("open.get");
  Line("open.set", p_cuFileSetParameterPosixPoolSlabArray(big, bigc, 4), NULL);
}

void ParamGettersCase(void);
void ParamSettersCase(void);
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
