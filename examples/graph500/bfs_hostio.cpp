// SPDX-License-Identifier: Apache-2.0
#include "bfs_hostio.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

namespace g500 {
namespace {

// A read of count column entries from entry `first` into buffer entry `at`.
struct Request {
  uint64_t first, count, at;
};

// What one buffer will hold: its requests and the batch's index.
struct Plan {
  std::vector<Request> reqs;
  std::vector<uint32_t> vertex, len;
  std::vector<uint64_t> pos;
  uint64_t used = 0;  // buffer entries taken
  bool empty() const { return reqs.empty(); }
  void Clear() {
    reqs.clear(), vertex.clear(), len.clear(), pos.clear();
    used = 0;
  }
  void Add(uint32_t v, uint64_t p, uint64_t n) {
    vertex.push_back(v), pos.push_back(p), len.push_back(static_cast<uint32_t>(n));
  }
};

class Search {
 public:
  Search(const GraphFile &f, gpu::HostioGpu *gpu, const HostioOptions &o, FileBfsStats *st)
      : f_(f), gpu_(gpu), o_(o), st_(st), cap_(o.buffer_bytes / 4), gap_(o.merge_gap_bytes / 4) {}

  Status Run(uint64_t root, std::vector<int64_t> *parent) {
    const uint64_t nv = f_.header().nv;
    parent->assign(nv, -1);
    if (root >= nv) return Status::Error(-EINVAL, "root " + std::to_string(root) + " out of range");
    if (!Gpu(gpu::HostioStart(gpu_, root, &err_))) return Error();
    for (uint64_t ncur = 1; ncur > 0;) {
      const uint32_t *v = nullptr;
      if (!Gpu(gpu::HostioFrontier(gpu_, ncur, &v, &err_)) || !Level(v, ncur)) return Error();
      if (!Gpu(gpu::HostioEndLevel(gpu_, &ncur, &err_))) return Error();
      st_->levels++;
    }
    if (!Gpu(gpu::HostioParents(gpu_, parent->data(), &err_))) return Error();
    return Status::Ok();
  }

 private:
  bool Gpu(int rc) {
    if (rc != 0 && status_.ok()) status_ = Status::Error(rc, err_);
    return rc == 0;
  }
  Status Error() const { return status_; }

  // The sorted frontier v[0, n) in batches; false on a failure.
  bool Level(const uint32_t *v, uint64_t n) {
    const auto off = f_.offsets();
    for (uint64_t i = 0; i < n;) {
      const uint64_t start = off[v[i]], end = off[v[i] + 1];
      if (end - start > cap_) {  // a list longer than a buffer: a batch a piece
        for (uint64_t at = start; at < end; at += cap_) {
          if (!Room(cap_, 1)) return false;
          const uint64_t m = std::min(cap_, end - at);
          plan_[slot_].reqs.push_back({at, m, 0});
          plan_[slot_].Add(v[i], 0, m);
          plan_[slot_].used = m;
        }
        i++;
        continue;
      }
      uint64_t j = i + 1, e = end;
      while (j < n && j - i < o_.index_entries && off[v[j]] >= e && off[v[j]] - e <= gap_ &&
             off[v[j] + 1] - start <= cap_)
        e = off[v[j++] + 1];
      if (!Room(e - start, j - i)) return false;
      Plan &p = plan_[slot_];
      const uint64_t at = p.used;
      if (e > start) p.reqs.push_back({start, e - start, at});
      for (uint64_t k = i; k < j; k++)
        if (off[v[k] + 1] > off[v[k]])
          p.Add(v[k], at + off[v[k]] - start, off[v[k] + 1] - off[v[k]]);
      p.used += e - start;
      i = j;
    }
    return Flush();
  }

  // Makes room for `entries` buffer entries and `pieces` index entries in
  // the current plan, sending it off first if they do not fit.
  bool Room(uint64_t entries, uint64_t pieces) {
    const Plan &p = plan_[slot_];
    if (p.used + entries <= cap_ && p.vertex.size() + pieces <= o_.index_entries) return true;
    return Flush();
  }

  // Reads the current plan into its buffer, has the GPU expand it, and moves
  // to the other buffer once the GPU is done with it.
  bool Flush() {
    Plan &p = plan_[slot_];
    if (p.empty()) return true;
    if (!Read(p, gpu::HostioBuffer(gpu_, slot_))) return false;
    const gpu::HostioBatch b{p.vertex.data(), p.pos.data(), p.len.data(), p.vertex.size()};
    if (!Gpu(gpu::HostioExpand(gpu_, slot_, b, &err_))) return false;
    slot_ ^= 1;
    plan_[slot_].Clear();
    return Gpu(gpu::HostioWait(gpu_, slot_, &err_));
  }

  // The plan's requests by every reader thread, each taking the next.
  bool Read(const Plan &p, uint32_t *buf) {
    std::atomic<uint64_t> bytes{0};
    std::mutex mu;
    Status first;
    ParallelEach(p.reqs.size(), o_.threads, [&](uint64_t k, unsigned) {
      const Request &r = p.reqs[k];
      Status s = ReadOne(buf, r);
      if (s.ok()) {
        bytes.fetch_add(r.count * 4, std::memory_order_relaxed);
        return true;
      }
      std::lock_guard<std::mutex> lock(mu);
      if (first.ok()) first = std::move(s);
      return false;
    });
    st_->bytes_read += bytes.load();
    st_->reads += p.reqs.size();
    if (!first.ok() && status_.ok()) status_ = std::move(first);
    return status_.ok();
  }

  Status ReadOne(uint32_t *buf, const Request &r) const {
    const int64_t got = f_.ReadCols(buf, r.at * 4, r.first, r.count);
    if (got == static_cast<int64_t>(r.count * 4)) return Status::Ok();
    if (got >= 0) return Status::Error(-EIO, "graph file shorter than its row offsets");
    return Status::Error(static_cast<int>(got),
                         "cuFileRead of neighbour lists into GPU memory: " + CuFileReadError(got));
  }

  const GraphFile &f_;
  gpu::HostioGpu *gpu_;
  const HostioOptions &o_;
  FileBfsStats *st_;
  const uint64_t cap_, gap_;
  Plan plan_[2];
  int slot_ = 0;
  std::string err_;
  Status status_;
};

}  // namespace

Status HostioBfs(const GraphFile &f, gpu::HostioGpu *gpu, uint64_t root, const HostioOptions &o,
                 std::vector<int64_t> *parent, FileBfsStats *stats) {
  if (o.buffer_bytes < 4 || o.index_entries == 0)
    return Status::Error(-EINVAL, "buffer_bytes and index_entries must be positive");
  return Search(f, gpu, o, stats).Run(root, parent);
}

}  // namespace g500
