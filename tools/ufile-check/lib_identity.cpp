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
  template <typename T>
  const T *At(uint64_t off) const {
    return Has(off, sizeof(T)) ? reinterpret_cast<const T *>(data + off) : nullptr;
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

void ReadNotes(const Image &img, const Elf64_Shdr &sh, Facts &f) {
  uint64_t pos = sh.sh_offset;
  const uint64_t end = sh.sh_offset + sh.sh_size;
  while (pos + sizeof(Elf64_Nhdr) <= end) {
    const auto *n = img.At<Elf64_Nhdr>(pos);
    if (!n) return;
    const uint64_t name = pos + sizeof(Elf64_Nhdr);
    const uint64_t desc = name + ((n->n_namesz + 3ull) & ~3ull);
    if (!img.Has(name, n->n_namesz) || !img.Has(desc, n->n_descsz)) return;
    if (n->n_type == 1 && img.Str(name) == "ufile") {
      f.has_note = true;
      f.ufile_version = std::string(img.data + desc, strnlen(img.data + desc, n->n_descsz));
    }
    pos = desc + ((n->n_descsz + 3ull) & ~3ull);
  }
}

void ReadSections(const Image &img, const Elf64_Ehdr &eh, Facts &f) {
  auto section = [&](unsigned i) {
    return img.At<Elf64_Shdr>(eh.e_shoff + 1ull * i * sizeof(Elf64_Shdr));
  };
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr *sh = section(i);
    if (!sh || !img.Has(sh->sh_offset, sh->sh_size)) continue;
    if (sh->sh_type == SHT_NOTE) ReadNotes(img, *sh, f);
    if (sh->sh_type != SHT_DYNAMIC && sh->sh_type != SHT_DYNSYM) continue;
    const Elf64_Shdr *strtab = sh->sh_link < eh.e_shnum ? section(sh->sh_link) : nullptr;
    if (!strtab) continue;
    if (sh->sh_type == SHT_DYNAMIC) {
      for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= sh->sh_size; o += sizeof(Elf64_Dyn)) {
        const auto *d = img.At<Elf64_Dyn>(sh->sh_offset + o);
        if (d && d->d_tag == DT_SONAME) f.soname = img.Str(strtab->sh_offset + d->d_un.d_val);
      }
    } else {
      for (uint64_t o = 0; o + sizeof(Elf64_Sym) <= sh->sh_size; o += sizeof(Elf64_Sym)) {
        const auto *s = img.At<Elf64_Sym>(sh->sh_offset + o);
        if (s && s->st_shndx != SHN_UNDEF)
          f.defined.insert(img.Str(strtab->sh_offset + s->st_name));
      }
    }
  }
}

LibIdentity Classify(const Image &img) {
  const auto *eh = img.At<Elf64_Ehdr>(0);
  if (!eh || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
    return {LibIdentity::kUnknown, "not an ELF file", ""};
  if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
    return {LibIdentity::kUnknown, "not a 64-bit little-endian ELF file", ""};
  if (eh->e_type != ET_DYN) return {LibIdentity::kUnknown, "ELF file, not a shared object", ""};
  Facts f;
  ReadSections(img, *eh, f);
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
