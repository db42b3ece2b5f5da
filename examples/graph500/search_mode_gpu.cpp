// SPDX-License-Identifier: Apache-2.0
// The GPU modes of search_mode.h (built where nvcc is).
#include <ufile/device.h>

#include <algorithm>
#include <cerrno>

#include "bfs_devio.h"
#include "bfs_gpu.h"
#include "bfs_hostio.h"
#include "search_mode.h"

namespace g500 {
namespace {

Status FromGpu(int rc, const std::string &err) {
  return rc == 0 ? Status::Ok() : Status::Error(rc, err);
}

class InMemoryMode final : public SearchMode {
 public:
  ~InMemoryMode() override { gpu::FreeGraph(g_); }
  Status Open(const Csr &g, gpu::ColsIn where) {
    std::string err;
    const int rc =
        gpu::UploadGraph(g.offsets().data(), g.cols().data(), g.nv(), g.ne(), where, &g_, &err);
    return FromGpu(rc, err);
  }
  Status Search(uint64_t root) override {
    std::string err;
    return FromGpu(gpu::BfsInMemory(g_, root, &err), err);
  }
  Status Tree(std::vector<int64_t> *parent) override {
    std::string err;
    return FromGpu(gpu::MemParents(g_, parent->data(), &err), err);
  }
  SearchCounters Counters() const override { return {}; }

 private:
  gpu::MemGraph *g_ = nullptr;
};

class DevioMode final : public SearchMode {
 public:
  ~DevioMode() override { gpu::CloseDevio(g_); }
  Status Open(const GraphFile &f, const gpu::DevioOptions &o) {
    std::string err;
    const int rc = gpu::OpenDevio(f.handle(), f.offsets().data(), f.header().nv,
                                  f.header().cols_off, o, &g_, &err);
    return FromGpu(rc, err);
  }
  Status Search(uint64_t root) override {
    std::string err;
    return FromGpu(gpu::BfsDevio(g_, root, &st_, &err), err);
  }
  Status Tree(std::vector<int64_t> *parent) override {
    std::string err;
    return FromGpu(gpu::DevioParents(g_, parent->data(), &err), err);
  }
  SearchCounters Counters() const override {
    return {st_.bytes_read, 0, std::string("devio_path: ") + ufile_devio_path_name(st_.path)};
  }

 private:
  gpu::DevioGraph *g_ = nullptr;
  gpu::DevioStats st_;
};

class HostioMode final : public SearchMode {
 public:
  ~HostioMode() override {
    bfs_.reset();  // its workers stop before the GPU side goes
    gpu::CloseHostioGpu(g_);
  }
  Status Open(const GraphFile &f, const HostioOptions &o) {
    std::string err;
    const int rc = gpu::OpenHostioGpu(f.header().nv, HostDrivenBfs::Workers(o), o.buffer_bytes / 4,
                                      o.index_entries, &g_, &err);
    if (rc != 0) return FromGpu(rc, err);
    bfs_ = std::make_unique<HostDrivenBfs>(f, g_, o);
    return Status::Ok();
  }
  Status Search(uint64_t root) override { return bfs_->Run(root, &st_); }
  Status Tree(std::vector<int64_t> *parent) override {
    std::string err;
    return FromGpu(gpu::HostioParents(g_, parent->data(), &err), err);
  }
  SearchCounters Counters() const override { return {st_.bytes_read, st_.reads, ""}; }

 private:
  gpu::HostioGpu *g_ = nullptr;
  std::unique_ptr<HostDrivenBfs> bfs_;
  FileBfsStats st_;
};

}  // namespace

Status OpenGpuMode(const std::string &name, const Csr &g, const GraphFile &f,
                   const SearchOptions &o, std::unique_ptr<SearchMode> *out) {
  const bool default_gap = o.merge_gap_bytes == SearchOptions::kModeDefault;
  if (name == "gpu-mem" || name == "gpu-zerocopy") {
    auto m = std::make_unique<InMemoryMode>();
    Status s = m->Open(g, name == "gpu-mem" ? gpu::ColsIn::kDevice : gpu::ColsIn::kPinnedHost);
    *out = std::move(m);
    return s;
  }
  if (name == "gpu-devio") {
    gpu::DevioOptions d{.queues = o.queues,
                        .depth = o.depth,
                        .staging_bytes = o.staging_bytes,
                        .warps = o.warps,
                        .sq_threads = o.sq_threads};
    if (!default_gap) d.merge_gap_bytes = o.merge_gap_bytes;
    auto m = std::make_unique<DevioMode>();
    Status s = m->Open(f, d);
    *out = std::move(m);
    return s;
  }
  if (name == "gpu-hostio") {
    // A list piece holds at least one entry: no more index entries than that.
    HostioOptions h{.threads = o.threads, .buffer_bytes = o.hostio_buffer_bytes};
    h.index_entries = std::min<uint64_t>(h.index_entries, h.buffer_bytes / 4);
    if (!default_gap) h.merge_gap_bytes = o.merge_gap_bytes;
    auto m = std::make_unique<HostioMode>();
    Status s = m->Open(f, h);
    *out = std::move(m);
    return s;
  }
  return Status::Error(-EINVAL, "no GPU mode " + name);
}

Status LimitGpuMemory(uint64_t bytes, uint64_t *held) {
  std::string err;
  return FromGpu(gpu::LimitGpuMemory(bytes, held, &err), err);
}

}  // namespace g500
