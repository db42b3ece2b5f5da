// SPDX-License-Identifier: Apache-2.0
// Per path: which mount holds it, its filesystem, whether O_DIRECT works
// there (probed with a real 4 KiB write and read), which data path ufile
// takes, and a round trip through ufile itself.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "checks.h"
#include "gpu/cuda_api.h"

namespace ufile::check {
namespace {

struct Mount {
  std::string point, fstype, source, options;
};

std::string Unescape(const std::string &s) {  // mountinfo writes " " as \040
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool Under(const std::string &path, const std::string &point) {
  if (point == "/") return true;
  return path.compare(0, point.size(), point) == 0 &&
         (path.size() == point.size() || path[point.size()] == '/');
}

// The mount of path in /proc/self/mountinfo: the longest mount point above
// it, the last one listed when several are stacked.
Mount FindMount(const std::string &path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  Mount best;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, devno, root, point, options, field;
    f >> id >> parent >> devno >> root >> point >> options;
    while (f >> field && field != "-") {
    }
    Mount m;
    m.point = Unescape(point);
    m.options = options;
    f >> m.fstype >> m.source;
    if (Under(path, m.point) && m.point.size() >= best.point.size()) best = m;
  }
  return best;
}

const char *MagicName(unsigned long magic) {
  static const struct {
    unsigned long magic;
    const char *name;
  } kNames[] = {
      {0xEF53, "ext2/3/4"},  {0x58465342, "xfs"},    {0x9123683E, "btrfs"},
      {0x01021994, "tmpfs"}, {0x6969, "nfs"},        {0x794C7630, "overlayfs"},
      {0x65735546, "fuse"},  {0x01021997, "9p"},     {0x6A656A63, "virtiofs"},
      {0x2FC12FC1, "zfs"},   {0x0BD00BD0, "lustre"}, {0x19830326, "beegfs"},
      {0x47504653, "gpfs"},  {0xF2F52010, "f2fs"},   {0x73717368, "squashfs"},
      {0xFF534D42, "cifs"},  {0x5346544E, "ntfs"},   {0x4244, "hfs"},
      {0x858458F6, "ramfs"}, {0x00C36400, "ceph"},
  };
  for (const auto &n : kNames)
    if (n.magic == magic) return n.name;
  return "unknown";
}

enum class Direct { kSupported, kUnsupported, kCannotCreate, kError };

// Creates (and at once unlinks) a file in dir with O_DIRECT, writes and
// reads back 4 KiB at offset 0.
Direct ProbeDirect(const std::string &dir, std::string *detail) {
  static std::atomic<int> seq{0};
  const std::string name = Format("%s/.ufile-check-%d-%d", dir.c_str(), getpid(), seq++);
  int fd = open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    *detail = std::strerror(err);
    if (err == EINVAL) return Direct::kUnsupported;
    return err == EACCES || err == EROFS || err == EPERM || err == ENOSPC || err == EDQUOT
               ? Direct::kCannotCreate
               : Direct::kError;
  }
  unlink(name.c_str());
  void *buf = nullptr;
  Direct result = Direct::kError;
  if (posix_memalign(&buf, 4096, 8192) == 0) {
    auto *p = static_cast<unsigned char *>(buf);
    for (int i = 0; i < 4096; ++i) p[i] = static_cast<unsigned char>(i * 7 + 1);
    if (pwrite(fd, p, 4096, 0) != 4096) {
      const int err = errno;
      *detail = Format("4 KiB aligned write refused: %s", std::strerror(err));
      // A full filesystem (or quota) lets the file be created, not written.
      result = err == EINVAL                     ? Direct::kUnsupported
               : err == ENOSPC || err == EDQUOT ? Direct::kCannotCreate
                                                 : Direct::kError;
    } else if (pread(fd, p + 4096, 4096, 0) != 4096) {
      *detail = Format("4 KiB aligned read refused: %s", std::strerror(errno));
      result = errno == EINVAL ? Direct::kUnsupported : Direct::kError;
    } else if (std::memcmp(p, p + 4096, 4096) != 0) {
      *detail = "read back different bytes";
    } else {
      result = Direct::kSupported;
    }
    std::free(buf);
  }
  close(fd);
  return result;
}

bool GpuUsable() {
  CudaApi &api = Cuda();
  return api.loaded && api.available;
}

void DirectLines(Section &s, const std::string &dir) {
  std::string detail;
  struct statvfs vfs {};
  // No room for the probes' 4 KiB writes: nothing can be probed (a full
  // filesystem says nothing about whether ufile works on it).
  const Direct d = statvfs(dir.c_str(), &vfs) == 0 && vfs.f_bavail == 0
                       ? (detail = std::strerror(ENOSPC), Direct::kCannotCreate)
                       : ProbeDirect(dir, &detail);
  bool direct = false;
  switch (d) {
    case Direct::kSupported:
      direct = true;
      s.Add("  O_DIRECT", "supported (4 KiB write + read probed)", Status::kOk);
      s.Add("  data path",
            std::string("files opened with O_DIRECT: O_DIRECT for the aligned middle") +
                (GpuUsable() ? " (GPU memory staged through pinned buffers)" : "") +
                ", page cache for unaligned edges; files opened without it: page cache "
                "(buffered)" +
                (GpuUsable() ? "" : "; host buffers only here (no usable GPU)"));
      break;
    case Direct::kUnsupported:
      s.Add("  O_DIRECT", "not supported here (" + detail + ")", Status::kWarn,
            "open files without O_DIRECT on this filesystem (ufile reads them through the page "
            "cache), or put data on a filesystem with O_DIRECT (ext4, xfs) to bypass the cache");
      s.Add("  data path", std::string("page cache (buffered pread/pwrite) only") +
                               (GpuUsable() ? "" : "; host buffers only here (no usable GPU)"));
      break;
    case Direct::kCannotCreate:
      s.Add("  O_DIRECT", "not probed: cannot create a file here (" + detail + ")", Status::kWarn,
            "run ufile-check as a user who can write here, or give it a writable path on the "
            "same filesystem; reads of existing files still work");
      s.Add("  data path", "unknown (not probed)");
      return;
    case Direct::kError:
      s.Add("  O_DIRECT", "probe failed: " + detail, Status::kWarn, "see the error above");
      break;
  }
  const std::string err = RoundTrip(dir, direct);
  if (err.empty())
    s.Add("  ufile I/O",
          Format("cuFileWrite + cuFileRead round trip%s: ok",
                 direct ? " (O_DIRECT, unaligned edges)" : " (buffered)"),
          Status::kOk);
  else
    s.Add("  ufile I/O", "round trip failed: " + err, Status::kFail,
          "ufile cannot do I/O here; run with CUFILE_LOGGING_LEVEL=DEBUG and read cufile.log");
}

void OnePath(Section &s, const std::string &label, const std::string &path) {
  char real[PATH_MAX];
  struct stat st;
  if (!realpath(path.c_str(), real) || stat(real, &st) != 0) {
    s.Add(label, path + ": " + std::strerror(errno), Status::kFail,
          "check the path exists and is accessible to this user");
    return;
  }
  const std::string dir =
      S_ISDIR(st.st_mode) ? real : std::string(real).substr(0, std::string(real).rfind('/'));
  const Mount m = FindMount(real);
  struct statfs fs;
  const bool have_fs = statfs(real, &fs) == 0;
  const unsigned long magic = have_fs ? static_cast<unsigned long>(fs.f_type) : 0;
  s.Add(label, real);
  s.Add("  mount",
        m.point.empty() ? "unknown" : m.point + " (" + m.source + ", " + m.options + ")");
  s.Add("  filesystem", Format("%s (statfs magic 0x%lx: %s)",
                               m.fstype.empty() ? "?" : m.fstype.c_str(), magic, MagicName(magic)));
  DirectLines(s, dir.empty() ? "/" : dir);
}

}  // namespace

void CheckPaths(Report &report, const std::vector<std::string> &paths) {
  Section &s = report.AddSection("Mounts in use");
  for (size_t i = 0; i < paths.size(); ++i)
    OnePath(s, i == 0 ? "working directory" : "path", paths[i]);
}

}  // namespace ufile::check
