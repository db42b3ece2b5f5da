// SPDX-License-Identifier: Apache-2.0
// The graph file: a Graph500 graph in compressed sparse rows, every input
// edge stored in both directions (a self-loop twice in its vertex's row),
// duplicates kept, each row sorted.
//
//   bytes 0..4095      CsrHeader, zero-padded
//   offsets_off        nv + 1 row offsets, uint64, little-endian
//   cols_off           ne column indices, uint32 (4096-aligned)
//
// The column indices are 32-bit: a graph file holds scale 32 at most. The
// header records the seconds graph500-gen spent generating the edge list and
// in kernel 1 (the only bytes that differ between two files of one graph).
//
// Row v's neighbours are the ne entries [offsets[v], offsets[v+1]), at byte
// cols_off + 4 * offsets[v] of the file. A Csr owns its arrays (vectors) or
// maps the file read-only; either way it is immutable and may be read by
// any number of threads.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common.h"

namespace g500 {

inline constexpr char kCsrMagic[8] = {'G', '5', '0', '0', 'C', 'S', 'R', '\0'};
// The version covers the generator too: the validator regenerates the edge
// list from the header's seed, so a file from another generator is refused.
inline constexpr uint32_t kCsrVersion = 3;
inline constexpr uint64_t kCsrAlign = 4096;
inline constexpr uint32_t kMaxCsrScale = 32;

struct CsrHeader {
  char magic[8];
  uint32_t version;
  uint32_t scale;       // nv = 2^scale
  uint32_t edgefactor;  // input edges = edgefactor * nv
  uint32_t reserved;
  uint64_t nv;            // vertices
  uint64_t ne;            // column indices: 2 x input edges
  uint64_t seed;          // the generator's seed
  uint64_t offsets_off;   // byte offset of the row offsets
  uint64_t cols_off;      // byte offset of the column indices
  double generation_s;    // graph500-gen's edge list generation, seconds
  double construction_s;  // its kernel 1 (edge list to this CSR), seconds
};

// Anonymous memory of `bytes` (nullptr on failure), and its release.
void *MapAnonymous(uint64_t bytes);
void UnmapAnonymous(void *p, uint64_t bytes);

// An array in anonymous memory: pages are zero until first touched and
// allocated by the thread that touches them (no up-front fill), huge pages
// where the kernel gives them. Move-only; unmapped on destruction.
template <class T>
class BigArray {
 public:
  BigArray() = default;
  BigArray(const BigArray &) = delete;
  BigArray &operator=(const BigArray &) = delete;
  BigArray(BigArray &&o) noexcept { *this = std::move(o); }
  BigArray &operator=(BigArray &&o) noexcept {
    if (this != &o) {
      Free();
      p_ = o.p_;
      n_ = o.n_;
      o.p_ = nullptr;
      o.n_ = 0;
    }
    return *this;
  }
  ~BigArray() { Free(); }
  // -ENOMEM (with the size) when the mapping fails.
  static Status Allocate(uint64_t n, BigArray *out) {
    void *p = MapAnonymous(n * sizeof(T));
    if (p == nullptr)
      return Status::Error(-ENOMEM, "cannot allocate " + std::to_string(n * sizeof(T)) + " bytes");
    *out = BigArray();
    out->p_ = static_cast<T *>(p);
    out->n_ = n;
    return Status::Ok();
  }
  T *data() const { return p_; }
  uint64_t size() const { return n_; }
  std::span<T> span() const { return {p_, n_}; }

 private:
  void Free() {
    if (p_ != nullptr) UnmapAnonymous(p_, n_ * sizeof(T));
    p_ = nullptr;
    n_ = 0;
  }
  T *p_ = nullptr;
  uint64_t n_ = 0;
};

class Csr;
Status MapCsr(const std::string &path, Csr *out);

class Csr {
 public:
  Csr() = default;
  Csr(const Csr &) = delete;
  Csr &operator=(const Csr &) = delete;
  Csr(Csr &&o) noexcept;
  Csr &operator=(Csr &&o) noexcept;
  ~Csr();

  // Takes the arrays; fills the header's counts and layout.
  static Csr FromArrays(uint32_t scale, uint32_t edgefactor, uint64_t seed,
                        std::vector<uint64_t> offsets, std::vector<uint32_t> cols);
  static Csr FromBig(uint32_t scale, uint32_t edgefactor, uint64_t seed, BigArray<uint64_t> offsets,
                     BigArray<uint32_t> cols);
  // Records graph500-gen's times in the header.
  void SetTimes(double generation_s, double construction_s) {
    h_.generation_s = generation_s;
    h_.construction_s = construction_s;
  }

  const CsrHeader &header() const { return h_; }
  uint64_t nv() const { return h_.nv; }
  uint64_t ne() const { return h_.ne; }
  std::span<const uint64_t> offsets() const { return offsets_; }
  std::span<const uint32_t> cols() const { return cols_; }
  std::span<const uint32_t> Row(uint64_t v) const {
    return cols_.subspan(offsets_[v], offsets_[v + 1] - offsets_[v]);
  }
  uint64_t Degree(uint64_t v) const { return offsets_[v + 1] - offsets_[v]; }
  // Whether u is in v's (sorted) row.
  bool HasEdge(uint64_t v, uint32_t u) const;
  // A mapped file's pages leave this process's page tables (they are read
  // again on the next access), so that posix_fadvise(DONTNEED) can drop them
  // from the page cache. Nothing for arrays in memory.
  void ReleaseMappedPages() const;

 private:
  friend Status MapCsr(const std::string &path, Csr *out);
  void Release();
  CsrHeader h_{};
  std::span<const uint64_t> offsets_;
  std::span<const uint32_t> cols_;
  std::vector<uint64_t> own_offsets_;
  std::vector<uint32_t> own_cols_;
  BigArray<uint64_t> big_offsets_;
  BigArray<uint32_t> big_cols_;
  void *map_ = nullptr;
  size_t map_len_ = 0;
};

// The header's layout for nv vertices and ne column indices.
uint64_t CsrOffsetsOffset();
uint64_t CsrColsOffset(uint64_t nv);
uint64_t CsrFileSize(uint64_t nv, uint64_t ne);

// -EINVAL when path exists and is not a regular file (a FIFO, a device):
// WriteCsr refuses such a file once it has opened it, so a writer checks
// first, before spending time on a graph.
Status CheckCsrOutput(const std::string &path);

// Writes g to path (created or truncated) over `threads` threads (0: all),
// then fsyncs it. A failure after the open removes the file (the open
// truncated it); nothing else is ever removed.
Status WriteCsr(const Csr &g, const std::string &path, unsigned threads = 0);
// Reads and checks the header only (magic, version, sizes against the file).
Status ReadCsrHeader(const std::string &path, CsrHeader *out);
// Maps the file read-only (the page cache is the memory); checks the header
// and that the offsets are monotonic and end at ne.
Status MapCsr(const std::string &path, Csr *out);

}  // namespace g500
