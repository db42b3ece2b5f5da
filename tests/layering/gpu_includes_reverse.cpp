// SPDX-License-Identifier: Apache-2.0
// Must not compile: core/ is a layer above gpu/.
#include "core/driver.h"
#include "gpu/staging_pool.h"
