// SPDX-License-Identifier: Apache-2.0
// The host-driven search over the graph file: the row offsets in host
// memory, the neighbour lists read from the file with cuFileRead into host
// buffers (pageable host memory needs no GPU in ufile), batched and
// multi-threaded. Per level, the frontier is sorted and cut into chunks that
// threads take in turn; a thread reads the lists of consecutive frontier
// vertices in one request where the gap between them is small, and a list
// longer than its buffer in several.
//
// A GraphFile is immutable after Open and may be used by many threads.
#pragma once

#include <cufile.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common.h"
#include "csr.h"

namespace g500 {

class GraphFile {
 public:
  GraphFile() = default;
  GraphFile(const GraphFile &) = delete;
  GraphFile &operator=(const GraphFile &) = delete;
  ~GraphFile();

  // Opens path, reads the header and row offsets, registers the descriptor
  // with cuFile (opening the driver if need be).
  Status Open(const std::string &path);
  const CsrHeader &header() const { return h_; }
  std::span<const uint64_t> offsets() const { return offsets_; }
  // Column entries [first, first + count) with cuFileRead into base +
  // buf_off bytes (host memory, or device memory base registered or not);
  // the bytes read (count * 4 unless the file is short) or -errno /
  // -CUfileOpError.
  int64_t ReadCols(void *base, uint64_t buf_off, uint64_t first, uint64_t count) const;
  int fd() const { return fd_; }
  CUfileHandle_t handle() const { return fh_; }

 private:
  CsrHeader h_{};
  std::vector<uint64_t> offsets_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  bool registered_ = false;
};

// The text of a cuFileRead failure r: -errno, or -CUfileOpError (5000 and up).
std::string CuFileReadError(int64_t r);

struct FileBfsOptions {
  unsigned threads = 0;             // 0: every hardware thread
  uint64_t buffer_bytes = 1 << 20;  // per thread, a multiple of 4
  uint64_t merge_gap_bytes = 4096;  // read across gaps up to this between lists
  uint32_t chunk_vertices = 256;    // frontier vertices a thread takes at once
};

struct FileBfsStats {
  uint64_t bytes_read = 0;
  uint64_t reads = 0;  // cuFileRead calls
  uint32_t levels = 0;
};

// parent is resized to nv; stats accumulate. Fails with the first read error
// (its errno or cuFile status) or -EIO if the file is shorter than its offsets say.
Status FileBfs(const GraphFile &f, uint64_t root, const FileBfsOptions &o,
               std::vector<int64_t> *parent, FileBfsStats *stats);

}  // namespace g500
