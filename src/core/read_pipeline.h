// SPDX-License-Identifier: Apache-2.0
// Pipelined read into memory that needs a copy (GPU memory), for requests of
// several chunks. The participants read chunks in file order into a ring of
// pinned staging buffers (a segment of consecutive chunks per buffer); the
// calling thread copies the completed prefix to the GPU in file order, on one
// stream, as it grows. So the first copy starts when the first chunk is in,
// copies stay few and large, and the copy engine runs while the rest is read
// (docs/DESIGN.md, data path). A segment's buffer is read into again only
// after its copy has completed (one event per ring buffer).
// Thread-safety: one pipeline per request; its participants are the
// request's threads.
#pragma once

#include <cuda.h>

#include "core/transfer_job.h"

namespace ufile {

// The chunk size a pipelined read of req uses: small enough that the first
// copy starts early and every participant reads several chunks, a multiple of
// the file's alignment, at most limit.
size_t PipelineChunkSize(const IoRequest &req, size_t parts, size_t limit);

// Runs job (a read into memory of context ctx that needs a copy) with up to
// parts participants. Errors and end of file are recorded in job.
void RunPipelinedRead(Job &job, CUcontext ctx, size_t parts);

}  // namespace ufile
