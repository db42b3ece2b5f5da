// SPDX-License-Identifier: Apache-2.0
// The device-initiated I/O protocol: how a submitter claims a slot, fills a
// submission entry, rings the doorbell, and how completions are reaped and
// handed to the slot's owner exactly once. Compiled by nvcc for kernels
// (ufile/device.cuh builds the warp and block calls on it) and by a host C++
// compiler, where host threads stand in for GPU threads (the CPU tests).
//
// Memory: rings and staging are host memory (system scope: ld.acquire.sys /
// st.release.sys); slot words and queue control are device memory (gpu
// scope). docs/DEVICE_IO.md states the ordering argument.
//
// Slot word (64 bits): state (8) | generation (24) | result (32). A slot is
// owned by whoever moved it FREE -> CLAIMED until it stores FREE again, or
// until a timed-out wait moves it INFLIGHT -> ABANDONED, after which the
// reaper frees it when its completion arrives. Every move is a CAS, so a
// completion is delivered to its owner at most once and never to a later
// owner (the generation is in the CQE's user_data and in every ticket).
// Thread-safety: every function may be called by any number of threads on
// the same queue at once; a Ticket belongs to the thread (group) holding it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ufile/detail/device_atomics.h"
#include "ufile/device_types.h"

namespace ufile::devio {

enum : uint32_t {
  kSlotFree = 0,
  kSlotClaimed = 1,
  kSlotInflight = 2,
  kSlotDone = 3,
  kSlotAbandoned = 4,
  kSlotAbandonedLL = 5,  // an LL read's wait gave up: free once its LL header is posted
};
// Chunks one synchronous call keeps in flight at most.
inline constexpr uint32_t kMaxPipeline = 8;
// Times a transfer continues after -EAGAIN/-EINTR before giving up.
inline constexpr int kMaxRetries = 16;

UFILE_DEVIO_HD uint32_t SlotState(u64 w) { return static_cast<uint32_t>(w & 0xffu); }
UFILE_DEVIO_HD uint32_t SlotGen(u64 w) { return static_cast<uint32_t>(w >> 8) & 0xffffffu; }
UFILE_DEVIO_HD int32_t SlotResult(u64 w) {
  return static_cast<int32_t>(static_cast<uint32_t>(w >> 32));
}
UFILE_DEVIO_HD u64 SlotWord(uint32_t state, uint32_t gen, int32_t res) {
  return static_cast<u64>(state & 0xffu) | (static_cast<u64>(gen & 0xffffffu) << 8) |
         (static_cast<u64>(static_cast<uint32_t>(res)) << 32);
}

// ---- Requests. ----

// What one submission asks for: bytes [done, len) of a request whose data
// sits at the start of slot's staging buffer.
struct SqeArgs {
  uint8_t opcode = 0;
  uint8_t flags = UFILE_DEVIO_SQE_FIXED_FILE;
  int32_t fd = -1;
  uint64_t off = 0;
  uint64_t addr = 0;
  uint32_t len = 0;
  uint64_t user_data = 0;
  uint16_t buf_index = 0;
};

// A submitted asynchronous request. status < 0: it was never submitted and
// wait() returns status. A ticket is waited on once; a second wait (or a
// copy's) returns -EINVAL and touches nothing.
struct Ticket {
  int32_t status = -UFILE_DEVIO_EINVAL;
  uint16_t queue = 0;
  uint16_t slot = 0xffff;  // 0xffff: no slot (size 0, or not submitted)
  uint32_t gen = 0;
  uint32_t write = 0;
  uint32_t file = 0;
  void *buf = nullptr;
  uint64_t len = 0;
  int64_t off = 0;
};

UFILE_DEVIO_HD uint64_t Timeout(const ufile_devio_view_t &v, uint64_t timeout_ns) {
  return timeout_ns ? timeout_ns : v.timeout_ns;
}

// 0, or the negative result a request with these arguments gets.
UFILE_DEVIO_HD int Check(const ufile_devio_view_t &v, unsigned queue, unsigned file, bool write,
                         const void *buf, uint64_t size, int64_t off) {
  if (v.abi_version != UFILE_DEVIO_ABI_VERSION || queue >= v.num_queues)
    return -UFILE_DEVIO_EINVAL;
  if (file >= v.num_files) return -UFILE_DEVIO_EBADF;
  const uint32_t need = write ? UFILE_DEVIO_FILE_WRITE : UFILE_DEVIO_FILE_READ;
  if (!(v.files[file].flags & need)) return -UFILE_DEVIO_EBADF;
  if (off < 0) return -UFILE_DEVIO_EINVAL;
  if (size > static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(off))
    return -UFILE_DEVIO_EINVAL;
  if (!buf && size) return -UFILE_DEVIO_EFAULT;
  return 0;
}

// The index of handle in the set, or -EBADF.
UFILE_DEVIO_HD int FindFile(const ufile_devio_view_t &v, const void *handle) {
  for (uint32_t i = 0; i < v.num_files; ++i)
    if (v.files[i].handle == reinterpret_cast<uintptr_t>(handle)) return static_cast<int>(i);
  return -UFILE_DEVIO_EBADF;
}

UFILE_DEVIO_HD uint8_t *Staging(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                                uint32_t slot) {
  return q.staging + static_cast<uint64_t>(slot) * v.staging_bytes;
}

// The submission for bytes [done, len) of a request on slot.
UFILE_DEVIO_HD SqeArgs MakeSqe(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                               const ufile_devio_file_t &f, uint32_t slot, uint32_t gen, bool write,
                               int64_t off, uint64_t len, uint64_t done) {
  SqeArgs a;
  a.off = static_cast<uint64_t>(off) + done;
  a.addr = q.staging_host + static_cast<uint64_t>(slot) * v.staging_bytes + done;
  a.len = static_cast<uint32_t>(len - done);
  a.fd = f.fd_buffered;
  if (f.fd_direct >= 0 && f.align && ((a.off | a.len | a.addr) & (f.align - 1)) == 0)
    a.fd = f.fd_direct;
  const bool fixed = (v.options & UFILE_DEVIO_OPT_FIXED_BUFFERS) != 0;
  a.opcode = write ? (fixed ? UFILE_DEVIO_OP_WRITE_FIXED : UFILE_DEVIO_OP_WRITE)
                   : (fixed ? UFILE_DEVIO_OP_READ_FIXED : UFILE_DEVIO_OP_READ);
  a.user_data = slot | (static_cast<uint64_t>(gen) << 32);
  a.buf_index = q.buf_index;
  return a;
}

// The same, for the file with index file of the set.
UFILE_DEVIO_HD SqeArgs MakeSqe(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                               uint32_t slot, uint32_t gen, bool write, unsigned file, int64_t off,
                               uint64_t len, uint64_t done) {
  const ufile_devio_file_t f = v.files[file];
  return MakeSqe(v, q, f, slot, gen, write, off, len, done);
}

// An LL read of bytes [off, off + len) for slot (UFILE_DEVIO_OP_READ_LL): the
// proxy finds the slot's LL area itself (from user_data), so addr is unused.
UFILE_DEVIO_HD SqeArgs MakeLLSqe(const ufile_devio_queue_t &q, const ufile_devio_file_t &f,
                                 uint32_t slot, uint32_t gen, int64_t off, uint64_t len) {
  SqeArgs a;
  a.opcode = UFILE_DEVIO_OP_READ_LL;
  a.off = static_cast<uint64_t>(off);
  a.len = static_cast<uint32_t>(len);
  a.fd = f.fd_buffered;
  if (f.fd_direct >= 0 && f.align && ((a.off | a.len) & (f.align - 1)) == 0) a.fd = f.fd_direct;
  a.user_data = slot | (static_cast<uint64_t>(gen) << 32);
  a.buf_index = q.buf_index;
  return a;
}

// Writes the entry for position pos (templates: slot's own entry, named by
// the SQ array; otherwise the entry at pos, all 64 bytes).
UFILE_DEVIO_HD void WriteSqe(const ufile_devio_queue_t &q, uint32_t pos, uint32_t slot,
                             const SqeArgs &a) {
  const u64 w0 = static_cast<u64>(a.opcode) | (static_cast<u64>(a.flags) << 8) |
                 (static_cast<u64>(static_cast<uint32_t>(a.fd)) << 32);
  if (q.sq_array) {
    // The template (flags, buf_index, zeros) was written at setup.
    u64 *e = reinterpret_cast<u64 *>(&q.sqes[slot]);
    e[0] = w0;
    e[1] = a.off;
    e[2] = a.addr;
    e[3] = a.len;
    e[4] = a.user_data;
    q.sq_array[pos & q.sq_mask] = slot;
    return;
  }
  u64 *e = reinterpret_cast<u64 *>(&q.sqes[pos & q.sq_mask]);
#ifdef __CUDA_ARCH__
  ulonglong2 *v = reinterpret_cast<ulonglong2 *>(e);
  v[0] = make_ulonglong2(w0, a.off);
  v[1] = make_ulonglong2(a.addr, a.len);
  v[2] = make_ulonglong2(a.user_data, a.buf_index);
  v[3] = make_ulonglong2(0, 0);
#else
  const u64 words[8] = {w0, a.off, a.addr, a.len, a.user_data, a.buf_index, 0, 0};
  memcpy(e, words, sizeof words);
#endif
}

// Takes n submission positions: the first, and (in *published) what the
// published counter read at the same time. Both are issued together: when
// they match, no earlier submitter is still writing, and Publish skips its
// wait (published only grows, and reaches pos only once every earlier
// position is out).
UFILE_DEVIO_HD uint32_t Reserve(const ufile_devio_queue_t &q, uint32_t n, uint32_t *published) {
  const uint32_t pos = FetchAdd32(&q.ctl->sq_reserve, n);
  *published = LoadRelaxed32(&q.ctl->sq_published);
  return pos;
}

// Makes positions [pos, pos + n) visible to the server: unless the snapshot
// says so already, waits for earlier positions (other submitters, a few
// instructions away) to be published; then one store of the SQ tail (the
// doorbell) and of the published counter.
UFILE_DEVIO_HD void Publish(const ufile_devio_queue_t &q, uint32_t pos, uint32_t n,
                            uint32_t published) {
  if (published == pos) {
    FenceAcquireGpu();  // the snapshot, as an acquire: after the previous tail store
  } else {
    while (LoadAcquireGpu32(&q.ctl->sq_published) != pos) Backoff(32);
  }
  StoreReleaseSys(q.sq_tail, pos + n);
  StoreReleaseGpu32(&q.ctl->sq_published, pos + n);
  Count(&q.ctl->submitted, n);
}

// Marks slot in flight (generation kept) and submits one entry.
UFILE_DEVIO_HD void SubmitOne(const ufile_devio_queue_t &q, uint32_t slot, uint32_t gen,
                              const SqeArgs &a) {
  StoreRelaxed64(&q.slots[slot], SlotWord(kSlotInflight, gen, 0));
  uint32_t published = 0;
  const uint32_t pos = Reserve(q, 1, &published);
  WriteSqe(q, pos, slot, a);
  Publish(q, pos, 1, published);
}

// ---- LL lines (UFILE_DEVIO_OPT_LL, proxy path). ----
//
// A slot's LL area: a header word (result | flag << 32) in a 16-byte line,
// then one 16-byte line per 8 data bytes, each 8-byte word holding 4 data
// bytes | flag << 32. The proxy writes the data words, then the header (x86
// stores become visible in program order); each word is single-copy atomic,
// so a word whose flag is the request's holds that request's bytes, and one
// round of loads returns data and completion together.

// The flag of the request with generation gen: never 0 (fresh memory), and
// different for any two generations less than 2^24 claims apart.
UFILE_DEVIO_HD uint32_t LLFlag(uint32_t gen) { return 0x01000000u | (gen & 0xffffffu); }

UFILE_DEVIO_HD bool UseLL(const ufile_devio_view_t &v, bool write, uint64_t size) {
  return !write && (v.options & UFILE_DEVIO_OPT_LL) && size <= v.ll_max;
}

UFILE_DEVIO_HD const uint64_t *LLArea(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                                      uint32_t slot) {
  return reinterpret_cast<const uint64_t *>(q.ll + slot * UFILE_DEVIO_LL_STRIDE(v.ll_max));
}

// One 16-byte LL line (two single-copy atomic words, each checked alone).
UFILE_DEVIO_HD void LoadLine(const uint64_t *p, uint64_t *a, uint64_t *b) {
#ifdef __CUDA_ARCH__
  asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
#else
  *a = __atomic_load_n(&p[0], __ATOMIC_RELAXED);
  *b = __atomic_load_n(&p[1], __ATOMIC_RELAXED);
#endif
}

// Whether an abandoned LL read's area was completed by the proxy (its header
// carries the request's flag; the proxy writes nothing there afterwards).
UFILE_DEVIO_HD bool LLPosted(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                             uint32_t slot, uint32_t gen) {
  if (!q.ll) return false;
  const uint64_t h = LoadRelaxedSys64(LLArea(v, q, slot));
  return static_cast<uint32_t>(h >> 32) == LLFlag(gen);
}

// ---- Slots. ----

// Slots held: a claim first reserves one of depth places in ctl->held,
// and a slot gives its place back only after it is FREE again (Release,
// or the reaper freeing an abandoned one). So a claimer holding a place
// always has a FREE slot to find, and a claim fails only when depth
// requests hold slots: claimers racing over the slot words (a warp's 32
// lanes, other warps releasing behind a scan) cannot make it fail. Without
// the places a scan could miss slots freed behind it, and a warp batch on a
// queue with room got -EAGAIN (1.2 % of requests at 512 in flight on 512
// slots). An abandoned LL read gives its place back early (AbandonLL).

// Reserves up to n places: how many it got (fewer only when the queue is
// full). A CAS loop, not an add, so a failed claim never holds a place
// another claimer then misses.
UFILE_DEVIO_HD uint32_t ReservePlaces(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                                      uint32_t n) {
  uint32_t cur = LoadRelaxed32(&q.ctl->held);
  for (;;) {
    const uint32_t take = cur >= v.depth ? 0 : (v.depth - cur < n ? v.depth - cur : n);
    if (take == 0) return 0;
    const uint32_t seen = Cas32(&q.ctl->held, cur, cur + take);
    if (seen == cur) return take;
    cur = seen;
  }
}

UFILE_DEVIO_HD void ReturnPlaces(const ufile_devio_queue_t &q, uint32_t n) {
  FetchAdd32(&q.ctl->held, 0u - n);
}

// With a place reserved: a free slot moved to CLAIMED (or straight to
// state: INFLIGHT for a caller that submits at once) with its new
// generation in *gen. First tries the slot freed last (the hint holds its
// index and generation, so one CAS claims it), then scans until it finds
// one (one exists while the place is held). -1, the place given back, only
// if 64 passes found none: the places were corrupted, and a refusal beats
// a hang.
UFILE_DEVIO_HD int ClaimReserved(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                                 uint32_t *gen, uint32_t state = kSlotClaimed) {
  const u64 hint = LoadRelaxed64(&q.ctl->claim_hint);
  const uint32_t hs = static_cast<uint32_t>(hint & 0xffffffffu);
  if (hs < v.depth) {
    const uint32_t g = static_cast<uint32_t>(hint >> 32);
    const uint32_t next = (g + 1) & 0xffffffu;
    if (Cas64(&q.slots[hs], SlotWord(kSlotFree, g, 0), SlotWord(state, next, 0)) ==
        SlotWord(kSlotFree, g, 0)) {
      *gen = next;
      return static_cast<int>(hs);
    }
  }
  const uint32_t mask = v.depth - 1;
  for (uint32_t i = 1; i <= 64 * v.depth; ++i) {
    const uint32_t s = (hs + i) & mask;
    const u64 cur = LoadRelaxed64(&q.slots[s]);  // the CAS acquires
    const bool ll = SlotState(cur) == kSlotAbandonedLL;  // its place was given back
    if (SlotState(cur) != kSlotFree && !(ll && LLPosted(v, q, s, SlotGen(cur)))) continue;
    const uint32_t g = (SlotGen(cur) + 1) & 0xffffffu;
    if (Cas64(&q.slots[s], cur, SlotWord(state, g, 0)) == cur) {
      *gen = g;
      return static_cast<int>(s);
    }
  }
  ReturnPlaces(q, 1);
  return -1;
}

// An LL read whose wait gave up: its slot is taken again once the proxy
// posted its LL header (ClaimReserved checks), a moment no reaper sees, so
// its place is given back now. A claimer may then scan past such a slot.
UFILE_DEVIO_HD void AbandonLL(const ufile_devio_queue_t &q, uint32_t slot, uint32_t gen) {
  if (Cas64(&q.slots[slot], SlotWord(kSlotInflight, gen, 0), SlotWord(kSlotAbandonedLL, gen, 0)) ==
      SlotWord(kSlotInflight, gen, 0))
    ReturnPlaces(q, 1);
}

// A place and a slot (see ClaimReserved), or -1 when depth requests hold
// slots.
UFILE_DEVIO_HD int TryClaim(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                            uint32_t *gen, uint32_t state = kSlotClaimed) {
  return ReservePlaces(v, q, 1) ? ClaimReserved(v, q, gen, state) : -1;
}

UFILE_DEVIO_HD void Release(const ufile_devio_queue_t &q, uint32_t slot, uint32_t gen) {
  StoreReleaseGpu64(&q.slots[slot], SlotWord(kSlotFree, gen, 0));
  StoreRelaxed64(&q.ctl->claim_hint, (static_cast<u64>(gen) << 32) | slot);
  ReturnPlaces(q, 1);  // after the FREE store: a place always has a free slot
}

UFILE_DEVIO_HD uint32_t Reap(const ufile_devio_view_t &v, const ufile_devio_queue_t &q);

// Claims a slot, waiting until deadline when all are in use: the slot, or
// -EBUSY / -ESHUTDOWN (the set began closing while it waited). While it
// waits it reaps, so slots abandoned by timed-out waits come back even when
// no other waiter is left to reap their completions.
UFILE_DEVIO_HD int Claim(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                         uint64_t deadline, uint32_t *gen, uint32_t state = kSlotClaimed) {
  for (;;) {
    const int s = TryClaim(v, q, gen, state);
    if (s >= 0) return s;
    if (Reap(v, q)) continue;
    if (LoadRelaxedSys32(v.closing)) return -UFILE_DEVIO_ESHUTDOWN;
    if (NowNs() >= deadline) return -UFILE_DEVIO_EBUSY;
    Backoff(v.poll_ns);
  }
}

// The entry a position gets when its request was refused after the
// position was taken: completes with 0 and frees its (abandoned) slot.
UFILE_DEVIO_HD SqeArgs NopSqe(uint32_t slot, uint32_t gen) {
  SqeArgs a;
  a.opcode = UFILE_DEVIO_OP_NOP;
  a.flags = 0;
  a.user_data = slot | (static_cast<uint64_t>(gen) << 32);
  return a;
}

// Admission of newly claimed slots (already marked in flight): the fence
// orders the claims before the read of the closing flag (destroy sets the
// flag, then reads the slots: one side always sees the other), and that read
// overlaps taking n positions (Reserve). False when the set is closing: the
// caller then writes NopSqe entries, marks the slots abandoned, publishes
// and reports -ESHUTDOWN.
UFILE_DEVIO_HD bool AdmitAndReserve(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                                    uint32_t n, uint32_t *pos, uint32_t *published) {
  FenceGpu();
  const uint32_t closing = LoadRelaxedSys32(v.closing);
  *pos = Reserve(q, n, published);
  return closing == 0;
}

// The reaper's own slot: its completion is stored without a CAS (nobody
// else may move an owned in-flight slot) and handed back directly.
struct Self {
  uint32_t slot = 0xffffffffu;
  bool done = false;
  int32_t res = 0;
};

// Hands one completion to its slot: DONE for a waiting owner, FREE for an
// abandoned slot; anything else is counted as stale and dropped.
UFILE_DEVIO_HD void Deliver(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                            uint64_t user_data, int32_t res, Self *self) {
  const uint32_t slot = static_cast<uint32_t>(user_data & 0xffffffffu);
  const uint32_t gen = static_cast<uint32_t>(user_data >> 32);
  if (slot >= v.depth) {
    Count(&q.ctl->stale, 1);
    return;
  }
  u64 *w = &q.slots[slot];
  if (self && slot == self->slot) {
    StoreRelaxed64(w, SlotWord(kSlotDone, gen, res));
    self->done = true;
    self->res = res;
    return;
  }
  for (;;) {
    const u64 cur = LoadAcquireGpu64(w);
    if (SlotGen(cur) != gen) break;
    if (SlotState(cur) == kSlotInflight) {
      if (Cas64(w, cur, SlotWord(kSlotDone, gen, res)) == cur) return;
    } else if (SlotState(cur) == kSlotAbandoned) {
      if (Cas64(w, cur, SlotWord(kSlotFree, gen, 0)) == cur) {
        ReturnPlaces(q, 1);
        break;
      }
    } else {
      break;
    }
  }
  Count(&q.ctl->stale, 1);
}

// One CQE's two fields.
struct Cqe {
  uint64_t user_data;
  int32_t res;
};

// One 16-byte read of host memory (each 8-byte half is single-copy atomic).
UFILE_DEVIO_HD Cqe LoadCqe(const ufile_devio_cqe_t *e) {
#ifdef __CUDA_ARCH__
  uint64_t a, b;
  asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(e) : "memory");
  return {a, static_cast<int32_t>(static_cast<uint32_t>(b))};
#else
  const uint64_t *w = reinterpret_cast<const uint64_t *>(e);
  const uint64_t a = __atomic_load_n(&w[0], __ATOMIC_RELAXED);
  const uint64_t b = __atomic_load_n(&w[1], __ATOMIC_RELAXED);
  return {a, static_cast<int32_t>(static_cast<uint32_t>(b))};
#endif
}

// The reaper lock and the count of consumed completions share one word
// (cq_state = head << 32 | locked), so taking the lock also reads the head.
UFILE_DEVIO_HD bool TryLockReaper(const ufile_devio_queue_t &q, uint32_t *head) {
  const u64 w = LoadRelaxed64(&q.ctl->cq_state);
  if ((w & 1) || Cas64(&q.ctl->cq_state, w, w | 1) != w) return false;
  *head = static_cast<uint32_t>(w >> 32);
  return true;
}
UFILE_DEVIO_HD void UnlockReaper(const ufile_devio_queue_t &q, uint32_t head) {
  StoreReleaseGpu64(&q.ctl->cq_state, static_cast<u64>(head) << 32);
}

// Consumes the completions posted after head (the caller holds the reaper
// lock); returns the new head. Reads the CQ tail (acquire, system scope),
// then the entries below it, four per host round trip, as io_uring's own
// consumers do. The ring's head is stored back every depth/2 entries: the
// CQ holds 2 x depth entries and at most depth are in flight, so the kernel
// never finds it full.
UFILE_DEVIO_HD uint32_t ReapLocked(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                                   uint32_t head, Self *self) {
  ufile_devio_qctl_t *c = q.ctl;
  const uint32_t tail = LoadAcquireSys(q.cq_tail);
  if (tail == head) return head;
  const uint32_t start = head;
  while (head != tail) {
    Cqe e[4];
    const uint32_t k = tail - head < 4 ? tail - head : 4;
    for (uint32_t i = 0; i < k; ++i) e[i] = LoadCqe(&q.cqes[(head + i) & q.cq_mask]);
    for (uint32_t i = 0; i < k; ++i) Deliver(v, q, e[i].user_data, e[i].res, self);
    head += k;
  }
  Count(&c->reaped, head - start);
  const uint32_t every = v.depth / 2 ? v.depth / 2 : 1;
  if (head - LoadRelaxed32(&c->cq_published) >= every) {
    StoreReleaseSys(q.cq_head, head);
    StoreRelaxed32(&c->cq_published, head);
  }
  return head;
}

// One reaping attempt (nothing if another thread is reaping); how many.
UFILE_DEVIO_HD uint32_t Reap(const ufile_devio_view_t &v, const ufile_devio_queue_t &q) {
  uint32_t head = 0;
  if (!TryLockReaper(q, &head)) return 0;
  const uint32_t next = ReapLocked(v, q, head, nullptr);
  UnlockReaper(q, next);
  return next - head;
}

// Waits for slot's completion: its result, or -ETIMEDOUT after timeout_ns
// (the slot is then abandoned: no longer the caller's). One waiter per queue
// at a time is the poller: it holds the reaper lock, reads the host ring
// and hands every completion to its slot, until its own arrives; the others
// watch their slot word in device memory.
UFILE_DEVIO_HD int32_t WaitSlot(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                                uint32_t slot, uint64_t timeout_ns) {
  const uint64_t deadline = NowNs() + timeout_ns;
  u64 *w = &q.slots[slot];
  for (;;) {
    uint32_t head = 0;
    u64 cur = 0;
    if (TryLockReaper(q, &head)) {
      // The lock's acquire makes earlier pollers' deliveries visible.
      cur = LoadRelaxed64(w);
      Self self;
      self.slot = slot;
      while (SlotState(cur) != kSlotDone && !self.done && NowNs() < deadline) {
        const uint32_t next = ReapLocked(v, q, head, &self);
        if (next == head) Backoff(v.poll_ns);
        head = next;
      }
      UnlockReaper(q, head);
      if (self.done) return self.res;
    } else {
      cur = LoadRelaxed64(w);
      if (SlotState(cur) == kSlotDone) FenceAcquireGpu();
    }
    if (SlotState(cur) == kSlotDone) return SlotResult(cur);
    if (NowNs() >= deadline) {
      cur = LoadAcquireGpu64(w);
      if (SlotState(cur) == kSlotDone) return SlotResult(cur);
      if (SlotState(cur) == kSlotInflight &&
          Cas64(w, cur, SlotWord(kSlotAbandoned, SlotGen(cur), 0)) == cur) {
        Count(&q.ctl->timeouts, 1);
        return -UFILE_DEVIO_ETIMEDOUT;
      }
      continue;
    }
    Backoff(v.poll_ns ? v.poll_ns : 64);
  }
}

// Gives up a slot the caller owns whatever its state: in flight ->
// abandoned (freed when its completion arrives), otherwise free.
UFILE_DEVIO_HD void Abandon(const ufile_devio_queue_t &q, uint32_t slot, uint32_t gen) {
  u64 *w = &q.slots[slot];
  const u64 cur = LoadAcquireGpu64(w);
  if (SlotState(cur) == kSlotInflight &&
      Cas64(w, cur, SlotWord(kSlotAbandoned, gen, 0)) == cur)
    return;
  Release(q, slot, gen);
}

// Waits for a request's bytes [0, len): continues after short transfers and
// -EAGAIN/-EINTR (resubmitting on the same slot). The bytes moved (fewer
// only at end of file, or for a write the file system cut short), or a
// negative result (-ETIMEDOUT: the slot was abandoned).
UFILE_DEVIO_HD int64_t WaitRequest(const ufile_devio_view_t &v, const ufile_devio_queue_t &q,
                                   uint32_t slot, uint32_t gen, bool write, unsigned file,
                                   int64_t off, uint64_t len, uint64_t timeout_ns) {
  uint64_t done = 0;
  int retries = 0;
  for (;;) {
    const int32_t res = WaitSlot(v, q, slot, timeout_ns);
    if (res == -UFILE_DEVIO_ETIMEDOUT) return res;
    const bool again = res == -11 /*EAGAIN*/ || res == -4 /*EINTR*/;
    if (res < 0 && !(again && retries < kMaxRetries)) return res;
    if (res == 0 && !again) return static_cast<int64_t>(done);  // end of file
    if (res > 0) done += static_cast<uint64_t>(res);
    if (done >= len) return static_cast<int64_t>(len);
    if (again) ++retries;
    Count(&q.ctl->resubmits, 1);
    SubmitOne(q, slot, gen, MakeSqe(v, q, slot, gen, write, file, off, len, done));
  }
}

}  // namespace ufile::devio
