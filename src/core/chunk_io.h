// SPDX-License-Identifier: Apache-2.0
// File I/O of one planned chunk between the file and host memory: through the
// O_DIRECT descriptor or the buffered one (through the engine), or a
// user-space filesystem's callbacks. A read is short only at end of file.
// Thread-safety: stateless.
#pragma once

#include "core/file_handle.h"
#include "core/status.h"
#include "engine/engine.h"
#include "plan/planner.h"

namespace ufile {

// fixed: the engine/ring_registry buffer slot the host memory lies in (a staging
// lease's), or kNoFixedSlot.
Result<size_t> ReadChunk(Engine &engine, FileHandle &file, const Chunk &c, void *dst, int fixed);
Result<size_t> WriteChunk(Engine &engine, FileHandle &file, const Chunk &c, const void *src,
                          int fixed);

}  // namespace ufile
