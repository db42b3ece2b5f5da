// SPDX-License-Identifier: Apache-2.0
// The one word every observation point reads first: which statistics level
// is being collected right now (0 when off or stopped) and whether NVTX
// ranges are on. At level 0 with NVTX off a hook costs one relaxed load and a
// branch.
// Thread-safety: written by the statistics control (stats/stats.cpp) under
// its mutex, read anywhere.
#pragma once

#include <atomic>

namespace ufile::observe {

inline constexpr unsigned kLevelMask = 3;  // bits 0-1: level collected now
inline constexpr unsigned kNvtxBit = 4;    // profile.nvtx

extern std::atomic<unsigned> g_state;

inline unsigned State() {
  return g_state.load(std::memory_order_relaxed);
}
inline unsigned CollectLevel() {
  return State() & kLevelMask;
}
inline bool NvtxOn() {
  return (State() & kNvtxBit) != 0;
}

}  // namespace ufile::observe
