/* SPDX-License-Identifier: Apache-2.0 */
/* Every enumerator and integer macro of the CUDA 13.0 cuFile API, as X-macros
 * (ABI_ENUMERATOR(enum type, name), ABI_MACRO(name)); see abi_layout.h. */
#ifndef UFILE_TESTS_ABI_VALUES_H
#define UFILE_TESTS_ABI_VALUES_H

#define ABI_MACROS                              \
  ABI_MACRO(CUFILEOP_BASE_ERR)                  \
  ABI_MACRO(CU_FILE_RDMA_REGISTER)              \
  ABI_MACRO(CU_FILE_RDMA_RELAXED_ORDERING)      \
  ABI_MACRO(CU_FILE_STREAM_FIXED_BUF_OFFSET)    \
  ABI_MACRO(CU_FILE_STREAM_FIXED_FILE_OFFSET)   \
  ABI_MACRO(CU_FILE_STREAM_FIXED_FILE_SIZE)     \
  ABI_MACRO(CU_FILE_STREAM_PAGE_ALIGNED_INPUTS) \
  ABI_MACRO(CUFILE_GPU_UUID_LEN)

#define ABI_ENUMERATORS                                                                          \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_SUCCESS)                                                 \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DRIVER_NOT_INITIALIZED)                                  \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DRIVER_INVALID_PROPS)                                    \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DRIVER_UNSUPPORTED_LIMIT)                                \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DRIVER_VERSION_MISMATCH)                                 \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DRIVER_VERSION_READ_ERROR)                               \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DRIVER_CLOSING)                                          \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_PLATFORM_NOT_SUPPORTED)                                  \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_IO_NOT_SUPPORTED)                                        \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DEVICE_NOT_SUPPORTED)                                    \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_NVFS_DRIVER_ERROR)                                       \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_CUDA_DRIVER_ERROR)                                       \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_CUDA_POINTER_INVALID)                                    \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_CUDA_MEMORY_TYPE_INVALID)                                \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_CUDA_POINTER_RANGE_ERROR)                                \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_CUDA_CONTEXT_MISMATCH)                                   \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INVALID_MAPPING_SIZE)                                    \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INVALID_MAPPING_RANGE)                                   \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INVALID_FILE_TYPE)                                       \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INVALID_FILE_OPEN_FLAG)                                  \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DIO_NOT_SET)                                             \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INVALID_VALUE)                                           \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_MEMORY_ALREADY_REGISTERED)                               \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_MEMORY_NOT_REGISTERED)                                   \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_PERMISSION_DENIED)                                       \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DRIVER_ALREADY_OPEN)                                     \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_HANDLE_NOT_REGISTERED)                                   \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_HANDLE_ALREADY_REGISTERED)                               \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_DEVICE_NOT_FOUND)                                        \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INTERNAL_ERROR)                                          \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_GETNEWFD_FAILED)                                         \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_NVFS_SETUP_ERROR)                                        \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_IO_DISABLED)                                             \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_BATCH_SUBMIT_FAILED)                                     \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_GPU_MEMORY_PINNING_FAILED)                               \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_BATCH_FULL)                                              \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_ASYNC_NOT_SUPPORTED)                                     \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INTERNAL_BATCH_SETUP_ERROR)                              \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR)                             \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR)                          \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INTERNAL_BATCH_CANCEL_ERROR)                             \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_NOMEM_ERROR)                                             \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_IO_ERROR)                                                \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INTERNAL_BUF_REGISTER_ERROR)                             \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_HASH_OPR_ERROR)                                          \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_INVALID_CONTEXT_ERROR)                                   \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_NVFS_INTERNAL_DRIVER_ERROR)                              \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_BATCH_NOCOMPAT_ERROR)                                    \
  ABI_ENUMERATOR(CUfileOpError, CU_FILE_IO_MAX_ERROR)                                            \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_LUSTRE_SUPPORTED)                            \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_WEKAFS_SUPPORTED)                            \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_NFS_SUPPORTED)                               \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_GPFS_SUPPORTED)                              \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_NVME_SUPPORTED)                              \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_NVMEOF_SUPPORTED)                            \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_SCSI_SUPPORTED)                              \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_SCALEFLUX_CSD_SUPPORTED)                     \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_NVMESH_SUPPORTED)                            \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_BEEGFS_SUPPORTED)                            \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_NVME_P2P_SUPPORTED)                          \
  ABI_ENUMERATOR(CUfileDriverStatusFlags_t, CU_FILE_SCATEFS_SUPPORTED)                           \
  ABI_ENUMERATOR(CUfileDriverControlFlags_t, CU_FILE_USE_POLL_MODE)                              \
  ABI_ENUMERATOR(CUfileDriverControlFlags_t, CU_FILE_ALLOW_COMPAT_MODE)                          \
  ABI_ENUMERATOR(CUfileFeatureFlags_t, CU_FILE_DYN_ROUTING_SUPPORTED)                            \
  ABI_ENUMERATOR(CUfileFeatureFlags_t, CU_FILE_BATCH_IO_SUPPORTED)                               \
  ABI_ENUMERATOR(CUfileFeatureFlags_t, CU_FILE_STREAMS_SUPPORTED)                                \
  ABI_ENUMERATOR(CUfileFeatureFlags_t, CU_FILE_PARALLEL_IO_SUPPORTED)                            \
  ABI_ENUMERATOR(enum CUfileFileHandleType, CU_FILE_HANDLE_TYPE_OPAQUE_FD)                       \
  ABI_ENUMERATOR(enum CUfileFileHandleType, CU_FILE_HANDLE_TYPE_OPAQUE_WIN32)                    \
  ABI_ENUMERATOR(enum CUfileFileHandleType, CU_FILE_HANDLE_TYPE_USERSPACE_FS)                    \
  ABI_ENUMERATOR(CUfileOpcode_t, CUFILE_READ)                                                    \
  ABI_ENUMERATOR(CUfileOpcode_t, CUFILE_WRITE)                                                   \
  ABI_ENUMERATOR(CUfileStatus_t, CUFILE_WAITING)                                                 \
  ABI_ENUMERATOR(CUfileStatus_t, CUFILE_PENDING)                                                 \
  ABI_ENUMERATOR(CUfileStatus_t, CUFILE_INVALID)                                                 \
  ABI_ENUMERATOR(CUfileStatus_t, CUFILE_CANCELED)                                                \
  ABI_ENUMERATOR(CUfileStatus_t, CUFILE_COMPLETE)                                                \
  ABI_ENUMERATOR(CUfileStatus_t, CUFILE_TIMEOUT)                                                 \
  ABI_ENUMERATOR(CUfileStatus_t, CUFILE_FAILED)                                                  \
  ABI_ENUMERATOR(CUfileBatchMode_t, CUFILE_BATCH)                                                \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_PROFILE_STATS)                       \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH)        \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_EXECUTION_MAX_IO_THREADS)            \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB)  \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM)   \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB)    \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB) \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB) \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t,                                                   \
                 CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB)                          \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE)             \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB)               \
  ABI_ENUMERATOR(CUFileSizeTConfigParameter_t, CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS)      \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_PROPERTIES_USE_POLL_MODE)             \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE)         \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_FORCE_COMPAT_MODE)                    \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE)         \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_EXECUTION_PARALLEL_IO)                \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_PROFILE_NVTX)                         \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY)       \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_USE_PCIP2PDMA)                        \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_PREFER_IO_URING)                      \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_FORCE_ODIRECT_MODE)                   \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION)              \
  ABI_ENUMERATOR(CUFileBoolConfigParameter_t, CUFILE_PARAM_STREAM_MEMOPS_BYPASS)                 \
  ABI_ENUMERATOR(CUFileStringConfigParameter_t, CUFILE_PARAM_LOGGING_LEVEL)                      \
  ABI_ENUMERATOR(CUFileStringConfigParameter_t, CUFILE_PARAM_ENV_LOGFILE_PATH)                   \
  ABI_ENUMERATOR(CUFileStringConfigParameter_t, CUFILE_PARAM_LOG_DIR)                            \
  ABI_ENUMERATOR(CUFileArrayConfigParameter_t, CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB)             \
  ABI_ENUMERATOR(CUFileArrayConfigParameter_t, CUFILE_PARAM_POSIX_POOL_SLAB_COUNT)               \
  /* end */

#endif /* UFILE_TESTS_ABI_VALUES_H */
