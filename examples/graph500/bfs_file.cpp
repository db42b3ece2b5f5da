// SPDX-License-Identifier: Apache-2.0
#include "bfs_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "bfs_host.h"

namespace g500 {

std::string CuFileReadError(int64_t r) {
  const int e = static_cast<int>(-r);
  if (e >= CU_FILE_DRIVER_NOT_INITIALIZED)
    return cufileop_status_error(static_cast<CUfileOpError>(e));
  return std::strerror(e);
}

GraphFile::~GraphFile() {
  if (registered_) cuFileHandleDeregister(fh_);
  if (fd_ >= 0) close(fd_);
}

Status GraphFile::Open(const std::string &path) {
  Status s = ReadCsrHeader(path, &h_);
  if (!s.ok()) return s;
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return Status::Error(-errno, "open " + path + ": " + std::strerror(errno));
  offsets_.resize(h_.nv + 1);
  const uint64_t want = offsets_.size() * sizeof(uint64_t);
  uint64_t got = 0;
  while (got < want) {
    const ssize_t r = pread(fd_, reinterpret_cast<char *>(offsets_.data()) + got, want - got,
                            static_cast<off_t>(h_.offsets_off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::Error(r < 0 ? -errno : -EIO, "read offsets of " + path);
    got += static_cast<uint64_t>(r);
  }
  if (offsets_[0] != 0 || offsets_[h_.nv] != h_.ne)
    return Status::Error(-EINVAL, path + ": row offsets do not span the column indices");
  CUfileDescr_t d;
  std::memset(&d, 0, sizeof d);
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd_;
  const CUfileError_t e = cuFileHandleRegister(&fh_, &d);
  if (e.err != CU_FILE_SUCCESS)
    return Status::Error(-static_cast<int>(e.err),
                         std::string("cuFileHandleRegister: ") + cufileop_status_error(e.err));
  registered_ = true;
  return Status::Ok();
}

int64_t GraphFile::ReadCols(void *base, uint64_t buf_off, uint64_t first, uint64_t count) const {
  uint64_t done = 0;
  const uint64_t want = count * sizeof(uint32_t);
  while (done < want) {
    const ssize_t r =
        cuFileRead(fh_, base, want - done, static_cast<off_t>(h_.cols_off + first * 4 + done),
                   static_cast<off_t>(buf_off + done));
    if (r == -1) return -errno;
    if (r < 0) return r;
    if (r == 0) break;
    done += static_cast<uint64_t>(r);
  }
  return static_cast<int64_t>(done);
}

namespace {

struct LevelCtx {
  const GraphFile &f;
  const FileBfsOptions &o;
  const std::vector<uint32_t> &cur;
  std::vector<int64_t> &parent;
  Frontier &next;
  std::atomic<uint64_t> bytes{0}, reads{0};
  std::mutex mu;
  Status err;
  std::atomic<bool> failed{false};
};

void RecordFailure(LevelCtx &c, Status s) {
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.err.ok()) c.err = std::move(s);
  c.failed.store(true, std::memory_order_relaxed);
}

bool ReadInto(LevelCtx &c, uint32_t *buf, uint64_t first, uint64_t count) {
  const int64_t r = c.f.ReadCols(buf, 0, first, count);
  c.reads.fetch_add(1, std::memory_order_relaxed);
  if (r >= 0) c.bytes.fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
  if (r == static_cast<int64_t>(count * 4)) return true;
  if (r >= 0)
    RecordFailure(c, Status::Error(-EIO, "graph file shorter than its row offsets"));
  else
    RecordFailure(c, Status::Error(static_cast<int>(r),
                                   "cuFileRead of neighbour lists: " + CuFileReadError(r)));
  return false;
}

void ClaimList(LevelCtx &c, uint32_t p, const uint32_t *nbr, uint64_t n,
               std::vector<uint32_t> &out) {
  const uint64_t nv = c.f.header().nv;
  for (uint64_t k = 0; k < n; k++)
    if (nbr[k] < nv && Claim(c.parent, nbr[k], p)) out.push_back(nbr[k]);
}

// Frontier vertices [i, j) of the chunk whose lists, with the gaps between
// them, fit in cap entries and whose gaps are at most gap entries.
uint64_t RunEnd(const LevelCtx &c, const uint32_t *v, uint64_t i, uint64_t n, uint64_t cap,
                uint64_t gap) {
  const auto off = c.f.offsets();
  const uint64_t start = off[v[i]];
  uint64_t end = off[v[i] + 1], j = i + 1;
  while (j < n && off[v[j]] - end <= gap && off[v[j] + 1] - start <= cap) end = off[v[j++] + 1];
  return j;
}

void ExpandChunk(LevelCtx &c, const uint32_t *v, uint64_t n, std::vector<uint32_t> &buf,
                 std::vector<uint32_t> &out) {
  const auto off = c.f.offsets();
  const uint64_t cap = buf.size(), gap = c.o.merge_gap_bytes / 4;
  for (uint64_t i = 0; i < n && !c.failed.load(std::memory_order_relaxed);) {
    const uint64_t j = RunEnd(c, v, i, n, cap, gap);
    const uint64_t start = off[v[i]], end = off[v[j - 1] + 1];
    if (end - start <= cap) {
      if (end > start && !ReadInto(c, buf.data(), start, end - start)) return;
      for (uint64_t k = i; k < j; k++)
        ClaimList(c, v[k], buf.data() + (off[v[k]] - start), off[v[k] + 1] - off[v[k]], out);
    } else {  // one list longer than the buffer
      for (uint64_t at = start; at < end; at += cap) {
        const uint64_t len = std::min(cap, end - at);
        if (!ReadInto(c, buf.data(), at, len)) return;
        ClaimList(c, v[i], buf.data(), len, out);
      }
    }
    i = j;
  }
}

}  // namespace

Status FileBfs(const GraphFile &f, uint64_t root, const FileBfsOptions &o,
               std::vector<int64_t> *parent, FileBfsStats *stats) {
  const uint64_t nv = f.header().nv;
  const unsigned threads = Threads(o.threads);
  parent->assign(nv, -1);
  if (root >= nv) return Status::Error(-EINVAL, "root " + std::to_string(root) + " out of range");
  if (o.buffer_bytes < 4 || o.chunk_vertices == 0)
    return Status::Error(-EINVAL, "buffer_bytes and chunk_vertices must be positive");
  (*parent)[root] = static_cast<int64_t>(root);
  std::vector<uint32_t> cur{static_cast<uint32_t>(root)};
  std::vector<std::vector<uint32_t>> bufs(threads, std::vector<uint32_t>(o.buffer_bytes / 4));
  Frontier next(threads);
  while (!cur.empty()) {
    LevelCtx c{f, o, cur, *parent, next};
    const uint64_t nchunks = (cur.size() + o.chunk_vertices - 1) / o.chunk_vertices;
    ParallelEach(nchunks, threads, [&](uint64_t k, unsigned t) {
      const uint64_t b = k * o.chunk_vertices;
      const uint64_t n = std::min<uint64_t>(o.chunk_vertices, cur.size() - b);
      ExpandChunk(c, cur.data() + b, n, bufs[t], next.Local(t));
      return !c.failed.load(std::memory_order_relaxed);
    });
    stats->bytes_read += c.bytes.load();
    stats->reads += c.reads.load();
    stats->levels++;
    if (!c.err.ok()) return c.err;
    next.Gather(&cur, true);
  }
  return Status::Ok();
}

}  // namespace g500
