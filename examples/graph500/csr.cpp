// SPDX-License-Identifier: Apache-2.0
#include "csr.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace g500 {
namespace {

uint64_t AlignUp(uint64_t x) {
  return (x + kCsrAlign - 1) / kCsrAlign * kCsrAlign;
}

Status Errno(const std::string &what, const std::string &path) {
  const int e = errno;
  return Status::Error(-e, what + " " + path + ": " + std::strerror(e));
}

// The file open as fd: its size if it is a regular one, else -EINVAL (a
// FIFO, a device), so that nothing waits on it or writes into it.
Status RegularFile(int fd, const std::string &path, uint64_t *size) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Errno("stat", path);
  if (!S_ISREG(st.st_mode)) return Status::Error(-EINVAL, path + ": not a regular file");
  *size = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

Status WriteAll(int fd, const void *p, uint64_t n, uint64_t off, const std::string &path) {
  const char *c = static_cast<const char *>(p);
  while (n > 0) {
    const ssize_t w = pwrite(fd, c, std::min<uint64_t>(n, 1ull << 30), static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Errno("write", path);
    if (w == 0) return Status::Error(-EIO, "write " + path + ": no progress");
    c += w;
    n -= static_cast<uint64_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

Status CheckHeader(const CsrHeader &h, uint64_t file_size, const std::string &path) {
  auto bad = [&](const std::string &why) {
    return Status::Error(-EINVAL, path + ": not a graph file of this version (" + why + ")");
  };
  if (std::memcmp(h.magic, kCsrMagic, sizeof kCsrMagic) != 0) return bad("magic");
  if (h.version != kCsrVersion) return bad("version " + std::to_string(h.version));
  if (h.scale > 32 || h.nv != (uint64_t{1} << h.scale)) return bad("scale/nv");
  if (h.offsets_off != CsrOffsetsOffset() || h.cols_off != CsrColsOffset(h.nv))
    return bad("layout");
  if (h.ne > (UINT64_MAX - h.cols_off) / 4 || CsrFileSize(h.nv, h.ne) != file_size)
    return bad("size " + std::to_string(file_size) + " for ne " + std::to_string(h.ne));
  return Status::Ok();
}

}  // namespace

void *MapAnonymous(uint64_t bytes) {
  if (bytes == 0) bytes = 1;
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, bytes, MADV_HUGEPAGE);  // a hint: refused where THP is off
  return p;
}

void UnmapAnonymous(void *p, uint64_t bytes) {
  munmap(p, bytes == 0 ? 1 : bytes);
}

uint64_t CsrOffsetsOffset() {
  return kCsrAlign;
}
uint64_t CsrColsOffset(uint64_t nv) {
  return AlignUp(CsrOffsetsOffset() + 8 * (nv + 1));
}
uint64_t CsrFileSize(uint64_t nv, uint64_t ne) {
  return CsrColsOffset(nv) + 4 * ne;
}

Csr::Csr(Csr &&o) noexcept {
  *this = std::move(o);
}

Csr &Csr::operator=(Csr &&o) noexcept {
  if (this == &o) return *this;
  Release();
  h_ = o.h_;
  own_offsets_ = std::move(o.own_offsets_);
  own_cols_ = std::move(o.own_cols_);
  big_offsets_ = std::move(o.big_offsets_);
  big_cols_ = std::move(o.big_cols_);
  offsets_ = o.offsets_;
  cols_ = o.cols_;
  map_ = o.map_;
  map_len_ = o.map_len_;
  o.map_ = nullptr;
  o.map_len_ = 0;
  o.offsets_ = {};
  o.cols_ = {};
  o.h_ = {};
  return *this;
}

Csr::~Csr() {
  Release();
}

void Csr::Release() {
  if (map_ != nullptr) munmap(map_, map_len_);
  map_ = nullptr;
  map_len_ = 0;
}

namespace {

CsrHeader MakeHeader(uint32_t scale, uint32_t edgefactor, uint64_t seed, uint64_t noffsets,
                     uint64_t ncols) {
  CsrHeader h{};
  std::memcpy(h.magic, kCsrMagic, sizeof kCsrMagic);
  h.version = kCsrVersion;
  h.scale = scale;
  h.edgefactor = edgefactor;
  h.nv = noffsets == 0 ? 0 : noffsets - 1;
  h.ne = ncols;
  h.seed = seed;
  h.offsets_off = CsrOffsetsOffset();
  h.cols_off = CsrColsOffset(h.nv);
  return h;
}

}  // namespace

Csr Csr::FromArrays(uint32_t scale, uint32_t edgefactor, uint64_t seed,
                    std::vector<uint64_t> offsets, std::vector<uint32_t> cols) {
  Csr g;
  g.h_ = MakeHeader(scale, edgefactor, seed, offsets.size(), cols.size());
  g.own_offsets_ = std::move(offsets);
  g.own_cols_ = std::move(cols);
  g.offsets_ = g.own_offsets_;
  g.cols_ = g.own_cols_;
  return g;
}

Csr Csr::FromBig(uint32_t scale, uint32_t edgefactor, uint64_t seed, BigArray<uint64_t> offsets,
                 BigArray<uint32_t> cols) {
  Csr g;
  g.h_ = MakeHeader(scale, edgefactor, seed, offsets.size(), cols.size());
  g.big_offsets_ = std::move(offsets);
  g.big_cols_ = std::move(cols);
  g.offsets_ = g.big_offsets_.span();
  g.cols_ = g.big_cols_.span();
  return g;
}

bool Csr::HasEdge(uint64_t v, uint32_t u) const {
  const auto row = Row(v);
  return std::binary_search(row.begin(), row.end(), u);
}

void Csr::ReleaseMappedPages() const {
  if (map_ != nullptr) madvise(map_, map_len_, MADV_DONTNEED);
}

namespace {

// Writes n bytes at off in pieces of 64 MiB over `threads` threads; the
// first failure.
Status WriteParallel(int fd, const void *p, uint64_t n, uint64_t off, const std::string &path,
                     unsigned threads) {
  constexpr uint64_t kPiece = 64ull << 20;
  std::mutex mu;
  Status first;
  ParallelEach((n + kPiece - 1) / kPiece, threads, [&](uint64_t k, unsigned) {
    const uint64_t at = k * kPiece, len = std::min(kPiece, n - at);
    Status s = WriteAll(fd, static_cast<const char *>(p) + at, len, off + at, path);
    if (s.ok()) return true;
    std::lock_guard<std::mutex> lock(mu);
    if (first.ok()) first = std::move(s);
    return false;
  });
  return first;
}

}  // namespace

Status CheckCsrOutput(const std::string &path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Status::Error(-EINVAL, path + ": not a regular file");
  return Status::Ok();
}

Status WriteCsr(const Csr &g, const std::string &path, unsigned threads) {
  // O_NONBLOCK: a FIFO with no reader fails the open instead of waiting; one
  // with a reader, or a device, is refused next; regular files ignore it.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return Errno("create", path);
  uint64_t size = 0;
  Status s = RegularFile(fd, path, &size);
  if (!s.ok()) {
    close(fd);
    return s;
  }
  std::vector<char> head(kCsrAlign, 0);
  std::memcpy(head.data(), &g.header(), sizeof(CsrHeader));
  // The size first: the gap before cols_off stays a hole, the size exact.
  if (ftruncate(fd, static_cast<off_t>(CsrFileSize(g.nv(), g.ne()))) != 0)
    s = Errno("truncate", path);
  if (s.ok())
    s = WriteParallel(fd, g.offsets().data(), g.offsets().size_bytes(), g.header().offsets_off,
                      path, threads);
  if (s.ok())
    s = WriteParallel(fd, g.cols().data(), g.cols().size_bytes(), g.header().cols_off, path,
                      threads);
  // The header last: a file cut short by a crash has no valid magic.
  if (s.ok()) s = WriteAll(fd, head.data(), head.size(), 0, path);
  if (s.ok() && fsync(fd) != 0) s = Errno("fsync", path);
  if (close(fd) != 0 && s.ok()) s = Errno("close", path);
  if (!s.ok()) unlink(path.c_str());  // truncated by the open: no graph is left in it
  return s;
}

Status ReadCsrHeader(const std::string &path, CsrHeader *out) {
  // O_NONBLOCK: opening a FIFO would wait for a writer (regular files ignore it).
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Errno("open", path);
  uint64_t size = 0;
  Status s = RegularFile(fd, path, &size);
  CsrHeader h{};
  if (s.ok()) {
    const ssize_t r = pread(fd, &h, sizeof h, 0);
    if (r < 0)
      s = Errno("read", path);
    else if (r != static_cast<ssize_t>(sizeof h))
      s = Status::Error(-EINVAL, path + ": shorter than a graph header");
  }
  close(fd);
  if (s.ok()) s = CheckHeader(h, size, path);
  if (s.ok()) *out = h;
  return s;
}

Status MapCsr(const std::string &path, Csr *out) {
  CsrHeader h{};
  Status s = ReadCsrHeader(path, &h);
  if (!s.ok()) return s;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open", path);
  const size_t len = CsrFileSize(h.nv, h.ne);
  void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (m == MAP_FAILED) return Status::Error(-e, "mmap " + path + ": " + std::strerror(e));
  Csr g;
  g.h_ = h;
  g.map_ = m;
  g.map_len_ = len;
  const char *base = static_cast<const char *>(m);
  g.offsets_ = {reinterpret_cast<const uint64_t *>(base + h.offsets_off), h.nv + 1};
  g.cols_ = {reinterpret_cast<const uint32_t *>(base + h.cols_off), h.ne};
  const auto off = g.offsets_;
  if (off[0] != 0 || off[h.nv] != h.ne)
    return Status::Error(-EINVAL, path + ": row offsets do not span the column indices");
  for (uint64_t v = 0; v < h.nv; v++)
    if (off[v] > off[v + 1])
      return Status::Error(-EINVAL, path + ": row offsets decrease at vertex " + std::to_string(v));
  *out = std::move(g);
  return Status::Ok();
}

}  // namespace g500
