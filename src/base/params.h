// SPDX-License-Identifier: Apache-2.0
// Parameters staged with cuFileSetParameter* before the driver opens. They
// sit on top of every other config layer when the driver opens, and are
// cleared then. Getters read the running Config while open and the staged
// view (LoadConfig() + staged values) before.
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <cufile.h>

#include <string>
#include <vector>

#include "base/config.h"
#include "base/status.h"

namespace ufile {

// Applies the staged values to cfg (ConfigSource::kApi), then clears them
// if clear is true (the driver's open does).
void ApplyStagedParams(Config &cfg, bool clear);

// The range cuFileSetParameterSizeT accepts for param.
Status SizeTParamRange(CUFileSizeTConfigParameter_t param, size_t *min_value, size_t *max_value);

// Validation shared by the JSON loader and the setters: false (with why) when
// value is outside param's range.
bool CheckSizeTParam(CUFileSizeTConfigParameter_t param, size_t value, std::string *why);
bool CheckSlabSizes(const std::vector<size_t> &sizes, std::string *why);
bool CheckSlabCounts(const std::vector<size_t> &counts, std::string *why);
// Dotted JSON key of a parameter, or nullptr for an unknown one.
const char *SizeTParamKey(CUFileSizeTConfigParameter_t param);
const char *BoolParamKey(CUFileBoolConfigParameter_t param);
const char *StringParamKey(CUFileStringConfigParameter_t param);
// Stage a value for the next open (the cuFileSetParameter* calls).
Status StageSizeTParam(CUFileSizeTConfigParameter_t param, size_t value, std::string *why);
Status StageBoolParam(CUFileBoolConfigParameter_t param, bool value);
Status StageStringParam(CUFileStringConfigParameter_t param, const char *value, std::string *why);
Status StageSlabParams(const size_t *sizes, const size_t *counts, int len, std::string *why);
// Read a parameter's value out of cfg (the cuFileGetParameter* calls).
Status ReadSizeTParam(const Config &cfg, CUFileSizeTConfigParameter_t param, size_t *value);
Status ReadBoolParam(const Config &cfg, CUFileBoolConfigParameter_t param, bool *value);
Status ReadStringParam(const Config &cfg, CUFileStringConfigParameter_t param, std::string *value);
// LoadConfig() with the staged values applied (what getters see before open).
Config StagedConfig();

}  // namespace ufile
