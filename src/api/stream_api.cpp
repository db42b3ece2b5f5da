// SPDX-License-Identifier: Apache-2.0
// Stream API: stream-ordered reads and writes (async/stream_ops.h).
#include "api/api_util.h"
#include "async/stream_ops.h"

using namespace ufile;

namespace {

CUfileError_t Submit(const char *fn, bool write, CUfileHandle_t fh, void *base, size_t *size_p,
                     off_t *file_offset_p, off_t *buf_offset_p, ssize_t *bytes_p, CUstream stream) {
  StreamIoArgs a;
  a.fn = fn;
  a.write = write;
  a.fh = fh;
  a.base = base;
  a.size_p = size_p;
  a.file_off_p = file_offset_p;
  a.buf_off_p = buf_offset_p;
  a.bytes_p = bytes_p;
  a.stream = stream;
  return api::Guard(fn, [&] { return SubmitStreamIo(a).ToCuFileError(); });
}

}  // namespace

extern "C" CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p,
                                         off_t *file_offset_p, off_t *bufPtr_offset_p,
                                         ssize_t *bytes_read_p, CUstream stream) {
  return Submit(__func__, false, fh, bufPtr_base, size_p, file_offset_p, bufPtr_offset_p,
                bytes_read_p, stream);
}

extern "C" CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void *bufPtr_base, size_t *size_p,
                                          off_t *file_offset_p, off_t *bufPtr_offset_p,
                                          ssize_t *bytes_written_p, CUstream stream) {
  return Submit(__func__, true, fh, bufPtr_base, size_p, file_offset_p, bufPtr_offset_p,
                bytes_written_p, stream);
}

extern "C" CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags) {
  return api::Guard(__func__, [&] { return RegisterStream(stream, flags).ToCuFileError(); });
}

extern "C" CUfileError_t cuFileStreamDeregister(CUstream stream) {
  return api::Guard(__func__, [&] { return DeregisterStream(stream).ToCuFileError(); });
}
