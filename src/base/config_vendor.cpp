// SPDX-License-Identifier: Apache-2.0
// CUDA installs /etc/cufile.json with NVIDIA's defaults, tuned for its own
// nvidia-fs data path: 4 I/O threads, requests split only above 8 MiB,
// 16 MiB staging slabs. Those values describe NVIDIA's pipeline, not a
// choice of the machine's owner, and they hold ufile's hot reads to about
// half the bytes per second it moves when sized from the machine
// (docs/CONFIG.md). So where the system file holds exactly NVIDIA's
// shipped value for one of ufile's pipeline-geometry keys, ufile treats the
// key as unset and sizes itself from the machine. Any other value, and any
// value from CUFILE_ENV_PATH_JSON, the environment or the API, is honoured.
#include <vector>

#include "base/config.h"
#include "base/log.h"

namespace ufile {
namespace {

struct VendorDefault {
  const char *key;
  bool (*matches)(const Config &);
  void (*reset)(Config &);
};

const Config kUfileDefaults{};

const VendorDefault kVendorDefaults[] = {
    {"execution.max_io_threads", [](const Config &c) { return c.max_io_threads == 4; },
     [](Config &c) { c.max_io_threads = kUfileDefaults.max_io_threads; }},
    {"execution.max_request_parallelism",
     [](const Config &c) { return c.max_request_parallelism == 4; },
     [](Config &c) { c.max_request_parallelism = kUfileDefaults.max_request_parallelism; }},
    {"execution.min_io_threshold_size_kb",
     [](const Config &c) { return c.min_io_threshold_size_kb == 8192; },
     [](Config &c) { c.min_io_threshold_size_kb = kUfileDefaults.min_io_threshold_size_kb; }},
    {"properties.posix_pool_slab_size_kb",
     [](const Config &c) {
       return c.posix_pool_slab_size_kb == std::vector<size_t>{4, 1024, 16384} &&
              c.posix_pool_slab_count == std::vector<size_t>{128, 64, 64};
     },
     [](Config &c) {
       c.posix_pool_slab_size_kb = kUfileDefaults.posix_pool_slab_size_kb;
       c.posix_pool_slab_count = kUfileDefaults.posix_pool_slab_count;
       c.sources.erase("properties.posix_pool_slab_count");
     }},
};

}  // namespace

void DropVendorGeometryDefaults(Config &cfg) {
  for (const VendorDefault &d : kVendorDefaults) {
    auto it = cfg.sources.find(d.key);
    if (it == cfg.sources.end() || it->second != ConfigSource::kSystemJson || !d.matches(cfg))
      continue;
    d.reset(cfg);
    cfg.sources.erase(it);
    cfg.vendor_defaults_ignored.push_back(d.key);
    UFILE_LOG_INFO("config: %s in the system cufile.json is NVIDIA's shipped default; ufile "
                   "sizes it from the machine instead",
                   d.key);
  }
}

}  // namespace ufile
