// SPDX-License-Identifier: Apache-2.0
// The memory operations of the device-initiated I/O protocol
// (ufile/detail/device_queue.h): PTX with explicit scopes on the device, GCC
// atomics on the host (where host threads stand in for GPU threads in the
// CPU tests). Host memory (rings, staging) is reached at system scope,
// device memory (slot words, queue control) at GPU scope.
// Thread-safety: stateless.
#pragma once

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(__CUDACC__)
#define UFILE_DEVIO_HD __host__ __device__ __forceinline__
#else
#define UFILE_DEVIO_HD inline
#endif

namespace ufile::devio {

using u64 = unsigned long long;

// ---- Memory operations: PTX on the device, GCC atomics on the host. ----

UFILE_DEVIO_HD uint32_t LoadAcquireSys(const uint32_t *p) {
#ifdef __CUDA_ARCH__
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

UFILE_DEVIO_HD uint64_t LoadAcquireSys64(const uint64_t *p) {
#ifdef __CUDA_ARCH__
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

// Host-memory loads the kernel's (or proxy's) stores may have changed.
UFILE_DEVIO_HD uint32_t LoadRelaxedSys32(const uint32_t *p) {
#ifdef __CUDA_ARCH__
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

UFILE_DEVIO_HD uint64_t LoadRelaxedSys64(const uint64_t *p) {
#ifdef __CUDA_ARCH__
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

UFILE_DEVIO_HD void StoreReleaseSys(uint32_t *p, uint32_t v) {
#ifdef __CUDA_ARCH__
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

UFILE_DEVIO_HD uint32_t LoadAcquireGpu32(const uint32_t *p) {
#ifdef __CUDA_ARCH__
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

UFILE_DEVIO_HD uint32_t LoadRelaxed32(const uint32_t *p) {
#ifdef __CUDA_ARCH__
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

UFILE_DEVIO_HD void StoreReleaseGpu32(uint32_t *p, uint32_t v) {
#ifdef __CUDA_ARCH__
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

UFILE_DEVIO_HD u64 LoadAcquireGpu64(const u64 *p) {
#ifdef __CUDA_ARCH__
  u64 v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

UFILE_DEVIO_HD u64 LoadRelaxed64(const u64 *p) {
#ifdef __CUDA_ARCH__
  u64 v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

UFILE_DEVIO_HD void StoreReleaseGpu64(u64 *p, u64 v) {
#ifdef __CUDA_ARCH__
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

UFILE_DEVIO_HD void StoreRelaxed64(u64 *p, u64 v) {
#ifdef __CUDA_ARCH__
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

UFILE_DEVIO_HD void StoreRelaxed32(uint32_t *p, uint32_t v) {
#ifdef __CUDA_ARCH__
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

// Compare-and-swap with acquire-release semantics; returns the old value.
UFILE_DEVIO_HD u64 Cas64(u64 *p, u64 expected, u64 desired) {
#ifdef __CUDA_ARCH__
  u64 old;
  asm volatile("atom.acq_rel.gpu.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old)
               : "l"(p), "l"(expected), "l"(desired)
               : "memory");
  return old;
#else
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;
#endif
}

UFILE_DEVIO_HD uint32_t Cas32(uint32_t *p, uint32_t expected, uint32_t desired) {
#ifdef __CUDA_ARCH__
  uint32_t old;
  asm volatile("atom.acq_rel.gpu.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old)
               : "l"(p), "r"(expected), "r"(desired)
               : "memory");
  return old;
#else
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;
#endif
}

UFILE_DEVIO_HD uint32_t FetchAdd32(uint32_t *p, uint32_t v) {
#ifdef __CUDA_ARCH__
  return atomicAdd(p, v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

UFILE_DEVIO_HD void Count(u64 *p, u64 v) {
#ifdef __CUDA_ARCH__
  atomicAdd(p, v);
#else
  __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

// Sequentially consistent fence at device scope (store -> load ordering).
UFILE_DEVIO_HD void FenceGpu() {
#ifdef __CUDA_ARCH__
  __threadfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

// Makes a preceding relaxed load an acquire (device scope).
UFILE_DEVIO_HD void FenceAcquireGpu() {
#ifdef __CUDA_ARCH__
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

// Nanoseconds on a clock shared by all threads of the device (or host).
UFILE_DEVIO_HD uint64_t NowNs() {
#ifdef __CUDA_ARCH__
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
#endif
}

// Between polls: the device sleeps ns (if any); a host thread standing in
// for the GPU always yields (tests run many on few cores).
UFILE_DEVIO_HD void Backoff(uint32_t ns) {
#ifdef __CUDA_ARCH__
  if (ns) __nanosleep(ns);
#else
  (void)ns;
  sched_yield();
#endif
}

}  // namespace ufile::devio
