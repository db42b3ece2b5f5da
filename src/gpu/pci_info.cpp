// SPDX-License-Identifier: Apache-2.0
#include "gpu/pci_info.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>

#include "base/log.h"
#include "gpu/cuda_api.h"
#include "gpu/nvml_bar.h"

namespace ufile {

Result<std::string> PciBusId(int device) {
  CudaApi &api = Cuda();
  if (!api.available) return Status::Op(CU_FILE_DEVICE_NOT_FOUND);
  if (device < 0 || device >= api.device_count) return Status::Op(CU_FILE_INVALID_VALUE);
  CUdevice dev = 0;
  int domain = 0, bus = 0, slot = 0;
  CUresult res = api.cuDeviceGet(&dev, device);
  if (res == CUDA_SUCCESS)
    res = api.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
  if (res == CUDA_SUCCESS) res = api.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
  if (res == CUDA_SUCCESS)
    res = api.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
  if (res != CUDA_SUCCESS) return Status::Cuda(res);
  char id[32];
  std::snprintf(id, sizeof id, "%04x:%02x:%02x.0", domain, bus, slot);
  return std::string(id);
}

Result<size_t> Bar1Bytes(int device) {
  Result<std::string> id = PciBusId(device);
  if (!id.ok()) return id.status();
  // NVML first (what NVIDIA's library reports); sysfs where NVML is absent.
  Result<size_t> nvml = NvmlBar1Bytes(*id);
  if (nvml.ok()) return nvml;
  const std::string path = "/sys/bus/pci/devices/" + *id + "/resource";
  std::ifstream in(path);
  std::string line;
  // Line i describes BAR i as "start end flags" in hex.
  for (int i = 0; i <= 1 && std::getline(in, line); ++i) {
    if (i < 1) continue;
    uint64_t start = 0, end = 0, flags = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 " %" SCNx64 " %" SCNx64, &start, &end, &flags) == 3 &&
        end > start)
      return static_cast<size_t>(end - start + 1);
  }
  UFILE_LOG_ERROR("BAR1 size of GPU %d: neither NVML nor %s has it", device, path.c_str());
  return Status::Op(CU_FILE_PLATFORM_NOT_SUPPORTED);
}

}  // namespace ufile
