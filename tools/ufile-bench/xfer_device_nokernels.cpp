// SPDX-License-Identifier: Apache-2.0
// Built instead of xfer_device_kernels.cu when there is no nvcc: the device
// rows then say so (devk::Built() is false) and nothing else is called.
#include "xfer_device_kernels.h"

namespace bench::devk {

bool Built() { return false; }
int RunLoop(const ufile_devio_view_t &, const LoopArgs &, LoopResult *, std::string *err) {
  *err = "built without nvcc";
  return -1;
}
int RunChaseDevice(const ufile_devio_view_t &, uint32_t, uint32_t, uint64_t, uint64_t *, double *,
                   std::string *err) {
  *err = "built without nvcc";
  return -1;
}
ChaseStep::~ChaseStep() = default;
int ChaseStep::Init(uint32_t, std::string *err) {
  *err = "built without nvcc";
  return -1;
}
int ChaseStep::Step(uint64_t, bool, std::string *err) {
  *err = "built without nvcc";
  return -1;
}
int RunProbe(const ufile_devio_view_t &, std::vector<std::pair<std::string, double>> *,
             std::string *err) {
  *err = "built without nvcc";
  return -1;
}
int RunTraceLL(const ufile_devio_view_t &, const LoopArgs &, uint32_t,
               std::vector<std::pair<std::string, double>> *, std::string *err) {
  *err = "built without nvcc";
  return -1;
}
uint64_t ChaseStart(uint32_t, uint64_t) { return 0; }
uint64_t ChaseNext(const uint64_t *, uint64_t) { return 0; }

}  // namespace bench::devk
