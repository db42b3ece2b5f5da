// SPDX-License-Identifier: Apache-2.0
// Which process generation this is: 0 in the process that loaded the
// library, incremented in a child at each fork. Per-thread state that owns
// kernel objects shared with the parent after a fork (an io_uring's rings
// are mapped shared) records the epoch it was made in and is rebuilt, not
// reused, in a child.
// Thread-safety: ForkEpoch() may be called from any thread.
#pragma once

namespace ufile {

unsigned ForkEpoch();

}  // namespace ufile
