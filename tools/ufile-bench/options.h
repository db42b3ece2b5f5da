// SPDX-License-Identifier: Apache-2.0
// ufile-bench command line: what to measure, on which file, how long.
// Thread-safety: an Options is a value, read-only once parsed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bench {

enum class Xfer {
  kUfile, kCpu, kNaive, kPinnedCopy, kRaw, kNvidia, kBatch, kAsync, kPipeline, kMmap,
  kDevice, kDeviceChase,  // xfer_device.h
};
enum class Op { kRead, kWrite, kRandRead, kRandWrite };

struct Options {
  std::string file;        // -f, or DIR/ufile-bench.dat from -D
  int gpu = 0;             // -d; -1: host memory
  int threads = 1;         // -w
  uint64_t file_size = 0;  // -s; 0: the file's size, else 1 GiB for a new file
  std::vector<uint64_t> io_sizes = {1ull << 20};  // -i, one row (or table) each
  Xfer xfer = Xfer::kUfile;                       // -x
  Op op = Op::kRead;                              // -I
  double seconds = 5;                             // -T; ignored when passes > 0
  uint64_t passes = 0;                            // -n: passes over the file (random: as many I/Os)
  bool verify = false;                            // -V
  bool register_buffers = true;                   // -b clears it
  bool json = false;                              // -j
  std::string json_file;                          // --json-file: JSON rows appended here too
  bool cold = false;                              // --cold
  bool odirect = false;                           // --odirect: open the file with O_DIRECT
  bool compare = false;                           // --compare
  int repeats = 0;                                // -r; 0: 3 with --compare, else 1
  unsigned batch = 128;                           // -B: I/Os per batch (batch) or in flight (async)
  std::string lib;                                // --lib: a libcufile.so to dlopen for -x nvidia
  uint64_t verify_bytes = 1ull << 30;             // --verify-bytes: cap of compare's check pass
  bool verify_pass = false;                       // --verify-bytes given: single rows check in a pass
  bool quiet = false;                             // -q: no progress line
  bool thread_cpu = false;                        // --thread-cpu: each run's CPU by thread name
  std::string devio;                              // --devio: device rows' knobs (xfer_device.h)

  bool is_write() const { return op == Op::kWrite || op == Op::kRandWrite; }
  bool is_random() const { return op == Op::kRandRead || op == Op::kRandWrite; }
  int effective_repeats() const { return repeats > 0 ? repeats : (compare ? 3 : 1); }
};

// Parses argv. Returns 0 and fills opt, 1 after printing help (exit 0), or
// -1 after printing an error (exit 2).
int ParseOptions(int argc, char **argv, Options *opt);

// "16M", "1G", "4096", "4k" -> bytes; false for junk.
bool ParseSize(const std::string &text, uint64_t *bytes);
// 1073741824 -> "1 GiB", 4096 -> "4 KiB".
std::string SizeText(uint64_t bytes);

const char *XferName(Xfer x);
const char *OpName(Op op);
bool ParseXfer(const std::string &text, Xfer *x);
bool ParseOp(const std::string &text, Op *op);

// NVIDIA's library where the CUDA toolkit installs it.
inline constexpr const char *kNvidiaLib = "/usr/local/cuda/lib64/libcufile.so.0";

}  // namespace bench
