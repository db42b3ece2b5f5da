// SPDX-License-Identifier: Apache-2.0
// Device-initiated I/O: CUDA kernels read and write registered cuFile handles
// through the queues of a set made on the host (ufile/device.h), at offsets
// they compute themselves, into and out of device memory. Header-only: a
// kernel includes this file; nothing here links against libufile.
//
//   __global__ void k(ufile_devio_view_t v, char *dst, int64_t off) {
//     auto block = ufile::dev::this_block();
//     int64_t n = ufile::dev::read(block, v, blockIdx.x % v.num_queues, 0, dst, 1 << 20, off);
//     // n: bytes read (fewer only at end of file) or a negative errno
//   }
//
// Groups. Every call takes the group that makes it: this_thread() (one
// thread alone), this_warp() (all 32 lanes, same arguments), this_block()
// (every thread of the block, same arguments). One thread of the group
// drives the queue; the group copies the data between device memory and the
// staging buffers together, in 16-byte words where the alignment allows.
//
// Calls.
//   read / write           synchronous, any size: split into staging-sized
//                          chunks, up to 8 in flight, one doorbell for the
//                          first round. Bytes moved, or a negative errno.
//   submit_read / _write   asynchronous, at most view.staging_bytes; returns
//                          a Ticket (status < 0: not submitted; -EAGAIN when
//                          the queue is full and wait_for_slot is false).
//                          A write's data is in staging when it returns.
//   wait(ticket)           the bytes moved or a negative errno; a read's data
//                          is in the buffer afterwards. Once per ticket.
//   poll(ticket)           1 completed, 0 in flight (thread-level, no copy).
//   warp_submit_reads /    each lane its own request (queue warp-uniform),
//   warp_submit_writes     one doorbell for the warp; a lane gets -EAGAIN
//                          only when the queue is full.
//
// "Full": queue_depth requests hold slots (submitted and not yet waited for,
// or abandoned by a timed-out wait and not yet completed). With fewer, a
// submit finds a slot, however many threads claim and release at once.
//   warp_wait_each         each lane's result; the warp copies every lane's
//                          data together.
//   find_file(view, fh)    the index of a CUfileHandle_t in the set.
//
// Results: bytes, or -EBADF (file index, or not open for the direction),
// -EINVAL (queue, offset, overflow, spent ticket), -EFAULT (NULL buffer),
// -E2BIG (asynchronous request over a slot), -EAGAIN, -EBUSY (no slot within
// the timeout), -ETIMEDOUT (no completion within the timeout), -ESHUTDOWN
// (the set is being destroyed), or the file system's own -errno.
// Timeouts: 0 means the set's timeout (ufile_devio_params_t.timeout_us).
#pragma once

#include <cuda_runtime.h>

#include "ufile/detail/device_transfer.h"

namespace ufile::dev {

using View = ufile_devio_view_t;
using Ticket = ufile::devio::Ticket;
using ThreadGroup = ufile::devio::ThreadGroup;

namespace detail {

__device__ __forceinline__ unsigned LaneId() {
  unsigned l;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

using devio::CoopCopy;

}  // namespace detail

// All 32 lanes of a warp, converged, calling with the same arguments.
struct Warp {
  __host__ __device__ bool leader() const {
#ifdef __CUDA_ARCH__
    return detail::LaneId() == 0;
#else
    return true;
#endif
  }
  __host__ __device__ unsigned rank() const {
#ifdef __CUDA_ARCH__
    return detail::LaneId();
#else
    return 0;
#endif
  }
  __host__ __device__ unsigned size() const {
#ifdef __CUDA_ARCH__
    return 32;
#else
    return 1;
#endif
  }
  __host__ __device__ bool all(bool x) const {
#ifdef __CUDA_ARCH__
    return __all_sync(0xffffffffu, x);
#else
    return x;
#endif
  }
  __host__ __device__ void sync() const {
#ifdef __CUDA_ARCH__
    __syncwarp();
#endif
  }
  __host__ __device__ int64_t bcast(int64_t x) const {
#ifdef __CUDA_ARCH__
    return __shfl_sync(0xffffffffu, static_cast<long long>(x), 0);
#else
    return x;
#endif
  }
  __host__ __device__ void copy(void *dst, const void *src, uint64_t n, bool narrow) const {
#ifdef __CUDA_ARCH__
    detail::CoopCopy(dst, src, n, detail::LaneId(), 32, narrow);
#endif
  }
};

// Every thread of the block, calling with the same arguments.
struct Block {
  __host__ __device__ bool leader() const {
#ifdef __CUDA_ARCH__
    return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
#else
    return true;
#endif
  }
  __host__ __device__ unsigned rank() const {
#ifdef __CUDA_ARCH__
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
#else
    return 0;
#endif
  }
  __host__ __device__ unsigned size() const {
#ifdef __CUDA_ARCH__
    return blockDim.x * blockDim.y * blockDim.z;
#else
    return 1;
#endif
  }
  __host__ __device__ bool all(bool x) const {
#ifdef __CUDA_ARCH__
    return __syncthreads_and(x) != 0;
#else
    return x;
#endif
  }
  __host__ __device__ void sync() const {
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
  }
  __host__ __device__ int64_t bcast(int64_t x) const {
#ifdef __CUDA_ARCH__
    __shared__ int64_t cell;
    if (leader()) cell = x;
    __syncthreads();
    const int64_t r = cell;
    __syncthreads();
    return r;
#else
    return x;
#endif
  }
  __host__ __device__ void copy(void *dst, const void *src, uint64_t n, bool narrow) const {
#ifdef __CUDA_ARCH__
    const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    detail::CoopCopy(dst, src, n, rank, blockDim.x * blockDim.y * blockDim.z, narrow);
#endif
  }
};

__device__ __forceinline__ ThreadGroup this_thread() { return {}; }
__device__ __forceinline__ Warp this_warp() { return {}; }
__device__ __forceinline__ Block this_block() { return {}; }

// The index of handle (a CUfileHandle_t) in the set, or -EBADF.
__device__ __forceinline__ int find_file(const View &v, const void *handle) {
  return devio::FindFile(v, handle);
}

template <class G>
__device__ __forceinline__ int64_t read(const G &g, const View &v, unsigned queue, unsigned file,
                                        void *dst, uint64_t size, int64_t off,
                                        uint64_t timeout_ns = 0) {
  return devio::Transfer(g, v, queue, file, false, dst, size, off, timeout_ns);
}

template <class G>
__device__ __forceinline__ int64_t write(const G &g, const View &v, unsigned queue, unsigned file,
                                         const void *src, uint64_t size, int64_t off,
                                         uint64_t timeout_ns = 0) {
  return devio::Transfer(g, v, queue, file, true, const_cast<void *>(src), size, off, timeout_ns);
}

template <class G>
__device__ __forceinline__ Ticket submit_read(const G &g, const View &v, unsigned queue,
                                              unsigned file, void *dst, uint64_t size, int64_t off,
                                              bool wait_for_slot = false,
                                              uint64_t timeout_ns = 0) {
  return devio::Submit(g, v, queue, file, false, dst, size, off, wait_for_slot, timeout_ns);
}

template <class G>
__device__ __forceinline__ Ticket submit_write(const G &g, const View &v, unsigned queue,
                                               unsigned file, const void *src, uint64_t size,
                                               int64_t off, bool wait_for_slot = false,
                                               uint64_t timeout_ns = 0) {
  return devio::Submit(g, v, queue, file, true, const_cast<void *>(src), size, off, wait_for_slot,
                       timeout_ns);
}

template <class G>
__device__ __forceinline__ int64_t wait(const G &g, const View &v, Ticket &t,
                                        uint64_t timeout_ns = 0) {
  return devio::Wait(g, v, t, timeout_ns);
}

__device__ __forceinline__ int poll(const View &v, const Ticket &t) { return devio::Poll(v, t); }

namespace detail {

// Each lane one request on one (warp-uniform) queue; one doorbell.
__device__ __forceinline__ Ticket WarpSubmit(const View &v, unsigned queue, unsigned file,
                                             bool write, void *buf, uint64_t size, int64_t off) {
  const unsigned lane = LaneId();
  Ticket t;
  t.queue = static_cast<uint16_t>(queue);
  t.write = write;
  t.file = file;
  t.buf = buf;
  t.len = size;
  t.off = off;
  t.status = devio::Check(v, queue, file, write, buf, size, off);
  const unsigned q0 = __shfl_sync(0xffffffffu, queue, 0);  // valid wherever a lane submits
  if (q0 != queue) t.status = -UFILE_DEVIO_EINVAL;
  if (t.status == 0 && size > v.staging_bytes) t.status = -UFILE_DEVIO_E2BIG;
  const bool wants = t.status == 0 && size > 0;
  ufile_devio_queue_t qq{};  // in registers: acquires invalidate L1
  if (q0 < v.num_queues) qq = v.queues[q0];
  // One lane reserves the warp's places (device_queue.h): a lane is refused
  // only when the queue is full, never because the lanes raced each other.
  const unsigned wanting = __ballot_sync(0xffffffffu, wants);
  uint32_t places = 0;
  if (wanting && lane == static_cast<unsigned>(__ffs(wanting) - 1))
    places = devio::ReservePlaces(v, qq, __popc(wanting));
  places = __shfl_sync(0xffffffffu, places, wanting ? __ffs(wanting) - 1 : 0);
  if (wants) {
    uint32_t gen = 0;
    const uint32_t rank = __popc(wanting & ((1u << lane) - 1));
    const int s = rank < places ? devio::ClaimReserved(v, qq, &gen) : -1;
    if (s < 0) {
      t.status = -UFILE_DEVIO_EAGAIN;
    } else {
      t.slot = static_cast<uint16_t>(s);
      t.gen = gen;
    }
  }
  const bool mine = wants && t.status == 0;
  const unsigned have = __ballot_sync(0xffffffffu, mine);
  // Writes: the warp fills each lane's staging together.
  if (write) {
    for (unsigned m = have; m; m &= m - 1) {
      const int j = __ffs(m) - 1;
      const auto *src = reinterpret_cast<const void *>(
          __shfl_sync(0xffffffffu, reinterpret_cast<uintptr_t>(buf), j));
      const uint64_t n = __shfl_sync(0xffffffffu, static_cast<unsigned long long>(size), j);
      const uint32_t slot = __shfl_sync(0xffffffffu, static_cast<uint32_t>(t.slot), j);
      CoopCopy(devio::Staging(v, qq, slot), src, n, lane, 32,
               (v.options & UFILE_DEVIO_OPT_NARROW_COPY) != 0);
    }
    __syncwarp();
  }
  if (!have) return t;
  const unsigned count = __popc(have);
  // Admission: each claimant fences its claim before reading the closing
  // flag; the first also takes the warp's positions meanwhile.
  bool open = false;
  uint32_t pos = 0, published = 0;
  const unsigned first = __ffs(have) - 1;
  if (mine) {
    devio::StoreRelaxed64(&qq.slots[t.slot], devio::SlotWord(devio::kSlotInflight, t.gen, 0));
    devio::FenceGpu();
    open = devio::LoadRelaxedSys32(v.closing) == 0;
    if (lane == first) pos = devio::Reserve(qq, count, &published);
  }
  pos = __shfl_sync(0xffffffffu, pos, first);
  if (mine) {
    const uint32_t rank = __popc(have & ((1u << lane) - 1));
    if (!open)
      devio::StoreRelaxed64(&qq.slots[t.slot], devio::SlotWord(devio::kSlotAbandoned, t.gen, 0));
    devio::WriteSqe(qq, pos + rank, t.slot,
                    open ? devio::MakeSqe(v, qq, t.slot, t.gen, write, file, off, size, 0)
                         : devio::NopSqe(t.slot, t.gen));
  }
  __syncwarp();
  if (lane == first) devio::Publish(qq, pos, count, published);
  __syncwarp();
  if (mine && !open) {
    t.status = -UFILE_DEVIO_ESHUTDOWN;
    t.slot = devio::kNoSlot;
  }
  return t;
}

}  // namespace detail

__device__ __forceinline__ Ticket warp_submit_reads(const View &v, unsigned queue, unsigned file,
                                                    void *dst, uint64_t size, int64_t off) {
  return detail::WarpSubmit(v, queue, file, false, dst, size, off);
}

__device__ __forceinline__ Ticket warp_submit_writes(const View &v, unsigned queue, unsigned file,
                                                     const void *src, uint64_t size,
                                                     int64_t off) {
  return detail::WarpSubmit(v, queue, file, true, const_cast<void *>(src), size, off);
}

// Every lane's ticket from warp_submit_*: waits for all, the warp copies the
// data of every read together; returns this lane's result.
__device__ __forceinline__ int64_t warp_wait_each(const View &v, Ticket &t,
                                                  uint64_t timeout_ns = 0) {
  const unsigned lane = detail::LaneId();
  int64_t r = t.status;
  bool live = false;
  if (t.status == 0 && t.slot == devio::kNoSlot) {
    r = 0;
  } else if (t.status == 0) {
    live = devio::TicketLive(v, t);
    if (live) {
      const ufile_devio_queue_t q = v.queues[t.queue];
      r = devio::WaitRequest(v, q, t.slot, t.gen, t.write, t.file, t.off, t.len,
                             devio::Timeout(v, timeout_ns));
    } else {
      r = -UFILE_DEVIO_EINVAL;
    }
  }
  const bool copy = live && r > 0 && !t.write;
  for (unsigned m = __ballot_sync(0xffffffffu, copy); m; m &= m - 1) {
    const int j = __ffs(m) - 1;
    void *dst = reinterpret_cast<void *>(
        __shfl_sync(0xffffffffu, reinterpret_cast<uintptr_t>(t.buf), j));
    const uint64_t n = __shfl_sync(0xffffffffu, static_cast<long long>(r), j);
    const uint32_t slot = __shfl_sync(0xffffffffu, static_cast<uint32_t>(t.slot), j);
    const uint32_t q = __shfl_sync(0xffffffffu, static_cast<uint32_t>(t.queue), j);
    detail::CoopCopy(dst, devio::Staging(v, v.queues[q], slot), n, lane, 32,
                     (v.options & UFILE_DEVIO_OPT_NARROW_COPY) != 0);
  }
  __syncwarp();
  if (live && r != -UFILE_DEVIO_ETIMEDOUT) devio::Release(v.queues[t.queue], t.slot, t.gen);
  t.status = -UFILE_DEVIO_EINVAL;
  return r;
}

}  // namespace ufile::dev
