// SPDX-License-Identifier: Apache-2.0
#include "api_model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace ufile::fuzz {
namespace {

using u128 = unsigned __int128;

Expect OpError(int code, bool opens) {
  Expect e;
  e.kind = Expect::kOpError;
  e.code = code;
  e.opens = opens;
  return e;
}

const HandleSlot *LiveSlot(const Model &m, CUfileHandle_t fh) {
  for (const HandleSlot &h : m.handles)
    if (h.live && h.fh == fh && fh) return &h;
  return nullptr;
}

// [lo, hi) of an I/O in the file and (as arena offsets) in memory.
struct Footprint {
  u128 file_lo, file_hi;
  size_t mem_lo, mem_hi;
  bool writes_file;  // else it reads the file and writes memory
  bool tail;         // reaches past the model's end of file
};

Footprint FootprintOf(const Model &m, const Io &io) {
  const size_t mem = static_cast<size_t>(io.base + io.buf_off - m.arena);
  const u128 lo = static_cast<u128>(io.file_off);
  return {lo, lo + io.size, mem, mem + io.size, io.write, lo + io.size > m.file_size};
}

bool Overlap(u128 a_lo, u128 a_hi, u128 b_lo, u128 b_hi) {
  return a_lo < b_hi && b_lo < a_hi;
}

bool Races(const Footprint &a, const Footprint &b) {
  const bool one_writes_file = a.writes_file || b.writes_file;
  if (one_writes_file && Overlap(a.file_lo, a.file_hi, b.file_lo, b.file_hi)) return true;
  // A write that grows the file changes what a read past the end returns.
  if (a.tail && b.tail && a.writes_file != b.writes_file) return true;
  const bool one_writes_mem = !a.writes_file || !b.writes_file;
  return one_writes_mem && Overlap(a.mem_lo, a.mem_hi, b.mem_lo, b.mem_hi);
}

size_t FirstDifference(const uint8_t *a, const uint8_t *b, size_t n) {
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

std::string Where(const char *what, size_t off, int want, int got) {
  return std::string(what) + " offset " + std::to_string(off) + ": expected " +
         std::to_string(want) + ", found " + std::to_string(got);
}

void ReadFileRange(const Model &m, size_t off, size_t len, uint8_t *out) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(m.check_fd, out + done, len - done, static_cast<off_t>(off + done));
    if (n <= 0) Fail("pread of the test file failed or ended early", std::to_string(off + done));
    done += static_cast<size_t>(n);
  }
}

size_t FileSizeOnDisk(const Model &m) {
  struct stat st {};
  if (::fstat(m.check_fd, &st) != 0) Fail("fstat of the test file failed", m.path);
  return static_cast<size_t>(st.st_size);
}

}  // namespace

void Model::EndSession() {
  for (HandleSlot &h : handles)
    if (h.live) {
      h.live = false;
      stale_handles.push_back(h.fh);
    }
  registered.clear();
  for (BatchSlot &b : batches)
    if (b.live) b.old_session = true;
  open = false;
  uses = 0;
}

bool Model::AnyPending() const {
  for (const BatchSlot &b : batches)
    if (b.live && !b.pending.empty()) return true;
  return false;
}

std::optional<Expect> ExpectIo(const Model &m, const Io &io) {
  if (!io.base || io.file_off < 0 || io.buf_off < 0) return OpError(CU_FILE_INVALID_VALUE, false);
  if (io.size > static_cast<size_t>(SSIZE_MAX) ||
      static_cast<u128>(io.file_off) + io.size > static_cast<u128>(LLONG_MAX))
    return OpError(CU_FILE_INVALID_VALUE, false);
  const u128 mem_end = static_cast<u128>(reinterpret_cast<uintptr_t>(io.base)) +
                       static_cast<u128>(io.buf_off) + io.size;
  if (mem_end > UINTPTR_MAX) return OpError(CU_FILE_INVALID_VALUE, false);
  const HandleSlot *h = LiveSlot(m, io.fh);
  if (!h) return OpError(CU_FILE_HANDLE_NOT_REGISTERED, true);
  Expect e;
  e.opens = true;
  e.direct = h->direct;
  if ((io.write && h->access == O_RDONLY) || (!io.write && h->access == O_WRONLY)) {
    e.kind = Expect::kErrno;
    e.code = EBADF;
    return e;
  }
  if (io.size == 0) return e;  // 0 bytes, nothing touched
  auto reg = m.registered.find(reinterpret_cast<uintptr_t>(io.base));
  if (reg != m.registered.end() && static_cast<u128>(io.buf_off) + io.size > reg->second)
    return OpError(CU_FILE_INVALID_MAPPING_RANGE, true);
  // From here the I/O runs: it must stay inside memory and the file model.
  const auto base = reinterpret_cast<uintptr_t>(io.base);
  const auto arena = reinterpret_cast<uintptr_t>(m.arena);
  if (base < arena || static_cast<u128>(base - arena) + static_cast<u128>(io.buf_off) + io.size >
                          kArenaBytes)
    return std::nullopt;
  if (io.write && static_cast<u128>(io.file_off) + io.size > kFileCapBytes) return std::nullopt;
  e.touches = true;
  if (io.write) {
    e.bytes = io.size;
  } else {
    const u128 off = static_cast<u128>(io.file_off);
    e.bytes = off >= m.file_size ? 0 : std::min<size_t>(io.size, m.file_size - size_t(off));
  }
  return e;
}

bool RacesAny(const Model &m, const Io &io, const Expect &e, const std::vector<Pending> &others) {
  if (!e.touches) return false;
  const Footprint mine = FootprintOf(m, io);
  for (const Pending &p : others)
    if (p.expect.touches && Races(mine, FootprintOf(m, p.io))) return true;
  return false;
}

bool RacesPending(const Model &m, const Io &io, const Expect &e) {
  for (const BatchSlot &b : m.batches)
    if (RacesAny(m, io, e, b.pending)) return true;
  return false;
}

bool FillRacesPending(const Model &m, size_t off, size_t len) {
  // A store to memory, like a read that touches no file byte.
  const Footprint fill{0, 0, off, off + len, false, false};
  for (const BatchSlot &b : m.batches)
    for (const Pending &p : b.pending)
      if (p.expect.touches && Races(fill, FootprintOf(m, p.io))) return true;
  return false;
}

void CheckArena(const Model &m) {
  std::vector<std::pair<size_t, size_t>> volatile_ranges;  // pending reads may land there
  for (const BatchSlot &b : m.batches)
    for (const Pending &p : b.pending)
      if (p.expect.touches && !p.io.write) {
        const Footprint f = FootprintOf(m, p.io);
        volatile_ranges.emplace_back(f.mem_lo, f.mem_hi);
      }
  std::sort(volatile_ranges.begin(), volatile_ranges.end());
  const auto *got = reinterpret_cast<const uint8_t *>(m.arena);
  size_t at = 0;
  volatile_ranges.emplace_back(kArenaBytes, kArenaBytes);
  for (const auto &[lo, hi] : volatile_ranges) {
    if (lo > at && std::memcmp(got + at, m.shadow.data() + at, lo - at) != 0) {
      const size_t i = at + FirstDifference(got + at, m.shadow.data() + at, lo - at);
      Fail("a byte of memory changed outside what any call reported",
           Where("arena", i, m.shadow[i], got[i]));
    }
    at = std::max(at, hi);
  }
}

void CheckReadData(Model &m, const Io &io, size_t n, bool direct) {
  const size_t dst = static_cast<size_t>(io.base + io.buf_off - m.arena);
  const size_t src = static_cast<size_t>(io.file_off);
  const auto *got = reinterpret_cast<const uint8_t *>(m.arena) + dst;
  if (std::memcmp(got, m.file.data() + src, n) != 0) {
    const size_t i = FirstDifference(got, m.file.data() + src, n);
    Fail("a read returned bytes that differ from the file model",
         Where("file", src + i, m.file[src + i], got[i]) + ", arena offset " +
             std::to_string(dst + i) + ", read of " + std::to_string(io.size) + " at " +
             std::to_string(io.file_off));
  }
  // Past a short count: unchanged, or zeros stored by an O_DIRECT read.
  const size_t rest = io.size - n;
  if (rest && std::memcmp(got + n, m.shadow.data() + dst + n, rest) != 0)
    for (size_t i = n; i < io.size; ++i)
      if (got[i] != m.shadow[dst + i] && !(direct && got[i] == 0))
        Fail("a short read changed memory past its count",
             Where("arena", dst + i, m.shadow[dst + i], got[i]));
  std::memcpy(m.shadow.data() + dst, got, io.size);
}

void ApplyWrite(Model &m, const Io &io, size_t n) {
  const size_t src = static_cast<size_t>(io.base + io.buf_off - m.arena);
  const size_t dst = static_cast<size_t>(io.file_off);
  std::memcpy(m.file.data() + dst, m.shadow.data() + src, n);
  m.file_size = std::max(m.file_size, dst + n);
}

void CheckFile(const Model &m) {
  const size_t on_disk = FileSizeOnDisk(m);
  if (on_disk != m.file_size)
    Fail("the file's size differs from the model",
         std::to_string(on_disk) + " on disk, " + std::to_string(m.file_size) + " expected");
  static std::vector<uint8_t> got;  // kept: a fresh 256 KiB each input costs page faults
  got.resize(on_disk);
  ReadFileRange(m, 0, on_disk, got.data());
  if (std::memcmp(got.data(), m.file.data(), on_disk) != 0) {
    const size_t i = FirstDifference(got.data(), m.file.data(), on_disk);
    Fail("a byte of the file differs from the model", Where("file", i, m.file[i], got[i]));
  }
}

void ResyncDropped(Model &m, const std::vector<Pending> &dropped) {
  size_t largest_end = m.file_size;
  // Writes of other batches still in flight may extend the file meanwhile.
  for (const BatchSlot &b : m.batches)
    for (const Pending &p : b.pending)
      if (p.io.write && p.expect.touches)
        largest_end = std::max(largest_end, static_cast<size_t>(p.io.file_off) + p.io.size);
  for (const Pending &p : dropped) {
    if (!p.expect.touches) continue;
    const size_t mem = static_cast<size_t>(p.io.base + p.io.buf_off - m.arena);
    if (!p.io.write) {  // a dropped read may or may not have landed
      std::memcpy(m.shadow.data() + mem, m.arena + mem, p.io.size);
      continue;
    }
    const size_t off = static_cast<size_t>(p.io.file_off);
    largest_end = std::max(largest_end, off + p.io.size);
    std::vector<uint8_t> got(p.io.size, 0);
    const size_t on_disk = FileSizeOnDisk(m);
    if (off < on_disk) ReadFileRange(m, off, std::min(p.io.size, on_disk - off), got.data());
    const bool old = std::memcmp(got.data(), m.file.data() + off, p.io.size) == 0;
    const bool whole = std::memcmp(got.data(), m.shadow.data() + mem, p.io.size) == 0;
    if (!old && !whole)
      Fail("a dropped batch write left its range neither untouched nor written whole",
           "offset " + std::to_string(off) + ", size " + std::to_string(p.io.size));
    std::memcpy(m.file.data() + off, got.data(), p.io.size);
  }
  const size_t on_disk = FileSizeOnDisk(m);
  if (on_disk < m.file_size || on_disk > largest_end)
    Fail("after dropping batch writes the file size is out of bounds", std::to_string(on_disk));
  // Bytes between the old end and a write that ran read back as zeros.
  if (on_disk > m.file_size) {
    std::vector<uint8_t> tail(on_disk - m.file_size);
    ReadFileRange(m, m.file_size, tail.size(), tail.data());
    std::memcpy(m.file.data() + m.file_size, tail.data(), tail.size());
  }
  m.file_size = on_disk;
}

}  // namespace ufile::fuzz
