// LD_PRELOAD debug aid (not part of ufile): SIGUSR1 prints the receiving
// thread's backtrace to stderr.
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static void on_usr1(int sig) {
  (void)sig;
  void *frames[48];
  int n = backtrace(frames, 48);
  char hdr[64];
  int len = snprintf(hdr, sizeof hdr, "=== tid %ld\n", (long)syscall(SYS_gettid));
  write(2, hdr, len);
  backtrace_symbols_fd(frames, n, 2);
}
__attribute__((constructor)) static void init(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
}
