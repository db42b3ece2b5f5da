// SPDX-License-Identifier: Apache-2.0
#include <fstream>

#include "checks.h"
#include "gpu/cuda_api.h"
#include "gpu/pci_info.h"

namespace ufile::check {
namespace {

std::string ReadSysfs(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "16.0 GT/s PCIe" -> 4 (0 if unknown).
int PcieGen(const std::string &speed) {
  const double gts = std::atof(speed.c_str());
  if (gts >= 60) return 6;
  if (gts >= 30) return 5;
  if (gts >= 15) return 4;
  if (gts >= 7.5) return 3;
  if (gts >= 4.5) return 2;
  if (gts >= 2) return 1;
  return 0;
}

std::string Link(const std::string &dir, const char *which) {
  const std::string speed = ReadSysfs(dir + "/" + which + "_link_speed");
  const std::string width = ReadSysfs(dir + "/" + which + "_link_width");
  if (speed.empty() || width.empty()) return "";
  return Format("gen%d x%s (%s)", PcieGen(speed), width.c_str(), speed.c_str());
}

void OneGpu(Section &s, CudaApi &api, int d) {
  const std::string p = Format("GPU %d ", d);
  CUdevice dev = 0;
  char name[256] = "?";
  size_t mem = 0;
  int major = 0, minor = 0;
  if (api.cuDeviceGet(&dev, d) != CUDA_SUCCESS) {
    s.Add(p + "device", "cuDeviceGet failed", Status::kWarn, "check nvidia-smi");
    return;
  }
  api.cuDeviceGetName(name, sizeof name, dev);
  api.cuDeviceTotalMem(&mem, dev);
  api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  s.Add(p + "name", Format("%s (compute %d.%d)", name, major, minor), Status::kOk);
  s.Add(p + "memory", Bytes(mem));
  Result<std::string> bus = PciBusId(d);
  if (!bus.ok()) {
    s.Add(p + "PCI", "bus id unknown: " + bus.status().ToString());
    return;
  }
  s.Add(p + "PCI bus id", *bus);
  Result<size_t> bar1 = Bar1Bytes(d);
  if (bar1.ok())
    s.Add(p + "BAR1", Bytes(*bar1) + Format(" (cuFileGetBARSizeInKB: %zu)", *bar1 / 1024));
  else
    s.Add(p + "BAR1", "unknown (sysfs resource not readable); ufile does not need it");
  const std::string dir = "/sys/bus/pci/devices/" + *bus;
  const std::string cur = Link(dir, "current"), max = Link(dir, "max");
  if (cur.empty())
    s.Add(p + "PCIe link", "unknown (no link attributes in sysfs: a VM's virtual bus?)");
  else
    s.Add(p + "PCIe link",
          cur + (max.empty() || max == cur ? "" : ", max " + max + " (links slow down when idle)"));
  const std::string numa = ReadSysfs(dir + "/numa_node");
  s.Add(p + "NUMA node", numa.empty() || numa == "-1" ? "none reported (single node or VM)" : numa);
}

}  // namespace

void CheckGpus(Report &report) {
  Section &s = report.AddSection("GPUs");
  CudaApi &api = Cuda();
  if (!api.loaded || !api.available) {
    s.Add("GPU", "none usable: " + api.why_unavailable +
                     "; ufile works with host memory (cuFileRead/Write into host buffers)");
    return;
  }
  s.Add("CUDA driver", Format("%d.%d", api.driver_version / 1000, api.driver_version % 1000 / 10),
        Status::kOk);
  s.Add("GPUs", std::to_string(api.device_count));
  for (int d = 0; d < api.device_count; ++d) OneGpu(s, api, d);
}

}  // namespace ufile::check
