// SPDX-License-Identifier: Apache-2.0
// Every search of graph500-bfs behind one interface, chosen by name:
//
//   host        CPU, top-down, over the mapped file (the page cache)
//   host-do     CPU, direction-optimizing, every core: the CPU baseline
//   file        CPU, reading each neighbour list with cuFileRead
//   gpu-mem     GPU, the whole CSR in GPU memory: the in-memory ceiling
//   gpu-zerocopy GPU, column indices in pinned host memory read over PCIe
//               (EMOGI): the baseline for a graph in host memory
//   gpu-hostio  GPU expands, host workers read the lists into GPU memory
//               with cuFileRead: the host-driven baseline
//   gpu-devio   GPU kernels read the lists from the file themselves through
//               ufile's device queues (bfs_devio.cu): what the example shows
//
// Opening a mode makes what it keeps for every search (GPU arrays, queues,
// worker threads); that is the specification's construction time. Search()
// is the timed search: its tree stays where the mode made it (GPU memory
// for the GPU modes, the specification's output). Tree() copies it out for
// validation, untimed. A mode is for one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bfs_file.h"
#include "common.h"
#include "csr.h"

namespace g500 {

struct SearchOptions {
  static constexpr uint64_t kModeDefault = UINT64_MAX;
  unsigned threads = 0;                     // CPU threads, host workers; 0: every core
  uint64_t merge_gap_bytes = kModeDefault;  // file/gpu-devio 4096, gpu-hostio 32768
  // gpu-devio's device queues (DevioOptions)
  unsigned queues = 16, depth = 512, warps = 0, sq_threads = 0;
  uint64_t staging_bytes = 16384;
  uint64_t hostio_buffer_bytes = 16u << 20;  // each of a gpu-hostio worker's two buffers
};

struct SearchCounters {
  uint64_t bytes_read = 0;  // from the file, over every search
  uint64_t reads = 0;       // read calls by the host, where it makes them
  std::string note;         // a mode's own line ("devio_path: nocpu"), or empty
};

class SearchMode {
 public:
  virtual ~SearchMode() = default;
  virtual Status Search(uint64_t root) = 0;
  virtual Status Tree(std::vector<int64_t> *parent) = 0;
  virtual SearchCounters Counters() const = 0;
};

const std::vector<std::string> &CpuModeNames();
const std::vector<std::string> &GpuModeNames();

// A CPU mode over g (the mapped file) and f (the same file, for cuFileRead).
Status OpenCpuMode(const std::string &name, const Csr &g, const GraphFile &f,
                   const SearchOptions &o, std::unique_ptr<SearchMode> *out);

// Where built with CUDA (search_mode_gpu.cpp). -ENOMEM when what the mode
// keeps in GPU memory does not fit (under LimitGpuMemory: in the limit).
Status OpenGpuMode(const std::string &name, const Csr &g, const GraphFile &f,
                   const SearchOptions &o, std::unique_ptr<SearchMode> *out);
// Leaves the GPU modes at most `bytes` of GPU memory, until the process
// ends: the rest is held in one allocation. *held: the bytes held.
Status LimitGpuMemory(uint64_t bytes, uint64_t *held);

}  // namespace g500
