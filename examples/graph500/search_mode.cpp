// SPDX-License-Identifier: Apache-2.0
// The CPU modes of search_mode.h.
#include "search_mode.h"

#include <cerrno>

#include "bfs_host.h"

namespace g500 {
namespace {

class HostMode final : public SearchMode {
 public:
  HostMode(const Csr &g, HostBfsOptions o) : g_(g), o_(o) {}
  Status Search(uint64_t root) override {
    if (root >= g_.nv()) return Status::Error(-EINVAL, "root out of range");
    examined_ += HostBfs(g_, root, o_, &parent_).edges_examined;
    searches_++;
    return Status::Ok();
  }
  Status Tree(std::vector<int64_t> *parent) override {
    *parent = parent_;
    return Status::Ok();
  }
  // What direction optimization saves: the column entries a search reads.
  SearchCounters Counters() const override {
    return {0, 0,
            "edges_examined: " + std::to_string(searches_ > 0 ? examined_ / searches_ : 0) +
                " a search of " + std::to_string(g_.ne()) + " column entries"};
  }

 private:
  const Csr &g_;
  const HostBfsOptions o_;
  std::vector<int64_t> parent_;
  uint64_t examined_ = 0, searches_ = 0;
};

class FileMode final : public SearchMode {
 public:
  FileMode(const GraphFile &f, FileBfsOptions o) : f_(f), o_(o) {}
  Status Search(uint64_t root) override { return FileBfs(f_, root, o_, &parent_, &st_); }
  Status Tree(std::vector<int64_t> *parent) override {
    *parent = parent_;
    return Status::Ok();
  }
  SearchCounters Counters() const override { return {st_.bytes_read, st_.reads, ""}; }

 private:
  const GraphFile &f_;
  const FileBfsOptions o_;
  std::vector<int64_t> parent_;
  FileBfsStats st_;
};

}  // namespace

const std::vector<std::string> &CpuModeNames() {
  static const std::vector<std::string> names{"host", "host-do", "file"};
  return names;
}

const std::vector<std::string> &GpuModeNames() {
  static const std::vector<std::string> names{"gpu-mem", "gpu-zerocopy", "gpu-hostio", "gpu-devio"};
  return names;
}

Status OpenCpuMode(const std::string &name, const Csr &g, const GraphFile &f,
                   const SearchOptions &o, std::unique_ptr<SearchMode> *out) {
  if (name == "host" || name == "host-do") {
    *out = std::make_unique<HostMode>(
        g, HostBfsOptions{.threads = o.threads, .direction_optimizing = name == "host-do"});
    return Status::Ok();
  }
  if (name == "file") {
    FileBfsOptions fo{.threads = o.threads};
    if (o.merge_gap_bytes != SearchOptions::kModeDefault) fo.merge_gap_bytes = o.merge_gap_bytes;
    *out = std::make_unique<FileMode>(f, fo);
    return Status::Ok();
  }
  return Status::Error(-EINVAL, "no CPU mode " + name);
}

}  // namespace g500
