// SPDX-License-Identifier: Apache-2.0
// ufile-check's libcufile section: each libcufile a client could load (a
// Python wheel's, LD_LIBRARY_PATH's, LD_PRELOAD's) with what it is, ufile's or
// NVIDIA's (a stand-in built with the tests), and which one a program built
// for NVIDIA's cuFile gets.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/test_util.h"
#include "tools/run_tool.h"

#ifndef UFILE_CHECK_BIN
#define UFILE_CHECK_BIN ""
#endif
#ifndef UFILE_FAKE_NVIDIA_LIB
#define UFILE_FAKE_NVIDIA_LIB ""
#endif
#ifndef UFILE_DROPIN_LIB
#define UFILE_DROPIN_LIB ""
#endif

namespace ufile::test {
namespace {

const char *kGets = "a program built for NVIDIA's cuFile gets";

void Copy(const std::string &from, const std::string &to) {
  WriteWholeFile(to, ReadWholeFile(from));
}

void MakeDirs(const std::string &path) {
  for (size_t pos = 1; pos != std::string::npos; pos = path.find('/', pos + 1))
    mkdir(path.substr(0, pos).c_str(), 0755);
  mkdir(path.c_str(), 0755);
}

class CheckLibcufile : public ::testing::Test {
 protected:
  void SetUp() override {
    tool_ = ToolPath("UFILE_CHECK_BIN", UFILE_CHECK_BIN);
    if (tool_.empty() || !*UFILE_FAKE_NVIDIA_LIB || !*UFILE_DROPIN_LIB)
      GTEST_SKIP() << "ufile-check or the test libraries not built";
  }
  std::string Run() { return Squeeze(RunTool(tool_, {}, dir_.path()).out); }

  std::string tool_;
  TempDir dir_;
  ScopedEnv no_preload_{"LD_PRELOAD", std::nullopt};
};

TEST_F(CheckLibcufile, WheelAndLibraryPathFilesAreNamedWithWhatTheyAre) {
  const std::string wheel = dir_.File("venv/lib/python3.11/site-packages/nvidia/cu13/lib");
  const std::string ldp = dir_.File("ldp");
  MakeDirs(wheel);
  MakeDirs(ldp);
  Copy(UFILE_FAKE_NVIDIA_LIB, wheel + "/libcufile.so.0");
  Copy(UFILE_DROPIN_LIB, ldp + "/libcufile.so.0");
  WriteTextFile(ldp + "/libcufile.so.9", std::string(100, 'x'));  // not ELF
  std::vector<uint8_t> cut = ReadWholeFile(UFILE_DROPIN_LIB);
  cut.resize(200);
  WriteWholeFile(ldp + "/libcufile.so.8", cut);
  ScopedEnv venv("VIRTUAL_ENV", dir_.File("venv"));
  ScopedEnv path("LD_LIBRARY_PATH", ldp);
  const std::string out = Run();
  EXPECT_NE(out.find(" " + wheel + "/libcufile.so.0 : NVIDIA's libcufile (Python wheel) [WARN]"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("python -m ufile.dropin enable"), std::string::npos) << out;
  EXPECT_NE(out.find(" " + ldp + "/libcufile.so.0 : ufile 0.1.0 (LD_LIBRARY_PATH)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" " + ldp + "/libcufile.so.9 : not recognised (not an ELF file)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" " + ldp +
                     "/libcufile.so.8 : not recognised (malformed ELF file: section headers "
                     "outside the file)"),
            std::string::npos)
      << out;
  EXPECT_EQ(CheckLine(out, kGets), ldp + "/libcufile.so.0 through LD_LIBRARY_PATH: ufile 0.1.0")
      << out;
}

// The remedy for NVIDIA's file on LD_LIBRARY_PATH names ufile's drop-in of
// this build tree, not a placeholder.
TEST_F(CheckLibcufile, LibraryPathRemedyNamesThisBuildsDropin) {
  const std::string ldp = dir_.File("ldp");
  MakeDirs(ldp);
  Copy(UFILE_FAKE_NVIDIA_LIB, ldp + "/libcufile.so.0");
  ScopedEnv path("LD_LIBRARY_PATH", ldp);
  const std::string out = Run();
  char real[PATH_MAX];
  ASSERT_NE(realpath(UFILE_DROPIN_LIB, real), nullptr) << UFILE_DROPIN_LIB;
  const std::string dropin = real;
  const std::string folder = dropin.substr(0, dropin.rfind('/'));
  EXPECT_NE(out.find("remedy: name ufile's drop-in there instead: LD_LIBRARY_PATH=" + folder +
                     ", or LD_PRELOAD=" + dropin + "\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("PREFIX"), std::string::npos) << out;
}

TEST_F(CheckLibcufile, PreloadedLibraryIsMappedAndWins) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer runtime must be the first library: no LD_PRELOAD";
#endif
  const std::string lib = dir_.File("libcufile.so.0");
  Copy(UFILE_FAKE_NVIDIA_LIB, lib);
  ScopedEnv preload("LD_PRELOAD", lib);
  const std::string out = Run();
  EXPECT_NE(out.find(lib + " : NVIDIA's libcufile (LD_PRELOAD, mapped by this process) [WARN]"),
            std::string::npos)
      << out;
  EXPECT_EQ(CheckLine(out, kGets), lib + " through LD_PRELOAD: NVIDIA's libcufile [WARN]") << out;
}

}  // namespace
}  // namespace ufile::test
