/* SPDX-License-Identifier: Apache-2.0 */
/* Cases of the parameter API: every getter with its range before and after
 * open, and every setter with its range. NVIDIA's getters open its driver,
 * after which every setter is DRIVER_ALREADY_OPEN; so each setter runs in a
 * child of its own (Isolated) that has called nothing before it, and the
 * values a library reports while open are printed as "same" when they equal
 * what it reported while closed: a difference shows once, where it is. */
#include <stdint.h>
#include <string.h>

#include "probe.h"

enum {
  kSizeParams = CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS + 1,
  kBoolParams = CUFILE_PARAM_STREAM_MEMOPS_BYPASS + 1,
  kStringParams = CUFILE_PARAM_LOG_DIR + 1,
};

/* What one phase of Getters saw (index kSizeParams etc.: the unknown one). */
typedef struct {
  int size_err[kSizeParams + 1], range_err[kSizeParams + 1];
  size_t size[kSizeParams + 1], lo[kSizeParams + 1], hi[kSizeParams + 1];
  int bool_err[kBoolParams + 1], boolv[kBoolParams + 1];
  int string_err[kStringParams + 1];
  char string[kStringParams + 1][256];
} Seen;

static void Getters(const char *phase, Seen *now, const Seen *before) {
  char step[96];
  for (int i = 0; i <= kSizeParams; ++i) {
    size_t v = 12345, lo = 777, hi = 777;
    CUfileError_t e = p_cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)i, &v);
    CUfileError_t r = p_cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)i, &lo, &hi);
    now->size_err[i] = e.err, now->size[i] = v, now->range_err[i] = r.err;
    now->lo[i] = lo, now->hi[i] = hi;
    snprintf(step, sizeof step, "%s.size%d", phase, i);
    if (before && before->size_err[i] == e.err && before->size[i] == v)
      Line(step, e, "v=same");
    else
      Line(step, e, "v=%zu", v);
    snprintf(step, sizeof step, "%s.minmax%d", phase, i);
    if (before && before->range_err[i] == r.err && before->lo[i] == lo && before->hi[i] == hi)
      Line(step, r, "same");
    else
      Line(step, r, "min=%zu max=%zu", lo, hi);
  }
  for (int i = 0; i <= kBoolParams; ++i) {
    bool v = true;
    CUfileError_t e = p_cuFileGetParameterBool((CUFileBoolConfigParameter_t)i, &v);
    now->bool_err[i] = e.err, now->boolv[i] = v;
    snprintf(step, sizeof step, "%s.bool%d", phase, i);
    if (before && before->bool_err[i] == e.err && before->boolv[i] == v)
      Line(step, e, "v=same");
    else
      Line(step, e, "v=%d", (int)v);
  }
  for (int i = 0; i <= kStringParams; ++i) {
    char s[4096] = "untouched";
    CUfileError_t e = p_cuFileGetParameterString((CUFileStringConfigParameter_t)i, s, sizeof s);
    now->string_err[i] = e.err;
    snprintf(now->string[i], sizeof now->string[i], "%s", s);
    snprintf(step, sizeof step, "%s.string%d", phase, i);
    if (before && before->string_err[i] == e.err && strcmp(before->string[i], s) == 0)
      Line(step, e, "v=same");
    else
      Line(step, e, "v='%s'", s);
  }
}

void ParamGettersCase(void) {
  static Seen closed, open;
  Getters("closed", &closed, NULL);
  Note("closed.count", "use_count=%ld", p_cuFileUseCount());
  Line("open", p_cuFileDriverOpen(), NULL);
  Getters("open", &open, &closed);
  size_t v;
  char s[8] = "x";
  Line("null.size", p_cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, NULL), NULL);
  Line("null.bool", p_cuFileGetParameterBool(CUFILE_PARAM_PROFILE_NVTX, NULL), NULL);
  Line("null.minmax", p_cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, &v, NULL),
       NULL);
  Line("string.len0", p_cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, 0), NULL);
  CUfileError_t e = p_cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, 1);
  Line("string.len1", e, "s='%s'", s);
  Line("string.null", p_cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, NULL, 8), NULL);
}

/* One setter call in a fresh child, then the getter: the value set, the
 * default, or another value. */
typedef struct {
  const char *step;
  int param;
  size_t value, dflt; /* size parameters */
  const char *text;   /* string parameters */
  size_t *shared;     /* range children: ok, lo, hi, default */
} Try;

static void RangeChild(void *arg) {
  Try *t = arg;
  size_t *r = t->shared;
  const CUFileSizeTConfigParameter_t p = (CUFileSizeTConfigParameter_t)t->param;
  r[0] = p_cuFileGetParameterMinMaxValue(p, &r[1], &r[2]).err == CU_FILE_SUCCESS &&
         p_cuFileGetParameterSizeT(p, &r[3]).err == CU_FILE_SUCCESS;
}

static void SizeTryChild(void *arg) {
  const Try *t = arg;
  char get[128];
  size_t v = 0;
  Line(t->step, p_cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)t->param, t->value),
       NULL);
  snprintf(get, sizeof get, "%s.get", t->step);
  CUfileError_t e = p_cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)t->param, &v);
  if (v == t->value || v == t->dflt)
    Line(get, e, "v=%s", v == t->value ? "the value set" : "the default");
  else
    Line(get, e, "v=%zu", v);
}

/* For each size parameter, each library's own min-1, min, max, max+1, min+6
 * and SIZE_MAX (the labels, not the values, are compared). */
static void SizeSetters(size_t *shared) {
  char step[96];
  for (int i = 0; i <= kSizeParams; ++i) {
    Try t = {.param = i, .shared = shared};
    memset(shared, 0, 4 * sizeof *shared);
    snprintf(step, sizeof step, "set.size%d.range", i);
    t.step = step;
    Isolated(step, RangeChild, &t);
    if (!shared[0] && i != CUFILE_PARAM_PROFILE_STATS) {
      snprintf(step, sizeof step, "set.size%d", i);
      t.value = 4, t.dflt = SIZE_MAX;
      Isolated(step, SizeTryChild, &t);
      continue;
    }
    /* NVIDIA reports no range for PROFILE_STATS: its levels are tried. */
    const int levels = i == CUFILE_PARAM_PROFILE_STATS;
    const size_t lo = levels ? 0 : shared[1], hi = levels ? 3 : shared[2];
    const size_t tries[] = {lo - 1, lo, hi, hi + 1, lo + 6, SIZE_MAX};
    static const char *const kLabels[] = {"min-1", "min", "max", "max+1", "min+6", "SIZE_MAX"};
    for (size_t k = 0; k < sizeof tries / sizeof tries[0]; ++k) {
      snprintf(step, sizeof step, "set.size%d.%s", i, kLabels[k]);
      t.value = tries[k], t.dflt = shared[3];
      Isolated(step, SizeTryChild, &t);
    }
  }
}

static void BoolTryChild(void *arg) {
  const Try *t = arg;
  char get[128];
  bool v = false;
  Line(t->step, p_cuFileSetParameterBool((CUFileBoolConfigParameter_t)t->param, true), NULL);
  snprintf(get, sizeof get, "%s.get", t->step);
  CUfileError_t e = p_cuFileGetParameterBool((CUFileBoolConfigParameter_t)t->param, &v);
  Line(get, e, "v=%d", (int)v);
}

static void StringTryChild(void *arg) {
  const Try *t = arg;
  char get[128], s[4096] = "untouched";
  Line(t->step, p_cuFileSetParameterString((CUFileStringConfigParameter_t)t->param, t->text),
       NULL);
  snprintf(get, sizeof get, "%s.get", t->step);
  CUfileError_t e = p_cuFileGetParameterString((CUFileStringConfigParameter_t)t->param, s,
                                               sizeof s);
  Line(get, e, "v='%s'", s);
}

static void BoolStringSetters(void) {
  char step[96];
  for (int i = 0; i <= kBoolParams; ++i) {
    snprintf(step, sizeof step, "set.bool%d", i);
    Try t = {.step = step, .param = i};
    Isolated(step, BoolTryChild, &t);
  }
  static const char *const kStrings[] = {"info", "WARN", "bogus", "", "/tmp", NULL};
  for (int i = 0; i <= kStringParams; ++i)
    for (size_t k = 0; k < sizeof kStrings / sizeof kStrings[0]; ++k) {
      snprintf(step, sizeof step, "set.string%d.'%s'", i, kStrings[k] ? kStrings[k] : "NULL");
      Try t = {.step = step, .param = i, .text = kStrings[k]};
      Isolated(step, StringTryChild, &t);
    }
}

void ParamSettersCase(void) {
  size_t *shared = SharedPage();
  if (!shared) {
    Note("mmap", "failed");
    return;
  }
  SizeSetters(shared);
  BoolStringSetters();
  /* Values staged before open apply at open; setters while open are refused. */
  Line("staged.size", p_cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64), NULL);
  Line("staged.bool", p_cuFileSetParameterBool(CUFILE_PARAM_PROFILE_NVTX, true), NULL);
  Line("staged.string", p_cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "INFO"), NULL);
  Note("staged.count", "use_count=%ld", p_cuFileUseCount());
  Line("open", p_cuFileDriverOpen(), NULL);
  Line("open.set.size", p_cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 32), NULL);
  Line("open.set.bool", p_cuFileSetParameterBool(CUFILE_PARAM_PROFILE_NVTX, false), NULL);
  Line("open.set.string", p_cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "WARN"), NULL);
  size_t v = 0;
  bool b = false;
  char s[64] = "untouched";
  CUfileError_t e = p_cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v);
  Line("staged_open.size", e, "v=%zu", v);
  e = p_cuFileGetParameterBool(CUFILE_PARAM_PROFILE_NVTX, &b);
  Line("staged_open.bool", e, "v=%d", (int)b);
  e = p_cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, s, sizeof s);
  Line("staged_open.string", e, "v='%s'", s);
}
