// SPDX-License-Identifier: Apache-2.0
// An ELF note (owner "ufile", type 1, description the version) in both
// shared libraries, so that a tool can tell ufile's libcufile.so.0 from
// NVIDIA's without loading it: `readelf -n`, ufile-check, python -m ufile.dropin.
#include <cstdint>

#include "ufile/version.h"

namespace {

#define UFILE_STR2(x) #x
#define UFILE_STR(x) UFILE_STR2(x)
#define UFILE_NOTE_VERSION       \
  UFILE_STR(UFILE_VERSION_MAJOR) \
  "." UFILE_STR(UFILE_VERSION_MINOR) "." UFILE_STR(UFILE_VERSION_PATCH)

struct IdentNote {
  uint32_t namesz, descsz, type;
  char name[8];   // "ufile\0" padded to 4 bytes
  char desc[16];  // the version, NUL-terminated, padded to 4 bytes
};
static_assert(sizeof(UFILE_NOTE_VERSION) <= 16, "version longer than the note's field");

__attribute__((section(".note.ufile"), aligned(4), used))
const IdentNote kIdentNote = {6, 16, 1, "ufile", UFILE_NOTE_VERSION};

}  // namespace
