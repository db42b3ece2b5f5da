// SPDX-License-Identifier: Apache-2.0
// The data every ufile-bench file holds: pseudo-random bytes that are a pure
// function of the file offset, so any range can be produced or checked on its
// own (by any thread, in any order) without reading the rest of the file.
// Each 4 KiB block of the file is 512 words of wyrand seeded by the block's
// index. Thread-safety: all functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bench {

// Writes the pattern of file bytes [off, off + len) into dst.
void FillPattern(uint64_t off, void *dst, size_t len);

// Compares src with the pattern of [off, off + len). Returns true when equal;
// otherwise false and *bad_off is the file offset of the first wrong byte.
bool CheckPattern(uint64_t off, const void *src, size_t len, uint64_t *bad_off);

// For a failed check: how many bytes of [off, off + len) differ, over which
// range, and the first few found and wanted there (slow: failures only).
std::string DescribeMismatch(uint64_t off, const void *src, size_t len);

}  // namespace bench
