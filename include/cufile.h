/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cufile.h - the cuFile C API (GPUDirect Storage), as implemented by ufile.
 *
 * Written by the ufile developers from the published cuFile API. Every type,
 * enumerator, macro and struct layout is ABI-identical to the cufile.h of
 * CUDA 13.0 (libcufile 1.15); tests/abi checks it against NVIDIA's header.
 * All functions are thread-safe. Functions returning CUfileError_t report
 * success as {CU_FILE_SUCCESS, CUDA_SUCCESS}; cuFileRead/cuFileWrite return
 * bytes done, -1 with errno set, or -CUfileOpError.
 */
#ifndef __CUFILE_H_
#define __CUFILE_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#if defined(__has_include)
#if __has_include(<cuda.h>)
#include <cuda.h>
#define UFILE_HAVE_CUDA_H 1
#endif
#endif
#ifndef UFILE_HAVE_CUDA_H
/* No CUDA toolkit: the two driver types the API names, with cuda.h's tags. */
typedef enum cudaError_enum { CUDA_SUCCESS = 0 } CUresult;
typedef struct CUstream_st *CUstream;
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CUFILE_API __attribute__((visibility("default")))

/* ---- status codes ------------------------------------------------------ */

#define CUFILEOP_BASE_ERR 5000

/* X-macro: code, enumerator, description. Data-path errors use errno. */
#define CUFILEOP_STATUS_ENTRIES \
  CUFILE_OP(0, CU_FILE_SUCCESS, success) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 1, CU_FILE_DRIVER_NOT_INITIALIZED, driver not initialized) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 2, CU_FILE_DRIVER_INVALID_PROPS, invalid driver property) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 3, CU_FILE_DRIVER_UNSUPPORTED_LIMIT, value outside the supported range) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 4, CU_FILE_DRIVER_VERSION_MISMATCH, driver version mismatch) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 5, CU_FILE_DRIVER_VERSION_READ_ERROR, driver version unreadable) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 6, CU_FILE_DRIVER_CLOSING, driver is closing) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 7, CU_FILE_PLATFORM_NOT_SUPPORTED, platform not supported) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 8, CU_FILE_IO_NOT_SUPPORTED, I/O not supported on this file) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 9, CU_FILE_DEVICE_NOT_SUPPORTED, GPU not supported) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 10, CU_FILE_NVFS_DRIVER_ERROR, nvidia-fs ioctl error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 11, CU_FILE_CUDA_DRIVER_ERROR, CUDA driver error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 12, CU_FILE_CUDA_POINTER_INVALID, invalid device pointer) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 13, CU_FILE_CUDA_MEMORY_TYPE_INVALID, unsupported memory type) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 14, CU_FILE_CUDA_POINTER_RANGE_ERROR, range beyond the allocation) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 15, CU_FILE_CUDA_CONTEXT_MISMATCH, CUDA context mismatch) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 16, CU_FILE_INVALID_MAPPING_SIZE, access beyond the pinned size) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 17, CU_FILE_INVALID_MAPPING_RANGE, access beyond the mapped size) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 18, CU_FILE_INVALID_FILE_TYPE, unsupported file type) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 19, CU_FILE_INVALID_FILE_OPEN_FLAG, unsupported open flags) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 20, CU_FILE_DIO_NOT_SET, O_DIRECT not set) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 22, CU_FILE_INVALID_VALUE, invalid argument) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 23, CU_FILE_MEMORY_ALREADY_REGISTERED, buffer already registered) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 24, CU_FILE_MEMORY_NOT_REGISTERED, buffer not registered) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 25, CU_FILE_PERMISSION_DENIED, permission denied) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 26, CU_FILE_DRIVER_ALREADY_OPEN, driver already open) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 27, CU_FILE_HANDLE_NOT_REGISTERED, file handle not registered) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 28, CU_FILE_HANDLE_ALREADY_REGISTERED, file handle already registered) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 29, CU_FILE_DEVICE_NOT_FOUND, GPU not found) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 30, CU_FILE_INTERNAL_ERROR, internal error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 31, CU_FILE_GETNEWFD_FAILED, could not obtain a file descriptor) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 33, CU_FILE_NVFS_SETUP_ERROR, nvidia-fs setup error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 34, CU_FILE_IO_DISABLED, I/O disabled by configuration) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 35, CU_FILE_BATCH_SUBMIT_FAILED, batch submission failed) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 36, CU_FILE_GPU_MEMORY_PINNING_FAILED, memory pinning failed) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 37, CU_FILE_BATCH_FULL, batch queue full) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 38, CU_FILE_ASYNC_NOT_SUPPORTED, stream operation not supported) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 39, CU_FILE_INTERNAL_BATCH_SETUP_ERROR, batch setup error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 40, CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR, batch submit error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 41, CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR, batch status error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 42, CU_FILE_INTERNAL_BATCH_CANCEL_ERROR, batch cancel error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 43, CU_FILE_NOMEM_ERROR, out of memory) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 44, CU_FILE_IO_ERROR, I/O error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 45, CU_FILE_INTERNAL_BUF_REGISTER_ERROR, buffer registration error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 46, CU_FILE_HASH_OPR_ERROR, hash table error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 47, CU_FILE_INVALID_CONTEXT_ERROR, invalid context) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 48, CU_FILE_NVFS_INTERNAL_DRIVER_ERROR, nvidia-fs internal error) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 49, CU_FILE_BATCH_NOCOMPAT_ERROR, compatibility mode off) \
  CUFILE_OP(CUFILEOP_BASE_ERR + 50, CU_FILE_IO_MAX_ERROR, last error code)

typedef enum CUfileOpError {
#define CUFILE_OP(code, name, text) name = code,
  CUFILEOP_STATUS_ENTRIES
#undef CUFILE_OP
} CUfileOpError;

/* The description of a status code; never NULL. */
static inline const char *cufileop_status_error(CUfileOpError status) {
  switch (status) {
#define CUFILE_OP(code, name, text) \
  case name:                        \
    return #text;
    CUFILEOP_STATUS_ENTRIES
#undef CUFILE_OP
    default:
      return "unknown cufile error";
  }
}

typedef struct CUfileError {
  CUfileOpError err; /* cuFile status */
  CUresult cu_err;   /* CUDA driver status when err is CU_FILE_CUDA_DRIVER_ERROR */
} CUfileError_t;

#define IS_CUFILE_ERR(err) (abs((err)) > CUFILEOP_BASE_ERR)
#define CUFILE_ERRSTR(err) cufileop_status_error((CUfileOpError)abs((err)))
#define IS_CUDA_ERR(status) ((status).err == CU_FILE_CUDA_DRIVER_ERROR)
#define CU_FILE_CUDA_ERR(status) ((status).cu_err)

/* ---- driver properties ------------------------------------------------- */

/* Bit numbers in CUfileDrvProps_t.nvfs.dstatusflags. */
typedef enum CUfileDriverStatusFlags {
  CU_FILE_LUSTRE_SUPPORTED = 0,
  CU_FILE_WEKAFS_SUPPORTED = 1,
  CU_FILE_NFS_SUPPORTED = 2,
  CU_FILE_GPFS_SUPPORTED = 3,
  CU_FILE_NVME_SUPPORTED = 4,
  CU_FILE_NVMEOF_SUPPORTED = 5,
  CU_FILE_SCSI_SUPPORTED = 6,
  CU_FILE_SCALEFLUX_CSD_SUPPORTED = 7,
  CU_FILE_NVMESH_SUPPORTED = 8,
  CU_FILE_BEEGFS_SUPPORTED = 9,
  /* 10 is reserved */
  CU_FILE_NVME_P2P_SUPPORTED = 11,
  CU_FILE_SCATEFS_SUPPORTED = 12,
} CUfileDriverStatusFlags_t;

/* Bit numbers in CUfileDrvProps_t.nvfs.dcontrolflags. */
typedef enum CUfileDriverControlFlags {
  CU_FILE_USE_POLL_MODE = 0,
  CU_FILE_ALLOW_COMPAT_MODE = 1,
} CUfileDriverControlFlags_t;

/* Bit numbers in CUfileDrvProps_t.fflags. */
typedef enum CUfileFeatureFlags {
  CU_FILE_DYN_ROUTING_SUPPORTED = 0,
  CU_FILE_BATCH_IO_SUPPORTED = 1,
  CU_FILE_STREAMS_SUPPORTED = 2,
  CU_FILE_PARALLEL_IO_SUPPORTED = 3,
} CUfileFeatureFlags_t;

typedef struct CUfileDrvProps {
  struct {
    unsigned int major_version;
    unsigned int minor_version;
    size_t poll_thresh_size;   /* KiB */
    size_t max_direct_io_size; /* KiB */
    unsigned int dstatusflags; /* CUfileDriverStatusFlags_t bits */
    unsigned int dcontrolflags; /* CUfileDriverControlFlags_t bits */
  } nvfs;
  unsigned int fflags; /* CUfileFeatureFlags_t bits */
  unsigned int max_device_cache_size;      /* KiB */
  unsigned int per_buffer_cache_size;      /* KiB */
  unsigned int max_device_pinned_mem_size; /* KiB */
  unsigned int max_batch_io_size;
  unsigned int max_batch_io_timeout_msecs;
} CUfileDrvProps_t;

/* ---- file handles ------------------------------------------------------ */

typedef struct sockaddr sockaddr_t;

typedef struct cufileRDMAInfo {
  int version;
  int desc_len;
  const char *desc_str;
} cufileRDMAInfo_t;

#define CU_FILE_RDMA_REGISTER 1
#define CU_FILE_RDMA_RELAXED_ORDERING (1 << 1)

/* Callbacks of a user-space filesystem (CU_FILE_HANDLE_TYPE_USERSPACE_FS).
 * read/write get the descriptor's handle, a host buffer, a size and an
 * offset, and return bytes done or a negative errno. */
typedef struct CUfileFSOps {
  const char *(*fs_type)(void *handle);
  int (*getRDMADeviceList)(void *handle, sockaddr_t **hostaddrs);
  int (*getRDMADevicePriority)(void *handle, char *, size_t, loff_t, sockaddr_t *hostaddr);
  ssize_t (*read)(void *handle, char *, size_t, loff_t, cufileRDMAInfo_t *);
  ssize_t (*write)(void *handle, const char *, size_t, loff_t, cufileRDMAInfo_t *);
} CUfileFSOps_t;

enum CUfileFileHandleType {
  CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1,    /* a Linux file descriptor */
  CU_FILE_HANDLE_TYPE_OPAQUE_WIN32 = 2, /* unsupported */
  CU_FILE_HANDLE_TYPE_USERSPACE_FS = 3, /* calls fs_ops */
};

typedef struct CUfileDescr_t {
  enum CUfileFileHandleType type;
  union {
    int fd;
    void *handle;
  } handle;
  const CUfileFSOps_t *fs_ops;
} CUfileDescr_t;

typedef void *CUfileHandle_t;

/* Registers descr. Returns CU_FILE_SUCCESS and sets *fh; CU_FILE_INVALID_VALUE
 * for NULL arguments or a bad type; CU_FILE_INVALID_FILE_TYPE for a descriptor
 * that is not a regular file or block device; CU_FILE_HANDLE_ALREADY_REGISTERED
 * when the descriptor is registered already. */
CUFILE_API CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr);
/* Releases fh after the I/O using it has finished. */
CUFILE_API void cuFileHandleDeregister(CUfileHandle_t fh);

/* ---- buffers ----------------------------------------------------------- */

/* Registers [bufPtr_base, bufPtr_base + length) of device or host memory.
 * CU_FILE_INVALID_VALUE: NULL, zero length or unknown flags;
 * CU_FILE_MEMORY_ALREADY_REGISTERED: overlaps a registered range;
 * CU_FILE_CUDA_POINTER_RANGE_ERROR: the range leaves its allocation. */
CUFILE_API CUfileError_t cuFileBufRegister(const void *bufPtr_base, size_t length, int flags);
/* CU_FILE_MEMORY_NOT_REGISTERED when bufPtr_base starts no registered range. */
CUFILE_API CUfileError_t cuFileBufDeregister(const void *bufPtr_base);

/* ---- synchronous I/O --------------------------------------------------- */

/* Reads size bytes at file_offset into bufPtr_base + bufPtr_offset.
 * Returns bytes read (short only at end of file), -1 with errno, or
 * -CUfileOpError. */
CUFILE_API ssize_t cuFileRead(CUfileHandle_t fh, void *bufPtr_base, size_t size,
                              off_t file_offset, off_t bufPtr_offset);
/* Writes size bytes from bufPtr_base + bufPtr_offset at file_offset; the
 * data has reached the file (not necessarily the disk) when it returns. */
CUFILE_API ssize_t cuFileWrite(CUfileHandle_t fh, const void *bufPtr_base, size_t size,
                               off_t file_offset, off_t bufPtr_offset);

/* ---- driver ------------------------------------------------------------ */

/* Opens the library; optional (first use opens it). Nested opens count. */
CUFILE_API CUfileError_t cuFileDriverOpen(void);
CUFILE_API CUfileError_t cuFileDriverClose(void);
#define cuFileDriverClose cuFileDriverClose_v2
/* Drops one use; the last one waits for I/O in flight, then releases all. */
CUFILE_API CUfileError_t cuFileDriverClose(void);
/* Number of opens not yet closed. */
CUFILE_API long cuFileUseCount(void);
CUFILE_API CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *props);
/* CU_FILE_DRIVER_NOT_INITIALIZED before open; sizes are in KiB. */
CUFILE_API CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size);
CUFILE_API CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t max_direct_io_size);
CUFILE_API CUfileError_t cuFileDriverSetMaxCacheSize(size_t max_cache_size);
CUFILE_API CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t max_pinned_size);

/* ---- batch I/O --------------------------------------------------------- */

typedef enum CUfileOpcode { CUFILE_READ = 0, CUFILE_WRITE } CUfileOpcode_t;

typedef enum CUFILEStatus_enum {
  CUFILE_WAITING = 0x000001,
  CUFILE_PENDING = 0x000002,
  CUFILE_INVALID = 0x000004,
  CUFILE_CANCELED = 0x000008,
  CUFILE_COMPLETE = 0x0000010,
  CUFILE_TIMEOUT = 0x0000020,
  CUFILE_FAILED = 0x0000040,
} CUfileStatus_t;

typedef enum cufileBatchMode {
  CUFILE_BATCH = 1,
} CUfileBatchMode_t;

typedef struct CUfileIOParams {
  CUfileBatchMode_t mode; /* first field */
  union {
    struct {
      void *devPtr_base; /* device or host memory */
      off_t file_offset;
      off_t devPtr_offset;
      size_t size;
    } batch;
  } u;
  CUfileHandle_t fh;
  CUfileOpcode_t opcode;
  void *cookie;
} CUfileIOParams_t;

typedef struct CUfileIOEvents {
  void *cookie;
  CUfileStatus_t status;
  size_t ret; /* bytes done, or a negative error stored in a size_t */
} CUfileIOEvents_t;

typedef void *CUfileBatchHandle_t;

CUFILE_API CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *batch_idp, unsigned nr);
CUFILE_API CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr,
                                             CUfileIOParams_t *iocbp, unsigned int flags);
CUFILE_API CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr,
                                                unsigned *nr, CUfileIOEvents_t *iocbp,
                                                struct timespec *timeout);
CUFILE_API CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp);
CUFILE_API void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp);

/* ---- stream-ordered I/O ------------------------------------------------ */

#define CU_FILE_STREAM_FIXED_BUF_OFFSET 1    /* *bufPtr_offset_p read at submission */
#define CU_FILE_STREAM_FIXED_FILE_OFFSET 2   /* *file_offset_p read at submission */
#define CU_FILE_STREAM_FIXED_FILE_SIZE 4     /* *size_p read at submission */
#define CU_FILE_STREAM_PAGE_ALIGNED_INPUTS 8 /* size and offsets 4 KiB aligned */

CUFILE_API CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p,
                                         off_t *file_offset_p, off_t *bufPtr_offset_p,
                                         ssize_t *bytes_read_p, CUstream stream);
CUFILE_API CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p,
                                          off_t *file_offset_p, off_t *bufPtr_offset_p,
                                          ssize_t *bytes_written_p, CUstream stream);
CUFILE_API CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags);
CUFILE_API CUfileError_t cuFileStreamDeregister(CUstream stream);

/* ---- version and parameters -------------------------------------------- */

/* *version = 1000 * major + 10 * minor. */
CUFILE_API CUfileError_t cuFileGetVersion(int *version);

typedef enum CUFileSizeTConfigParameter_t {
  CUFILE_PARAM_PROFILE_STATS,
  CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH,
  CUFILE_PARAM_EXECUTION_MAX_IO_THREADS,
  CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB,
  CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM,
  CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB,
  CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB,
  CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB,
  CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB,
  CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE,
  CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB,
  CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS,
} CUFileSizeTConfigParameter_t;

typedef enum CUFileBoolConfigParameter_t {
  CUFILE_PARAM_PROPERTIES_USE_POLL_MODE,
  CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE,
  CUFILE_PARAM_FORCE_COMPAT_MODE,
  CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE,
  CUFILE_PARAM_EXECUTION_PARALLEL_IO,
  CUFILE_PARAM_PROFILE_NVTX,
  CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY,
  CUFILE_PARAM_USE_PCIP2PDMA,
  CUFILE_PARAM_PREFER_IO_URING,
  CUFILE_PARAM_FORCE_ODIRECT_MODE,
  CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION,
  CUFILE_PARAM_STREAM_MEMOPS_BYPASS,
} CUFileBoolConfigParameter_t;

typedef enum CUFileStringConfigParameter_t {
  CUFILE_PARAM_LOGGING_LEVEL,
  CUFILE_PARAM_ENV_LOGFILE_PATH,
  CUFILE_PARAM_LOG_DIR,
} CUFileStringConfigParameter_t;

typedef enum CUFileArrayConfigParameter_t {
  CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB,
  CUFILE_PARAM_POSIX_POOL_SLAB_COUNT,
} CUFileArrayConfigParameter_t;

/* Getters return the running value once open, the staged value before.
 * CU_FILE_INVALID_VALUE for an unknown parameter or a NULL pointer. */
CUFILE_API CUfileError_t cuFileGetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t *value);
CUFILE_API CUfileError_t cuFileGetParameterBool(CUFileBoolConfigParameter_t param, bool *value);
/* Copies at most len - 1 characters and a NUL. */
CUFILE_API CUfileError_t cuFileGetParameterString(CUFileStringConfigParameter_t param,
                                                  char *desc_str, int len);
CUFILE_API CUfileError_t cuFileGetParameterMinMaxValue(CUFileSizeTConfigParameter_t param,
                                                       size_t *min_value, size_t *max_value);
/* Setters stage a value for the next open: CU_FILE_DRIVER_ALREADY_OPEN while
 * open, CU_FILE_INVALID_VALUE for an unknown parameter or a value out of range. */
CUFILE_API CUfileError_t cuFileSetParameterSizeT(CUFileSizeTConfigParameter_t param, size_t value);
CUFILE_API CUfileError_t cuFileSetParameterBool(CUFileBoolConfigParameter_t param, bool value);
CUFILE_API CUfileError_t cuFileSetParameterString(CUFileStringConfigParameter_t param,
                                                  const char *desc_str);

/* ---- statistics -------------------------------------------------------- */

/* 0 (off) to 3; others CU_FILE_INVALID_VALUE. */
CUFILE_API CUfileError_t cuFileSetStatsLevel(int level);
CUFILE_API CUfileError_t cuFileGetStatsLevel(int *level);

#define CUFILE_GPU_UUID_LEN 16

typedef struct CUfileOpCounter {
  uint64_t ok;
  uint64_t err;
} CUfileOpCounter_t;

typedef struct CUfileStatsLevel1 {
  CUfileOpCounter_t read_ops;
  CUfileOpCounter_t write_ops;
  CUfileOpCounter_t hdl_register_ops;
  CUfileOpCounter_t hdl_deregister_ops;
  CUfileOpCounter_t buf_register_ops;
  CUfileOpCounter_t buf_deregister_ops;
  uint64_t read_bytes;
  uint64_t write_bytes;
  uint64_t read_bw_bytes_per_sec;
  uint64_t write_bw_bytes_per_sec;
  uint64_t read_lat_avg_us;
  uint64_t write_lat_avg_us;
  uint64_t read_ops_per_sec;
  uint64_t write_ops_per_sec;
  uint64_t read_lat_sum_us;
  uint64_t write_lat_sum_us;
  CUfileOpCounter_t batch_submit_ops;
  CUfileOpCounter_t batch_complete_ops;
  CUfileOpCounter_t batch_setup_ops;
  CUfileOpCounter_t batch_cancel_ops;
  CUfileOpCounter_t batch_destroy_ops;
  CUfileOpCounter_t batch_enqueued_ops;
  CUfileOpCounter_t batch_posix_enqueued_ops;
  CUfileOpCounter_t batch_processed_ops;
  CUfileOpCounter_t batch_posix_processed_ops;
  CUfileOpCounter_t batch_nvfs_submit_ops;
  CUfileOpCounter_t batch_p2p_submit_ops;
  CUfileOpCounter_t batch_aio_submit_ops;
  CUfileOpCounter_t batch_iouring_submit_ops;
  CUfileOpCounter_t batch_mixed_io_submit_ops;
  CUfileOpCounter_t batch_total_submit_ops;
  uint64_t batch_read_bytes;
  uint64_t batch_write_bytes;
  uint64_t batch_read_bw_bytes;
  uint64_t batch_write_bw_bytes;
  uint64_t batch_submit_lat_avg_us;
  uint64_t batch_completion_lat_avg_us;
  uint64_t batch_submit_ops_per_sec;
  uint64_t batch_complete_ops_per_sec;
  uint64_t batch_submit_lat_sum_us;
  uint64_t batch_completion_lat_sum_us;
  uint64_t last_batch_read_bytes;
  uint64_t last_batch_write_bytes;
} CUfileStatsLevel1_t;

typedef struct CUfileStatsLevel2 {
  CUfileStatsLevel1_t basic;
  uint64_t read_size_kb_hist[32]; /* bucket i: sizes in [2^(i-1), 2^i) KiB */
  uint64_t write_size_kb_hist[32];
} CUfileStatsLevel2_t;

typedef struct CUfilePerGpuStats {
  char uuid[CUFILE_GPU_UUID_LEN];
  uint64_t read_bytes;
  uint64_t read_bw_bytes_per_sec;
  uint64_t read_utilization;
  uint64_t read_duration_us;
  uint64_t n_total_reads;
  uint64_t n_p2p_reads;
  uint64_t n_nvfs_reads;
  uint64_t n_posix_reads;
  uint64_t n_unaligned_reads;
  uint64_t n_dr_reads;
  uint64_t n_sparse_regions;
  uint64_t n_inline_regions;
  uint64_t n_reads_err;
  uint64_t writes_bytes;
  uint64_t write_bw_bytes_per_sec;
  uint64_t write_utilization;
  uint64_t write_duration_us;
  uint64_t n_total_writes;
  uint64_t n_p2p_writes;
  uint64_t n_nvfs_writes;
  uint64_t n_posix_writes;
  uint64_t n_unaligned_writes;
  uint64_t n_dr_writes;
  uint64_t n_writes_err;
  uint64_t n_mmap;
  uint64_t n_mmap_ok;
  uint64_t n_mmap_err;
  uint64_t n_mmap_free;
  uint64_t reg_bytes;
} CUfilePerGpuStats_t;

typedef struct CUfileStatsLevel3 {
  CUfileStatsLevel2_t detailed;
  uint32_t num_gpus;
  CUfilePerGpuStats_t per_gpu_stats[16];
} CUfileStatsLevel3_t;

CUFILE_API CUfileError_t cuFileStatsStart(void);
CUFILE_API CUfileError_t cuFileStatsStop(void);
CUFILE_API CUfileError_t cuFileStatsReset(void);
/* CU_FILE_INVALID_VALUE for NULL or a level below the one asked for. */
CUFILE_API CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats);
CUFILE_API CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats);
CUFILE_API CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats);

/* BAR1 aperture of GPU gpuIndex, in KiB. */
CUFILE_API CUfileError_t cuFileGetBARSizeInKB(int gpuIndex, size_t *barSize);

/* Slab sizes (KiB) and counts of the pinned staging pool, as pairs. */
CUFILE_API CUfileError_t cuFileSetParameterPosixPoolSlabArray(const size_t *size_values,
                                                              const size_t *count_values, int len);
CUFILE_API CUfileError_t cuFileGetParameterPosixPoolSlabArray(size_t *size_values,
                                                              size_t *count_values, int len);

#ifdef __cplusplus
}
#endif

#endif /* __CUFILE_H_ */
