// SPDX-License-Identifier: Apache-2.0
// Replays a fuzzer's inputs without libFuzzer: every file named, and every
// file under a directory named, in path order, through the fuzzer's own
// LLVMFuzzerInitialize and LLVMFuzzerTestOneInput. CTest runs each fuzzer's
// checks this way over its regression inputs and corpus in every build, so a
// change of the library that its model no longer describes fails at once,
// not at the next fuzzing run. A failed check aborts; the input is named.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

char g_current[4096];  // the input running, for the abort handler

void NameTheInput(int) {
  static const char kPrefix[] = "\nfuzz replay: the check above failed on ";
  ssize_t ignored = ::write(2, kPrefix, sizeof kPrefix - 1);
  ignored = ::write(2, g_current, std::strlen(g_current));
  ignored = ::write(2, "\n", 1);
  (void)ignored;
  ::signal(SIGABRT, SIG_DFL);
  ::raise(SIGABRT);
}

}  // namespace

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const auto &e : fs::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (fs::is_regular_file(argv[i], ec)) {
      inputs.emplace_back(argv[i]);
    } else {
      std::fprintf(stderr, "fuzz replay: %s is neither a file nor a directory\n", argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE|DIR... (no inputs found)\n", argv[0]);
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  ::signal(SIGABRT, NameTheInput);
  LLVMFuzzerInitialize(&argc, &argv);
  for (const fs::path &p : inputs) {
    std::snprintf(g_current, sizeof g_current, "%s", p.c_str());
    std::ifstream in(p, std::ios::binary);
    const std::vector<uint8_t> data{std::istreambuf_iterator<char>(in), {}};
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  std::printf("fuzz replay: %zu inputs, every check passed\n", inputs.size());
  return 0;
}
