/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every type, member, enumerator and constant of the CUDA 13.0 cuFile API,
 * as X-macros that abi_dump.c prints (size, alignment, offset, value) and
 * abi_types.cpp checks (exact C++ types, struct and enum tags). Expand with:
 *   ABI_ENUM(type, tag)        an enum type; tag is its C++ name
 *   ABI_STRUCT(type, tag)      a struct or union type
 *   ABI_ALIAS(type, ...)       a typedef of another type (...)
 *   ABI_MEMBER(type, m, ...)   member m (may be nested: a.b) of type ...
 *   ABI_NESTED(type, m)        a member of an unnamed struct or union type
 *   ABI_ENUMERATOR(type, e)    enumerator e of enum type
 *   ABI_MACRO(m)               an integer constant macro
 */
#ifndef UFILE_TESTS_ABI_LAYOUT_H
#define UFILE_TESTS_ABI_LAYOUT_H

/* Types that the header takes from cuda.h (or its fallback). */
#define ABI_DEPENDENCIES             \
  ABI_ENUM(CUresult, cudaError_enum) \
  ABI_ALIAS(CUstream, struct CUstream_st *)

#define ABI_TYPES                                                                                  \
  ABI_ENUM(CUfileOpError, CUfileOpError)                                                           \
  ABI_STRUCT(CUfileError_t, CUfileError)                                                           \
  ABI_MEMBER(CUfileError_t, err, CUfileOpError)                                                    \
  ABI_MEMBER(CUfileError_t, cu_err, CUresult)                                                      \
  ABI_ENUM(CUfileDriverStatusFlags_t, CUfileDriverStatusFlags)                                     \
  ABI_ENUM(CUfileDriverControlFlags_t, CUfileDriverControlFlags)                                   \
  ABI_ENUM(CUfileFeatureFlags_t, CUfileFeatureFlags)                                               \
  ABI_STRUCT(CUfileDrvProps_t, CUfileDrvProps)                                                     \
  ABI_NESTED(CUfileDrvProps_t, nvfs)                                                               \
  ABI_MEMBER(CUfileDrvProps_t, nvfs.major_version, unsigned int)                                   \
  ABI_MEMBER(CUfileDrvProps_t, nvfs.minor_version, unsigned int)                                   \
  ABI_MEMBER(CUfileDrvProps_t, nvfs.poll_thresh_size, size_t)                                      \
  ABI_MEMBER(CUfileDrvProps_t, nvfs.max_direct_io_size, size_t)                                    \
  ABI_MEMBER(CUfileDrvProps_t, nvfs.dstatusflags, unsigned int)                                    \
  ABI_MEMBER(CUfileDrvProps_t, nvfs.dcontrolflags, unsigned int)                                   \
  ABI_MEMBER(CUfileDrvProps_t, fflags, unsigned int)                                               \
  ABI_MEMBER(CUfileDrvProps_t, max_device_cache_size, unsigned int)                                \
  ABI_MEMBER(CUfileDrvProps_t, per_buffer_cache_size, unsigned int)                                \
  ABI_MEMBER(CUfileDrvProps_t, max_device_pinned_mem_size, unsigned int)                           \
  ABI_MEMBER(CUfileDrvProps_t, max_batch_io_size, unsigned int)                                    \
  ABI_MEMBER(CUfileDrvProps_t, max_batch_io_timeout_msecs, unsigned int)                           \
  ABI_ALIAS(sockaddr_t, struct sockaddr)                                                           \
  ABI_STRUCT(cufileRDMAInfo_t, cufileRDMAInfo)                                                     \
  ABI_MEMBER(cufileRDMAInfo_t, version, int)                                                       \
  ABI_MEMBER(cufileRDMAInfo_t, desc_len, int)                                                      \
  ABI_MEMBER(cufileRDMAInfo_t, desc_str, const char *)                                             \
  ABI_STRUCT(CUfileFSOps_t, CUfileFSOps)                                                           \
  ABI_MEMBER(CUfileFSOps_t, fs_type, const char *(*)(void *))                                      \
  ABI_MEMBER(CUfileFSOps_t, getRDMADeviceList, int (*)(void *, sockaddr_t **))                     \
  ABI_MEMBER(CUfileFSOps_t, getRDMADevicePriority,                                                 \
             int (*)(void *, char *, size_t, loff_t, sockaddr_t *))                                \
  ABI_MEMBER(CUfileFSOps_t, read, ssize_t (*)(void *, char *, size_t, loff_t, cufileRDMAInfo_t *)) \
  ABI_MEMBER(CUfileFSOps_t, write,                                                                 \
             ssize_t (*)(void *, const char *, size_t, loff_t, cufileRDMAInfo_t *))                \
  ABI_ENUM(enum CUfileFileHandleType, CUfileFileHandleType)                                        \
  ABI_STRUCT(CUfileDescr_t, CUfileDescr_t)                                                         \
  ABI_MEMBER(CUfileDescr_t, type, enum CUfileFileHandleType)                                       \
  ABI_NESTED(CUfileDescr_t, handle)                                                                \
  ABI_MEMBER(CUfileDescr_t, handle.fd, int)                                                        \
  ABI_MEMBER(CUfileDescr_t, handle.handle, void *)                                                 \
  ABI_MEMBER(CUfileDescr_t, fs_ops, const CUfileFSOps_t *)                                         \
  ABI_ALIAS(CUfileHandle_t, void *)                                                                \
  ABI_ENUM(CUfileOpcode_t, CUfileOpcode)                                                           \
  ABI_ENUM(CUfileStatus_t, CUFILEStatus_enum)                                                      \
  ABI_ENUM(CUfileBatchMode_t, cufileBatchMode)                                                     \
  ABI_STRUCT(CUfileIOParams_t, CUfileIOParams)                                                     \
  ABI_MEMBER(CUfileIOParams_t, mode, CUfileBatchMode_t)                                            \
  ABI_NESTED(CUfileIOParams_t, u)                                                                  \
  ABI_NESTED(CUfileIOParams_t, u.batch)                                                            \
  ABI_MEMBER(CUfileIOParams_t, u.batch.devPtr_base, void *)                                        \
  ABI_MEMBER(CUfileIOParams_t, u.batch.file_offset, off_t)                                         \
  ABI_MEMBER(CUfileIOParams_t, u.batch.devPtr_offset, off_t)                                       \
  ABI_MEMBER(CUfileIOParams_t, u.batch.size, size_t)                                               \
  ABI_MEMBER(CUfileIOParams_t, fh, CUfileHandle_t)                                                 \
  ABI_MEMBER(CUfileIOParams_t, opcode, CUfileOpcode_t)                                             \
  ABI_MEMBER(CUfileIOParams_t, cookie, void *)                                                     \
  ABI_STRUCT(CUfileIOEvents_t, CUfileIOEvents)                                                     \
  ABI_MEMBER(CUfileIOEvents_t, cookie, void *)                                                     \
  ABI_MEMBER(CUfileIOEvents_t, status, CUfileStatus_t)                                             \
  ABI_MEMBER(CUfileIOEvents_t, ret, size_t)                                                        \
  ABI_ALIAS(CUfileBatchHandle_t, void *)                                                           \
  ABI_ENUM(CUFileSizeTConfigParameter_t, CUFileSizeTConfigParameter_t)                             \
  ABI_ENUM(CUFileBoolConfigParameter_t, CUFileBoolConfigParameter_t)                               \
  ABI_ENUM(CUFileStringConfigParameter_t, CUFileStringConfigParameter_t)                           \
  ABI_ENUM(CUFileArrayConfigParameter_t, CUFileArrayConfigParameter_t)                             \
  ABI_STRUCT(CUfileOpCounter_t, CUfileOpCounter)                                                   \
  ABI_MEMBER(CUfileOpCounter_t, ok, uint64_t)                                                      \
  ABI_MEMBER(CUfileOpCounter_t, err, uint64_t)                                                     \
  ABI_STRUCT(CUfileStatsLevel1_t, CUfileStatsLevel1)                                               \
  ABI_STATS_LEVEL1                                                                                 \
  ABI_STRUCT(CUfileStatsLevel2_t, CUfileStatsLevel2)                                               \
  ABI_MEMBER(CUfileStatsLevel2_t, basic, CUfileStatsLevel1_t)                                      \
  ABI_MEMBER(CUfileStatsLevel2_t, read_size_kb_hist, uint64_t[32])                                 \
  ABI_MEMBER(CUfileStatsLevel2_t, write_size_kb_hist, uint64_t[32])                                \
  ABI_STRUCT(CUfilePerGpuStats_t, CUfilePerGpuStats)                                               \
  ABI_PER_GPU_STATS                                                                                \
  ABI_STRUCT(CUfileStatsLevel3_t, CUfileStatsLevel3)                                               \
  ABI_MEMBER(CUfileStatsLevel3_t, detailed, CUfileStatsLevel2_t)                                   \
  ABI_MEMBER(CUfileStatsLevel3_t, num_gpus, uint32_t)                                              \
  ABI_MEMBER(CUfileStatsLevel3_t, per_gpu_stats, CUfilePerGpuStats_t[16])

#define ABI_STATS_LEVEL1                                                        \
  ABI_MEMBER(CUfileStatsLevel1_t, read_ops, CUfileOpCounter_t)                  \
  ABI_MEMBER(CUfileStatsLevel1_t, write_ops, CUfileOpCounter_t)                 \
  ABI_MEMBER(CUfileStatsLevel1_t, hdl_register_ops, CUfileOpCounter_t)          \
  ABI_MEMBER(CUfileStatsLevel1_t, hdl_deregister_ops, CUfileOpCounter_t)        \
  ABI_MEMBER(CUfileStatsLevel1_t, buf_register_ops, CUfileOpCounter_t)          \
  ABI_MEMBER(CUfileStatsLevel1_t, buf_deregister_ops, CUfileOpCounter_t)        \
  ABI_MEMBER(CUfileStatsLevel1_t, read_bytes, uint64_t)                         \
  ABI_MEMBER(CUfileStatsLevel1_t, write_bytes, uint64_t)                        \
  ABI_MEMBER(CUfileStatsLevel1_t, read_bw_bytes_per_sec, uint64_t)              \
  ABI_MEMBER(CUfileStatsLevel1_t, write_bw_bytes_per_sec, uint64_t)             \
  ABI_MEMBER(CUfileStatsLevel1_t, read_lat_avg_us, uint64_t)                    \
  ABI_MEMBER(CUfileStatsLevel1_t, write_lat_avg_us, uint64_t)                   \
  ABI_MEMBER(CUfileStatsLevel1_t, read_ops_per_sec, uint64_t)                   \
  ABI_MEMBER(CUfileStatsLevel1_t, write_ops_per_sec, uint64_t)                  \
  ABI_MEMBER(CUfileStatsLevel1_t, read_lat_sum_us, uint64_t)                    \
  ABI_MEMBER(CUfileStatsLevel1_t, write_lat_sum_us, uint64_t)                   \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_submit_ops, CUfileOpCounter_t)          \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_complete_ops, CUfileOpCounter_t)        \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_setup_ops, CUfileOpCounter_t)           \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_cancel_ops, CUfileOpCounter_t)          \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_destroy_ops, CUfileOpCounter_t)         \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_enqueued_ops, CUfileOpCounter_t)        \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_posix_enqueued_ops, CUfileOpCounter_t)  \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_processed_ops, CUfileOpCounter_t)       \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_posix_processed_ops, CUfileOpCounter_t) \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_nvfs_submit_ops, CUfileOpCounter_t)     \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_p2p_submit_ops, CUfileOpCounter_t)      \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_aio_submit_ops, CUfileOpCounter_t)      \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_iouring_submit_ops, CUfileOpCounter_t)  \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_mixed_io_submit_ops, CUfileOpCounter_t) \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_total_submit_ops, CUfileOpCounter_t)    \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_read_bytes, uint64_t)                   \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_write_bytes, uint64_t)                  \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_read_bw_bytes, uint64_t)                \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_write_bw_bytes, uint64_t)               \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_submit_lat_avg_us, uint64_t)            \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_completion_lat_avg_us, uint64_t)        \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_submit_ops_per_sec, uint64_t)           \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_complete_ops_per_sec, uint64_t)         \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_submit_lat_sum_us, uint64_t)            \
  ABI_MEMBER(CUfileStatsLevel1_t, batch_completion_lat_sum_us, uint64_t)        \
  ABI_MEMBER(CUfileStatsLevel1_t, last_batch_read_bytes, uint64_t)              \
  ABI_MEMBER(CUfileStatsLevel1_t, last_batch_write_bytes, uint64_t)

#define ABI_PER_GPU_STATS                                           \
  ABI_MEMBER(CUfilePerGpuStats_t, uuid, char[CUFILE_GPU_UUID_LEN])  \
  ABI_MEMBER(CUfilePerGpuStats_t, read_bytes, uint64_t)             \
  ABI_MEMBER(CUfilePerGpuStats_t, read_bw_bytes_per_sec, uint64_t)  \
  ABI_MEMBER(CUfilePerGpuStats_t, read_utilization, uint64_t)       \
  ABI_MEMBER(CUfilePerGpuStats_t, read_duration_us, uint64_t)       \
  ABI_MEMBER(CUfilePerGpuStats_t, n_total_reads, uint64_t)          \
  ABI_MEMBER(CUfilePerGpuStats_t, n_p2p_reads, uint64_t)            \
  ABI_MEMBER(CUfilePerGpuStats_t, n_nvfs_reads, uint64_t)           \
  ABI_MEMBER(CUfilePerGpuStats_t, n_posix_reads, uint64_t)          \
  ABI_MEMBER(CUfilePerGpuStats_t, n_unaligned_reads, uint64_t)      \
  ABI_MEMBER(CUfilePerGpuStats_t, n_dr_reads, uint64_t)             \
  ABI_MEMBER(CUfilePerGpuStats_t, n_sparse_regions, uint64_t)       \
  ABI_MEMBER(CUfilePerGpuStats_t, n_inline_regions, uint64_t)       \
  ABI_MEMBER(CUfilePerGpuStats_t, n_reads_err, uint64_t)            \
  ABI_MEMBER(CUfilePerGpuStats_t, writes_bytes, uint64_t)           \
  ABI_MEMBER(CUfilePerGpuStats_t, write_bw_bytes_per_sec, uint64_t) \
  ABI_MEMBER(CUfilePerGpuStats_t, write_utilization, uint64_t)      \
  ABI_MEMBER(CUfilePerGpuStats_t, write_duration_us, uint64_t)      \
  ABI_MEMBER(CUfilePerGpuStats_t, n_total_writes, uint64_t)         \
  ABI_MEMBER(CUfilePerGpuStats_t, n_p2p_writes, uint64_t)           \
  ABI_MEMBER(CUfilePerGpuStats_t, n_nvfs_writes, uint64_t)          \
  ABI_MEMBER(CUfilePerGpuStats_t, n_posix_writes, uint64_t)         \
  ABI_MEMBER(CUfilePerGpuStats_t, n_unaligned_writes, uint64_t)     \
  ABI_MEMBER(CUfilePerGpuStats_t, n_dr_writes, uint64_t)            \
  ABI_MEMBER(CUfilePerGpuStats_t, n_writes_err, uint64_t)           \
  ABI_MEMBER(CUfilePerGpuStats_t, n_mmap, uint64_t)                 \
  ABI_MEMBER(CUfilePerGpuStats_t, n_mmap_ok, uint64_t)              \
  ABI_MEMBER(CUfilePerGpuStats_t, n_mmap_err, uint64_t)             \
  ABI_MEMBER(CUfilePerGpuStats_t, n_mmap_free, uint64_t)            \
  ABI_MEMBER(CUfilePerGpuStats_t, reg_bytes, uint64_t)

#endif /* UFILE_TESTS_ABI_LAYOUT_H */
