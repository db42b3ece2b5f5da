// SPDX-License-Identifier: Apache-2.0
// The counting hooks. Each starts from one relaxed load of g_state; above
// level 0 it adds to the calling thread's shard with relaxed atomics.
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "core/buffer_registry.h"
#include "stats/internal.h"
#include "stats/publish.h"
#include "stats/stats.h"
#include "ufile/detail/device_atomics.h"

namespace ufile::stats {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

void Add(Counter &c, uint64_t v) {
  c.fetch_add(v, kRelaxed);
}

// Widens [first, last] of one shard to hold [t0, t1].
void Widen(Counter &first, Counter &last, uint64_t t0, uint64_t t1) {
  uint64_t f = first.load(kRelaxed);
  while ((f == 0 || t0 < f) && !first.compare_exchange_weak(f, t0, kRelaxed)) {
  }
  uint64_t l = last.load(kRelaxed);
  while (t1 > l && !last.compare_exchange_weak(l, t1, kRelaxed)) {
  }
}

Shard *MyShard() {
  Segment *seg = CurrentSegment();
  if (!seg) return nullptr;
  static std::atomic<unsigned> next{0};
  thread_local const unsigned index = next.fetch_add(1, kRelaxed) % kShards;
  return &seg->shard[index];
}

void RecordGpu(Shard &s, int device, bool write, bool ok, uint64_t bytes, bool posix,
               bool unaligned, uint64_t t0, uint64_t t1) {
  if (device < 0 || device >= kMaxGpus) return;
  GpuDir &g = s.gpu[device][write ? 1 : 0];
  if (!ok) {
    Add(g.errors, 1);
    return;
  }
  Add(g.ops, 1);
  Add(g.bytes, bytes);
  Add(g.busy_ns, t1 - t0);
  if (posix) Add(g.posix, 1);
  if (unaligned) Add(g.unaligned, 1);
  Widen(g.first_ns, g.last_ns, t0, t1);
  Segment *seg = CurrentSegment();
  if (seg->header.num_gpus.load(kRelaxed) <= static_cast<uint32_t>(device))
    seg->header.num_gpus.store(static_cast<uint32_t>(device) + 1, kRelaxed);
}

// Registered GPU buffers (base -> device, length) for the reg_bytes gauges.
std::mutex g_reg_mu;
std::map<const void *, std::pair<int, uint64_t>> g_registered;  // guarded by g_reg_mu

}  // namespace

void RecordIo(const observe::IoSample &io) {
  const unsigned level = CollectLevel();
  if (!level) return;
  Shard *s = MyShard();
  if (!s) return;
  if (io.ok) {
    const int kind = io.write ? kKindWrite : kKindRead;
    Add(s->ops[io.write ? kWrite : kRead][0], 1);
    Add(s->bytes[kind], io.bytes);
    Add(s->lat_ns[io.write ? kLatWrite : kLatRead], io.t1 - io.t0);
    Widen(s->first_ns[kind], s->last_ns[kind], io.t0, io.t1);
    if (level >= 2) Add(s->hist[io.write ? 1 : 0][HistBucket(io.size)], 1);
  }
  if (level >= 3)
    RecordGpu(*s, io.device, io.write, io.ok, io.bytes, io.posix, io.unaligned, io.t0, io.t1);
}

void CountOpSlow(Op op, bool ok) {
  if (Shard *s = MyShard()) Add(s->ops[op][ok ? 0 : 1], 1);
}

void CountIoErrorSlow(bool write) {
  CountOpSlow(write ? kWrite : kRead, false);
}

void CountBufRegister(const RegisteredBuffer &buf, const Status &s) {
  if (!CollectLevel()) return;
  CountOpSlow(kBufRegister, s.ok());
  const int d = buf.mem.device;
  if (!s.ok() || !buf.mem.needs_copy() || d < 0 || d >= kMaxGpus) return;
  std::lock_guard<std::mutex> lock(g_reg_mu);
  g_registered[reinterpret_cast<const void *>(buf.base)] = {d, buf.length};
  CurrentSegment()->header.reg_bytes[d].fetch_add(buf.length, kRelaxed);
}

void CountBufDeregister(const void *base, const Status &s) {
  if (!CollectLevel()) return;
  CountOpSlow(kBufDeregister, s.ok());
  if (!s.ok()) return;
  std::lock_guard<std::mutex> lock(g_reg_mu);
  auto it = g_registered.find(base);
  if (it == g_registered.end()) return;  // registered while stats were off
  CurrentSegment()->header.reg_bytes[it->second.first].fetch_sub(it->second.second, kRelaxed);
  g_registered.erase(it);
}

void LockRegistrationsForFork() {
  g_reg_mu.lock();
}
void UnlockRegistrationsAfterFork() {
  g_reg_mu.unlock();
}

void ForgetRegistrations() {
  std::lock_guard<std::mutex> lock(g_reg_mu);
  g_registered.clear();
  if (Segment *seg = CurrentSegment())
    for (auto &b : seg->header.reg_bytes) b.store(0, kRelaxed);
}

// ---- batch ------------------------------------------------------------------

uint64_t StartTimer() {
  return CollectLevel() ? devio::NowNs() : 0;
}

void RecordBatchSetup(bool ok) {
  Count(kBatchSetup, ok);
}
void RecordBatchDestroy(bool ok) {
  Count(kBatchDestroy, ok);
}
void RecordBatchCancel(bool ok) {
  Count(kBatchCancel, ok);
}
void RecordBatchStatus(bool ok) {
  Count(kBatchComplete, ok);
}

void RecordBatchSubmit(bool ok, const BatchSubmit &b) {
  if (!CollectLevel()) return;
  Shard *s = MyShard();
  if (!s) return;
  const int e = ok ? 0 : 1;
  const uint64_t n = b.reads + b.writes;
  Add(s->ops[kBatchSubmit][e], 1);
  Add(s->ops[kBatchTotalSubmit][e], 1);
  Add(s->ops[kBatchEnqueued][e], n);
  if (!b.io_uring) Add(s->ops[kBatchPosixEnqueued][e], n);
  if (b.io_uring) Add(s->ops[kBatchIouringSubmit][e], 1);
  if (b.reads && b.writes) Add(s->ops[kBatchMixedIoSubmit][e], 1);
  if (!ok) return;
  if (b.start_ns) Add(s->lat_ns[kLatBatchSubmit], devio::NowNs() - b.start_ns);
  Header &h = CurrentSegment()->header;
  h.last_batch_bytes[0].store(b.read_bytes, kRelaxed);
  h.last_batch_bytes[1].store(b.write_bytes, kRelaxed);
}

void RecordBatchIoDone(const BatchIoDone &io) {
  const unsigned level = CollectLevel();
  if (!level) return;
  Shard *s = MyShard();
  if (!s) return;
  const int e = io.ok ? 0 : 1;
  Add(s->ops[kBatchProcessed][e], 1);
  if (!io.io_uring) Add(s->ops[kBatchPosixProcessed][e], 1);
  const uint64_t t1 = devio::NowNs();
  const uint64_t t0 = io.submit_ns ? io.submit_ns : t1;
  Add(s->lat_ns[kLatBatchCompletion], t1 - t0);
  if (io.ok) {
    const int kind = io.write ? kKindBatchWrite : kKindBatchRead;
    Add(s->bytes[kind], io.bytes);
    Widen(s->first_ns[kind], s->last_ns[kind], t0, t1);
  }
  if (level >= 3)
    RecordGpu(*s, io.device, io.write, io.ok, io.bytes, io.posix, io.unaligned, t0, t1);
}

}  // namespace ufile::stats
