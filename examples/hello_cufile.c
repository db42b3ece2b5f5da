/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hello_cufile: the smallest complete cuFile program. It writes 1 MiB of random
 * bytes from host memory to a temporary file with cuFileWrite, reads them back
 * with cuFileRead and compares. Host buffers are allowed by the CUDA 13 cuFile
 * API, so it needs no GPU. It uses only <cufile.h>: it builds against ufile or
 * NVIDIA's header and runs on either library.
 *
 *   hello_cufile [DIR]   (the file goes in DIR, else $TMPDIR, else /tmp)
 */
#include <cufile.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kSize = 1 << 20 };

/* cuFile calls return a status; the I/O calls a byte count, -1 + errno or
 * -CUfileOpError. */
static int failed(const char *what, CUfileError_t status) {
  if (status.err == CU_FILE_SUCCESS) return 0;
  fprintf(stderr, "hello_cufile: %s: %s (%d)\n", what, cufileop_status_error(status.err),
          (int)status.err);
  return 1;
}

static int io_failed(const char *what, ssize_t done, size_t want) {
  if (done == (ssize_t)want) return 0;
  if (done == -1)
    fprintf(stderr, "hello_cufile: %s: %s\n", what, strerror(errno));
  else if (done < 0)
    fprintf(stderr, "hello_cufile: %s: %s (%d)\n", what, CUFILE_ERRSTR((int)done), (int)-done);
  else
    fprintf(stderr, "hello_cufile: %s: %zd of %zu bytes\n", what, done, want);
  return 1;
}

/* xorshift64: random enough to catch misplaced bytes, reproducible from a seed. */
static void fill_random(unsigned char *p, size_t n, unsigned long long seed) {
  for (size_t i = 0; i < n; i++) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    p[i] = (unsigned char)seed;
  }
}

static int run(int fd) {
  unsigned char *out = malloc(kSize), *in = malloc(kSize);
  CUfileDescr_t descr;
  CUfileHandle_t fh;
  int rc = 1;
  if (!out || !in) goto done;
  fill_random(out, kSize, 0x9e3779b97f4a7c15ull ^ (unsigned long long)getpid());
  memset(in, 0, kSize);

  memset(&descr, 0, sizeof descr);
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  if (failed("cuFileHandleRegister", cuFileHandleRegister(&fh, &descr))) goto done;
  if (!io_failed("cuFileWrite", cuFileWrite(fh, out, kSize, 0, 0), kSize) &&
      !io_failed("cuFileRead", cuFileRead(fh, in, kSize, 0, 0), kSize)) {
    if (memcmp(in, out, kSize) == 0) {
      printf("hello_cufile: wrote and read back %d random bytes through cuFile: identical\n",
             kSize);
      rc = 0;
    } else {
      fprintf(stderr, "hello_cufile: the bytes read back differ from those written\n");
    }
  }
  cuFileHandleDeregister(fh);
done:
  free(out);
  free(in);
  return rc;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/hello_cufile.XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) {
    fprintf(stderr, "hello_cufile: cannot create a file in %s: %s\n", path, strerror(errno));
    return 1;
  }
  unlink(path); /* gone when closed, whatever happens */

  /* Optional (the first call opens the driver), but it reports setup errors early. */
  if (failed("cuFileDriverOpen", cuFileDriverOpen())) {
    close(fd);
    return 1;
  }
  int rc = run(fd);
  if (failed("cuFileDriverClose", cuFileDriverClose())) rc = 1;
  close(fd);
  return rc;
}
