// SPDX-License-Identifier: Apache-2.0
// Parameters staged with cuFileSetParameter* before the driver opens. They
// sit on top of every other config layer when the driver opens, and are
// cleared then. Getters read the running Config while open and the staged
// view (LoadConfig() + staged values) before.
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <cufile.h>

#include "core/config.h"
#include "core/status.h"

namespace ufile {

// Applies the staged values to cfg (ConfigSource::kApi), then clears them
// if clear is true (the driver's open does).
void ApplyStagedParams(Config &cfg, bool clear);

// The range cuFileSetParameterSizeT accepts for param.
Status SizeTParamRange(CUFileSizeTConfigParameter_t param, size_t *min_value, size_t *max_value);

}  // namespace ufile
