// SPDX-License-Identifier: Apache-2.0
// Device-initiated I/O, host side: parameters, creation and its refusals,
// the choice of path (and the fallback when the kernel refuses SQPOLL rings
// on user memory), the view kernels get, destroy's argument checks.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <string>

#include "devio/queue_set.h"
#include "devio_fixture.h"
#include "support/memory_kinds.h"
#include "sys/uring_raw.h"

namespace ufile::test {
namespace {

class DevioSetup : public ::testing::Test {
 protected:
  TempDir dir_;
  RegisteredFile file_{dir_.File("a"), 1 << 20, 1};
};

TEST_F(DevioSetup, DefaultsAreDocumented) {
  ufile_devio_params_t p;
  ufile_devio_params_init(&p);
  EXPECT_EQ(p.size, sizeof p);
  EXPECT_EQ(p.num_queues, 4u);
  EXPECT_EQ(p.queue_depth, 32u);
  EXPECT_EQ(p.path, static_cast<uint32_t>(UFILE_DEVIO_PATH_AUTO));
  EXPECT_EQ(p.staging_bytes, 256u * 1024);
  EXPECT_EQ(p.timeout_us, 10u * 1000 * 1000);
  EXPECT_EQ(p.options, UFILE_DEVIO_OPT_DEFAULT);
  EXPECT_EQ(p.sq_cpu, -1);
  EXPECT_EQ(p.device, 0);
}

struct BadParam {
  const char *what;
  std::function<void(ufile_devio_params_t &)> set;
};

TEST_F(DevioSetup, BadParametersAreRefusedWithEinval) {
  const BadParam table[] = {
      {"size", [](auto &p) { p.size = 8; }},
      {"no queues", [](auto &p) { p.num_queues = 0; }},
      {"too many queues", [](auto &p) { p.num_queues = 1025; }},
      {"depth 0", [](auto &p) { p.queue_depth = 0; }},
      {"depth 4097", [](auto &p) { p.queue_depth = 4097; }},
      {"staging 0", [](auto &p) { p.staging_bytes = 0; }},
      {"staging > 64 MiB", [](auto &p) { p.staging_bytes = (64ull << 20) + 1; }},
      {"unknown option", [](auto &p) { p.options = 0x100; }},
      {"unknown path", [](auto &p) { p.path = 3; }},
      {"device -2", [](auto &p) { p.device = -2; }},
  };
  CUfileHandle_t h = file_.handle();
  for (const BadParam &b : table) {
    ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
    b.set(p);
    ufile_devio_t *dio = reinterpret_cast<ufile_devio_t *>(0x1);
    EXPECT_EQ(ufile_devio_create(&dio, &h, 1, &p), -EINVAL) << b.what;
    EXPECT_EQ(dio, nullptr) << b.what;
  }
}

TEST_F(DevioSetup, ValuesAreRoundedUp) {
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
  p.queue_depth = 5;
  p.staging_bytes = 5000;
  ASSERT_EQ(devio::QueueSet::Normalize(&p), 0);
  EXPECT_EQ(p.queue_depth, 8u);
  EXPECT_EQ(p.staging_bytes, 8192u);
}

TEST_F(DevioSetup, BadArgumentsAreRefused) {
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
  CUfileHandle_t h = file_.handle();
  ufile_devio_t *dio = nullptr;
  EXPECT_EQ(ufile_devio_create(nullptr, &h, 1, &p), -EINVAL);
  EXPECT_EQ(ufile_devio_create(&dio, nullptr, 1, &p), -EINVAL);
  EXPECT_EQ(ufile_devio_create(&dio, &h, 0, &p), -EINVAL);
  CUfileHandle_t forged[2] = {h, reinterpret_cast<CUfileHandle_t>(0x12345)};
  EXPECT_EQ(ufile_devio_create(&dio, forged, 2, &p), -EBADF);
  EXPECT_EQ(dio, nullptr);
  EXPECT_EQ(ufile_devio_destroy(nullptr, 0), -EINVAL);
  ufile_devio_view_t v;
  EXPECT_EQ(ufile_devio_get_view(nullptr, &v), -EINVAL);
  EXPECT_EQ(ufile_devio_path(nullptr), -EINVAL);
  ufile_devio_stats_t s;
  EXPECT_EQ(ufile_devio_get_stats(nullptr, &s), -EINVAL);
}

TEST_F(DevioSetup, GpuSetWithoutGpuIsNodev) {
  if (GpuAvailable()) GTEST_SKIP() << "a GPU is present: this checks the no-GPU refusal";
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
  p.device = 0;
  CUfileHandle_t h = file_.handle();
  ufile_devio_t *dio = nullptr;
  EXPECT_EQ(ufile_devio_create(&dio, &h, 1, &p), -ENODEV);
}

TEST_F(DevioSetup, ViewDescribesTheSet) {
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
  p.num_queues = 3;
  p.queue_depth = 16;
  p.timeout_us = 1234;
  RegisteredFile ro(dir_.File("ro"), 4096, 2, O_RDONLY);
  CUfileHandle_t hs[2] = {file_.handle(), ro.handle()};
  DeviceQueues q;
  ASSERT_EQ(q.Create(hs, 2, &p), 0);
  const ufile_devio_view_t v = q.view();
  EXPECT_EQ(v.abi_version, UFILE_DEVIO_ABI_VERSION);
  EXPECT_EQ(v.num_queues, 3u);
  EXPECT_EQ(v.depth, 16u);
  EXPECT_EQ(v.num_files, 2u);
  EXPECT_EQ(v.staging_bytes, 64u * 1024);
  EXPECT_EQ(v.timeout_ns, 1234u * 1000);
  EXPECT_EQ(v.path, static_cast<uint32_t>(UFILE_DEVIO_PATH_PROXY));
  EXPECT_EQ(v.files[0].flags, UFILE_DEVIO_FILE_READ | UFILE_DEVIO_FILE_WRITE);
  EXPECT_EQ(v.files[1].flags, UFILE_DEVIO_FILE_READ);
  EXPECT_EQ(devio::FindFile(v, ro.handle()), 1);
  EXPECT_EQ(devio::FindFile(v, reinterpret_cast<void *>(0x777)), -UFILE_DEVIO_EBADF);
  for (uint32_t i = 0; i < v.num_queues; ++i) {
    EXPECT_EQ(v.queues[i].staging_host % 4096, 0u);
    for (uint32_t s = 0; s < v.depth; ++s) EXPECT_EQ(v.queues[i].slots[s], 0u);
  }
  EXPECT_EQ(q.Destroy(), 0);
  EXPECT_FALSE(q);
}

TEST_F(DevioSetup, AutoPicksWhatProbeSays) {
  std::string why;
  const bool nocpu = NoCpuAvailable(&why);
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_AUTO);
  CUfileHandle_t h = file_.handle();
  DeviceQueues q;
  ASSERT_EQ(q.Create(&h, 1, &p), 0);
  EXPECT_EQ(q.path(), nocpu ? UFILE_DEVIO_PATH_NOCPU : UFILE_DEVIO_PATH_PROXY) << why;
}

// The kernel refuses the rings (seccomp's EPERM, an old kernel's EINVAL).
int RefuseSetup(unsigned, RawParams *) { return -EPERM; }
int OldKernelSetup(unsigned, RawParams *) { return -EINVAL; }

TEST_F(DevioSetup, RefusedRingsFallBackToTheProxy) {
  for (auto setup : {RefuseSetup, OldKernelSetup}) {
    UringSeam seam({setup, RealEnter, RealRegister});
    char why[256] = {};
    EXPECT_EQ(ufile_devio_probe(why, sizeof why), UFILE_DEVIO_PATH_PROXY);
    EXPECT_NE(std::string(why).find("io_uring_setup"), std::string::npos) << why;
    CUfileHandle_t h = file_.handle();
    ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_AUTO);
    DeviceQueues q;
    ASSERT_EQ(q.Create(&h, 1, &p), 0);
    EXPECT_EQ(q.path(), UFILE_DEVIO_PATH_PROXY);
    p.path = UFILE_DEVIO_PATH_NOCPU;
    DeviceQueues strict;
    EXPECT_EQ(strict.Create(&h, 1, &p), -EOPNOTSUPP);
  }
}

int RefuseFiles(int fd, unsigned op, const void *arg, unsigned n) {
  return op == kRegisterFiles ? -ENOMEM : RealRegister(fd, op, arg, n);
}

TEST_F(DevioSetup, RefusedFileRegistrationFallsBackToTheProxy) {
  std::string why;
  if (!NoCpuAvailable(&why)) GTEST_SKIP() << "no-CPU path unavailable here: " << why;
  UringSeam seam({RealSetup, RealEnter, RefuseFiles});
  CUfileHandle_t h = file_.handle();
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_AUTO);
  DeviceQueues q;
  ASSERT_EQ(q.Create(&h, 1, &p), 0);
  EXPECT_EQ(q.path(), UFILE_DEVIO_PATH_PROXY);
}

TEST_F(DevioSetup, DestroyRefusesUnknownFlags) {
  CUfileHandle_t h = file_.handle();
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
  ufile_devio_t *dio = nullptr;
  ASSERT_EQ(ufile_devio_create(&dio, &h, 1, &p), 0);
  EXPECT_EQ(ufile_devio_destroy(dio, 0x80), -EINVAL);
  EXPECT_EQ(ufile_devio_destroy(dio, 0), 0);
}

TEST_F(DevioSetup, PathNames) {
  EXPECT_STREQ(ufile_devio_path_name(UFILE_DEVIO_PATH_NOCPU), "nocpu");
  EXPECT_STREQ(ufile_devio_path_name(UFILE_DEVIO_PATH_PROXY), "proxy");
  EXPECT_STREQ(ufile_devio_path_name(UFILE_DEVIO_PATH_AUTO), "auto");
  EXPECT_STREQ(ufile_devio_path_name(99), "unknown");
}

}  // namespace
}  // namespace ufile::test
