// SPDX-License-Identifier: Apache-2.0
// The API fuzzer's batch operations (docs/ASYNC.md): set-up, submission of
// entries good and bad, status with and without timeouts, cancel, destroy.
// Every event is matched to its entry and checked like a synchronous call.
#include <algorithm>
#include <cstring>
#include <ctime>
#include <vector>

#include "api_ops.h"

namespace ufile::fuzz {
namespace {

const auto kSentinel = reinterpret_cast<CUfileBatchHandle_t>(uintptr_t{0x5a5a5a5a0});
// Batch ids are 16n + 2: these are never one.
const uintptr_t kForged[] = {0x1004, 0x7fff'ffff'ffff'fff0, UINTPTR_MAX};

Expect Refused() {
  Expect e;
  e.kind = Expect::kOpError;
  e.code = CU_FILE_INVALID_VALUE;
  return e;
}

// Enum fields hold any int when written from C: set them as ints.
void SetRaw(void *field, int value) { std::memcpy(field, &value, sizeof(value)); }

}  // namespace

CUfileBatchHandle_t Sequence::PickBatch(BatchSlot **slot) {
  *slot = nullptr;
  const uint8_t c = r_.U8() % 8;
  if (c < 5) {  // a slot's handle: live, destroyed or NULL
    BatchSlot &b = m_.batches[c % kBatchSlots];
    if (b.live) *slot = &b;
    return b.h;
  }
  if (c == 5 && !m_.dead_batches.empty()) return m_.dead_batches[r_.Below(m_.dead_batches.size())];
  if (c == 6) return nullptr;
  return reinterpret_cast<CUfileBatchHandle_t>(r_.Pick(kForged));
}

void Sequence::BatchSetUp() {
  const uint8_t c = r_.U8();
  if ((c >> 3) % 8 == 0) {
    ExpectStatus("cuFileBatchIOSetUp(NULL)", cuFileBatchIOSetUp(nullptr, 1), CU_FILE_INVALID_VALUE);
    return;
  }
  BatchSlot *slot = nullptr;
  for (BatchSlot &b : m_.batches)
    if (!b.live && !slot) slot = &b;
  if (!slot) return;
  const unsigned limit = static_cast<unsigned>(m_.knobs.io_batchsize);
  unsigned nr = 1 + r_.Below(8);
  if (c % 8 == 0) nr = 0;
  if (c % 8 == 6) nr = limit + 1;
  if (c % 8 == 7) nr = limit;
  const int want = (nr == 0 || nr > limit) ? CU_FILE_INVALID_VALUE : CU_FILE_SUCCESS;
  CUfileBatchHandle_t h = kSentinel;
  ExpectStatus("cuFileBatchIOSetUp", cuFileBatchIOSetUp(&h, nr), want);
  Opened();
  if (want != CU_FILE_SUCCESS) {
    if (h != kSentinel) Fail("a refused cuFileBatchIOSetUp wrote its handle", "");
    return;
  }
  *slot = BatchSlot{};
  slot->h = h;
  slot->live = true;
  slot->capacity = nr;
}

void Sequence::BatchSubmit() {
  const uint8_t c = r_.U8();
  BatchSlot *slot = nullptr;
  const CUfileBatchHandle_t h = PickBatch(&slot);
  const unsigned n = r_.Below(7);
  std::vector<Pending> entries;
  std::vector<CUfileIOParams_t> params;
  for (unsigned i = 0; i < n; ++i) {
    Pending p;
    p.cookie = m_.next_cookie++;
    const bool write = r_.U8() & 1;
    const uint8_t variant = r_.U8();
    p.io = DecodeIo(write);
    CUfileIOParams_t q{};
    SetRaw(&q.mode, variant % 16 == 0 ? (variant & 16 ? 0 : 7) : CUFILE_BATCH);
    SetRaw(&q.opcode, variant % 16 == 1 ? (variant & 16 ? 2 : -1) : (write ? CUFILE_WRITE : CUFILE_READ));
    if (variant % 16 <= 1) {
      p.expect = Refused();
    } else {
      const std::optional<Expect> e = ExpectIo(m_, p.io);
      if (!e) continue;  // would run over memory the model does not own
      p.expect = *e;
    }
    if (RacesPending(m_, p.io, p.expect) || RacesAny(m_, p.io, p.expect, entries)) continue;
    q.fh = p.io.fh;
    q.u.batch.devPtr_base = const_cast<char *>(p.io.base);
    q.u.batch.size = p.io.size;
    q.u.batch.file_offset = p.io.file_off;
    q.u.batch.devPtr_offset = p.io.buf_off;
    q.cookie = reinterpret_cast<void *>(p.cookie);
    UFILE_FUZZ_TRACE("  entry %zu: %s\n", size_t(p.cookie), Describe(p.io).c_str());
    entries.push_back(p);
    params.push_back(q);
  }
  const unsigned nr = static_cast<unsigned>(entries.size());
  const unsigned flags = (c >> 4) % 8 == 0 ? 1 : 0;
  CUfileIOParams_t *iocbp = (c >> 4) % 8 == 1 ? nullptr : params.data();
  int want = CU_FILE_INVALID_VALUE;
  bool opens = false;
  if (flags == 0 && iocbp && slot && nr >= 1 && nr <= slot->capacity) {
    opens = true;  // checks the session: a closed driver opens first
    if (!slot->old_session)
      want = nr > slot->capacity - slot->pending.size() ? CU_FILE_BATCH_FULL : CU_FILE_SUCCESS;
  }
  ExpectStatus("cuFileBatchIOSubmit", cuFileBatchIOSubmit(h, nr, iocbp, flags), want);
  if (opens) Opened();
  if (want == CU_FILE_SUCCESS)
    slot->pending.insert(slot->pending.end(), entries.begin(), entries.end());
}

void Sequence::BatchGetStatus() {
  const uint8_t c = r_.U8();
  BatchSlot *slot = nullptr;
  const CUfileBatchHandle_t h = PickBatch(&slot);
  const unsigned max = 1 + r_.Below(8);
  unsigned min_nr = r_.Below(max + 1);
  timespec ts{0, 0};
  timespec *timeout = &ts;
  switch (r_.U8() % 4) {
    case 0: timeout = nullptr; break;  // blocks for min_nr events
    case 1: ts.tv_nsec = 1000000; break;
    default: break;
  }
  std::vector<CUfileIOEvents_t> ev(max);
  unsigned nr = max;
  const char *call = "cuFileBatchIOGetStatus";
  switch ((c >> 3) % 8) {  // refused arguments, whatever the batch
    case 0:
      ExpectStatus(call, cuFileBatchIOGetStatus(h, 0, nullptr, ev.data(), timeout),
                   CU_FILE_INVALID_VALUE);
      return;
    case 1:
      ExpectStatus(call, cuFileBatchIOGetStatus(h, max + 1, &nr, ev.data(), timeout),
                   CU_FILE_INVALID_VALUE);
      return;
    case 2:
      ExpectStatus(call, cuFileBatchIOGetStatus(h, min_nr, &nr, nullptr, timeout),
                   CU_FILE_INVALID_VALUE);
      return;
    case 3: {
      static const timespec kBad[] = {{-1, 0}, {0, -1}, {0, 1000000000}};
      ts = r_.Pick(kBad);
      ExpectStatus(call, cuFileBatchIOGetStatus(h, min_nr, &nr, ev.data(), &ts),
                   CU_FILE_INVALID_VALUE);
      return;
    }
    default:
      break;
  }
  const CUfileError_t got = cuFileBatchIOGetStatus(h, min_nr, &nr, ev.data(), timeout);
  ExpectStatus(call, got, slot ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
  if (!slot) return;
  if (nr > max) Fail("GetStatus returned more events than asked for", std::to_string(nr));
  if (!timeout && nr < std::min<size_t>(min_nr, slot->pending.size()))
    Fail("a blocking GetStatus returned fewer than min_nr events", std::to_string(nr));
  for (unsigned i = 0; i < nr; ++i) CheckEvent(*slot, ev[i]);
}

void Sequence::BatchCancel() {
  BatchSlot *slot = nullptr;
  const CUfileBatchHandle_t h = PickBatch(&slot);
  ExpectStatus("cuFileBatchIOCancel", cuFileBatchIOCancel(h),
               slot ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
  if (slot)
    for (Pending &p : slot->pending) p.may_cancel = true;
}

void Sequence::BatchDestroy() {
  BatchSlot *slot = nullptr;
  const CUfileBatchHandle_t h = PickBatch(&slot);
  UFILE_FUZZ_TRACE("  cuFileBatchIODestroy(%p)\n", static_cast<void *>(h));
  cuFileBatchIODestroy(h);
  if (!slot) return;
  ResyncDropped(m_, slot->pending);
  m_.dead_batches.push_back(h);
  *slot = BatchSlot{};
  slot->h = h;  // later picks of this slot use the destroyed handle
}

void Sequence::DrainAll() {
  for (BatchSlot &b : m_.batches) {
    while (b.live && !b.pending.empty()) {
      const auto want = static_cast<unsigned>(b.pending.size());
      std::vector<CUfileIOEvents_t> ev(want);
      unsigned nr = want;
      ExpectStatus("cuFileBatchIOGetStatus",
                   cuFileBatchIOGetStatus(b.h, want, &nr, ev.data(), nullptr), CU_FILE_SUCCESS);
      if (nr != want)
        Fail("a blocking GetStatus for every pending entry returned fewer", std::to_string(nr));
      for (unsigned i = 0; i < nr; ++i) CheckEvent(b, ev[i]);
    }
  }
}

void Sequence::CheckEvent(BatchSlot &b, const CUfileIOEvents_t &ev) {
  const auto cookie = reinterpret_cast<uintptr_t>(ev.cookie);
  auto it = std::find_if(b.pending.begin(), b.pending.end(),
                         [&](const Pending &p) { return p.cookie == cookie; });
  if (it == b.pending.end())
    Fail("an event for a cookie not pending in this batch", std::to_string(cookie));
  const Pending p = *it;
  b.pending.erase(it);
  int status = 0;
  std::memcpy(&status, &ev.status, sizeof(status));
  const auto ret = static_cast<ssize_t>(ev.ret);
  const std::string what = "entry " + Describe(p.io) + " cookie " + std::to_string(cookie) +
                           ": status " + std::to_string(status) + " ret " + std::to_string(ret);
  const Expect &e = p.expect;
  UFILE_FUZZ_TRACE("  event: %s\n", what.c_str());
  switch (status) {
    case CUFILE_COMPLETE:
      if (e.kind != Expect::kBytes || ev.ret != e.bytes)
        Fail("wrong batch result", what + ", expected " +
                                      (e.kind == Expect::kBytes ? std::to_string(e.bytes)
                                                                : "-" + std::to_string(e.code)));
      if (!e.touches) return;
      if (p.io.write)
        ApplyWrite(m_, p.io, e.bytes);
      else
        CheckReadData(m_, p.io, e.bytes, e.direct);
      return;
    case CUFILE_FAILED:
      if (e.kind == Expect::kBytes || ret != -e.code)
        Fail("wrong batch error", what + ", expected " +
                                     (e.kind == Expect::kBytes ? std::to_string(e.bytes) + " bytes"
                                                               : "-" + std::to_string(e.code)));
      return;
    case CUFILE_CANCELED:
      if (!p.may_cancel || ev.ret != 0) Fail("an entry canceled without a Cancel", what);
      return;
    default:
      Fail("an event status other than COMPLETE, FAILED or CANCELED", what);
  }
}

}  // namespace ufile::fuzz
