// SPDX-License-Identifier: Apache-2.0
#include "support/gpu_gate.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace ufile::test {

std::string NvidiaGpuSign() {
  if (access("/dev/nvidia0", F_OK) == 0) return "/dev/nvidia0";
  const char *path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    const std::string smi = std::string(dir.empty() ? "." : dir) + "/nvidia-smi";
    if (access(smi.c_str(), X_OK) == 0) return smi;
  }
  return "";
}

bool GpuSkipsAllowed() {
  const char *ok = std::getenv("UFILE_GPU_SKIPS_OK");
  return ok && std::strcmp(ok, "1") == 0;
}

std::string SkipIsFailure() {
  const std::string sign = NvidiaGpuSign();
  if (sign.empty() || GpuSkipsAllowed()) return "";
  return "this machine has an NVIDIA GPU (" + sign +
         "), so a GPU test must run; UFILE_GPU_SKIPS_OK=1 says skips are expected here";
}

}  // namespace ufile::test
