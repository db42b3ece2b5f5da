// SPDX-License-Identifier: Apache-2.0
// The API fuzzer's model of what the library should have done: the driver's
// use count, registered handles, buffers and batches, a shadow of the test
// file and one of the host memory the I/O uses. Expectations follow
// docs/API.md and docs/ASYNC.md; every check that fails calls Fail() (abort).
// Thread-safety: used by the fuzzing thread only.
#pragma once

#include <cufile.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_util.h"

namespace ufile::fuzz {

constexpr size_t kFileInitBytes = 256 << 10;  // the file each input starts from
constexpr size_t kFileCapBytes = 384 << 10;   // no write is issued past this
constexpr size_t kBufBytes = 128 << 10;       // one of kBufs host buffers
constexpr int kBufs = 3;
constexpr size_t kArenaBytes = kBufs * kBufBytes;  // all buffers, contiguous
constexpr int kHandleSlots = 4;
constexpr int kBatchSlots = 2;

// One read or write as the caller passes it.
struct Io {
  CUfileHandle_t fh = nullptr;
  const char *base = nullptr;
  size_t size = 0;
  off_t file_off = 0;
  off_t buf_off = 0;
  bool write = false;
};

// The answer docs/API.md gives for an Io.
struct Expect {
  enum Kind { kOpError, kErrno, kBytes } kind = kBytes;
  int code = 0;          // the CUfileOpError (kOpError) or errno (kErrno)
  size_t bytes = 0;      // kBytes
  bool touches = false;  // the I/O reaches the file and the memory
  bool direct = false;   // through an O_DIRECT handle (reads may zero past the count)
  bool opens = false;    // passed the argument checks: a closed driver opens implicitly
};

struct HandleSlot {
  int fd = -1;
  int access = 0;  // O_RDONLY, O_WRONLY or O_RDWR
  bool direct = false;
  CUfileHandle_t fh = nullptr;  // live, or stale once deregistered
  bool live = false;
};

// A batch entry submitted and not yet reported by GetStatus.
struct Pending {
  uintptr_t cookie = 0;
  Io io;
  Expect expect;
  bool may_cancel = false;  // a Cancel came after it: CUFILE_CANCELED is allowed
};

struct BatchSlot {
  CUfileBatchHandle_t h = nullptr;
  bool live = false;
  bool old_session = false;  // the driver closed since its set-up
  unsigned capacity = 0;
  std::vector<Pending> pending;
};

// Parameters each session is opened with (staged before every open).
struct Knobs {
  size_t max_direct_io_kb = 16384;
  size_t min_io_threshold_kb = 1024;
  size_t max_io_threads = 2;
  size_t max_request_parallelism = 0;
  size_t io_batchsize = 128;
  bool prefer_io_uring = true;
  bool parallel_io = true;
};

struct Model {
  Knobs knobs;
  // driver
  bool open = false;
  long uses = 0;  // cuFileUseCount: an implicit open counts one, each cuFileDriverOpen one
  // the file
  std::string path;
  int check_fd = -1;  // read-only descriptor for the checks
  bool direct_ok = false;
  std::vector<uint8_t> file;  // kFileCapBytes, zeros past file_size
  size_t file_size = 0;
  // memory
  char *arena = nullptr;       // kArenaBytes, page aligned
  std::vector<uint8_t> shadow;  // what arena must hold
  std::map<uintptr_t, size_t> registered;  // base -> length
  // API objects
  HandleSlot handles[kHandleSlots];
  std::vector<CUfileHandle_t> stale_handles;
  BatchSlot batches[kBatchSlots];
  std::vector<CUfileBatchHandle_t> dead_batches;
  uintptr_t next_cookie = 1;

  long UseCount() const { return open ? uses : 0; }
  // The last close: handles and buffers of the session are gone.
  void EndSession();
  bool AnyPending() const;
};

// The expected result of io, checked in docs/API.md's order; nullopt when
// the I/O would run over memory outside the arena or write past
// kFileCapBytes (undefined for the caller, so never issued).
std::optional<Expect> ExpectIo(const Model &m, const Io &io);
// Whether io would race a pending batch entry (same bytes of the file or of
// memory, one side writing them, or both depending on the file's size).
bool RacesPending(const Model &m, const Io &io, const Expect &e);
bool RacesAny(const Model &m, const Io &io, const Expect &e, const std::vector<Pending> &others);
// Whether an application store to arena [off, off + len) would race.
bool FillRacesPending(const Model &m, size_t off, size_t len);

// The arena equals the shadow, except where pending batch reads may land.
void CheckArena(const Model &m);
// After a read of n bytes: data equals the file model, nothing else moved.
void CheckReadData(Model &m, const Io &io, size_t n, bool direct);
void ApplyWrite(Model &m, const Io &io, size_t n);
// The file on disk equals the model.
void CheckFile(const Model &m);
// After destroying a batch with entries unreported: each write entry ran
// whole or not at all; reads may have landed; writes of batches still in
// flight may have extended the file. The model takes the result.
void ResyncDropped(Model &m, const std::vector<Pending> &dropped);

}  // namespace ufile::fuzz
