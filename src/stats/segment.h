// SPDX-License-Identifier: Apache-2.0
// The statistics segment: the memory the counters live in, laid out so that
// another process (ufile-stats) can map it read-only from POSIX shared memory
// (/dev/shm/ufile-stats-<pid>, mode 0600) and sum it. The library updates it
// in place on every operation, so publication costs nothing extra.
//
// Counters are sharded: a thread always adds to one shard (chosen round-robin
// when it first counts), so threads rarely share a cache line; readers sum the
// shards. Every field is a lock-free std::atomic (address-free, so it works
// across processes); zero bytes are a valid initial state.
// Thread-safety: writers use relaxed atomics; a reader sees each counter
// exactly but a set of counters only approximately consistent.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ufile::stats {

inline constexpr char kMagic[8] = {'U', 'F', 'S', 'T', 'A', 'T', 'S', '\0'};
inline constexpr uint32_t kVersion = 1;
inline constexpr int kShards = 16;
inline constexpr int kMaxGpus = 16;
inline constexpr int kHistBuckets = 32;

// Operation counters, in the order of CUfileStatsLevel1_t's CUfileOpCounter_t
// fields (read_ops .. buf_deregister_ops, then batch_submit_ops ..
// batch_total_submit_ops).
enum Op : int {
  kRead,
  kWrite,
  kHandleRegister,
  kHandleDeregister,
  kBufRegister,
  kBufDeregister,
  kBatchSubmit,
  kBatchComplete,
  kBatchSetup,
  kBatchCancel,
  kBatchDestroy,
  kBatchEnqueued,
  kBatchPosixEnqueued,
  kBatchProcessed,
  kBatchPosixProcessed,
  kBatchNvfsSubmit,  // always 0: no nvidia-fs
  kBatchP2pSubmit,   // always 0
  kBatchAioSubmit,   // always 0
  kBatchIouringSubmit,
  kBatchMixedIoSubmit,
  kBatchTotalSubmit,
  kNumOps,
};

// Byte, latency and window counters by kind.
enum Kind : int { kKindRead, kKindWrite, kKindBatchRead, kKindBatchWrite, kNumKinds };
enum Lat : int { kLatRead, kLatWrite, kLatBatchSubmit, kLatBatchCompletion, kNumLats };

using Counter = std::atomic<uint64_t>;
static_assert(Counter::is_always_lock_free, "counters must be lock-free to be shared");

// One GPU's counters for one direction (0 read, 1 write).
struct GpuDir {
  Counter bytes;
  Counter ops;        // successful requests
  Counter errors;     // failed requests
  Counter posix;      // through a descriptor without O_DIRECT (page cache)
  Counter unaligned;  // offset or size not a multiple of the handle's alignment
  Counter busy_ns;    // sum of request latencies
  Counter first_ns;   // CLOCK_MONOTONIC start of the first request (0: none)
  Counter last_ns;    // end of the last one
};

struct alignas(64) Shard {
  Counter ops[kNumOps][2];  // [op][0] ok, [op][1] err
  Counter bytes[kNumKinds];
  Counter lat_ns[kNumLats];
  Counter first_ns[kNumKinds];  // window of each kind, CLOCK_MONOTONIC
  Counter last_ns[kNumKinds];
  Counter hist[2][kHistBuckets];  // [0] read, [1] write
  GpuDir gpu[kMaxGpus][2];
};

struct alignas(64) Header {
  char magic[8];
  uint32_t version;
  uint32_t shards;
  uint64_t size;  // sizeof(Segment)
  int32_t pid;
  std::atomic<uint32_t> level;    // level set (0..3)
  std::atomic<uint32_t> running;  // 0 after cuFileStatsStop
  std::atomic<uint32_t> num_gpus;
  std::atomic<uint64_t> created_unix_ns;
  std::atomic<uint64_t> reset_unix_ns;        // last cuFileStatsReset (or creation)
  std::atomic<uint64_t> last_batch_bytes[2];  // last submission: [0] read, [1] write
  std::atomic<uint64_t> reg_bytes[kMaxGpus];  // gauge: registered GPU memory
  std::atomic<uint32_t> uuid_set[kMaxGpus];
  char uuid[kMaxGpus][16];
  char comm[32];  // program name (/proc/self/comm)
};

struct Segment {
  Header header;
  Shard shard[kShards];
};

// "/ufile-stats-<pid>" (the shm_open name; the file is /dev/shm/ufile-stats-<pid>).
std::string SegmentName(int pid);

// The histogram bucket of a request of size bytes: 0 below 1 KiB, else
// 1 + floor(log2(size in whole KiB)), at most 31. Bucket i >= 1 holds sizes in
// [2^(i-1), 2^i) KiB; bucket 31 also holds everything larger.
int HistBucket(uint64_t size);

}  // namespace ufile::stats
