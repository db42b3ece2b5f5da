/* SPDX-License-Identifier: Apache-2.0 */
/* ufile's version, and the cuFile API version it implements. */
#ifndef UFILE_VERSION_H_
#define UFILE_VERSION_H_

#define UFILE_VERSION_MAJOR 0
#define UFILE_VERSION_MINOR 1
#define UFILE_VERSION_PATCH 0

/* cuFileGetVersion's value: 1000 * major + 10 * minor of the cuFile API
 * whose functions ufile provides (libcufile 1.15, CUDA 13.0). Clients gate
 * the 1.15 calls (parameters, stats, BAR size) on it. */
#define UFILE_CUFILE_API_VERSION 1150

/* CUfileDrvProps_t.fflags: bits of CUfileFeatureFlags_t that work. */
#define UFILE_FEATURE_FLAGS ((1u << 1) | (1u << 2) | (1u << 3)) /* BATCH_IO, STREAMS, PARALLEL_IO */

#endif /* UFILE_VERSION_H_ */
