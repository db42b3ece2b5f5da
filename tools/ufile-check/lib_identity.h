// SPDX-License-Identifier: Apache-2.0
// Which implementation a libcufile file is, from its ELF headers (the file is
// read, never loaded). The same rules as the Python package's ufile/_elf.py:
// ufile's carries an ELF note of owner "ufile" (type 1, the version); NVIDIA's
// has SONAME libcufile.so.<n>, defines cuFileDriverOpen and
// cuFileHandleRegister, and holds the strings of its kernel driver
// ("nvidia-fs" or "nvidia_fs"); anything else is unknown, with the reason.
#pragma once

#include <string>

namespace ufile::check {

struct LibIdentity {
  enum Kind { kUfile, kNvidia, kUnknown } kind = kUnknown;
  std::string detail;  // the version (kUfile), or why it is unknown
  std::string soname;

  // "ufile 0.1.0", "NVIDIA's libcufile", "not recognised (why)".
  std::string Describe() const;
};

// Follows symbolic links. A missing, unreadable or malformed file is kUnknown.
LibIdentity IdentifyLibrary(const std::string &path);

}  // namespace ufile::check
