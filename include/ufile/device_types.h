/* SPDX-License-Identifier: Apache-2.0 */
/* Device-initiated I/O: the data shared by the host library and the device
 * code (ufile/device.cuh). Plain C, so that the host API (ufile/device.h) is
 * usable from C; the layouts are fixed (checked by static asserts in the
 * library) and versioned by UFILE_DEVIO_ABI_VERSION.
 *
 * A queue set ("dio") owns num_queues queues of queue_depth slots for a list
 * of registered cuFile handles. Each queue is an io_uring submission and
 * completion ring pair in host memory mapped into the GPU, plus one staging
 * buffer per slot. Kernels fill submission entries and ring the doorbell
 * themselves; the kernel's SQPOLL thread (no-CPU path) or ufile's host
 * workers (proxy path) serve them. docs/DEVICE_IO.md has the protocol. */
#ifndef UFILE_DEVICE_TYPES_H_
#define UFILE_DEVICE_TYPES_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UFILE_DEVIO_ABI_VERSION 2u

/* Which path serves the queues. */
#define UFILE_DEVIO_PATH_AUTO 0  /* no-CPU where the kernel allows, else proxy */
#define UFILE_DEVIO_PATH_NOCPU 1 /* io_uring SQPOLL rings in GPU-mapped memory */
#define UFILE_DEVIO_PATH_PROXY 2 /* host threads serve the same rings */

/* Switchable optimizations (ufile_devio_params_t.options). */
#define UFILE_DEVIO_OPT_TEMPLATES 0x1u     /* one pre-built SQE per slot, indexed through the \
                                              SQ array: a submission writes 4 words, not 64 B */
#define UFILE_DEVIO_OPT_FIXED_BUFFERS 0x2u /* READ_FIXED/WRITE_FIXED on the registered staging: \
                                              no page pinning per request (no-CPU path) */
#define UFILE_DEVIO_OPT_NARROW_COPY 0x4u   /* staging copies in 4-byte words, not 16 (for   \
                                              measurement) */
#define UFILE_DEVIO_OPT_LL 0x8u            /* proxy path: synchronous reads of at most  \
                                              view.ll_max bytes complete through "LL"   \
                                              lines (4 data bytes + a flag a word): one \
                                              host round trip brings data and completion \
                                              (docs/DEVICE_IO.md); ignored on no-CPU    */
#define UFILE_DEVIO_OPT_LL_STAGED 0x10u    /* with _LL: the data goes through the slot's    \
                                              staging, only the slot's completion word is \
                                              flagged: one thread polls it, then the group \
                                              copies (half the PCIe bytes of LL lines)    */
#define UFILE_DEVIO_OPT_DEFAULT UFILE_DEVIO_OPT_FIXED_BUFFERS

/* LL reads: the largest, and the bytes of host memory each slot gets for its
 * lines (a 16-byte header line, then 16 bytes per 8 data bytes). */
#define UFILE_DEVIO_LL_MAX_BYTES (64u * 1024u)
#define UFILE_DEVIO_LL_STRIDE(ll_max) ((16ull + 2ull * (ll_max) + 127ull) / 128ull * 128ull)

/* Negative results a device call returns (Linux errno values). Results from
 * the file system (-EIO, -ENOSPC, ...) pass through unchanged. */
#define UFILE_DEVIO_EBADF 9       /* file index out of range, or not readable/writable */
#define UFILE_DEVIO_EAGAIN 11     /* try-submit: every slot of the queue is in use */
#define UFILE_DEVIO_EFAULT 14     /* NULL buffer */
#define UFILE_DEVIO_EBUSY 16      /* no slot became free within the timeout */
#define UFILE_DEVIO_EINVAL 22     /* bad queue, negative offset, size overflow, bad ticket */
#define UFILE_DEVIO_E2BIG 7       /* asynchronous request larger than a slot's staging */
#define UFILE_DEVIO_ESHUTDOWN 108 /* the set is being destroyed */
#define UFILE_DEVIO_ETIMEDOUT 110 /* no completion within the timeout */

/* An io_uring submission queue entry (the kernel's layout, 64 bytes). */
typedef struct ufile_devio_sqe {
  uint8_t opcode;
  uint8_t flags;
  uint16_t ioprio;
  int32_t fd;
  uint64_t off;
  uint64_t addr;
  uint32_t len;
  uint32_t rw_flags;
  uint64_t user_data;
  uint16_t buf_index;
  uint16_t personality;
  int32_t splice_fd_in;
  uint64_t addr3;
  uint64_t pad2;
} ufile_devio_sqe_t;

/* An io_uring completion queue entry (16 bytes). */
typedef struct ufile_devio_cqe {
  uint64_t user_data;
  int32_t res;
  uint32_t flags;
} ufile_devio_cqe_t;

/* Per-queue state in device memory, written only by device code (one
 * 128-byte line). */
typedef struct ufile_devio_qctl {
  uint32_t sq_reserve;   /* next submission position handed out */
  uint32_t sq_published; /* positions below it are visible to the server */
  unsigned long long cq_state;   /* completions consumed << 32 | 1 while a thread reaps */
  unsigned long long claim_hint; /* the slot freed last: generation << 32 | slot */
  uint32_t cq_published;         /* the head value last stored to the ring */
  uint32_t held; /* slots claimed and not yet free again (a claim reserves here first) */
  unsigned long long submitted; /* SQEs published */
  unsigned long long reaped;    /* CQEs consumed */
  unsigned long long timeouts;  /* waits that gave up (slot abandoned) */
  unsigned long long stale;     /* CQEs for abandoned slots, or not for any slot */
  unsigned long long resubmits; /* short or EAGAIN results continued */
  unsigned long long pad1[7];
} ufile_devio_qctl_t;

/* One queue as device code sees it. */
typedef struct ufile_devio_queue {
  /* Host memory mapped into the GPU (device addresses). */
  ufile_devio_sqe_t *sqes;
  uint32_t *sq_array; /* NULL unless UFILE_DEVIO_OPT_TEMPLATES */
  uint32_t *sq_tail;
  uint32_t *cq_head;
  const uint32_t *cq_tail;
  const ufile_devio_cqe_t *cqes;
  uint8_t *staging;      /* slot s's buffer: staging + s * staging_bytes */
  uint64_t staging_host; /* the same memory's host address (what SQEs carry) */
  /* Device memory. */
  ufile_devio_qctl_t *ctl;
  unsigned long long *slots; /* depth words: state | (uint32_t)result << 32 */
  uint32_t sq_mask;
  uint32_t cq_mask;
  uint16_t buf_index; /* registered buffer of this queue's staging */
  uint16_t pad0;
  uint32_t pad1;
  /* UFILE_DEVIO_OPT_LL: slot s's LL lines at ll + s * UFILE_DEVIO_LL_STRIDE(ll_max)
   * (host memory mapped into the GPU, written only by the proxy); else NULL. */
  uint8_t *ll;
} ufile_devio_queue_t;

/* Flags of ufile_devio_file_t. */
#define UFILE_DEVIO_FILE_READ 0x1u
#define UFILE_DEVIO_FILE_WRITE 0x2u

/* One handle of the set. */
typedef struct ufile_devio_file {
  uint64_t handle;     /* the CUfileHandle_t's value */
  int32_t fd_direct;   /* fixed-file index of the O_DIRECT descriptor, or -1 */
  int32_t fd_buffered; /* fixed-file index of a descriptor without O_DIRECT */
  uint32_t flags;      /* UFILE_DEVIO_FILE_* */
  uint32_t align;      /* O_DIRECT alignment (a power of two), 0 without */
} ufile_devio_file_t;

/* What a kernel needs: pass it by value. Valid until ufile_devio_destroy. */
typedef struct ufile_devio_view {
  uint32_t abi_version;
  uint32_t num_queues;
  uint32_t depth;
  uint32_t num_files;
  uint64_t staging_bytes; /* per slot, a multiple of 4096 */
  uint64_t timeout_ns;    /* default bound of every device wait */
  uint32_t options;       /* UFILE_DEVIO_OPT_* in force */
  uint32_t path;          /* UFILE_DEVIO_PATH_NOCPU or _PROXY */
  uint32_t poll_ns;       /* back-off between polls of an idle wait */
  uint32_t ll_max;        /* UFILE_DEVIO_OPT_LL: reads up to this size use LL lines; else 0 */
  const ufile_devio_queue_t *queues; /* device memory */
  const ufile_devio_file_t *files;   /* device memory */
  const uint32_t *closing;           /* device memory; non-zero once destroy began */
} ufile_devio_view_t;

/* io_uring constants the protocol uses (the kernel ABI). */
#define UFILE_DEVIO_OP_NOP 0
#define UFILE_DEVIO_OP_READ_FIXED 4
#define UFILE_DEVIO_OP_WRITE_FIXED 5
#define UFILE_DEVIO_OP_READ 22
#define UFILE_DEVIO_OP_WRITE 23
/* ufile's own, proxy path only (no io_uring opcode is this high): a read whose
 * data and result the proxy writes as LL lines into the slot's LL area. */
#define UFILE_DEVIO_OP_READ_LL 0xe0
#define UFILE_DEVIO_SQE_FIXED_FILE 0x1u

#ifdef __cplusplus
}
#endif

#endif /* UFILE_DEVICE_TYPES_H_ */
