// SPDX-License-Identifier: Apache-2.0
// File I/O of one planned chunk between the file and host memory: through the
// O_DIRECT descriptor, the buffered one, or a user-space filesystem's
// callbacks. A read is short only at end of file.
// Thread-safety: stateless.
#pragma once

#include "core/file_handle.h"
#include "core/status.h"
#include "plan/planner.h"

namespace ufile {

Result<size_t> ReadChunk(FileHandle &file, const Chunk &c, void *dst);
Result<size_t> WriteChunk(FileHandle &file, const Chunk &c, const void *src);

}  // namespace ufile
