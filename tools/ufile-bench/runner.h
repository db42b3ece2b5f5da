// SPDX-License-Identifier: Apache-2.0
// One measured run: N worker threads, each taking requests (file offsets of
// one I/O size, sequential or uniformly random) and moving them with its own
// Worker until the time or the pass count is used up. Timing, per-I/O
// latency, CPU time (getrusage, the whole process: library threads count)
// and, when asked, the check of every byte against the pattern.
// Thread-safety: a Transfer is set up on the main thread; each Worker is used
// by exactly one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "memory.h"
#include "options.h"

namespace bench {

// One I/O: file range and the buffer slot (index into the worker's buffers).
struct Req {
  uint64_t off = 0;
  size_t len = 0;
  size_t slot = 0;
};

// What one row measures.
struct RowSpec {
  Xfer xfer = Xfer::kUfile;
  Op op = Op::kRead;
  std::string file;
  uint64_t file_size = 0;
  uint64_t io_size = 0;
  int threads = 1;
  bool odirect = false;
  bool register_buffers = true;
  unsigned batch = 128;
  size_t chunk = 0;  // naive: pread/copy piece (0: the I/O size)
  std::string lib;   // ufile/nvidia/batch/async: dlopen this library instead
  bool write() const { return op == Op::kWrite || op == Op::kRandWrite; }
  bool random() const { return op == Op::kRandRead || op == Op::kRandWrite; }
};

class Worker {
 public:
  virtual ~Worker() = default;
  // Moves n requests (1, or one batch); returns after all are done.
  virtual Status Run(const Req *reqs, size_t n) = 0;
  // The memory of a slot, for filling (writes) and checking (reads);
  // nullptr when the transfer moves no file data (pinned-copy).
  virtual char *SlotData(size_t slot) = 0;
  virtual bool SlotOnDevice() const = 0;
};

class Transfer {
 public:
  virtual ~Transfer() = default;
  // Opens the file and whatever the row needs; called once per row.
  virtual Status Setup(const RowSpec &spec, const Gpu &gpu) = 0;
  virtual Status NewWorker(int thread, std::unique_ptr<Worker> *out) = 0;
  // Requests per Worker::Run call (batch and async: the batch).
  virtual size_t group() const { return 1; }
  virtual bool moves_file_data() const { return true; }
  // How it ran, for the report ("O_DIRECT", "8 threads x 4 MiB", ...).
  virtual std::string setting() const { return ""; }
};

std::unique_ptr<Transfer> MakeTransfer(Xfer xfer);

struct RunPlan {
  double seconds = 0;       // used when total_reqs == 0
  uint64_t total_reqs = 0;  // stop after this many requests in all
  uint64_t span = 0;        // offsets fall in [0, span): the file size, or less
  bool verify = false;      // fill before every write, check after every read
  bool progress = false;    // \r status line on stderr
  bool thread_cpu = false;  // --thread-cpu: CPU by thread name on stderr
  std::string label;
};

struct Sample {
  double seconds = 0;
  uint64_t bytes = 0;
  uint64_t ios = 0;
  double cpu_seconds = 0;
  std::vector<uint32_t> lat_ns;  // per request (per batch for batch/async)
  Status status;
  uint64_t checked_bytes = 0;  // bytes compared with the pattern
};

Sample RunOnce(const RowSpec &spec, const Gpu &gpu, Transfer &xfer,
               std::vector<std::unique_ptr<Worker>> &workers, const RunPlan &plan);

// Reads [0, len) back with plain pread on nthreads threads and checks it.
Status ReadBack(const std::string &path, uint64_t len, int nthreads);

// The sizes whose per-I/O latency is recorded.
inline constexpr uint64_t kLatencyMaxIo = 64 * 1024;

}  // namespace bench
