// SPDX-License-Identifier: Apache-2.0
// Compiles: gpu/ may include engine/, a layer below it.
#include "engine/ring_registry.h"
#include "gpu/staging_pool.h"
