// SPDX-License-Identifier: Apache-2.0
// The API fuzzer's operations on the driver, handles, buffers and synchronous
// I/O, and the decoding of one step.
#include "api_ops.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <iterator>

namespace ufile::fuzz {
namespace {

using u128 = unsigned __int128;

// Output arguments of failed calls must keep this value.
const auto kSentinel = reinterpret_cast<CUfileHandle_t>(uintptr_t{0x5a5a5a5a0});

// Values no handle or batch id can take: ids are odd (handles) or 16n + 2 (batches).
const uintptr_t kForged[] = {0x1000, 0x7fff'ffff'ffff'fff0, UINTPTR_MAX};

constexpr off_t kBadOffsets[] = {-1, -4096, LLONG_MIN};
constexpr off_t kHugeOffsets[] = {LLONG_MAX, LLONG_MAX - 10, off_t{1} << 40, off_t{1} << 62};
constexpr size_t kHugeSizes[] = {size_t{SSIZE_MAX}, size_t{SSIZE_MAX} + 1, SIZE_MAX,
                                 size_t{1} << 40, size_t{LLONG_MAX} - 4096};
constexpr size_t kMisalign[] = {0, 1, 512, 4095};

}  // namespace

std::string Describe(const Io &io) {
  char text[256];
  std::snprintf(text, sizeof(text), "%s fh=%p base=%p size=%zu file_off=%lld buf_off=%lld",
                io.write ? "write" : "read", static_cast<void *>(io.fh),
                static_cast<const void *>(io.base), io.size, static_cast<long long>(io.file_off),
                static_cast<long long>(io.buf_off));
  return text;
}

void Sequence::ExpectStatus(const char *call, CUfileError_t got, int want) {
  UFILE_FUZZ_TRACE("  %s -> %d (want %d)\n", call, got.err, want);
  if (got.err != want || got.cu_err != CUDA_SUCCESS)
    Fail(call, "returned " + std::to_string(got.err) + " (cu_err " + std::to_string(got.cu_err) +
                   "), expected " + std::to_string(want));
}

void Sequence::StageKnobsIfClosed() {
  if (m_.open) return;
  const Knobs &k = m_.knobs;
  const struct {
    CUFileSizeTConfigParameter_t param;
    size_t value;
  } sizes[] = {
      {CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, k.max_direct_io_kb},
      {CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB, k.min_io_threshold_kb},
      {CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, k.max_io_threads},
      {CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, k.max_request_parallelism},
      {CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, k.io_batchsize},
  };
  for (const auto &s : sizes)
    ExpectStatus("cuFileSetParameterSizeT", cuFileSetParameterSizeT(s.param, s.value),
                 CU_FILE_SUCCESS);
  ExpectStatus("cuFileSetParameterBool",
               cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, k.prefer_io_uring),
               CU_FILE_SUCCESS);
  ExpectStatus("cuFileSetParameterBool",
               cuFileSetParameterBool(CUFILE_PARAM_EXECUTION_PARALLEL_IO, k.parallel_io),
               CU_FILE_SUCCESS);
}

void Sequence::DriverOpen() {
  ExpectStatus("cuFileDriverOpen", cuFileDriverOpen(), CU_FILE_SUCCESS);
  m_.open = true;
  ++m_.uses;
}

void Sequence::DriverClose() {
  // The last close waits for pending batch entries; they run as submitted.
  if (!m_.open) {
    ExpectStatus("cuFileDriverClose", cuFileDriverClose(), CU_FILE_DRIVER_NOT_INITIALIZED);
    return;
  }
  ExpectStatus("cuFileDriverClose", cuFileDriverClose(), CU_FILE_SUCCESS);
  if (m_.uses > 1)
    --m_.uses;
  else
    m_.EndSession();
}

void Sequence::SetMaxDirectIo() {
  static const size_t kKb[] = {0, 4, 5, 8, 13, 64, 1024, size_t{1} << 20, (size_t{1} << 20) + 1};
  const size_t kb = r_.Pick(kKb);
  int want = CU_FILE_SUCCESS;
  if (!m_.open)
    want = CU_FILE_DRIVER_NOT_INITIALIZED;
  else if (kb < 4 || kb > (size_t{1} << 20) || kb % 4 != 0)  // whole 4 KiB pages
    want = CU_FILE_DRIVER_UNSUPPORTED_LIMIT;
  ExpectStatus("cuFileDriverSetMaxDirectIOSize", cuFileDriverSetMaxDirectIOSize(kb), want);
}

void Sequence::HandleRegister() {
  const uint8_t c = r_.U8();
  int slot = -1;
  for (int i = 0; i < kHandleSlots && slot < 0; ++i)
    if (!m_.handles[i].live) slot = i;
  const int kind = c % 12;
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  CUfileHandle_t fh = kSentinel;
  int want = CU_FILE_SUCCESS, temp_fd = -1;
  if (kind < 6) {  // a fresh descriptor: read-write, read-only, write-only, x O_DIRECT
    if (slot < 0) return;
    HandleSlot &h = m_.handles[slot];
    if (h.fd >= 0) ::close(h.fd);  // left open by a session that ended
    static const int kAccess[] = {O_RDWR, O_RDONLY, O_WRONLY};
    h.access = kAccess[kind % 3];
    h.direct = kind >= 3 && m_.direct_ok;
    h.fd = ::open(m_.path.c_str(), h.access | O_CLOEXEC | (h.direct ? O_DIRECT : 0));
    if (h.fd < 0) Fail("cannot open the test file", m_.path);
    d.handle.fd = h.fd;
  } else if (kind == 6 || kind == 7) {  // O_APPEND; a directory
    temp_fd = kind == 6 ? ::open(m_.path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC)
                        : ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (temp_fd < 0) Fail("cannot open a descriptor for a refused registration", "");
    d.handle.fd = temp_fd;
    want = kind == 6 ? CU_FILE_INVALID_FILE_OPEN_FLAG : CU_FILE_INVALID_FILE_TYPE;
  } else if (kind == 8 || kind == 9) {  // not an open descriptor
    d.handle.fd = kind == 8 ? -1 : (1 << 20);
    want = CU_FILE_INVALID_VALUE;
  } else if (kind == 10) {  // the descriptor of a slot again
    slot = (c >> 4) % kHandleSlots;
    if (m_.handles[slot].fd < 0) return;
    d.handle.fd = m_.handles[slot].fd;
    if (m_.handles[slot].live) want = CU_FILE_HANDLE_ALREADY_REGISTERED;
  } else {  // NULL arguments (no implicit open), or a type that does not exist
    if (c & 16) {
      ExpectStatus("cuFileHandleRegister(NULL)",
                   cuFileHandleRegister((c & 32) ? nullptr : &fh, (c & 32) ? &d : nullptr),
                   CU_FILE_INVALID_VALUE);
      return;
    }
    const int bogus = (c & 32) ? 0 : 77;
    std::memcpy(&d.type, &bogus, sizeof(bogus));  // any int is legal from C
    d.handle.fd = -1;
    want = CU_FILE_INVALID_VALUE;
  }
  ExpectStatus("cuFileHandleRegister", cuFileHandleRegister(&fh, &d), want);
  Opened();
  if (temp_fd >= 0) ::close(temp_fd);
  if (want != CU_FILE_SUCCESS) {
    if (fh != kSentinel) Fail("a refused cuFileHandleRegister wrote *fh", "");
    return;
  }
  m_.handles[slot].fh = fh;
  m_.handles[slot].live = true;
}

void Sequence::HandleDeregister() {
  const CUfileHandle_t fh = PickHandle();
  DrainAll();  // a pending entry would look this handle up when it runs
  UFILE_FUZZ_TRACE("  cuFileHandleDeregister(%p)\n", static_cast<void *>(fh));
  cuFileHandleDeregister(fh);  // a closed driver stays closed: nothing is registered
  for (HandleSlot &h : m_.handles)
    if (h.live && h.fh == fh) {
      h.live = false;
      m_.stale_handles.push_back(fh);
      ::close(h.fd);
      h.fd = -1;
    }
}

void Sequence::BufRegister() {
  const uint8_t c = r_.U8(), l = r_.U8(), f = r_.U8();
  static const size_t kOffsets[] = {0, 4096, 1, kBufBytes / 2};
  const char *base = PickBase();
  if (c % 4 == 0) base = m_.arena + ((c >> 2) % kBufs) * kBufBytes + kOffsets[(c >> 4) % 4];
  const auto addr = reinterpret_cast<uintptr_t>(base);
  const size_t lengths[] = {kBufBytes, 4096, 1, 0, SIZE_MAX, 2 * kBufBytes,
                            UINTPTR_MAX - addr + 1, UINTPTR_MAX - addr, 1 + (size_t(l) << 9)};
  const size_t len = lengths[l % 9];
  static const int kFlags[] = {0, 0, 0, CU_FILE_RDMA_REGISTER, CU_FILE_RDMA_RELAXED_ORDERING, 0x100};
  const int flags = kFlags[f % 6];
  DrainAll();  // registration changes how pending entries are checked
  int want = CU_FILE_SUCCESS;
  bool opens = true;
  if (!base || len == 0 || (flags & 0x100)) {
    want = CU_FILE_INVALID_VALUE;
    opens = false;
  } else if (len > UINTPTR_MAX - addr) {  // opens: the memory's kind picks the error
    want = CU_FILE_INVALID_VALUE;
  } else {
    for (const auto &[b, n] : m_.registered)
      if (u128(addr) < u128(b) + n && u128(b) < u128(addr) + len)
        want = CU_FILE_MEMORY_ALREADY_REGISTERED;
  }
  ExpectStatus("cuFileBufRegister", cuFileBufRegister(base, len, flags), want);
  if (opens) Opened();
  if (want == CU_FILE_SUCCESS) m_.registered[addr] = len;
}

void Sequence::BufDeregister() {
  const uint8_t c = r_.U8();
  const char *p = PickBase();
  if (!m_.registered.empty() && c % 3 != 0) {
    auto it = m_.registered.begin();
    std::advance(it, (c >> 2) % m_.registered.size());
    p = reinterpret_cast<const char *>(it->first) + (c % 3 == 2 ? 1 : 0);  // base, interior
  }
  DrainAll();
  const int want = !p ? CU_FILE_INVALID_VALUE
                   : m_.registered.count(reinterpret_cast<uintptr_t>(p))
                       ? CU_FILE_SUCCESS
                       : CU_FILE_MEMORY_NOT_REGISTERED;
  // A closed driver stays closed and refuses with MEMORY_NOT_REGISTERED.
  ExpectStatus("cuFileBufDeregister", cuFileBufDeregister(p), want);
  if (want == CU_FILE_SUCCESS) m_.registered.erase(reinterpret_cast<uintptr_t>(p));
}

CUfileHandle_t Sequence::PickHandle() {
  const uint8_t c = r_.U8() % 10;
  if (c < 6) return m_.handles[c % kHandleSlots].fh;  // live, stale or NULL
  if (c == 6 && !m_.stale_handles.empty())
    return m_.stale_handles[r_.Below(m_.stale_handles.size())];
  if (c == 7) return nullptr;
  return reinterpret_cast<CUfileHandle_t>(r_.Pick(kForged));
}

const char *Sequence::PickBase() {
  const uint8_t c = r_.U8();
  switch (c % 8) {
    case 5:
      if (!m_.registered.empty()) {
        auto it = m_.registered.begin();
        std::advance(it, r_.Below(m_.registered.size()));
        return reinterpret_cast<const char *>(it->first);
      }
      return m_.arena;
    case 6:
      return nullptr;
    case 7:
      return m_.arena + r_.Below(kArenaBytes);
    default:
      return m_.arena + ((c >> 3) % kBufs) * kBufBytes + kMisalign[(c >> 5) % 4];
  }
}

Io Sequence::DecodeIo(bool write) {
  Io io;
  io.write = write;
  io.fh = PickHandle();
  io.base = PickBase();
  switch (r_.U8() % 10) {
    case 0: io.size = 0; break;
    case 1: io.size = 1 + r_.Below(64); break;
    case 2: io.size = 1 + r_.Below(4096); break;
    case 3: io.size = 4096 * (1 + r_.Below(16)); break;
    case 4:
      io.size = 4096 * (1 + r_.Below(16));
      io.size = (r_.U8() & 1) ? io.size + 1 : io.size - 1;
      break;
    case 5: io.size = r_.Pick(kHugeSizes); break;
    case 6: io.size = 1 + r_.Below(kArenaBytes); break;
    default: io.size = 1 + r_.Below(32768); break;
  }
  switch (r_.U8() % 10) {
    case 0: io.file_off = 0; break;
    case 1: io.file_off = off_t(4096 * r_.Below(kFileCapBytes / 4096)); break;
    case 2: io.file_off = off_t(r_.Below(kFileCapBytes)); break;
    case 3: io.file_off = off_t(m_.file_size) + off_t(r_.Below(16384)) - 8192; break;
    case 4: io.file_off = r_.Pick(kBadOffsets); break;
    case 5: io.file_off = r_.Pick(kHugeOffsets); break;
    default: io.file_off = off_t(r_.Below(m_.file_size)); break;
  }
  switch (r_.U8() % 8) {
    case 2: io.buf_off = off_t(r_.Below(4096)); break;
    case 3: io.buf_off = off_t(4096 * r_.Below(8)); break;
    case 4: io.buf_off = off_t(r_.Below(kBufBytes)); break;
    case 5: io.buf_off = r_.Pick(kBadOffsets); break;
    case 6: io.buf_off = r_.Pick(kHugeOffsets); break;
    case 7: io.buf_off = off_t(r_.Below(64)); break;
    default: io.buf_off = 0; break;
  }
  return io;
}

void Sequence::SyncIo(bool write) {
  const Io io = DecodeIo(write);
  const std::optional<Expect> e = ExpectIo(m_, io);
  if (!e || RacesPending(m_, io, *e)) {  // not issued: see api_ops.h
    UFILE_FUZZ_TRACE("  skipped %s\n", Describe(io).c_str());
    return;
  }
  errno = 0;
  const ssize_t got =
      write ? cuFileWrite(io.fh, io.base, io.size, io.file_off, io.buf_off)
            : cuFileRead(io.fh, const_cast<char *>(io.base), io.size, io.file_off, io.buf_off);
  const int err = errno;
  if (e->opens) Opened();
  const std::string what = Describe(io) + " returned " + std::to_string(got);
  UFILE_FUZZ_TRACE("  %s errno %d\n", what.c_str(), err);
  switch (e->kind) {
    case Expect::kOpError:
      if (got != -e->code) Fail("wrong cuFile error", what + ", expected -" + std::to_string(e->code));
      return;
    case Expect::kErrno:
      if (got != -1 || err != e->code)
        Fail("wrong errno", what + " errno " + std::to_string(err) + ", expected -1 errno " +
                                std::to_string(e->code));
      return;
    case Expect::kBytes:
      if (got != static_cast<ssize_t>(e->bytes))
        Fail("wrong byte count", what + ", expected " + std::to_string(e->bytes));
      if (!e->touches) return;
      if (write)
        ApplyWrite(m_, io, e->bytes);
      else
        CheckReadData(m_, io, e->bytes, e->direct);
      return;
  }
}

void Sequence::Fill() {
  const size_t off = r_.Below(kArenaBytes);
  const size_t len = std::min<size_t>(1 + r_.Below(16384), kArenaBytes - off);
  const uint8_t seed = r_.U8();
  if (FillRacesPending(m_, off, len)) return;
  for (size_t i = 0; i < len; ++i) {
    const auto v = static_cast<uint8_t>(seed + i * 37 + (i >> 9));
    m_.arena[off + i] = static_cast<char>(v);
    m_.shadow[off + i] = v;
  }
}

void Sequence::Step() {
  StageKnobsIfClosed();
  const int op = r_.U8() % 22;
  UFILE_FUZZ_TRACE("step: op %d\n", op);
  switch (op) {
    case 0: DriverOpen(); break;
    case 1: DriverClose(); break;
    case 2: SetMaxDirectIo(); break;
    case 3: case 4: HandleRegister(); break;
    case 5: HandleDeregister(); break;
    case 6: BufRegister(); break;
    case 7: BufDeregister(); break;
    case 8: case 9: case 10: SyncIo(false); break;
    case 11: case 12: case 13: SyncIo(true); break;
    case 14: Fill(); break;
    case 15: if (!m_.AnyPending()) CheckFile(m_); break;
    case 16: BatchSetUp(); break;
    case 17: case 18: BatchSubmit(); break;
    case 19: BatchGetStatus(); break;
    case 20: BatchCancel(); break;
    default: BatchDestroy(); break;
  }
  CheckArena(m_);
  if (cuFileUseCount() != m_.UseCount())
    Fail("cuFileUseCount differs from the model",
         std::to_string(cuFileUseCount()) + " vs " + std::to_string(m_.UseCount()));
}

void Sequence::Finish() {
  DrainAll();
  for (BatchSlot &b : m_.batches)
    if (b.live) {
      cuFileBatchIODestroy(b.h);
      b.live = false;
    }
  CheckArena(m_);
  CheckFile(m_);
  for (HandleSlot &h : m_.handles) {
    if (h.live) cuFileHandleDeregister(h.fh);
    if (h.fd >= 0) ::close(h.fd);
    h = HandleSlot{};
  }
  for (const auto &[base, len] : m_.registered)
    ExpectStatus("cuFileBufDeregister", cuFileBufDeregister(reinterpret_cast<void *>(base)),
                 CU_FILE_SUCCESS);
  m_.registered.clear();
  while (m_.open) DriverClose();
  if (cuFileUseCount() != 0) Fail("the driver is still open after the last close", "");
}

}  // namespace ufile::fuzz
