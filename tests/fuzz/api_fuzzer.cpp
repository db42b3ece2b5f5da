// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the input is a sequence of cuFile calls on host memory
// and one small file (api_ops.h decodes it): driver open/close, handle and
// buffer registration (good, refused, doubled, stale), cuFileRead/Write at
// any offsets and sizes (negative, huge, overflowing, past the end), batch
// set-up/submit/status/cancel/destroy. A model of the file and of memory
// (api_model.h) checks every result, every byte read, that no other byte of
// memory moved, and at the end the whole file. The first two bytes choose the
// session's geometry (chunk size, threads, engine).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "api_model.h"
#include "api_ops.h"
#include "byte_reader.h"
#include "fuzz_util.h"

namespace {

using namespace ufile::fuzz;

constexpr int kMaxSteps = 64;  // keeps one input well under a few ms
constexpr off_t kLogTrimBytes = 8 << 20;

struct Globals {
  std::string path;      // the test file
  std::string log_path;  // the library's log
  int setup_fd = -1;     // rewrites the file before each input
  int check_fd = -1;     // the model's read-only view
  bool direct_ok = false;
  char *arena = nullptr;
};
Globals *g = nullptr;

// Pseudo-random bytes: the file's first kFileInitBytes, then the memory's,
// so that no two 4 KiB blocks look alike.
std::vector<uint8_t> *g_pattern = nullptr;

void MakePattern() {
  g_pattern = new std::vector<uint8_t>(kFileInitBytes + kArenaBytes);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint8_t &b : *g_pattern) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<uint8_t>(x >> 24);
  }
}

void DecodeKnobs(ByteReader &r, Knobs *k) {
  static const size_t kDirectKb[] = {4, 8, 16, 64, 16384};
  static const size_t kThresholdKb[] = {4, 8, 64, 1024};
  static const size_t kParallelism[] = {0, 1, 2, 4};
  static const size_t kBatchSize[] = {4, 8, 128};
  const uint8_t a = r.U8(), b = r.U8();
  k->max_direct_io_kb = kDirectKb[a % 5];
  k->min_io_threshold_kb = kThresholdKb[(a / 5) % 4];
  k->max_io_threads = 1 + (a / 20) % 3;
  k->max_request_parallelism = kParallelism[b % 4];
  k->io_batchsize = kBatchSize[(b / 4) % 3];
  k->prefer_io_uring = (b / 12) % 2;
  k->parallel_io = (b / 24) % 2 == 0;
}

// The file and the memory back at the pattern. m.file holds what the last
// input left on disk (its Finish checked it), so only the 4 KiB blocks that
// differ are written, and the file is never truncated to zero (ext4 would
// then write it back on close).
void ResetData(Model &m) {
  const uint8_t *pattern = g_pattern->data();
  const bool known = m.file.size() == kFileCapBytes;
  for (size_t at = 0; at < kFileInitBytes; at += 4096) {
    if (known && std::memcmp(m.file.data() + at, pattern + at, 4096) == 0) continue;
    if (::pwrite(g->setup_fd, pattern + at, 4096, off_t(at)) != 4096)
      Fail("cannot reset the test file", g->path);
  }
  if ((!known || m.file_size != kFileInitBytes) && ::ftruncate(g->setup_fd, kFileInitBytes) != 0)
    Fail("cannot truncate the test file", g->path);
  m.file.assign(kFileCapBytes, 0);
  std::memcpy(m.file.data(), pattern, kFileInitBytes);
  m.file_size = kFileInitBytes;
  m.shadow.assign(pattern + kFileInitBytes, pattern + kFileInitBytes + kArenaBytes);
  std::memcpy(g->arena, m.shadow.data(), kArenaBytes);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Only this process's settings: no /etc/cufile.json, no inherited overrides.
  ::setenv("UFILE_SYSTEM_JSON_PATH", "/nonexistent/ufile-fuzz-cufile.json", 1);
  for (const char *v : {"CUFILE_ENV_PATH_JSON", "UFILE_ENGINE", "CUFILE_LOGGING_LEVEL",
                        "CUFILE_FORCE_COMPAT_MODE", "CUFILE_ALLOW_COMPAT_MODE"})
    ::unsetenv(v);
  g = new Globals;
  MakePattern();
  const std::string dir = ScratchDir();
  g->path = dir + "/api_fuzzer.data";
  g->log_path = dir + "/api_fuzzer.log";
  ::setenv("CUFILE_LOGFILE_PATH", g->log_path.c_str(), 1);
  g->setup_fd = ::open(g->path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  g->check_fd = ::open(g->path.c_str(), O_RDONLY | O_CLOEXEC);
  if (g->setup_fd < 0 || g->check_fd < 0) Fail("cannot create the test file", g->path);
  const int probe = ::open(g->path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  g->direct_ok = probe >= 0;
  if (probe >= 0)
    ::close(probe);
  else
    std::fprintf(stderr, "api_fuzzer: no O_DIRECT in %s: O_DIRECT handles not fuzzed\n", dir.c_str());
  g->arena = static_cast<char *>(std::aligned_alloc(4096, kArenaBytes));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ByteReader r(data, size);
  // A fresh model that keeps the old one's buffers: allocating them anew
  // each input cost more page faults than the input's own work.
  static Model m;
  std::vector<uint8_t> file = std::move(m.file), shadow = std::move(m.shadow);
  const size_t file_size = m.file_size;
  m = Model{};
  m.file = std::move(file);
  m.file_size = file_size;
  m.shadow = std::move(shadow);
  DecodeKnobs(r, &m.knobs);
  m.path = g->path;
  m.check_fd = g->check_fd;
  m.direct_ok = g->direct_ok;
  m.arena = g->arena;
  ResetData(m);
  Sequence seq(m, r);
  for (int i = 0; i < kMaxSteps && !r.empty(); ++i) seq.Step();
  seq.Finish();
  struct stat st {};
  if (::stat(g->log_path.c_str(), &st) == 0 && st.st_size > kLogTrimBytes &&
      ::truncate(g->log_path.c_str(), 0) != 0)
    Fail("cannot trim the log", g->log_path);
  return 0;
}
