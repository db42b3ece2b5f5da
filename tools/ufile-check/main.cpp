// SPDX-License-Identifier: Apache-2.0
// ufile-check [--json] [PATH...]: what ufile can do on this machine, why, and
// how to fix what it cannot (docs/CHECK.md explains every line).
// Exit status: 0 when ufile can work here (warnings allowed), 1 when it
// cannot (a [FAIL] line), 2 for a usage error.
#include <cufile.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checks.h"

namespace {

void Usage(std::FILE *out) {
  std::fprintf(out,
               "usage: ufile-check [--json] [PATH...]\n"
               "  Checks the library, its configuration, GPUs, io_uring, locked memory and, for\n"
               "  the working directory and each PATH, the filesystem, O_DIRECT and a round trip\n"
               "  through ufile. Exit status 0: ufile works here; 1: it cannot; 2: usage.\n"
               "  --json      one JSON document on stdout instead of text\n"
               "  -h, --help  this text\n");
}

std::string Cwd() {
  char buf[PATH_MAX];
  return getcwd(buf, sizeof buf) ? buf : ".";
}

void Summary(ufile::check::Report &report) {
  using ufile::check::Status;
  const int warn = report.Count(Status::kWarn), fail = report.Count(Status::kFail);
  ufile::check::Section &s = report.AddSection("Summary");
  if (fail)
    s.Add("ufile works here", ufile::check::Format("no: %d problem(s) marked FAIL above", fail),
          Status::kFail, "fix the FAIL lines; each has its remedy");
  else
    s.Add("ufile works here",
          warn ? ufile::check::Format("yes, with %d warning(s) above", warn) : "yes", Status::kOk);
}

}  // namespace

int main(int argc, char **argv) {
  bool json = false;
  std::vector<std::string> paths = {Cwd()};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      Usage(stdout);
      return 0;
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "ufile-check: unknown option %s\n", argv[i]);
      Usage(stderr);
      return 2;
    } else {
      paths.push_back(argv[i]);
    }
  }
  const ufile::Config cfg = ufile::LoadConfig();
  ufile::check::Report report;
  ufile::check::CheckLibrary(report);
  ufile::check::CheckLibcufile(report);
  ufile::check::CheckConfig(report, cfg);
  ufile::check::CheckGpus(report);
  ufile::check::CheckIoUring(report);
  ufile::check::CheckMemlock(report, cfg);
  ufile::check::CheckPaths(report, paths);
  Summary(report);
  if (cuFileUseCount() > 0) cuFileDriverClose();
  if (json)
    std::printf("%s\n", report.Json().c_str());
  else
    report.PrintText(stdout);
  return report.Failed() ? 1 : 0;
}
