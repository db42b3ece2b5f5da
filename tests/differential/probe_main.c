/* SPDX-License-Identifier: Apache-2.0 */
/* Usage: probe LIBRARY [CASE]. See probe.h. */
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#define PROBE_DEFINE(f) __typeof__(f) *p_##f;
PROBE_FUNCS(PROBE_DEFINE)
#undef PROBE_DEFINE
#define PROBE_CUDA_DEFINE(f) __typeof__(f) *pc_##f;
PROBE_CUDA_FUNCS(PROBE_CUDA_DEFINE)
#undef PROBE_CUDA_DEFINE

const char *g_case = "";

void Line(const char *step, CUfileError_t e, const char *fmt, ...) {
  printf("%s.%s err=%d cu=%d", g_case, step, (int)e.err, (int)e.cu_err);
  if (fmt && *fmt) {
    va_list ap;
    va_start(ap, fmt);
    putchar(' ');
    vprintf(fmt, ap);
    va_end(ap);
  }
  putchar('\n');
  fflush(stdout);
}

void Note(const char *step, const char *fmt, ...) {
  printf("%s.%s ", g_case, step);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

int ProbeCuda(void) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!cuda) {
    Note("cuda", "unavailable");
    return -1;
  }
#define PROBE_CUDA_BIND(f) pc_##f = (__typeof__(f) *)dlsym(cuda, #f);
  PROBE_CUDA_FUNCS(PROBE_CUDA_BIND)
#undef PROBE_CUDA_BIND
  CUdevice dev;
  CUcontext ctx;
  int n = 0;
  if (pc_cuInit(0) != CUDA_SUCCESS || pc_cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1 ||
      pc_cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      pc_cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      pc_cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    Note("cuda", "no usable GPU");
    return -1;
  }
  return 0;
}

void *SharedPage(void) {
  void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void Isolated(const char *step, void (*fn)(void *), void *arg) {
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(60); /* a hang is a result too */
    fn(arg);
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  alarm(60); /* the case's own limit counts from its last child */
  if (WIFSIGNALED(status))
    Note(step, "crashed: signal %d (%s)", WTERMSIG(status),
         WTERMSIG(status) == SIGALRM ? "hung for 60 s" : strsignal(WTERMSIG(status)));
  else if (WEXITSTATUS(status) != 0)
    Note(step, "crashed: exit %d", WEXITSTATUS(status));
}

static int RunCase(const char *lib, const ProbeCase *c) {
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    g_case = c->name;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      Note("dlopen", "failed: %s", dlerror());
      _exit(3);
    }
#define PROBE_BIND(f)                                  \
  p_##f = (__typeof__(f) *)dlsym(h, #f);               \
  if (!p_##f) {                                        \
    Note("dlsym", "%s missing", #f);                   \
    _exit(3);                                          \
  }
    PROBE_FUNCS(PROBE_BIND)
#undef PROBE_BIND
    alarm(60); /* a hang is a result too */
    c->run();
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    printf("%s.END crashed: signal %d (%s)\n", c->name, WTERMSIG(status),
           WTERMSIG(status) == SIGALRM ? "hung for 60 s" : strsignal(WTERMSIG(status)));
  else
    printf("%s.END exit %d\n", c->name, WEXITSTATUS(status));
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBRARY [CASE]\n", argv[0]);
    return 2;
  }
  setenv("CUFILE_LOGFILE_PATH", "/dev/null", 0); /* unless told: the logs are not compared */
  size_t n = 0;
  for (size_t i = 0; i < kNumProbeCases; ++i)
    n += argc < 3 || strcmp(argv[2], kProbeCases[i].name) == 0;
  /* The checker expects this many END lines, each "exit 0". */
  printf("probe.cases %zu\n", n);
  for (size_t i = 0; i < kNumProbeCases; ++i)
    if (argc < 3 || strcmp(argv[2], kProbeCases[i].name) == 0) RunCase(argv[1], &kProbeCases[i]);
  return 0;
}
