// SPDX-License-Identifier: Apache-2.0
// The proof that ufile works in a directory: a file written and read back
// through the cuFile API (host memory), at an unaligned offset so that an
// O_DIRECT descriptor exercises both the direct middle and buffered edges.
#include <cufile.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "checks.h"

namespace ufile::check {
namespace {

constexpr size_t kSize = (1 << 20) + 100;
constexpr off_t kOffset = 512;

std::string CuError(const char *what, CUfileError_t e) {
  return Format("%s: %s", what, cufileop_status_error(e.err));
}

std::string IoError(const char *what, ssize_t ret) {
  if (ret == -1) return Format("%s: %s", what, std::strerror(errno));
  if (ret < 0)
    return Format("%s: %s", what, cufileop_status_error(static_cast<CUfileOpError>(-ret)));
  return Format("%s: %zd of %zu bytes", what, ret, kSize);
}

// Write then read back through a registered handle of fd.
std::string Exercise(int fd) {
  CUfileDescr_t descr;
  std::memset(&descr, 0, sizeof descr);
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  CUfileError_t e = cuFileHandleRegister(&fh, &descr);
  if (e.err != CU_FILE_SUCCESS) return CuError("cuFileHandleRegister", e);
  std::string err;
  void *mem = nullptr;
  if (posix_memalign(&mem, 4096, 2 * kSize) != 0) {
    cuFileHandleDeregister(fh);
    return "out of memory";
  }
  auto *out = static_cast<unsigned char *>(mem);
  unsigned char *in = out + kSize;
  for (size_t i = 0; i < kSize; ++i) out[i] = static_cast<unsigned char>((i * 131) ^ (i >> 9));
  std::memset(in, 0, kSize);
  ssize_t w = cuFileWrite(fh, out, kSize, kOffset, 0);
  ssize_t r = w == static_cast<ssize_t>(kSize) ? cuFileRead(fh, in, kSize, kOffset, 0) : 0;
  if (w != static_cast<ssize_t>(kSize))
    err = IoError("cuFileWrite", w);
  else if (r != static_cast<ssize_t>(kSize))
    err = IoError("cuFileRead", r);
  else if (std::memcmp(out, in, kSize) != 0)
    err = "cuFileRead returned different bytes than cuFileWrite wrote";
  std::free(mem);
  cuFileHandleDeregister(fh);
  return err;
}

}  // namespace

std::string RoundTrip(const std::string &dir, bool direct) {
  static std::atomic<int> seq{0};
  const std::string name = Format("%s/.ufile-check-io-%d-%d", dir.c_str(), getpid(), seq++);
  const int flags = O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0);
  int fd = open(name.c_str(), flags, 0600);
  if (fd < 0) return Format("open %s: %s", name.c_str(), std::strerror(errno));
  unlink(name.c_str());  // nothing is left behind, whatever happens next
  std::string err = Exercise(fd);
  close(fd);
  return err;
}

}  // namespace ufile::check
