// SPDX-License-Identifier: Apache-2.0
// The checks of ufile-check, one file each; every one adds a section.
#pragma once

#include <string>
#include <vector>

#include "base/config.h"
#include "report.h"

namespace ufile::check {

// Library and cuFile API version.
void CheckLibrary(Report &report);
// Every libcufile installed or mapped that a client could load instead of
// ufile, what each is, and which one a program built for NVIDIA's gets.
void CheckLibcufile(Report &report);
// The effective configuration with the source of each value; the config
// files; inert and unknown keys.
void CheckConfig(Report &report, const Config &cfg);
// RLIMIT_MEMLOCK against the pinned staging pool.
void CheckMemlock(Report &report, const Config &cfg);
// CUDA driver and every GPU: name, memory, BAR1, PCIe link, NUMA node.
void CheckGpus(Report &report);
// io_uring: sysctl, plain, SQPOLL, NO_MMAP, NO_MMAP + SQPOLL.
void CheckIoUring(Report &report);
// For each path (the working directory first): its mount, filesystem, an
// O_DIRECT probe, the data path ufile takes, and a cuFileWrite/cuFileRead
// round trip through ufile itself.
void CheckPaths(Report &report, const std::vector<std::string> &paths);

// One cuFileWrite + cuFileRead round trip of a file in dir (host memory),
// through an O_DIRECT descriptor when direct is true. "" on success, else
// what failed.
std::string RoundTrip(const std::string &dir, bool direct);

}  // namespace ufile::check
