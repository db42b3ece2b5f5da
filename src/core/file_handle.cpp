// SPDX-License-Identifier: Apache-2.0
#include "core/file_handle.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/log.h"
#include "engine/ring_registry.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {

// Ids are unique for the life of the process, across driver sessions, so a
// handle from a closed session can never alias a new one.
std::atomic<uintptr_t> g_next_id{1};

Result<std::shared_ptr<FileHandle>> Refuse(CUfileOpError op, const char *why, int fd) {
  UFILE_LOG_ERROR("cuFileHandleRegister: fd %d refused: %s", fd, why);
  return Status::Op(op);
}

}  // namespace

FileHandle::~FileHandle() {
  const int bfd = buffered_fd_.load(std::memory_order_acquire);
  // Before the descriptors close: no io_uring ring may keep them.
  RingRegistry::Get().WithdrawFile(fd_, fd_published_);
  if (bfd != fd_) RingRegistry::Get().WithdrawFile(bfd, buffered_published_);
  if (owns_fd_) SysOps::Current().Close(fd_);
  if (bfd >= 0 && bfd != fd_ && bfd != user_fd_) SysOps::Current().Close(bfd);
}

// via (one of the handle's descriptors) reopened through its /proc link
// with flags, checked to name the registered file: the new descriptor, the
// errno of a failed open, or EBADF when the link now names another file.
Result<int> FileHandle::Reopen(int via, int flags) const {
  SysOps &sys = SysOps::Current();
  const std::string path = "/proc/self/fd/" + std::to_string(via);
  const int fd = sys.Open(path.c_str(), flags | O_CLOEXEC, 0);
  if (fd < 0) return Status::Errno(errno);
  struct stat st {};
  if (sys.Fstat(fd, &st) != 0 || !SameFile(st)) {
    UFILE_LOG_WARN("fd %d: %s no longer names the registered file", user_fd_, path.c_str());
    sys.Close(fd);
    return Status::Errno(EBADF);
  }
  return fd;
}

// Opens the file description ufile does its I/O on: the caller's file
// reopened with the same access mode and flags (with O_DIRECT added under
// force_direct; where the file system refuses it, the handle stays
// buffered). Bytes then reach the registered file whatever the caller later
// does to its descriptor, with no check per I/O. On failure (no /proc, no
// descriptors left, permissions changed since the caller's open, the fd
// changed meanwhile) ufile does its I/O on the caller's descriptor and
// checks it before each I/O (CheckDescriptor).
void FileHandle::OpenPrivate(bool force_direct) {
  if (FileHasLease()) {
    UFILE_LOG_INFO(
        "fd %d: the file has a lease (F_SETLEASE), which a second open would break: ufile "
        "does its I/O on this fd and checks it before each I/O%s",
        user_fd_, force_direct && !direct_ ? " (force_odirect_mode: it stays buffered)" : "");
    return;
  }
  const int flags = open_flags_ & (O_ACCMODE | O_DIRECT | O_NOATIME | O_SYNC | O_DSYNC);
  if (force_direct && !direct_) {
    Result<int> dfd = Reopen(user_fd_, flags | O_DIRECT);
    if (dfd.ok()) {
      fd_ = *dfd;
      owns_fd_ = true;
      direct_ = true;
      UFILE_LOG_INFO("force_odirect_mode: fd %d does its I/O through O_DIRECT fd %d", user_fd_,
                     fd_);
      return;
    }
    UFILE_LOG_WARN(
        "force_odirect_mode: reopening fd %d with O_DIRECT failed (%s); its I/O stays "
        "buffered",
        user_fd_, dfd.status().ToString().c_str());
  }
  Result<int> pfd = Reopen(user_fd_, flags);
  if (!pfd.ok()) {
    UFILE_LOG_WARN(
        "fd %d: reopening it for ufile's I/O failed (%s); each I/O checks the fd "
        "instead",
        user_fd_, pfd.status().ToString().c_str());
    return;
  }
  fd_ = *pfd;
  owns_fd_ = true;
}

// A lease on the caller's description (F_GETLEASE), or any lease on the
// file's inode in /proc/locks (one the process holds through another
// descriptor): opening the file again would break it, and the lease
// holder's SIGIO kills a process that does not handle it.
bool FileHandle::FileHasLease() const {
  const int held = ::fcntl(user_fd_, F_GETLEASE);
  if (held == F_RDLCK || held == F_WRLCK) return true;
  FILE *locks = std::fopen("/proc/locks", "re");
  if (!locks) return false;
  char line[256];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, locks)) {
    // "1: LEASE  ACTIVE    WRITE 1234 08:01:5678 0 EOF" ("->" before a waiter's type)
    char type[16] = "", dev_ino[64] = "";
    unsigned long long ino = 0;
    if (std::sscanf(line, "%*s %15s", type) == 1 && std::strcmp(type, "->") == 0)
      std::sscanf(line, "%*s %*s %15s %*s %*s %*s %63s", type, dev_ino);
    else
      std::sscanf(line, "%*s %15s %*s %*s %*s %63s", type, dev_ino);
    const char *colon = std::strrchr(dev_ino, ':');
    found = std::strcmp(type, "LEASE") == 0 && colon && std::sscanf(colon + 1, "%llu", &ino) == 1 &&
            ino == ino_;
  }
  std::fclose(locks);
  return found;
}

void FileHandle::OpenOwn(bool force_direct) {
  OpenPrivate(force_direct);
  if (!direct_) buffered_fd_.store(fd_, std::memory_order_relaxed);
}

Result<std::shared_ptr<FileHandle>> FileHandle::FromDescr(const CUfileDescr_t &descr) {
  std::shared_ptr<FileHandle> h(new FileHandle());
  int type = 0;  // any int from C: never loaded as the enum
  static_assert(sizeof type == sizeof descr.type);
  std::memcpy(&type, &descr.type, sizeof type);
  if (type == CU_FILE_HANDLE_TYPE_USERSPACE_FS) {
    if (!descr.fs_ops || (!descr.fs_ops->read && !descr.fs_ops->write)) {
      UFILE_LOG_ERROR("cuFileHandleRegister: USERSPACE_FS handle without read/write callbacks");
      return Status::Op(CU_FILE_INVALID_VALUE);
    }
    h->fs_ops_ = descr.fs_ops;
    h->user_handle_ = descr.handle.handle;
    h->readable_ = descr.fs_ops->read != nullptr;
    h->writable_ = descr.fs_ops->write != nullptr;
    h->align_ = 1;
    return h;
  }
  if (type != CU_FILE_HANDLE_TYPE_OPAQUE_FD) {
    UFILE_LOG_ERROR("cuFileHandleRegister: unsupported handle type %d", type);
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  const int fd = descr.handle.fd;
  if (fd < 0) return Refuse(CU_FILE_INVALID_VALUE, "negative descriptor", fd);
  SysOps &sys = SysOps::Current();
  struct stat st {};
  if (sys.Fstat(fd, &st) != 0)
    return Refuse(CU_FILE_INVALID_VALUE, errno == EBADF ? "not an open descriptor" : "fstat failed",
                  fd);
  if (S_ISDIR(st.st_mode)) return Refuse(CU_FILE_INVALID_FILE_TYPE, "a directory", fd);
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
    return Refuse(CU_FILE_INVALID_FILE_TYPE, "not a regular file or block device", fd);
  const int flags = sys.GetFlags(fd);
  if (flags < 0) return Refuse(CU_FILE_INVALID_VALUE, "fcntl(F_GETFL) failed", fd);
  if (flags & O_PATH) return Refuse(CU_FILE_INVALID_FILE_OPEN_FLAG, "opened with O_PATH", fd);
  // pwrite on an O_APPEND descriptor ignores the offset on Linux.
  if (flags & O_APPEND)
    return Refuse(CU_FILE_INVALID_FILE_OPEN_FLAG, "opened with O_APPEND (offsets ignored)", fd);
  h->fd_ = fd;
  h->user_fd_ = fd;
  h->dev_ = st.st_dev;
  h->ino_ = st.st_ino;
  h->open_flags_ = flags;
  h->direct_ = (flags & O_DIRECT) != 0;
  const int acc = flags & O_ACCMODE;
  h->readable_ = acc == O_RDONLY || acc == O_RDWR;
  h->writable_ = acc == O_WRONLY || acc == O_RDWR;
  return h;
}

bool FileHandle::SameFile(const struct stat &st) const {
  return st.st_dev == dev_ && st.st_ino == ino_;
}

// Only a handle without its own description pays this: two system calls per
// request (fstat, and F_GETFL for writes) keep a reused descriptor number
// from redirecting bytes.
Status FileHandle::CheckDescriptor(const char *fn, bool write) const {
  if (fs_ops_ || owns_fd_) return Status::Ok();
  SysOps &sys = SysOps::Current();
  struct stat st {};
  if (sys.Fstat(user_fd_, &st) != 0) {
    UFILE_LOG_ERROR("%s: fd %d of the handle is not open (closed by the application?)", fn,
                    user_fd_);
    return Status::Errno(EBADF);
  }
  if (!SameFile(st)) {
    UFILE_LOG_ERROR(
        "%s: fd %d was closed and now names another file; the handle refuses I/O "
        "(deregister it)",
        fn, user_fd_);
    return Status::Errno(EBADF);
  }
  if (write) {
    const int flags = sys.GetFlags(user_fd_);
    if (flags >= 0 && (flags & O_APPEND)) {
      UFILE_LOG_ERROR(
          "%s: fd %d has O_APPEND (set after registration): writes would ignore "
          "their offset",
          fn, user_fd_);
      return Status::Op(CU_FILE_INVALID_FILE_OPEN_FLAG);
    }
  }
  return Status::Ok();
}

// Every chunk of an O_DIRECT read asks (the page-cache probe): the open
// descriptor is read without the mutex, which only the opening takes.
Result<int> FileHandle::BufferedFd() {
  const int ready = buffered_fd_.load(std::memory_order_acquire);
  if (ready >= 0) return ready;
  if (buffered_refused_.load(std::memory_order_acquire)) return Status::Errno(EINVAL);
  std::lock_guard<std::mutex> lock(buffered_mu_);
  const int opened = buffered_fd_.load(std::memory_order_relaxed);  // by another thread
  if (opened >= 0) return opened;
  return OpenBufferedFd();
}

Result<int> FileHandle::OpenBufferedFd() {
  if (FileHasLease()) {
    UFILE_LOG_ERROR(
        "fd %d: the file has a lease (F_SETLEASE), which opening a buffered descriptor "
        "would break: unaligned O_DIRECT I/O is impossible on it",
        user_fd_);
    buffered_refused_.store(true, std::memory_order_release);  // asked once, not per chunk
    return Status::Errno(EINVAL);
  }
  // The descriptor ufile does I/O on, reopened without O_DIRECT.
  Result<int> bfd = Reopen(fd_, open_flags_ & (O_ACCMODE | O_NOATIME | O_SYNC | O_DSYNC));
  if (!bfd.ok()) {
    UFILE_LOG_ERROR(
        "opening a buffered descriptor for fd %d failed (%s); unaligned O_DIRECT I/O "
        "is impossible on it",
        user_fd_, bfd.status().ToString().c_str());
    return bfd.status();
  }
  buffered_published_ = RingRegistry::Get().PublishFile(*bfd);
  buffered_fd_.store(*bfd, std::memory_order_release);
  return *bfd;
}

// Refuses an fd registered (for the same file) or being registered; else
// reserves it until Register inserts it. Takes a stale registration's
// number over (its descriptor was closed and the number reused for another
// file: that handle keeps its own file, or refuses I/O where it checks).
Status HandleTable::Claim(const FileHandle &h) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  const int fd = h.user_fd();
  if (claimed_fds_.count(fd)) {
    UFILE_LOG_ERROR("cuFileHandleRegister: fd %d is being registered by another thread", fd);
    return Status::Op(CU_FILE_HANDLE_ALREADY_REGISTERED);
  }
  auto it = by_fd_.find(fd);
  if (it != by_fd_.end()) {
    const FileHandle &old = *by_id_.at(it->second);
    if (old.dev_ == h.dev_ && old.ino_ == h.ino_) {
      UFILE_LOG_ERROR("cuFileHandleRegister: fd %d is already registered", fd);
      return Status::Op(CU_FILE_HANDLE_ALREADY_REGISTERED);
    }
    UFILE_LOG_WARN(
        "cuFileHandleRegister: fd %d was registered for another file (closed and "
        "reused); the new file takes the number over",
        fd);
    by_fd_.erase(it);
  }
  claimed_fds_.insert(fd);
  return Status::Ok();
}

Result<CUfileHandle_t> HandleTable::Register(const CUfileDescr_t &descr, bool force_direct) {
  Result<std::shared_ptr<FileHandle>> h = FileHandle::FromDescr(descr);
  if (!h.ok()) return h.status();
  const bool has_fd = !(*h)->is_fs_ops();
  if (has_fd) {
    Status claimed = Claim(**h);
    if (!claimed.ok()) return claimed;
    (*h)->OpenOwn(force_direct);  // unlocked: an open may be slow (NFS)
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  // Ids are multiples of 16 plus 1: never an aligned pointer.
  const uintptr_t id = (g_next_id.fetch_add(1) << 4) | 1;
  by_id_.emplace(id, *h);
  if (has_fd) {
    claimed_fds_.erase((*h)->user_fd());
    by_fd_[(*h)->user_fd()] = id;
  }
  // Only once registered: a refused duplicate must not replace (and, going
  // away, withdraw) the registered handle's publication.
  (*h)->fd_published_ = RingRegistry::Get().PublishFile((*h)->fd_);
  return reinterpret_cast<CUfileHandle_t>(id);
}

std::shared_ptr<FileHandle> HandleTable::Lookup(CUfileHandle_t fh) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = by_id_.find(reinterpret_cast<uintptr_t>(fh));
  return it == by_id_.end() ? nullptr : it->second;
}

bool HandleTable::Deregister(CUfileHandle_t fh) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = by_id_.find(reinterpret_cast<uintptr_t>(fh));
  if (it == by_id_.end()) return false;
  if (!it->second->is_fs_ops()) {
    // Only its own entry: a stale handle's number may belong to a newer one.
    auto fd_it = by_fd_.find(it->second->user_fd());
    if (fd_it != by_fd_.end() && fd_it->second == it->first) by_fd_.erase(fd_it);
  }
  by_id_.erase(it);
  return true;
}

size_t HandleTable::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return by_id_.size();
}

}  // namespace ufile
