/* SPDX-License-Identifier: Apache-2.0 */
/* Device-initiated I/O, host side: create and destroy the queues through
 * which CUDA kernels read and write registered cuFile handles themselves
 * (the device calls are in ufile/device.cuh). These are libufile's own
 * ufile_* entry points, not part of the cuFile ABI.
 *
 * Every function returns 0 or a negative errno and is thread-safe; one set
 * may be used by any number of kernels and threads at once. A set holds its
 * own references to the files (it stays usable after the handles are
 * deregistered, even after cuFileDriverClose) until it is destroyed.
 * docs/DEVICE_IO.md explains the design, the two paths and the memory
 * ordering. */
#ifndef UFILE_DEVICE_H_
#define UFILE_DEVICE_H_

#include <cufile.h>
#include <stddef.h>
#include <stdint.h>

#include "ufile/device_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ufile_devio ufile_devio_t;

typedef struct ufile_devio_params {
  uint32_t size;            /* sizeof(ufile_devio_params_t), set by ufile_devio_params_init */
  uint32_t num_queues;      /* queues (a kernel picks one per request), 1..1024; default 4 */
  uint32_t queue_depth;     /* slots per queue, rounded up to a power of two, 1..4096;
                               default 32 */
  uint32_t path;            /* UFILE_DEVIO_PATH_*; default AUTO */
  uint64_t staging_bytes;   /* staging per slot (the largest asynchronous request), rounded up
                               to 4 KiB, up to 64 MiB; default 256 KiB */
  uint64_t timeout_us;      /* bound of every device wait (-ETIMEDOUT/-EBUSY after it);
                               default 10 s */
  uint32_t options;         /* UFILE_DEVIO_OPT_*; default UFILE_DEVIO_OPT_DEFAULT */
  uint32_t sq_threads;      /* no-CPU path: SQPOLL threads, shared by the rings round-robin;
                               0 (default): one per queue */
  uint32_t sq_idle_ms;      /* no-CPU path: an SQPOLL thread sleeps after this idle time;
                               default 200 */
  int32_t sq_cpu;           /* no-CPU path: pin SQPOLL thread i to CPU sq_cpu + i; -1 (default):
                               not pinned */
  uint32_t wake_poll_us;    /* no-CPU: how often the helper looks for a sleeping SQPOLL thread
                               with work; proxy: a worker's poll period once idle; default 50 */
  uint32_t proxy_threads;   /* proxy path: worker threads; 0 (default): min(queues, 4) */
  uint32_t proxy_spin_us;   /* proxy path: busy-poll this long after the last request before
                               polling every wake_poll_us; default 100 */
  uint32_t destroy_wait_ms; /* how long destroy waits for requests in flight; default 2000 */
  uint32_t poll_ns;         /* back-off of an idle device wait between polls; default 0 */
  int32_t device;           /* CUDA device ordinal; -1: host memory only, for host threads
                               (tests); default 0 */
} ufile_devio_params_t;

typedef struct ufile_devio_stats {
  uint64_t submitted; /* entries published by device code */
  uint64_t reaped;    /* completions consumed by device code */
  uint64_t timeouts;  /* device waits that gave up */
  uint64_t stale;     /* completions for abandoned slots */
  uint64_t resubmits; /* short or EAGAIN results continued */
  uint64_t wakeups;   /* no-CPU: times the helper woke an SQPOLL thread */
  uint64_t proxy_requests; /* proxy: requests served */
  uint64_t proxy_errors;   /* proxy: requests refused (bad entry) or failed */
  uint64_t cq_flushes;     /* no-CPU: times the helper had the kernel flush a ring's CQ
                              overflow list (completions it held back) */
} ufile_devio_stats_t;

/* Fills *params with the defaults above. */
CUFILE_API void ufile_devio_params_init(ufile_devio_params_t *params);

/* Creates a set of queues for num_handles registered handles (kernels name
 * them by their index in handles[], or look them up: ufile::dev::find_file).
 * params NULL: defaults. Returns 0 and *out, or:
 *   -EINVAL     NULL out/handles, no handles, more than 256, bad params
 *   -EBADF      a handle is not registered (in the driver's open session)
 *   -EOPNOTSUPP a handle of a user-space file system (no descriptor), or
 *               path NOCPU where SQPOLL rings on user memory are refused
 *   -ENODEV     device >= 0 without a usable CUDA device
 *   -ENOMEM     memory could not be mapped, pinned or allocated
 *   -EIO        a CUDA call failed (logged)
 *   -ESHUTDOWN  the driver is closing */
CUFILE_API int ufile_devio_create(ufile_devio_t **out, const CUfileHandle_t *handles,
                                  unsigned num_handles, const ufile_devio_params_t *params);

/* Destroy flags. */
#define UFILE_DEVIO_DESTROY_FORCE 0x1u /* skip the device-side check: the caller knows no \
                                          kernel uses the set any more */

/* Destroys the set. New device requests fail with -ESHUTDOWN from the moment
 * this starts. It waits (destroy_wait_ms) for every slot to be given back by
 * device code and for every request submitted to complete; if that does not
 * happen, nothing is freed and it returns -EBUSY (the set stays usable for
 * waits; call again once the kernels are done). -EINVAL for NULL. */
CUFILE_API int ufile_devio_destroy(ufile_devio_t *dio, unsigned flags);

/* What kernels take (by value): valid until the set is destroyed. */
CUFILE_API int ufile_devio_get_view(const ufile_devio_t *dio, ufile_devio_view_t *view);

/* The path serving the set: UFILE_DEVIO_PATH_NOCPU or _PROXY. */
CUFILE_API int ufile_devio_path(const ufile_devio_t *dio);

/* Counters of the set (device counters read without stopping kernels). */
CUFILE_API int ufile_devio_get_stats(ufile_devio_t *dio, ufile_devio_stats_t *stats);

/* The path UFILE_DEVIO_PATH_AUTO gets on this machine; when it is the proxy,
 * why[] (if given) says why the no-CPU path is unavailable. */
CUFILE_API int ufile_devio_probe(char *why, size_t why_len);

/* "nocpu", "proxy", "auto" or "unknown". */
CUFILE_API const char *ufile_devio_path_name(int path);

#ifdef __cplusplus
}  /* extern "C" */

namespace ufile {

/* Owns a queue set (C++). Destroy() reports -EBUSY; the destructor tries
 * once more with the default wait and leaks the set rather than free memory
 * a kernel may still use. */
class DeviceQueues {
 public:
  DeviceQueues() = default;
  ~DeviceQueues() { (void)Destroy(); }
  DeviceQueues(DeviceQueues &&o) noexcept : dio_(o.dio_) { o.dio_ = nullptr; }
  DeviceQueues &operator=(DeviceQueues &&o) noexcept {
    if (this != &o) {
      (void)Destroy();
      dio_ = o.dio_;
      o.dio_ = nullptr;
    }
    return *this;
  }
  DeviceQueues(const DeviceQueues &) = delete;
  DeviceQueues &operator=(const DeviceQueues &) = delete;

  int Create(const CUfileHandle_t *handles, unsigned n, const ufile_devio_params_t *params = nullptr) {
    if (dio_) return -16; /* EBUSY: destroy the current set first */
    return ufile_devio_create(&dio_, handles, n, params);
  }
  int Destroy(unsigned flags = 0) {
    if (!dio_) return 0;
    const int r = ufile_devio_destroy(dio_, flags);
    if (r == 0) dio_ = nullptr;
    return r;
  }
  ufile_devio_view_t view() const {
    ufile_devio_view_t v{};
    if (dio_) (void)ufile_devio_get_view(dio_, &v);
    return v;
  }
  int path() const { return dio_ ? ufile_devio_path(dio_) : -22; }
  ufile_devio_stats_t stats() const {
    ufile_devio_stats_t s{};
    if (dio_) (void)ufile_devio_get_stats(dio_, &s);
    return s;
  }
  ufile_devio_t *get() const { return dio_; }
  explicit operator bool() const { return dio_ != nullptr; }

 private:
  ufile_devio_t *dio_ = nullptr;
};

}  // namespace ufile
#endif

#endif /* UFILE_DEVICE_H_ */
