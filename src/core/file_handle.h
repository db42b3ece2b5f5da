// SPDX-License-Identifier: Apache-2.0
// Registered files. A CUfileHandle_t is an opaque id, never a pointer the
// library dereferences: NULL, stale and forged handles are looked up and
// refused (CU_FILE_HANDLE_NOT_REGISTERED), never followed. An I/O holds a
// shared_ptr to its FileHandle, so deregistration during I/O is safe: the
// handle dies when its last I/O ends.
// A descriptor handle does its I/O on its own file description: the caller's
// file reopened at registration, so a descriptor the caller closes, or
// closes and reuses, can never redirect bytes, and no I/O pays a check for
// it. Where the reopening fails, or would break a lease (F_SETLEASE) on the
// file, I/O uses the caller's descriptor and checks it first. With
// properties.force_odirect_mode, a descriptor opened without O_DIRECT is
// reopened with it, as if the caller had opened it so; where the file
// system refuses O_DIRECT the handle stays buffered.
// Thread-safety: FileHandle is immutable after Register except for the
// lazily opened buffered descriptor (opened under a mutex, published through
// an atomic: once open, BufferedFd takes no lock); HandleTable is
// thread-safe.
#pragma once

#include <cufile.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

#include "base/status.h"

namespace ufile {

class FileHandle {
  friend class HandleTable;  // publishes fd_ once the handle is registered

 public:
  ~FileHandle();

  bool is_fs_ops() const { return fs_ops_ != nullptr; }
  // The descriptor ufile does I/O on: its own reopening of the caller's
  // file, or the caller's where that failed.
  int fd() const { return fd_; }
  // The descriptor the caller registered (the handle table's key, traces).
  int user_fd() const { return user_fd_; }
  bool direct() const { return direct_; }
  bool readable() const { return readable_; }
  bool writable() const { return writable_; }
  size_t align() const { return align_; }
  const CUfileFSOps_t *fs_ops() const { return fs_ops_; }
  void *user_handle() const { return user_handle_; }

  // Before each I/O on the caller's descriptor (no reopening): it must still
  // be the file that was registered (-1/EBADF when it was closed, or closed
  // and its number given to another file: no byte may reach that file) and,
  // for a write, must not have gained O_APPEND through fcntl
  // (CU_FILE_INVALID_FILE_OPEN_FLAG: pwrite would ignore the offset).
  // USERSPACE_FS handles and handles with their own description: always Ok.
  Status CheckDescriptor(const char *fn, bool write) const;
  // Whether the caller's descriptor is still the registered file.
  bool SameFile(const struct stat &st) const;

  // A descriptor of the same file without O_DIRECT, for the unaligned edges
  // of O_DIRECT requests (opened once, on first need). For a descriptor
  // without O_DIRECT, fd() itself. Lock-free once the descriptor is open.
  Result<int> BufferedFd();

  // Validates descr and builds a handle (no registration, no descriptor
  // opened: a refused registration must not close one, which would drop the
  // process's POSIX record locks on the file).
  static Result<std::shared_ptr<FileHandle>> FromDescr(const CUfileDescr_t &descr);
  // Opens the handle's own description of the file (force_direct:
  // properties.force_odirect_mode); called once, before registration.
  void OpenOwn(bool force_direct);

 private:
  FileHandle() = default;
  void OpenPrivate(bool force_direct);
  bool FileHasLease() const;
  Result<int> Reopen(int via, int flags) const;
  Result<int> OpenBufferedFd();  // with buffered_mu_ held
  int fd_ = -1;
  int user_fd_ = -1;
  bool owns_fd_ = false;  // fd_ is ufile's reopening of the caller's file
  int open_flags_ = 0;
  dev_t dev_ = 0;  // identity of the registered file (st_dev, st_ino)
  ino_t ino_ = 0;
  bool direct_ = false;
  bool readable_ = false;
  bool writable_ = false;
  size_t align_ = 4096;
  const CUfileFSOps_t *fs_ops_ = nullptr;
  void *user_handle_ = nullptr;
  std::mutex buffered_mu_;                     // serialises the opening
  std::atomic<int> buffered_fd_{-1};           // stored once, after buffered_published_
  std::atomic<bool> buffered_refused_{false};  // a lease forbids opening it
  // Generations of fd_'s and buffered_fd_'s publication as registered files
  // (engine/ring_registry.h); 0: not published.
  uint32_t fd_published_ = 0;        // set by HandleTable::Register
  uint32_t buffered_published_ = 0;  // written before buffered_fd_ is stored
};

class HandleTable {
 public:
  // CU_FILE_HANDLE_ALREADY_REGISTERED if the descriptor is registered, or
  // being registered by another thread; a refusal opens and closes nothing.
  Result<CUfileHandle_t> Register(const CUfileDescr_t &descr, bool force_direct = false);
  // nullptr when fh is not a live handle.
  std::shared_ptr<FileHandle> Lookup(CUfileHandle_t fh) const;
  // False when fh is not a live handle.
  bool Deregister(CUfileHandle_t fh);
  size_t size() const;

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<uintptr_t, std::shared_ptr<FileHandle>> by_id_;  // guarded by mu_
  std::unordered_map<int, uintptr_t> by_fd_;                          // guarded by mu_
  std::unordered_set<int> claimed_fds_;  // being registered; guarded by mu_
  Status Claim(const FileHandle &h);
};

}  // namespace ufile
