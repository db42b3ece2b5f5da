// SPDX-License-Identifier: Apache-2.0
// io_uring registrations (engine/ring_registry): a ring registers a
// published buffer or descriptor once; a withdrawn one is cleared from every
// ring (a transfer through it then fails instead of reaching freed pages or
// a closed file); a reused slot is registered anew; refusals (injected
// through SysOps) fall back to ordinary transfers with exact bytes; a ring
// whose thread exited is no longer touched; staging buffers and registered
// handles publish and withdraw theirs. Each engine case runs on a fresh
// thread, so it gets a fresh ring.
#include "engine/ring_registry.h"

#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "core/driver.h"
#include "core/runtime.h"
#include "engine/engine.h"
#include "gpu/staging_pool.h"
#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

constexpr size_t kBuf = 256 << 10;

// Page-aligned anonymous memory, unmapped on destruction.
class Mapping {
 public:
  explicit Mapping(size_t n, void *at = nullptr)
      : n_(n),
        p_(static_cast<char *>(mmap(at, n, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0))) {}
  ~Mapping() {
    if (p_ != MAP_FAILED) munmap(p_, n_);
  }
  char *data() const { return p_; }
  bool ok() const { return p_ != MAP_FAILED; }
  void Unmap() {
    munmap(p_, n_);
    p_ = static_cast<char *>(MAP_FAILED);
  }

 private:
  size_t n_;
  char *p_;
};

// Counts buffer-table calls; fails them with -err while armed.
class TableOps : public SysOps {
 public:
  int UringRegisterBuffersSparse(io_uring *ring, unsigned nr) override {
    if (fail_sparse_.load()) return -fail_sparse_.load();
    return SysOps::UringRegisterBuffersSparse(ring, nr);
  }
  int UringUpdateBuffer(io_uring *ring, unsigned slot, const iovec *iov) override {
    ++updates_;
    if (fail_update_.load()) return -fail_update_.load();
    return SysOps::UringUpdateBuffer(ring, slot, iov);
  }
  int UringRegisterFilesSparse(io_uring *ring, unsigned nr) override {
    if (fail_files_.load()) return -fail_files_.load();
    return SysOps::UringRegisterFilesSparse(ring, nr);
  }
  int UringUpdateFile(io_uring *ring, unsigned slot, int fd) override {
    ++updates_;
    return SysOps::UringUpdateFile(ring, slot, fd);
  }
  std::atomic<int> fail_sparse_{0};
  std::atomic<int> fail_update_{0};
  std::atomic<int> fail_files_{0};
  std::atomic<int> updates_{0};
};

// A ring of the test's own, with its view of the table.
class OwnRing {
 public:
  OwnRing() { ok_ = io_uring_queue_init(8, &ring_, 0) == 0; }
  ~OwnRing() {
    if (!ok_) return;
    RingRegistry::Get().Detach(registered_);
    io_uring_queue_exit(&ring_);
  }
  bool ok() const { return ok_; }
  RegisteredRing &registered() {
    registered_.ring = &ring_;
    return registered_;
  }
  // A READ_FIXED of len bytes at file offset off into buf, through slot.
  int ReadFixed(int fd, char *buf, unsigned len, off_t off, int slot) {
    io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_read_fixed(sqe, fd, buf, len, off, slot);
    return Run();
  }
  // A READ of registered file index file.
  int ReadFile(int file, char *buf, unsigned len, off_t off) {
    io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_read(sqe, file, buf, len, off);
    io_uring_sqe_set_flags(sqe, IOSQE_FIXED_FILE);
    return Run();
  }

 private:
  int Run() {
    io_uring_submit(&ring_);
    io_uring_cqe *cqe = nullptr;
    if (io_uring_wait_cqe(&ring_, &cqe) != 0) return -EIO;
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    return res;
  }
  io_uring ring_{};
  RegisteredRing registered_;
  bool ok_ = false;
};

class RingRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!MakeUringEngine(4, EngineRegistration{}, &why))
      GTEST_SKIP() << "io_uring unavailable here: " << why;
    data_ = RandomBytes(4 * kBuf, 11);
    path_ = dir_.File("data");
    WriteWholeFile(path_, data_);
    fd_ = open(path_.c_str(), O_RDWR);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
  }
  bool Holds(const char *buf, size_t file_off, size_t len) const {
    return memcmp(buf, data_.data() + file_off, len) == 0;
  }
  RingRegistry &table_ = RingRegistry::Get();
  TempDir dir_;
  std::string path_;
  std::vector<uint8_t> data_;
  int fd_ = -1;
};

TEST_F(RingRegistryTest, PublishRefusesWhatCannotBeRegistered) {
  char byte = 0;
  EXPECT_EQ(table_.PublishBuffer(nullptr, 4096), kNoFixedSlot);
  EXPECT_EQ(table_.PublishBuffer(&byte, 0), kNoFixedSlot);
  EXPECT_EQ(table_.PublishBuffer(&byte, (size_t{1} << 30) + 1), kNoFixedSlot);  // io_uring's limit
}

TEST_F(RingRegistryTest, AFullTableSaysSo) {
  std::vector<int> slots;
  char byte = 0;
  for (int s; (s = table_.PublishBuffer(&byte, 1)) != kNoFixedSlot;) slots.push_back(s);
  EXPECT_EQ(slots.size(), RingRegistry::kBufferSlots);
  for (int s : slots) table_.WithdrawBuffer(s);
  const int again = table_.PublishBuffer(&byte, 1);
  EXPECT_NE(again, kNoFixedSlot) << "withdrawn slots are free again";
  table_.WithdrawBuffer(again);
}

TEST_F(RingRegistryTest, ARingRegistersOnceAndAWithdrawnSlotIsCleared) {
  OwnRing ring;
  ASSERT_TRUE(ring.ok());
  Mapping a(kBuf);
  ASSERT_TRUE(a.ok());
  const int slot = table_.PublishBuffer(a.data(), kBuf);
  ASSERT_NE(slot, kNoFixedSlot);
  const uint64_t before = table_.registrations(RingRegistry::kBuffers);
  ASSERT_TRUE(table_.BufferReady(ring.registered(), slot, a.data(), kBuf));
  EXPECT_TRUE(table_.BufferReady(ring.registered(), slot, a.data() + 4096, 8192))
      << "inside the buffer";
  EXPECT_FALSE(table_.BufferReady(ring.registered(), slot, a.data() + 4096, kBuf))
      << "past its end";
  EXPECT_FALSE(table_.BufferReady(ring.registered(), slot, a.data() - 4096, 4096)) << "before it";
  EXPECT_FALSE(table_.BufferReady(ring.registered(), slot, a.data() + 2 * kBuf, 4096))
      << "wholly after it";
  EXPECT_EQ(table_.registrations(RingRegistry::kBuffers), before + 1)
      << "registered on first use only";
  ASSERT_EQ(ring.ReadFixed(fd_, a.data(), kBuf, kBuf, slot), static_cast<int>(kBuf));
  EXPECT_TRUE(Holds(a.data(), kBuf, kBuf));

  table_.WithdrawBuffer(slot);
  memset(a.data(), 0, kBuf);
  EXPECT_EQ(ring.ReadFixed(fd_, a.data(), kBuf, 0, slot), -EFAULT)
      << "the ring no longer holds the withdrawn buffer";
  EXPECT_EQ(a.data()[0], 0);
}

// The address comes back for a new buffer in the same slot: the ring must
// move bytes into the new pages, not the withdrawn buffer's.
TEST_F(RingRegistryTest, AReusedSlotIsRegisteredAnew) {
  OwnRing ring;
  ASSERT_TRUE(ring.ok());
  Mapping a(kBuf);
  ASSERT_TRUE(a.ok());
  char *const at = a.data();
  const int slot = table_.PublishBuffer(at, kBuf);
  ASSERT_NE(slot, kNoFixedSlot);
  ASSERT_TRUE(table_.BufferReady(ring.registered(), slot, at, kBuf));
  table_.WithdrawBuffer(slot);
  a.Unmap();
  Mapping b(kBuf, at);  // the same address, new pages
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b.data(), at);
  const int again = table_.PublishBuffer(b.data(), kBuf);
  ASSERT_EQ(again, slot) << "the lowest free slot is reused";
  const uint64_t before = table_.registrations(RingRegistry::kBuffers);
  ASSERT_TRUE(table_.BufferReady(ring.registered(), again, b.data(), kBuf));
  EXPECT_EQ(table_.registrations(RingRegistry::kBuffers), before + 1);
  ASSERT_EQ(ring.ReadFixed(fd_, b.data(), kBuf, 2 * kBuf, again), static_cast<int>(kBuf));
  EXPECT_TRUE(Holds(b.data(), 2 * kBuf, kBuf));
  table_.WithdrawBuffer(again);
}

// Runs fn on a thread of its own (a fresh ring for the engine).
template <class Fn>
void OnFreshThread(Fn fn) {
  std::thread t(fn);
  t.join();
}

TEST_F(RingRegistryTest, TheEngineMovesBytesThroughRegisteredBuffers) {
  const bool direct = DirectIoSupported(dir_.path());
  int dfd = direct ? open(path_.c_str(), O_RDWR | O_DIRECT) : fd_;
  ASSERT_GE(dfd, 0);
  const size_t align = direct ? 4096 : 1;
  std::unique_ptr<Engine> engine = MakeEngine(Config{});
  ASSERT_STREQ(engine->name(), "io_uring");
  Mapping a(4 * kBuf);
  ASSERT_TRUE(a.ok());
  const int slot = table_.PublishBuffer(a.data(), 4 * kBuf);
  ASSERT_NE(slot, kNoFixedSlot);
  const uint64_t before = table_.registrations(RingRegistry::kBuffers);
  OnFreshThread([&] {
    Result<size_t> r = engine->Read(dfd, a.data(), 4 * kBuf, 0, align, slot);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, 4 * kBuf);
    EXPECT_TRUE(Holds(a.data(), 0, 4 * kBuf));
    // Write the second quarter over the first, through the same registration.
    Result<size_t> w = engine->Write(dfd, a.data() + kBuf, kBuf, 0, align, slot);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(*w, kBuf);
  });
  EXPECT_EQ(table_.registrations(RingRegistry::kBuffers), before + 1);
  std::vector<uint8_t> back = ReadWholeFile(path_);
  EXPECT_EQ(0, memcmp(back.data(), data_.data() + kBuf, kBuf));
  table_.WithdrawBuffer(slot);
  if (direct) close(dfd);
}

TEST_F(RingRegistryTest, RefusalsFallBackToOrdinaryTransfers) {
  std::unique_ptr<Engine> engine = MakeEngine(Config{});
  Mapping a(kBuf);
  ASSERT_TRUE(a.ok());
  const int slot = table_.PublishBuffer(a.data(), kBuf);
  ASSERT_NE(slot, kNoFixedSlot);
  TableOps ops;
  ScopedSysOps install(&ops);
  for (bool sparse : {true, false}) {
    (sparse ? ops.fail_sparse_ : ops.fail_update_) = ENOMEM;
    const uint64_t refused = table_.refusals(RingRegistry::kBuffers),
                   registered = table_.registrations(RingRegistry::kBuffers);
    OnFreshThread([&] {
      memset(a.data(), 0, kBuf);
      Result<size_t> r = engine->Read(fd_, a.data(), kBuf, kBuf, 1, slot);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, kBuf);
      EXPECT_TRUE(Holds(a.data(), kBuf, kBuf));
      // Refused for good on this ring: no second try.
      ops.fail_sparse_ = 0;
      ops.fail_update_ = 0;
      ASSERT_TRUE(engine->Read(fd_, a.data(), kBuf, 0, 1, slot).ok());
      EXPECT_TRUE(Holds(a.data(), 0, kBuf));
    });
    EXPECT_EQ(table_.refusals(RingRegistry::kBuffers), refused + 1)
        << (sparse ? "sparse table" : "buffer");
    EXPECT_EQ(table_.registrations(RingRegistry::kBuffers), registered)
        << (sparse ? "sparse table" : "buffer");
  }
  table_.WithdrawBuffer(slot);
}

TEST_F(RingRegistryTest, AnExitedThreadsRingIsNotTouched) {
  std::unique_ptr<Engine> engine = MakeEngine(Config{});
  Mapping a(kBuf);
  ASSERT_TRUE(a.ok());
  const int slot = table_.PublishBuffer(a.data(), kBuf);
  ASSERT_NE(slot, kNoFixedSlot);
  OnFreshThread([&] { ASSERT_TRUE(engine->Read(fd_, a.data(), kBuf, 0, 1, slot).ok()); });
  TableOps ops;
  ScopedSysOps install(&ops);
  table_.WithdrawBuffer(slot);
  EXPECT_EQ(ops.updates_.load(), 0) << "the thread's ring went with it";

  // A live ring holding the slot is cleared.
  const int again = table_.PublishBuffer(a.data(), kBuf);
  OwnRing ring;
  ASSERT_TRUE(ring.ok());
  ASSERT_TRUE(table_.BufferReady(ring.registered(), again, a.data(), kBuf));
  ops.updates_ = 0;
  table_.WithdrawBuffer(again);
  EXPECT_EQ(ops.updates_.load(), 1);
}

TEST_F(RingRegistryTest, StagingBuffersArePublishedUntilReleased) {
  StagingPool pool({256}, {2}, nullptr);
  int slot = kNoFixedSlot;
  {
    Result<StagingLease> l = pool.Lease(kBuf);
    ASSERT_TRUE(l.ok());
    slot = l->fixed();
    ASSERT_NE(slot, kNoFixedSlot);
    OwnRing ring;
    ASSERT_TRUE(ring.ok());
    EXPECT_TRUE(table_.BufferReady(ring.registered(), slot, l->data(), l->size()));
  }
  pool.Release();
  char byte = 0;
  const int again = table_.PublishBuffer(&byte, 1);
  EXPECT_EQ(again, slot) << "the released buffer's slot is free";
  table_.WithdrawBuffer(again);
}

TEST_F(RingRegistryTest, AFileRegistersOnceAndAWithdrawnOneIsCleared) {
  OwnRing ring;
  ASSERT_TRUE(ring.ok());
  const uint32_t gen = table_.PublishFile(fd_);
  ASSERT_NE(gen, 0u);
  const uint64_t before = table_.registrations(RingRegistry::kFiles);
  ASSERT_EQ(table_.FileSlot(ring.registered(), fd_), fd_);
  ASSERT_EQ(table_.FileSlot(ring.registered(), fd_), fd_);
  EXPECT_EQ(table_.registrations(RingRegistry::kFiles), before + 1) << "on first use only";
  std::vector<char> buf(kBuf);
  ASSERT_EQ(ring.ReadFile(fd_, buf.data(), kBuf, kBuf), static_cast<int>(kBuf));
  EXPECT_TRUE(Holds(buf.data(), kBuf, kBuf));

  table_.WithdrawFile(fd_, gen);
  EXPECT_EQ(table_.FileSlot(ring.registered(), fd_), kNoFixedSlot);
  EXPECT_EQ(ring.ReadFile(fd_, buf.data(), kBuf, 0), -EBADF)
      << "the ring no longer holds the withdrawn file";
}

// A descriptor closed and its number reused: the old owner's late withdrawal
// must not clear the new publication.
TEST_F(RingRegistryTest, AStaleWithdrawalLeavesANewPublication) {
  const uint32_t old_gen = table_.PublishFile(fd_);
  const uint32_t new_gen = table_.PublishFile(fd_);
  ASSERT_NE(old_gen, new_gen);
  table_.WithdrawFile(fd_, old_gen);
  OwnRing ring;
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(table_.FileSlot(ring.registered(), fd_), fd_);
  table_.WithdrawFile(fd_, new_gen);
  EXPECT_EQ(table_.FileSlot(ring.registered(), fd_), kNoFixedSlot);
  EXPECT_EQ(table_.PublishFile(-1), 0u);
  EXPECT_EQ(table_.PublishFile(static_cast<int>(table_.file_slots())), 0u) << "past the table";
}

TEST_F(RingRegistryTest, TheEngineReadsThroughRegisteredFilesWhenConfigured) {
  Config cfg;
  EXPECT_FALSE(cfg.io_uring_fixed_files) << "off by default";
  std::unique_ptr<Engine> by_default = MakeEngine(cfg);
  cfg.io_uring_fixed_files = true;
  std::unique_ptr<Engine> configured = MakeEngine(cfg);
  const uint32_t gen = table_.PublishFile(fd_);
  ASSERT_NE(gen, 0u);
  TableOps ops;
  ScopedSysOps install(&ops);
  for (int round : {0, 1, 2}) {
    const bool refuse = round == 2;
    Engine *engine = round == 0 ? by_default.get() : configured.get();
    ops.fail_files_ = refuse ? EPERM : 0;
    const uint64_t registered = table_.registrations(RingRegistry::kFiles);
    const uint64_t refused = table_.refusals(RingRegistry::kFiles);
    OnFreshThread([&] {
      std::vector<char> buf(kBuf);
      Result<size_t> r = engine->Read(fd_, buf.data(), kBuf, 3 * kBuf, 1, kNoFixedSlot);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, kBuf);
      EXPECT_TRUE(Holds(buf.data(), 3 * kBuf, kBuf));
    });
    EXPECT_EQ(table_.registrations(RingRegistry::kFiles), registered + (round == 1 ? 1 : 0));
    EXPECT_EQ(table_.refusals(RingRegistry::kFiles), refused + (refuse ? 1 : 0));
  }
  table_.WithdrawFile(fd_, gen);
}

TEST_F(RingRegistryTest, RegisteredHandlesPublishTheirDescriptorUntilDeregistered) {
  if (Driver::Get().IsOpen()) {
    ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  }
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(RegisterFd(fd_, &fh), CU_FILE_SUCCESS);
  int io_fd = -1;  // the handle's own description of the file
  {
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    ASSERT_TRUE(g.ok());
    io_fd = g->runtime().handles().Lookup(fh)->fd();
  }
  ASSERT_NE(io_fd, fd_);
  OwnRing ring;
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(table_.FileSlot(ring.registered(), io_fd), io_fd);
  // A refused second registration of the same descriptor leaves it published.
  CUfileHandle_t dup = nullptr;
  EXPECT_EQ(RegisterFd(fd_, &dup), CU_FILE_HANDLE_ALREADY_REGISTERED);
  EXPECT_EQ(table_.FileSlot(ring.registered(), io_fd), io_fd);
  cuFileHandleDeregister(fh);
  EXPECT_EQ(table_.FileSlot(ring.registered(), io_fd), kNoFixedSlot);
  std::vector<char> buf(4096);
  EXPECT_EQ(ring.ReadFile(io_fd, buf.data(), 4096, 0), -EBADF) << "cleared from the ring";
  cuFileDriverClose();
}

}  // namespace
}  // namespace ufile::test
