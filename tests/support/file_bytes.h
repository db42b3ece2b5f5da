// SPDX-License-Identifier: Apache-2.0
// FileBytes: a whole file in one pread loop. ReadWholeFile's stream iterator
// goes byte by byte, which costs seconds a call for files of megabytes under
// TSan; the fault and soak tests compare whole files after every request.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ufile::test {

// The file's bytes (empty if it cannot be opened).
inline std::vector<uint8_t> FileBytes(const std::string &path) {
  std::vector<uint8_t> out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  if (::fstat(fd, &st) == 0) out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  ::close(fd);
  return out;
}

}  // namespace ufile::test
