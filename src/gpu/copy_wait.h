// SPDX-License-Identifier: Apache-2.0
// Waiting for a staging copy without a CPU spinning through it. A copy that
// overlaps slow storage (O_DIRECT) is waited for by sleeping about as long
// as it should take and then polling its event. Not with an event created
// with CU_EVENT_BLOCKING_SYNC: each of its completions is an interrupt that
// CUDA's event-handler thread takes, and that thread cost 10-15 % of the CPU
// of cold O_DIRECT reads on the H100 machine.
// Thread-safety: any thread; ev is the caller's.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace ufile {

// Waits for ev, recorded after a copy of `bytes`: spins on it (cuEventSynchronize
// on a spinning event) when the copy is short enough that sleeping would cost
// as much; else sleeps the copy's expected time, then polls it every 50 us.
// CUDA_SUCCESS, or the error the event reported.
CUresult SleepUntilCopied(CUevent ev, size_t bytes);

}  // namespace ufile
