// SPDX-License-Identifier: Apache-2.0
// Device-initiated I/O, the calls built on the protocol of
// ufile/detail/device_queue.h: cooperative copies between device memory and
// staging, the groups that make a call (ThreadGroup here; the warp and block
// groups are in ufile/device.cuh), synchronous transfers of any size,
// asynchronous tickets. Compiled for kernels and, with ThreadGroup, for
// host threads standing in for GPU threads (the CPU tests).
// Thread-safety: as ufile/detail/device_queue.h; a Ticket belongs to its holder.
#pragma once

#include "ufile/detail/device_queue.h"

namespace ufile::devio {

// ---- Copies between device memory and staging (device code). ----

#ifdef __CUDACC__
// Words of type W where both sides share an alignment; bytes at the edges.
template <class W>
__device__ __forceinline__ void CopySameAlign(uint8_t *d, const uint8_t *s, uint64_t n,
                                              unsigned rank, unsigned size) {
  constexpr unsigned w = sizeof(W);
  const unsigned mis = static_cast<unsigned>(reinterpret_cast<uintptr_t>(d) & (w - 1));
  uint64_t head = mis ? w - mis : 0;
  if (head > n) head = n;
  for (uint64_t i = rank; i < head; i += size) d[i] = __ldcv(s + i);
  W *dd = reinterpret_cast<W *>(d + head);
  const W *ss = reinterpret_cast<const W *>(s + head);
  const uint64_t body = (n - head) / w;
  uint64_t i = rank;
  for (; i + 3ull * size < body; i += 4ull * size) {  // four loads in flight
    const W a = __ldcv(ss + i), b = __ldcv(ss + i + size), c = __ldcv(ss + i + 2ull * size),
            e = __ldcv(ss + i + 3ull * size);
    dd[i] = a;
    dd[i + size] = b;
    dd[i + 2ull * size] = c;
    dd[i + 3ull * size] = e;
  }
  for (; i < body; i += size) dd[i] = __ldcv(ss + i);
  for (uint64_t j = head + body * w + rank; j < n; j += size) d[j] = __ldcv(s + j);
}

// 16-byte loads from an aligned source, byte stores to any destination.
__device__ __forceinline__ void CopyFromAligned(uint8_t *d, const uint8_t *s, uint64_t n,
                                                unsigned rank, unsigned size) {
  const uint64_t body = n / 16;
  const uint4 *ss = reinterpret_cast<const uint4 *>(s);
  for (uint64_t i = rank; i < body; i += size) {
    const uint4 v = __ldcv(ss + i);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    uint8_t *o = d + i * 16;
#pragma unroll
    for (int k = 0; k < 16; ++k) o[k] = static_cast<uint8_t>(w[k / 4] >> (8 * (k % 4)));
  }
  for (uint64_t j = body * 16 + rank; j < n; j += size) d[j] = __ldcv(s + j);
}

// Byte loads from any source, 16-byte stores to an aligned destination.
__device__ __forceinline__ void CopyToAligned(uint8_t *d, const uint8_t *s, uint64_t n,
                                              unsigned rank, unsigned size) {
  const uint64_t body = n / 16;
  uint4 *dd = reinterpret_cast<uint4 *>(d);
  for (uint64_t i = rank; i < body; i += size) {
    const uint8_t *in = s + i * 16;
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < 16; ++k) w[k / 4] |= static_cast<uint32_t>(__ldcv(in + k)) << (8 * (k % 4));
    dd[i] = make_uint4(w[0], w[1], w[2], w[3]);
  }
  for (uint64_t j = body * 16 + rank; j < n; j += size) d[j] = __ldcv(s + j);
}

// n bytes by size threads (this one is rank). Loads bypass L1 (ld.global.cv):
// a staging buffer is rewritten by the host for every request.
__device__ __forceinline__ void CoopCopy(void *dst, const void *src, uint64_t n, unsigned rank,
                                         unsigned size, bool narrow) {
  auto *d = static_cast<uint8_t *>(dst);
  const auto *s = static_cast<const uint8_t *>(src);
  const auto ad = static_cast<unsigned>(reinterpret_cast<uintptr_t>(d) & 15);
  const auto as = static_cast<unsigned>(reinterpret_cast<uintptr_t>(s) & 15);
  if (narrow) {
    if ((ad & 3) == (as & 3))
      CopySameAlign<uint32_t>(d, s, n, rank, size);
    else
      for (uint64_t i = rank; i < n; i += size) d[i] = __ldcv(s + i);
  } else if (ad == as) {
    CopySameAlign<uint4>(d, s, n, rank, size);
  } else if (as == 0) {
    CopyFromAligned(d, s, n, rank, size);
  } else if (ad == 0) {
    CopyToAligned(d, s, n, rank, size);
  } else if ((ad & 3) == (as & 3)) {
    CopySameAlign<uint32_t>(d, s, n, rank, size);
  } else {
    for (uint64_t i = rank; i < n; i += size) d[i] = __ldcv(s + i);
  }
}

#endif  // __CUDACC__

// ---- Groups: who cooperates in one call. ----

// One thread alone. On the device its copies are a plain loop (the warp and
// block groups of ufile/device.cuh copy cooperatively).
struct ThreadGroup {
  UFILE_DEVIO_HD bool leader() const { return true; }
  UFILE_DEVIO_HD unsigned rank() const { return 0; }
  UFILE_DEVIO_HD unsigned size() const { return 1; }
  UFILE_DEVIO_HD void sync() const {}
  UFILE_DEVIO_HD int64_t bcast(int64_t x) const { return x; }
  UFILE_DEVIO_HD bool all(bool x) const { return x; }
  UFILE_DEVIO_HD void copy(void *dst, const void *src, uint64_t n, bool narrow) const {
#ifdef __CUDA_ARCH__
    CoopCopy(dst, src, n, 0, 1, narrow);
#else
    (void)narrow;
    if (n) memcpy(dst, src, n);
#endif
  }
};

inline constexpr uint32_t kNoSlot = 0xffff;

// Packs up to 4 slot numbers into one word (for a group broadcast).
UFILE_DEVIO_HD uint32_t UnpackSlot(const int64_t packed[2], uint32_t i) {
  return static_cast<uint32_t>(static_cast<uint64_t>(packed[i / 4]) >> (16 * (i % 4))) & 0xffffu;
}

// ---- LL reads (UFILE_DEVIO_OPT_LL, proxy path). ----

// Lines a member loads per round (all in flight at once).
inline constexpr int kLLBatch = 8;

// Stores the bytes of line j (8 data bytes: lo, hi) below valid to dst.
UFILE_DEVIO_HD void StoreLine(uint8_t *dst, uint64_t j, uint32_t lo, uint32_t hi, uint64_t valid) {
  uint8_t *d = dst + 8 * j;
  const uint64_t left = valid - 8 * j;
  const uint64_t w = static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32);
#ifdef __CUDA_ARCH__
  const auto a = reinterpret_cast<uintptr_t>(d);
  if (left >= 8 && (a & 7) == 0) {
    *reinterpret_cast<uint64_t *>(d) = w;
    return;
  }
  if (left >= 8 && (a & 3) == 0) {
    reinterpret_cast<uint32_t *>(d)[0] = lo;
    reinterpret_cast<uint32_t *>(d)[1] = hi;
    return;
  }
  const uint64_t k = left < 8 ? left : 8;
  for (uint64_t i = 0; i < k; ++i) d[i] = static_cast<uint8_t>(w >> (8 * i));
#else
  memcpy(d, &w, left < 8 ? left : 8);  // little-endian, as the GPU
#endif
}

// Polls a slot's completion word until it carries flag: its result, or
// INT64_MIN at deadline. Each poll is an ld.acquire.sys, so what the proxy
// wrote before the word is visible after it. (Four relaxed loads in flight
// and a fence.acq_rel.sys on the hit measured 1.6 us slower at QD1 on the
// H100 VM: the system-scope fence costs more than the round trip it saves.)
UFILE_DEVIO_HD int64_t PollCompletion(const uint64_t *word, uint32_t flag, uint64_t deadline,
                                      uint32_t poll_ns) {
  for (;;) {
    const uint64_t h = LoadAcquireSys64(word);
    if (static_cast<uint32_t>(h >> 32) == flag) return static_cast<int32_t>(static_cast<uint32_t>(h));
    if (NowNs() >= deadline) return INT64_MIN;
    Backoff(poll_ns);
  }
}

// A synchronous read of at most v.ll_max bytes through LL lines: the leader
// claims a slot and submits (as any request); then every member polls its
// own lines and the header together, storing each line whose two words
// carry the request's flag straight into buf, until every line below the
// result is stored. One host round trip when the data is there; no CQE, no
// staging copy. On -ETIMEDOUT the slot is left ABANDONED_LL (reclaimed once
// its header is posted) and buf may hold part of the data.
template <class G>
UFILE_DEVIO_HD int64_t ReadLL(const G &g, const ufile_devio_view_t &v,
                              const ufile_devio_queue_t &q, const ufile_devio_file_t &fe,
                              void *buf, uint64_t size, int64_t off, uint64_t tmo) {
  int64_t sg = 0;
  if (g.leader()) {
    uint32_t gen = 0;
    const int s = Claim(v, q, NowNs() + tmo, &gen, kSlotInflight);  // no CLAIMED step
    if (s < 0) {
      sg = s;
    } else {
      uint32_t pos = 0, published = 0;
      const bool open = AdmitAndReserve(v, q, 1, &pos, &published);
      if (!open) StoreRelaxed64(&q.slots[s], SlotWord(kSlotAbandoned, gen, 0));
      const uint32_t us = static_cast<uint32_t>(s);
      WriteSqe(q, pos, us, open ? MakeLLSqe(q, fe, us, gen, off, size) : NopSqe(us, gen));
      Publish(q, pos, 1, published);
      sg = open ? (static_cast<int64_t>(gen) << 16) | s : -UFILE_DEVIO_ESHUTDOWN;
    }
  }
  sg = g.bcast(sg);
  if (sg < 0) return sg;
  const uint32_t slot = static_cast<uint32_t>(sg & 0xffff);
  const uint32_t gen = static_cast<uint32_t>(sg >> 16);
  const uint64_t *area = LLArea(v, q, slot);
  const uint64_t *lines = area + 2;
  const uint32_t flag = LLFlag(gen);
  const uint64_t nlines = (size + 7) / 8;
  const uint64_t n = g.size();
  uint8_t *const dst = static_cast<uint8_t *>(buf);
  const uint64_t deadline = NowNs() + tmo;
  uint64_t next = g.rank();  // this member's first line not yet stored
  bool known = false;
  int64_t res = 0;
  if (v.options & UFILE_DEVIO_OPT_LL_STAGED) {
    // The leader alone polls the completion word (acquire: the proxy stored
    // it, with release, after the data reached staging); the group barrier
    // of the broadcast orders every member's staging loads after it.
    int64_t hr = INT64_MIN;
    if (g.leader()) hr = PollCompletion(area, flag, deadline, v.poll_ns);
    hr = g.bcast(hr);
    if (hr == INT64_MIN) {
      if (g.leader()) {
        AbandonLL(q, slot, gen);
        Count(&q.ctl->timeouts, 1);
      }
      return -UFILE_DEVIO_ETIMEDOUT;
    }
    res = hr > static_cast<int64_t>(size) ? -UFILE_DEVIO_EINVAL : hr;
    if (res > 0) g.copy(dst, Staging(v, q, slot), static_cast<uint64_t>(res),
                        (v.options & UFILE_DEVIO_OPT_NARROW_COPY) != 0);
    g.sync();
    if (g.leader()) {
      Release(q, slot, gen);
      Count(&q.ctl->reaped, 1);
    }
    return res;
  }
  for (;;) {
    uint64_t h = 0;
    if (!known) h = LoadRelaxedSys64(area);
    uint64_t a[kLLBatch], b[kLLBatch];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int i = 0; i < kLLBatch; ++i) {
      const uint64_t j = next + static_cast<uint64_t>(i) * n;
      a[i] = b[i] = 0;
      if (j < nlines) LoadLine(lines + 2 * j, &a[i], &b[i]);
    }
    if (!known && static_cast<uint32_t>(h >> 32) == flag) {
      known = true;
      res = static_cast<int32_t>(static_cast<uint32_t>(h));
      if (res > static_cast<int64_t>(size)) res = -UFILE_DEVIO_EINVAL;  // a broken server
    }
    bool done = false;
    if (known) {
      const uint64_t valid = res > 0 ? static_cast<uint64_t>(res) : 0;
      uint64_t adv = 0;
      bool gap = false;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int i = 0; i < kLLBatch; ++i) {
        const uint64_t j = next + static_cast<uint64_t>(i) * n;
        if (j * 8 >= valid) continue;
        if (static_cast<uint32_t>(a[i] >> 32) == flag && static_cast<uint32_t>(b[i] >> 32) == flag) {
          StoreLine(dst, j, static_cast<uint32_t>(a[i]), static_cast<uint32_t>(b[i]), valid);
          if (!gap) adv = static_cast<uint64_t>(i) + 1;
        } else {
          gap = true;
        }
      }
      next += adv * n;
      done = next * 8 >= valid;
    }
    if (g.all(done)) break;
    int64_t expired = 0;
    if (g.leader()) expired = NowNs() >= deadline;
    if (g.bcast(expired)) {
      if (g.leader()) {
        AbandonLL(q, slot, gen);
        Count(&q.ctl->timeouts, 1);
      }
      return -UFILE_DEVIO_ETIMEDOUT;
    }
    Backoff(v.poll_ns);
  }
  g.sync();  // every member's stores precede the slot's release
  if (g.leader()) {
    Release(q, slot, gen);
    Count(&q.ctl->reaped, 1);
  }
  return res;
}

// A synchronous transfer of size bytes at off through queue qi, by group g
// (every member calls with the same arguments). Up to kMaxPipeline slots
// are kept in flight, one doorbell for the first round. Returns the bytes
// moved (fewer than size only at end of file) or a negative result.
template <class G>
UFILE_DEVIO_HD int64_t Transfer(const G &g, const ufile_devio_view_t &v, unsigned qi,
                                unsigned file, bool write, void *buf, uint64_t size, int64_t off,
                                uint64_t timeout_ns) {
  const int bad = Check(v, qi, file, write, buf, size, off);
  if (bad) return bad;
  if (size == 0) return 0;
  const ufile_devio_queue_t q = v.queues[qi];  // into registers: acquires invalidate L1
  const ufile_devio_file_t fe = v.files[file];
  const uint64_t S = v.staging_bytes;
  const uint64_t nchunks = (size + S - 1) / S;
  const uint64_t tmo = Timeout(v, timeout_ns);
  const bool narrow = (v.options & UFILE_DEVIO_OPT_NARROW_COPY) != 0;
  uint8_t *const data = static_cast<uint8_t *>(buf);
  if (UseLL(v, write, size)) return ReadLL(g, v, q, fe, buf, size, off, tmo);

  // The leader claims k slots (waiting for the first); all learn them.
  int64_t k = 0;
  int64_t packed[2] = {0, 0};
  uint32_t gens[kMaxPipeline] = {};
  if (g.leader()) {
    uint64_t kmax = nchunks < kMaxPipeline ? nchunks : kMaxPipeline;
    if (kmax > v.depth) kmax = v.depth;
    uint32_t gen = 0;
    const int s0 = Claim(v, q, NowNs() + tmo, &gen);
    if (s0 < 0) {
      k = s0;
    } else {
      packed[0] = s0;
      gens[0] = gen;
      k = 1;
      while (static_cast<uint64_t>(k) < kmax) {
        const int s = TryClaim(v, q, &gen);
        if (s < 0) break;
        packed[k / 4] |= static_cast<int64_t>(s) << (16 * (k % 4));
        gens[k] = gen;
        ++k;
      }
    }
  }
  k = g.bcast(k);
  if (k < 0) return k;
  packed[0] = g.bcast(packed[0]);
  if (k > 4) packed[1] = g.bcast(packed[1]);

  auto chunk_len = [&](uint64_t c) { return (c + 1) * S <= size ? S : size - c * S; };
  // First round: fill (writes), then one doorbell for all k entries.
  if (write) {
    for (int64_t i = 0; i < k; ++i)
      g.copy(Staging(v, q, UnpackSlot(packed, i)), data + i * S, chunk_len(i), narrow);
    g.sync();
  }
  int64_t admitted = 0;
  if (g.leader()) {
    for (int64_t i = 0; i < k; ++i)
      StoreRelaxed64(&q.slots[UnpackSlot(packed, i)], SlotWord(kSlotInflight, gens[i], 0));
    uint32_t pos = 0, published = 0;
    const bool open = AdmitAndReserve(v, q, static_cast<uint32_t>(k), &pos, &published);
    for (int64_t i = 0; i < k; ++i) {
      const uint32_t s = UnpackSlot(packed, i);
      if (!open) StoreRelaxed64(&q.slots[s], SlotWord(kSlotAbandoned, gens[i], 0));
      WriteSqe(q, pos + i, s,
               open ? MakeSqe(v, q, fe, s, gens[i], write, off + i * S, chunk_len(i), 0)
                    : NopSqe(s, gens[i]));
    }
    Publish(q, pos, static_cast<uint32_t>(k), published);
    admitted = open ? 0 : -UFILE_DEVIO_ESHUTDOWN;
  }
  admitted = g.bcast(admitted);
  if (admitted < 0) return admitted;

  int64_t total = 0;
  for (uint64_t c = 0; c < nchunks; ++c) {
    const uint32_t i = static_cast<uint32_t>(c % k);
    const uint32_t s = UnpackSlot(packed, i);
    const uint64_t len = chunk_len(c);
    int64_t r = 0;
    if (g.leader())
      r = WaitRequest(v, q, s, gens[i], write, file, off + static_cast<int64_t>(c * S), len, tmo);
    r = g.bcast(r);
    if (r > 0 && !write) {
      g.copy(data + c * S, Staging(v, q, s), static_cast<uint64_t>(r), narrow);
      g.sync();
    }
    const uint64_t next = c + static_cast<uint64_t>(k);
    if (r < 0 || static_cast<uint64_t>(r) < len) {
      // Error or end of file: give back this slot and every later one.
      if (g.leader()) {
        if (r != -UFILE_DEVIO_ETIMEDOUT) Release(q, s, gens[i]);
        for (uint64_t d = c + 1; d < next && d < nchunks; ++d) {
          const uint32_t j = static_cast<uint32_t>(d % k);
          Abandon(q, UnpackSlot(packed, j), gens[j]);
        }
      }
      g.sync();
      return r < 0 ? r : total + r;
    }
    total += r;
    if (next < nchunks) {
      if (write) {
        g.copy(Staging(v, q, s), data + next * S, chunk_len(next), narrow);
        g.sync();
      }
      if (g.leader())
        SubmitOne(q, s, gens[i],
                  MakeSqe(v, q, fe, s, gens[i], write, off + static_cast<int64_t>(next * S),
                          chunk_len(next), 0));
    } else if (g.leader()) {
      Release(q, s, gens[i]);
    }
  }
  g.sync();
  return total;
}

// Submits one request of at most staging_bytes; with wait_for_slot, waits
// (up to the timeout) for a free slot, else returns -EAGAIN when all are in
// use. For a write the data is copied to staging before this returns, so
// buf may be reused at once.
template <class G>
UFILE_DEVIO_HD Ticket Submit(const G &g, const ufile_devio_view_t &v, unsigned qi, unsigned file,
                             bool write, void *buf, uint64_t size, int64_t off,
                             bool wait_for_slot, uint64_t timeout_ns) {
  Ticket t;
  t.queue = static_cast<uint16_t>(qi);
  t.write = write;
  t.file = file;
  t.buf = buf;
  t.len = size;
  t.off = off;
  t.status = Check(v, qi, file, write, buf, size, off);
  if (t.status == 0 && size > v.staging_bytes) t.status = -UFILE_DEVIO_E2BIG;
  if (t.status < 0 || size == 0) return t;
  const ufile_devio_queue_t q = v.queues[qi];  // into registers: acquires invalidate L1
  int64_t sg = 0;
  if (g.leader()) {
    uint32_t gen = 0;
    int s = -1;
    if (wait_for_slot) {
      s = Claim(v, q, NowNs() + Timeout(v, timeout_ns), &gen);
    } else {
      s = TryClaim(v, q, &gen);
      if (s < 0) s = -UFILE_DEVIO_EAGAIN;
    }
    sg = s < 0 ? s : (static_cast<int64_t>(gen) << 16) | s;
  }
  sg = g.bcast(sg);
  if (sg < 0) {
    t.status = static_cast<int32_t>(sg);
    return t;
  }
  t.slot = static_cast<uint16_t>(sg & 0xffff);
  t.gen = static_cast<uint32_t>(sg >> 16);
  if (write) {
    g.copy(Staging(v, q, t.slot), buf, size, (v.options & UFILE_DEVIO_OPT_NARROW_COPY) != 0);
    g.sync();
  }
  int64_t admitted = 0;
  if (g.leader()) {
    StoreRelaxed64(&q.slots[t.slot], SlotWord(kSlotInflight, t.gen, 0));
    uint32_t pos = 0, published = 0;
    const bool open = AdmitAndReserve(v, q, 1, &pos, &published);
    if (!open) StoreRelaxed64(&q.slots[t.slot], SlotWord(kSlotAbandoned, t.gen, 0));
    WriteSqe(q, pos, t.slot,
             open ? MakeSqe(v, q, t.slot, t.gen, write, file, off, size, 0) : NopSqe(t.slot, t.gen));
    Publish(q, pos, 1, published);
    admitted = open ? 0 : -UFILE_DEVIO_ESHUTDOWN;
  }
  admitted = g.bcast(admitted);
  if (admitted < 0) {
    t.status = static_cast<int32_t>(admitted);
    t.slot = kNoSlot;
  }
  return t;
}

// Whether t's slot is still the ticket's (not waited on already).
UFILE_DEVIO_HD bool TicketLive(const ufile_devio_view_t &v, const Ticket &t) {
  if (t.queue >= v.num_queues || t.slot >= v.depth) return false;
  const u64 cur = LoadAcquireGpu64(&v.queues[t.queue].slots[t.slot]);
  const uint32_t st = SlotState(cur);
  return SlotGen(cur) == t.gen && (st == kSlotInflight || st == kSlotDone);
}

// Waits for t: the bytes moved or a negative result; for a read the data is
// in t.buf when this returns. Consumes the ticket (t.status becomes
// -EINVAL).
template <class G>
UFILE_DEVIO_HD int64_t Wait(const G &g, const ufile_devio_view_t &v, Ticket &t,
                            uint64_t timeout_ns) {
  if (t.status < 0) return t.status;
  if (t.slot == kNoSlot) {
    t.status = -UFILE_DEVIO_EINVAL;
    return 0;
  }
  const ufile_devio_queue_t q = v.queues[t.queue];
  int64_t r = 0;
  if (g.leader())
    r = TicketLive(v, t) ? WaitRequest(v, q, t.slot, t.gen, t.write, t.file, t.off, t.len,
                                       Timeout(v, timeout_ns))
                         : -UFILE_DEVIO_EINVAL - 1000;
  r = g.bcast(r);
  if (r == -UFILE_DEVIO_EINVAL - 1000) {
    t.status = -UFILE_DEVIO_EINVAL;
    return -UFILE_DEVIO_EINVAL;
  }
  if (r > 0 && !t.write) {
    g.copy(t.buf, Staging(v, q, t.slot), static_cast<uint64_t>(r),
           (v.options & UFILE_DEVIO_OPT_NARROW_COPY) != 0);
    g.sync();
  }
  if (g.leader() && r != -UFILE_DEVIO_ETIMEDOUT) Release(q, t.slot, t.gen);
  t.status = -UFILE_DEVIO_EINVAL;
  return r;
}

// 1 when t has completed (wait() will not block), 0 while in flight, or a
// negative result for a ticket that holds nothing to wait for. Reaps once.
UFILE_DEVIO_HD int Poll(const ufile_devio_view_t &v, const Ticket &t) {
  if (t.status < 0) return t.status;
  if (t.slot == kNoSlot) return 1;
  if (!TicketLive(v, t)) return -UFILE_DEVIO_EINVAL;
  const ufile_devio_queue_t q = v.queues[t.queue];
  Reap(v, q);
  return SlotState(LoadAcquireGpu64(&q.slots[t.slot])) == kSlotDone ? 1 : 0;
}

}  // namespace ufile::devio
