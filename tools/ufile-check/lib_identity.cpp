// SPDX-License-Identifier: Apache-2.0
#include "lib_identity.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>

namespace ufile::check {
namespace {

// A read-only view of the file with bounds-checked access.
struct Image {
  const char *data = nullptr;
  size_t size = 0;

  bool Has(uint64_t off, uint64_t len) const { return off <= size && len <= size - off; }
  // A copy of the T at off (memcpy: a malformed file may misalign it).
  template <typename T>
  T At(uint64_t off) const {
    T out{};
    std::memcpy(&out, data + off, sizeof(T));
    return out;
  }
  std::string Str(uint64_t off) const {
    if (off >= size) return "";
    const void *end = std::memchr(data + off, 0, size - off);
    return std::string(data + off,
                       end ? static_cast<const char *>(end) - (data + off) : size - off);
  }
  bool Contains(std::string_view needle) const {
    return std::string_view(data, size).find(needle) != std::string_view::npos;
  }
};

struct Facts {
  std::string soname, ufile_version;
  bool has_note = false;
  std::set<std::string> defined;
};

// False when a note overruns its section.
bool ReadNotes(const Image &img, const Elf64_Shdr &sh, Facts &f) {
  uint64_t pos = sh.sh_offset;
  const uint64_t end = sh.sh_offset + sh.sh_size;  // Has() checked: no overflow
  while (pos + sizeof(Elf64_Nhdr) <= end) {
    const auto n = img.At<Elf64_Nhdr>(pos);
    const uint64_t name = pos + sizeof(Elf64_Nhdr);
    const uint64_t desc = name + ((n.n_namesz + 3ull) & ~3ull);
    const uint64_t next = desc + ((n.n_descsz + 3ull) & ~3ull);
    if (next > end) return false;
    if (n.n_type == 1 && n.n_namesz == 6 && std::memcmp(img.data + name, "ufile", 6) == 0) {
      f.has_note = true;
      f.ufile_version = std::string(img.data + desc, strnlen(img.data + desc, n.n_descsz));
    }
    pos = next;
  }
  return true;
}

// "" when the headers ufile reads lie inside the file, else what does not.
std::string ReadSections(const Image &img, const Elf64_Ehdr &eh, Facts &f) {
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !img.Has(eh.e_shoff, 1ull * eh.e_shnum * sizeof(Elf64_Shdr)))
    return "section headers outside the file";
  auto section = [&](unsigned i) {
    return img.At<Elf64_Shdr>(eh.e_shoff + i * sizeof(Elf64_Shdr));
  };
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_NOTE && sh.sh_type != SHT_DYNAMIC && sh.sh_type != SHT_DYNSYM) continue;
    if (!img.Has(sh.sh_offset, sh.sh_size)) return "a section outside the file";
    if (sh.sh_type == SHT_NOTE) {
      if (!ReadNotes(img, sh, f)) return "a note outside its section";
      continue;
    }
    if (sh.sh_link >= eh.e_shnum) return "a section linked to no section";
    const uint64_t strtab = section(sh.sh_link).sh_offset;
    if (sh.sh_type == SHT_DYNAMIC) {
      for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= sh.sh_size; o += sizeof(Elf64_Dyn)) {
        const auto d = img.At<Elf64_Dyn>(sh.sh_offset + o);
        if (d.d_tag == DT_SONAME) f.soname = img.Str(strtab + d.d_un.d_val);
      }
    } else {
      for (uint64_t o = 0; o + sizeof(Elf64_Sym) <= sh.sh_size; o += sizeof(Elf64_Sym)) {
        const auto sym = img.At<Elf64_Sym>(sh.sh_offset + o);
        if (sym.st_shndx != SHN_UNDEF) f.defined.insert(img.Str(strtab + sym.st_name));
      }
    }
  }
  return "";
}

// img holds at least an Elf64_Ehdr.
LibIdentity Classify(const Image &img) {
  const auto eh = img.At<Elf64_Ehdr>(0);  // the caller checked the size
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return {LibIdentity::kUnknown, "not an ELF file", ""};
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return {LibIdentity::kUnknown, "not a 64-bit little-endian ELF file", ""};
  if (eh.e_type != ET_DYN) return {LibIdentity::kUnknown, "ELF file, not a shared object", ""};
  Facts f;
  const std::string malformed = ReadSections(img, eh, f);
  if (!malformed.empty()) return {LibIdentity::kUnknown, "malformed ELF file: " + malformed, ""};
  if (f.has_note) return {LibIdentity::kUfile, f.ufile_version, f.soname};
  if (f.soname.rfind("libcufile.so", 0) != 0)
    return {LibIdentity::kUnknown,
            "SONAME " + (f.soname.empty() ? "none" : f.soname) + ", not libcufile.so.*", f.soname};
  if (!f.defined.count("cuFileDriverOpen") || !f.defined.count("cuFileHandleRegister"))
    return {LibIdentity::kUnknown, "does not define the cuFile functions", f.soname};
  if (!img.Contains("nvidia-fs") && !img.Contains("nvidia_fs"))
    return {LibIdentity::kUnknown, "a cuFile library, but neither ufile's nor NVIDIA's", f.soname};
  return {LibIdentity::kNvidia, "", f.soname};
}

}  // namespace

std::string LibIdentity::Describe() const {
  switch (kind) {
    case kUfile:
      return "ufile " + detail;
    case kNvidia:
      return "NVIDIA's libcufile";
    case kUnknown:
      break;
  }
  return "not recognised (" + detail + ")";
}

LibIdentity IdentifyLibrary(const std::string &path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return {LibIdentity::kUnknown, std::string("unreadable: ") + std::strerror(errno), ""};
  struct stat st {};
  LibIdentity id{LibIdentity::kUnknown, "too short for an ELF file", ""};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 64) {
    void *map = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      id.detail = std::string("unreadable: ") + std::strerror(errno);
    } else {
      id = Classify(Image{static_cast<const char *>(map), static_cast<size_t>(st.st_size)});
      munmap(map, st.st_size);
    }
  } else if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    id.detail = "not a regular file";
  }
  close(fd);
  return id;
}

}  // namespace ufile::check
