// SPDX-License-Identifier: Apache-2.0
// cuFileGetParameter* / cuFileSetParameter*: setters stage a value for the
// next open (CU_FILE_DRIVER_ALREADY_OPEN while open); getters read the running
// Config while open and the staged view (LoadConfig() + staged values) before.
// Ranges and the parameter -> key mapping live in the key table,
// base/config_keys.cpp.
#include <cufile.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/api_util.h"
#include "base/params.h"

using namespace ufile;

using api::InEnum;
using api::RawEnum;

namespace {

// The Config a getter reads: the running one, else the staged view. The
// driver may close between IsOpen and RunningConfig, hence the null check.
std::shared_ptr<const Config> ViewConfig() {
  Driver &driver = Driver::Get();
  if (driver.IsOpen())
    if (std::shared_ptr<const Config> running = driver.RunningConfig()) return running;
  return std::make_shared<const Config>(StagedConfig());
}

// A setter's first check: values staged while open would never apply.
bool RefuseWhileOpen(const char *fn) {
  if (!Driver::Get().IsOpen()) return false;
  UFILE_LOG_ERROR(
      "%s: the driver is already open; parameters must be set before "
      "cuFileDriverOpen",
      fn);
  return true;
}

const char *KeyOr(const char *key) {
  return key ? key : "unknown parameter";
}

}  // namespace

extern "C" CUfileError_t cuFileGetParameterSizeT(CUFileSizeTConfigParameter_t param,
                                                 size_t *value) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!InEnum(param, CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS))
      return UFILE_API_REFUSE("cuFileGetParameterSizeT", CU_FILE_INVALID_VALUE, "param %d",
                              RawEnum(param));
    if (!SizeTParamKey(param) || !value)
      return UFILE_API_REFUSE("cuFileGetParameterSizeT", CU_FILE_INVALID_VALUE,
                              "param %d (%s), value %p", static_cast<int>(param),
                              KeyOr(SizeTParamKey(param)), static_cast<void *>(value));
    return ReadSizeTParam(*ViewConfig(), param, value).ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileGetParameterBool(CUFileBoolConfigParameter_t param, bool *value) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!InEnum(param, CUFILE_PARAM_STREAM_MEMOPS_BYPASS))
      return UFILE_API_REFUSE("cuFileGetParameterBool", CU_FILE_INVALID_VALUE, "param %d",
                              RawEnum(param));
    if (!BoolParamKey(param) || !value)
      return UFILE_API_REFUSE("cuFileGetParameterBool", CU_FILE_INVALID_VALUE,
                              "param %d (%s), value %p", static_cast<int>(param),
                              KeyOr(BoolParamKey(param)), static_cast<void *>(value));
    return ReadBoolParam(*ViewConfig(), param, value).ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileGetParameterString(CUFileStringConfigParameter_t param,
                                                  char *desc_str, int len) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!InEnum(param, CUFILE_PARAM_LOG_DIR))
      return UFILE_API_REFUSE("cuFileGetParameterString", CU_FILE_INVALID_VALUE, "param %d",
                              RawEnum(param));
    if (!StringParamKey(param) || !desc_str || len <= 0)
      return UFILE_API_REFUSE("cuFileGetParameterString", CU_FILE_INVALID_VALUE,
                              "param %d (%s), desc_str %p, len %d", static_cast<int>(param),
                              KeyOr(StringParamKey(param)), static_cast<void *>(desc_str), len);
    std::string value;
    Status st = ReadStringParam(*ViewConfig(), param, &value);
    if (!st.ok()) return st.ToCuFileError();
    if (value.size() >= static_cast<size_t>(len))
      return UFILE_API_REFUSE("cuFileGetParameterString", CU_FILE_INVALID_VALUE,
                              "%s needs %zu bytes, len is %d", StringParamKey(param),
                              value.size() + 1, len);
    std::memcpy(desc_str, value.c_str(), value.size() + 1);
    return api::Ok();
  });
}

extern "C" CUfileError_t cuFileGetParameterMinMaxValue(CUFileSizeTConfigParameter_t param,
                                                       size_t *min_value, size_t *max_value) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!InEnum(param, CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS))
      return UFILE_API_REFUSE("cuFileGetParameterMinMaxValue", CU_FILE_INVALID_VALUE,
                              "param %d", RawEnum(param));
    if (!SizeTParamKey(param) || !min_value || !max_value)
      return UFILE_API_REFUSE("cuFileGetParameterMinMaxValue", CU_FILE_INVALID_VALUE,
                              "param %d (%s), min_value %p, max_value %p", static_cast<int>(param),
                              KeyOr(SizeTParamKey(param)), static_cast<void *>(min_value),
                              static_cast<void *>(max_value));
    return SizeTParamRange(param, min_value, max_value).ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileSetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t value) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (RefuseWhileOpen("cuFileSetParameterSizeT")) return api::Err(CU_FILE_DRIVER_ALREADY_OPEN);
    if (!InEnum(param, CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS))
      return UFILE_API_REFUSE("cuFileSetParameterSizeT", CU_FILE_INVALID_VALUE, "param %d",
                              RawEnum(param));
    std::string why;
    Status st = StageSizeTParam(param, value, &why);
    if (!st.ok())
      UFILE_LOG_ERROR("cuFileSetParameterSizeT: param %d (%s) = %zu: %s", static_cast<int>(param),
                      KeyOr(SizeTParamKey(param)), value, why.c_str());
    return st.ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileSetParameterBool(CUFileBoolConfigParameter_t param, bool value) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (RefuseWhileOpen("cuFileSetParameterBool")) return api::Err(CU_FILE_DRIVER_ALREADY_OPEN);
    if (!InEnum(param, CUFILE_PARAM_STREAM_MEMOPS_BYPASS))
      return UFILE_API_REFUSE("cuFileSetParameterBool", CU_FILE_INVALID_VALUE, "param %d",
                              RawEnum(param));
    Status st = StageBoolParam(param, value);
    if (!st.ok())
      UFILE_LOG_ERROR("cuFileSetParameterBool: unknown param %d (value %s)",
                      static_cast<int>(param), value ? "true" : "false");
    return st.ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileSetParameterString(CUFileStringConfigParameter_t param,
                                                  const char *desc_str) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (RefuseWhileOpen("cuFileSetParameterString")) return api::Err(CU_FILE_DRIVER_ALREADY_OPEN);
    if (!InEnum(param, CUFILE_PARAM_LOG_DIR))
      return UFILE_API_REFUSE("cuFileSetParameterString", CU_FILE_INVALID_VALUE, "param %d",
                              RawEnum(param));
    std::string why;
    Status st = StageStringParam(param, desc_str, &why);
    if (!st.ok())
      UFILE_LOG_ERROR("cuFileSetParameterString: param %d (%s) = \"%.200s\": %s",
                      static_cast<int>(param), KeyOr(StringParamKey(param)),
                      desc_str ? desc_str : "(null)", why.c_str());
    return st.ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileSetParameterPosixPoolSlabArray(const size_t *size_values,
                                                              const size_t *count_values, int len) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (RefuseWhileOpen("cuFileSetParameterPosixPoolSlabArray"))
      return api::Err(CU_FILE_DRIVER_ALREADY_OPEN);
    std::string why;
    Status st = StageSlabParams(size_values, count_values, len, &why);
    if (!st.ok())
      UFILE_LOG_ERROR(
          "cuFileSetParameterPosixPoolSlabArray: size_values %p, count_values %p, "
          "len %d: %s",
          static_cast<const void *>(size_values), static_cast<const void *>(count_values), len,
          why.c_str());
    return st.ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileGetParameterPosixPoolSlabArray(size_t *size_values,
                                                              size_t *count_values, int len) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!size_values || !count_values || len <= 0)
      return UFILE_API_REFUSE("cuFileGetParameterPosixPoolSlabArray", CU_FILE_INVALID_VALUE,
                              "size_values %p, count_values %p, len %d",
                              static_cast<void *>(size_values), static_cast<void *>(count_values),
                              len);
    std::shared_ptr<const Config> cfg = ViewConfig();
    const std::vector<size_t> &sizes = cfg->posix_pool_slab_size_kb;
    const std::vector<size_t> &counts = cfg->posix_pool_slab_count;
    if (sizes.size() != static_cast<size_t>(len) || counts.size() != sizes.size())
      return UFILE_API_REFUSE("cuFileGetParameterPosixPoolSlabArray", CU_FILE_INVALID_VALUE,
                              "len %d but there are %zu slabs", len, sizes.size());
    std::copy(sizes.begin(), sizes.end(), size_values);
    std::copy(counts.begin(), counts.end(), count_values);
    return api::Ok();
  });
}
