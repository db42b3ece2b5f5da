// SPDX-License-Identifier: Apache-2.0
// Bad input for every entry point of cufile.h, as a table (liburing style):
// one row per call, the driver state it runs in, and the exact result. Each
// row also checks that the call touched neither the caller's buffer nor the
// file. Rows for the batch, stream and stats APIs check NULL pointers and
// "no crash" only (those APIs are young; see the "unsure" notes).
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "gpu/cuda_api.h"
#include "support/test_util.h"

// A C caller may pass any int where the API takes an enum (C enums are
// ints). Forming such a value as a C++ enum would be undefined in this test,
// so the parameter entry points are also declared, under their own symbols,
// with int parameters: the calls below are exactly what a C program makes.
CUfileError_t RawGetParameterSizeT(int, size_t *) __asm__("cuFileGetParameterSizeT");
CUfileError_t RawGetParameterBool(int, bool *) __asm__("cuFileGetParameterBool");
CUfileError_t RawGetParameterString(int, char *, int) __asm__("cuFileGetParameterString");
CUfileError_t RawGetParameterMinMaxValue(int, size_t *,
                                         size_t *) __asm__("cuFileGetParameterMinMaxValue");
CUfileError_t RawSetParameterSizeT(int, size_t) __asm__("cuFileSetParameterSizeT");
CUfileError_t RawSetParameterBool(int, bool) __asm__("cuFileSetParameterBool");
CUfileError_t RawSetParameterString(int, const char *) __asm__("cuFileSetParameterString");

namespace ufile::test {
namespace {

enum class State { kClosed, kOpen };  // the driver when the row runs
constexpr long kAny = LONG_MIN;       // the row only checks that nothing crashes
constexpr size_t kBuf = 65536;

// What a row's call may use. fh/ro/wo are live (kOpen rows only); stale is a
// handle of a session that was closed before the row.
struct Ctx {
  int fd = -1, ro_fd = -1, wo_fd = -1, dir_fd = -1;
  CUfileHandle_t fh = nullptr, ro = nullptr, wo = nullptr, stale = nullptr;
  uint8_t *buf = nullptr;
};

struct Row {
  const char *fn;    // the entry point
  const char *what;  // the bad input
  State state;
  long (*call)(Ctx &);
  long expected;  // CUfileOpError, or what cuFileRead/Write/UseCount return
  int err = 0;    // errno when expected is -1
};

long E(CUfileError_t e) {
  return e.err;
}
constexpr long Neg(CUfileOpError e) {
  return -static_cast<long>(e);
}
const auto kForged = reinterpret_cast<CUfileHandle_t>(0x1234);
const auto kWraps = reinterpret_cast<void *>(UINTPTR_MAX - 10);

CUfileError_t RegFd(int type, int fd) {
  CUfileHandle_t fh = nullptr;
  CUfileDescr_t d{};
  std::memcpy(&d.type, &type, sizeof type);  // any int, as from C
  d.handle.fd = fd;
  return cuFileHandleRegister(&fh, &d);
}
CUfileError_t RegFs(const CUfileFSOps_t *ops) {
  CUfileHandle_t fh = nullptr;
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
  d.fs_ops = ops;
  return cuFileHandleRegister(&fh, &d);
}

constexpr State C = State::kClosed, O = State::kOpen;
// One row a line: the table reads better than wrapped calls.
// clang-format off
#define ROW(fn, what, st, want, ...) \
  Row { #fn, what, st, [](Ctx &c) -> long { (void)c; return __VA_ARGS__; }, want }
#define ROW_ERRNO(fn, what, st, err, ...) \
  Row { #fn, what, st, [](Ctx &c) -> long { (void)c; return __VA_ARGS__; }, -1, err }
// clang-format on

const CUfileOpError INVAL = CU_FILE_INVALID_VALUE;
const long kIoInval = Neg(CU_FILE_INVALID_VALUE);
const long kIoNotReg = Neg(CU_FILE_HANDLE_NOT_REGISTERED);

size_t g_sz[4], g_cnt[4];
char g_str[64];
bool g_bool;
unsigned g_nr;
off_t g_off;
ssize_t g_bytes;

// clang-format off
const Row kRows[] = {
    // ---- handles ----
    ROW(cuFileHandleRegister, "NullFh", O, INVAL, [] { CUfileDescr_t d{}; return E(cuFileHandleRegister(nullptr, &d)); }()),
    ROW(cuFileHandleRegister, "NullFhClosed", C, INVAL, [] { CUfileDescr_t d{}; return E(cuFileHandleRegister(nullptr, &d)); }()),
    ROW(cuFileHandleRegister, "NullDescr", O, INVAL, [] { CUfileHandle_t fh; return E(cuFileHandleRegister(&fh, nullptr)); }()),
    ROW(cuFileHandleRegister, "TypeZero", O, INVAL, E(RegFd(0, c.fd))),
    ROW(cuFileHandleRegister, "TypeWin32", O, INVAL, E(RegFd(CU_FILE_HANDLE_TYPE_OPAQUE_WIN32, c.fd))),
    ROW(cuFileHandleRegister, "TypeBogus", O, INVAL, E(RegFd(77, c.fd))),
    ROW(cuFileHandleRegister, "TypeNegative", O, INVAL, E(RegFd(-1, c.fd))),
    ROW(cuFileHandleRegister, "FdMinusOne", O, INVAL, E(RegFd(CU_FILE_HANDLE_TYPE_OPAQUE_FD, -1))),
    ROW(cuFileHandleRegister, "FdNotOpen", O, INVAL, E(RegFd(CU_FILE_HANDLE_TYPE_OPAQUE_FD, 1 << 29))),
    ROW(cuFileHandleRegister, "Directory", O, CU_FILE_INVALID_FILE_TYPE, E(RegFd(CU_FILE_HANDLE_TYPE_OPAQUE_FD, c.dir_fd))),
    ROW(cuFileHandleRegister, "AlreadyRegistered", O, CU_FILE_HANDLE_ALREADY_REGISTERED, E(RegFd(CU_FILE_HANDLE_TYPE_OPAQUE_FD, c.fd))),
    ROW(cuFileHandleRegister, "UserFsNullOps", O, INVAL, E(RegFs(nullptr))),
    ROW(cuFileHandleRegister, "UserFsNoCallbacks", O, INVAL, [] { static CUfileFSOps_t none{}; return E(RegFs(&none)); }()),
    // Deregistering a bogus handle is harmless: the live handle still works.
    ROW(cuFileHandleDeregister, "Null", O, 0, (cuFileHandleDeregister(nullptr), cuFileRead(c.fh, c.buf, 0, 0, 0))),
    ROW(cuFileHandleDeregister, "Forged", O, 0, (cuFileHandleDeregister(kForged), cuFileRead(c.fh, c.buf, 0, 0, 0))),
    ROW(cuFileHandleDeregister, "Stale", O, 0, (cuFileHandleDeregister(c.stale), cuFileRead(c.fh, c.buf, 0, 0, 0))),
    ROW(cuFileHandleDeregister, "Twice", O, kIoNotReg, (cuFileHandleDeregister(c.ro), cuFileHandleDeregister(c.ro), cuFileRead(c.ro, c.buf, 0, 0, 0))),
    ROW(cuFileHandleDeregister, "StaleClosed", C, kAny, (cuFileHandleDeregister(c.stale), 0)),
    // ---- buffers ----
    ROW(cuFileBufRegister, "Null", O, INVAL, E(cuFileBufRegister(nullptr, 4096, 0))),
    ROW(cuFileBufRegister, "NullClosed", C, INVAL, E(cuFileBufRegister(nullptr, 4096, 0))),
    ROW(cuFileBufRegister, "LengthZero", O, INVAL, E(cuFileBufRegister(c.buf, 0, 0))),
    ROW(cuFileBufRegister, "Wraps", O, INVAL, E(cuFileBufRegister(kWraps, 100, 0))),
    ROW(cuFileBufRegister, "SizeMax", O, INVAL, E(cuFileBufRegister(c.buf, SIZE_MAX, 0))),
    ROW(cuFileBufRegister, "UnknownFlag", O, INVAL, E(cuFileBufRegister(c.buf, 4096, 1 << 5))),
    ROW(cuFileBufRegister, "NegativeFlags", O, INVAL, E(cuFileBufRegister(c.buf, 4096, -1))),
    ROW(cuFileBufDeregister, "Null", O, INVAL, E(cuFileBufDeregister(nullptr))),
    ROW(cuFileBufDeregister, "NeverRegistered", O, CU_FILE_MEMORY_NOT_REGISTERED, E(cuFileBufDeregister(c.buf))),
    ROW(cuFileBufDeregister, "Interior", O, CU_FILE_MEMORY_NOT_REGISTERED, [&c] {
      cuFileBufRegister(c.buf, 4096, 0);
      const long r = E(cuFileBufDeregister(c.buf + 1));
      cuFileBufDeregister(c.buf);
      return r;
    }()),
    // ---- synchronous I/O ----
    ROW(cuFileRead, "NullHandle", O, kIoNotReg, cuFileRead(nullptr, c.buf, 4096, 0, 0)),
    ROW(cuFileRead, "ForgedHandle", O, kIoNotReg, cuFileRead(kForged, c.buf, 4096, 0, 0)),
    ROW(cuFileRead, "StaleHandle", O, kIoNotReg, cuFileRead(c.stale, c.buf, 4096, 0, 0)),
    ROW(cuFileRead, "StaleHandleClosed", C, kIoNotReg, cuFileRead(c.stale, c.buf, 4096, 0, 0)),
    ROW(cuFileRead, "NullBuffer", O, kIoInval, cuFileRead(c.fh, nullptr, 4096, 0, 0)),
    ROW(cuFileRead, "NegativeFileOffset", O, kIoInval, cuFileRead(c.fh, c.buf, 4096, -1, 0)),
    ROW(cuFileRead, "NegativeBufOffset", O, kIoInval, cuFileRead(c.fh, c.buf, 4096, 0, -1)),
    ROW(cuFileRead, "FileOffsetPlusSizeOverflows", O, kIoInval, cuFileRead(c.fh, c.buf, 100, LLONG_MAX - 10, 0)),
    ROW(cuFileRead, "SizeAboveSsizeMax", O, kIoInval, cuFileRead(c.fh, c.buf, size_t{SSIZE_MAX} + 1, 0, 0)),
    ROW(cuFileRead, "SizeMax", O, kIoInval, cuFileRead(c.fh, c.buf, SIZE_MAX, 0, 0)),
    ROW(cuFileRead, "BufferWraps", O, kIoInval, cuFileRead(c.fh, kWraps, 100, 0, 0)),
    ROW(cuFileRead, "BufOffsetWraps", O, kIoInval, cuFileRead(c.fh, c.buf, SSIZE_MAX, 0, LLONG_MAX)),
    ROW(cuFileRead, "SizeZero", O, 0, cuFileRead(c.fh, c.buf, 0, 0, 0)),
    ROW(cuFileRead, "SizeZeroPastEof", O, 0, cuFileRead(c.fh, c.buf, 0, 1 << 30, 0)),
    ROW(cuFileRead, "SizeZeroForgedHandle", O, kIoNotReg, cuFileRead(kForged, c.buf, 0, 0, 0)),
    ROW_ERRNO(cuFileRead, "WriteOnlyHandle", O, EBADF, cuFileRead(c.wo, c.buf, 4096, 0, 0)),
    ROW(cuFileWrite, "NullHandle", O, kIoNotReg, cuFileWrite(nullptr, c.buf, 4096, 0, 0)),
    ROW(cuFileWrite, "ForgedHandle", O, kIoNotReg, cuFileWrite(kForged, c.buf, 4096, 0, 0)),
    ROW(cuFileWrite, "StaleHandle", O, kIoNotReg, cuFileWrite(c.stale, c.buf, 4096, 0, 0)),
    ROW(cuFileWrite, "StaleHandleClosed", C, kIoNotReg, cuFileWrite(c.stale, c.buf, 4096, 0, 0)),
    ROW(cuFileWrite, "NullBuffer", O, kIoInval, cuFileWrite(c.fh, nullptr, 4096, 0, 0)),
    ROW(cuFileWrite, "NegativeFileOffset", O, kIoInval, cuFileWrite(c.fh, c.buf, 4096, -4096, 0)),
    ROW(cuFileWrite, "NegativeBufOffset", O, kIoInval, cuFileWrite(c.fh, c.buf, 4096, 0, -4096)),
    ROW(cuFileWrite, "FileOffsetPlusSizeOverflows", O, kIoInval, cuFileWrite(c.fh, c.buf, 100, LLONG_MAX - 10, 0)),
    ROW(cuFileWrite, "SizeAboveSsizeMax", O, kIoInval, cuFileWrite(c.fh, c.buf, size_t{SSIZE_MAX} + 1, 0, 0)),
    ROW(cuFileWrite, "BufferWraps", O, kIoInval, cuFileWrite(c.fh, kWraps, 100, 0, 0)),
    ROW(cuFileWrite, "BufOffsetWraps", O, kIoInval, cuFileWrite(c.fh, c.buf, SSIZE_MAX, 0, LLONG_MAX)),
    ROW(cuFileWrite, "SizeZero", O, 0, cuFileWrite(c.fh, c.buf, 0, 0, 0)),
    ROW(cuFileWrite, "SizeZeroPastEof", O, 0, cuFileWrite(c.fh, c.buf, 0, 1 << 30, 0)),
    ROW_ERRNO(cuFileWrite, "ReadOnlyHandle", O, EBADF, cuFileWrite(c.ro, c.buf, 4096, 0, 0)),
    // ---- driver ----
    ROW(cuFileDriverOpen, "Nested", O, CU_FILE_SUCCESS, E(cuFileDriverOpen())),
    ROW(cuFileDriverClose, "NotOpen", C, CU_FILE_DRIVER_NOT_INITIALIZED, E(cuFileDriverClose())),
    ROW(cuFileDriverClose_v2, "NotOpen", C, CU_FILE_DRIVER_NOT_INITIALIZED, E(cuFileDriverClose_v2())),
    ROW(cuFileUseCount, "Closed", C, 0, cuFileUseCount()),
    ROW(cuFileDriverGetProperties, "Null", O, INVAL, E(cuFileDriverGetProperties(nullptr))),
    ROW(cuFileDriverGetProperties, "NullClosed", C, INVAL, E(cuFileDriverGetProperties(nullptr))),
    ROW(cuFileDriverSetPollMode, "BeforeOpen", C, CU_FILE_DRIVER_NOT_INITIALIZED, E(cuFileDriverSetPollMode(true, 64))),
    ROW(cuFileDriverSetPollMode, "ThresholdZero", O, CU_FILE_DRIVER_UNSUPPORTED_LIMIT, E(cuFileDriverSetPollMode(true, 0))),
    ROW(cuFileDriverSetPollMode, "ThresholdHuge", O, CU_FILE_DRIVER_UNSUPPORTED_LIMIT, E(cuFileDriverSetPollMode(true, SIZE_MAX))),
    ROW(cuFileDriverSetMaxDirectIOSize, "BeforeOpen", C, CU_FILE_DRIVER_NOT_INITIALIZED, E(cuFileDriverSetMaxDirectIOSize(1024))),
    ROW(cuFileDriverSetMaxDirectIOSize, "Zero", O, CU_FILE_DRIVER_UNSUPPORTED_LIMIT, E(cuFileDriverSetMaxDirectIOSize(0))),
    ROW(cuFileDriverSetMaxDirectIOSize, "Huge", O, CU_FILE_DRIVER_UNSUPPORTED_LIMIT, E(cuFileDriverSetMaxDirectIOSize(SIZE_MAX))),
    ROW(cuFileDriverSetMaxCacheSize, "BeforeOpen", C, CU_FILE_DRIVER_NOT_INITIALIZED, E(cuFileDriverSetMaxCacheSize(1024))),
    ROW(cuFileDriverSetMaxCacheSize, "Huge", O, CU_FILE_DRIVER_UNSUPPORTED_LIMIT, E(cuFileDriverSetMaxCacheSize(SIZE_MAX))),
    ROW(cuFileDriverSetMaxPinnedMemSize, "BeforeOpen", C, CU_FILE_DRIVER_NOT_INITIALIZED, E(cuFileDriverSetMaxPinnedMemSize(1024))),
    ROW(cuFileDriverSetMaxPinnedMemSize, "Huge", O, CU_FILE_DRIVER_UNSUPPORTED_LIMIT, E(cuFileDriverSetMaxPinnedMemSize(SIZE_MAX))),
    ROW(cuFileGetVersion, "Null", C, INVAL, E(cuFileGetVersion(nullptr))),
    ROW(cuFileGetBARSizeInKB, "Null", O, INVAL, E(cuFileGetBARSizeInKB(0, nullptr))),
    // ---- parameters ----
    ROW(cuFileGetParameterSizeT, "NullValue", C, INVAL, E(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, nullptr))),
    ROW(cuFileGetParameterSizeT, "BadEnum", O, INVAL, E(RawGetParameterSizeT(99, g_sz))),
    ROW(cuFileGetParameterBool, "NullValue", O, INVAL, E(cuFileGetParameterBool(CUFILE_PARAM_PROFILE_NVTX, nullptr))),
    ROW(cuFileGetParameterBool, "BadEnum", C, INVAL, E(RawGetParameterBool(-1, &g_bool))),
    ROW(cuFileGetParameterString, "NullString", O, INVAL, E(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, nullptr, 64))),
    ROW(cuFileGetParameterString, "LengthZero", O, INVAL, E(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, g_str, 0))),
    ROW(cuFileGetParameterString, "LengthNegative", C, INVAL, E(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, g_str, -1))),
    ROW(cuFileGetParameterString, "TooShort", O, INVAL, E(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, g_str, 1))),
    ROW(cuFileGetParameterString, "BadEnum", O, INVAL, E(RawGetParameterString(3, g_str, 64))),
    ROW(cuFileGetParameterMinMaxValue, "NullMin", O, INVAL, E(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, nullptr, g_sz))),
    ROW(cuFileGetParameterMinMaxValue, "NullMax", C, INVAL, E(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, g_sz, nullptr))),
    ROW(cuFileGetParameterMinMaxValue, "BadEnum", O, INVAL, E(RawGetParameterMinMaxValue(12, g_sz, g_sz + 1))),
    ROW(cuFileSetParameterSizeT, "WhileOpen", O, CU_FILE_DRIVER_ALREADY_OPEN, E(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, 1))),
    ROW(cuFileSetParameterSizeT, "BadEnum", C, INVAL, E(RawSetParameterSizeT(99, 1))),
    ROW(cuFileSetParameterSizeT, "BelowRange", C, INVAL, E(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 0))),
    ROW(cuFileSetParameterSizeT, "SizeMax", C, INVAL, E(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, SIZE_MAX))),
    ROW(cuFileSetParameterBool, "WhileOpen", O, CU_FILE_DRIVER_ALREADY_OPEN, E(cuFileSetParameterBool(CUFILE_PARAM_PROFILE_NVTX, false))),
    ROW(cuFileSetParameterBool, "BadEnum", C, INVAL, E(RawSetParameterBool(99, true))),
    ROW(cuFileSetParameterString, "WhileOpen", O, CU_FILE_DRIVER_ALREADY_OPEN, E(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "ERROR"))),
    ROW(cuFileSetParameterString, "Null", C, INVAL, E(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, nullptr))),
    ROW(cuFileSetParameterString, "BadEnum", C, INVAL, E(RawSetParameterString(-1, "x"))),
    ROW(cuFileSetParameterString, "BadLevel", C, INVAL, E(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "LOUD"))),
    ROW(cuFileSetParameterPosixPoolSlabArray, "WhileOpen", O, CU_FILE_DRIVER_ALREADY_OPEN, [] { static const size_t s[] = {1024}, n[] = {8}; return E(cuFileSetParameterPosixPoolSlabArray(s, n, 1)); }()),
    ROW(cuFileSetParameterPosixPoolSlabArray, "NullSizes", C, INVAL, E(cuFileSetParameterPosixPoolSlabArray(nullptr, g_cnt, 1))),
    ROW(cuFileSetParameterPosixPoolSlabArray, "NullCounts", C, INVAL, E(cuFileSetParameterPosixPoolSlabArray(g_sz, nullptr, 1))),
    ROW(cuFileSetParameterPosixPoolSlabArray, "LengthZero", C, INVAL, E(cuFileSetParameterPosixPoolSlabArray(g_sz, g_cnt, 0))),
    ROW(cuFileSetParameterPosixPoolSlabArray, "LengthNegative", C, INVAL, E(cuFileSetParameterPosixPoolSlabArray(g_sz, g_cnt, -1))),
    ROW(cuFileGetParameterPosixPoolSlabArray, "NullSizes", O, INVAL, E(cuFileGetParameterPosixPoolSlabArray(nullptr, g_cnt, 1))),
    ROW(cuFileGetParameterPosixPoolSlabArray, "NullCounts", C, INVAL, E(cuFileGetParameterPosixPoolSlabArray(g_sz, nullptr, 1))),
    ROW(cuFileGetParameterPosixPoolSlabArray, "LengthZero", O, INVAL, E(cuFileGetParameterPosixPoolSlabArray(g_sz, g_cnt, 0))),
    // ---- stats (NULL rows; the rest only must not crash) ----
    ROW(cuFileSetStatsLevel, "Negative", O, INVAL, E(cuFileSetStatsLevel(-1))),
    ROW(cuFileSetStatsLevel, "Four", C, INVAL, E(cuFileSetStatsLevel(4))),
    ROW(cuFileGetStatsLevel, "Null", O, INVAL, E(cuFileGetStatsLevel(nullptr))),
    ROW(cuFileStatsStart, "NoCrash", O, kAny, E(cuFileStatsStart())),
    ROW(cuFileStatsStop, "NoCrash", C, kAny, E(cuFileStatsStop())),
    ROW(cuFileStatsReset, "NoCrash", O, kAny, E(cuFileStatsReset())),
    ROW(cuFileGetStatsL1, "Null", O, INVAL, E(cuFileGetStatsL1(nullptr))),
    ROW(cuFileGetStatsL2, "Null", O, INVAL, E(cuFileGetStatsL2(nullptr))),
    ROW(cuFileGetStatsL3, "Null", C, INVAL, E(cuFileGetStatsL3(nullptr))),
    // ---- batch (unsure: INVALID_VALUE for NULL, as NVIDIA documents) ----
    ROW(cuFileBatchIOSetUp, "NullHandle", O, INVAL, E(cuFileBatchIOSetUp(nullptr, 4))),
    ROW(cuFileBatchIOSubmit, "NullBatchNullParams", O, INVAL, E(cuFileBatchIOSubmit(nullptr, 1, nullptr, 0))),
    ROW(cuFileBatchIOSubmit, "ForgedBatch", O, INVAL, [&c] { CUfileIOParams_t p{}; p.fh = c.fh; return E(cuFileBatchIOSubmit(kForged, 1, &p, 0)); }()),
    ROW(cuFileBatchIOGetStatus, "NullNr", O, INVAL, E(cuFileBatchIOGetStatus(nullptr, 0, nullptr, nullptr, nullptr))),
    ROW(cuFileBatchIOGetStatus, "ForgedBatch", O, INVAL, [] { CUfileIOEvents_t ev[1]; g_nr = 1; return E(cuFileBatchIOGetStatus(kForged, 0, &g_nr, ev, nullptr)); }()),
    ROW(cuFileBatchIOCancel, "Null", O, INVAL, E(cuFileBatchIOCancel(nullptr))),
    ROW(cuFileBatchIODestroy, "Null", O, kAny, (cuFileBatchIODestroy(nullptr), 0)),
    ROW(cuFileBatchIODestroy, "Forged", C, kAny, (cuFileBatchIODestroy(kForged), 0)),
    // ---- streams (unsure: INVALID_VALUE for NULL pointers) ----
    ROW(cuFileReadAsync, "NullSize", O, INVAL, E(cuFileReadAsync(c.fh, c.buf, nullptr, &g_off, &g_off, &g_bytes, nullptr))),
    ROW(cuFileReadAsync, "NullBytes", O, INVAL, [&c] { static size_t n = 16; return E(cuFileReadAsync(c.fh, c.buf, &n, &g_off, &g_off, nullptr, nullptr)); }()),
    ROW(cuFileWriteAsync, "NullFileOffset", O, INVAL, [&c] { static size_t n = 16; return E(cuFileWriteAsync(c.fh, c.buf, &n, nullptr, &g_off, &g_bytes, nullptr)); }()),
    ROW(cuFileWriteAsync, "NullBuffer", O, INVAL, [] { static size_t n = 16; return E(cuFileWriteAsync(kForged, nullptr, &n, &g_off, &g_off, &g_bytes, nullptr)); }()),
    ROW(cuFileStreamRegister, "NullStream", O, kAny, E(cuFileStreamRegister(nullptr, 0))),
    ROW(cuFileStreamRegister, "BogusFlags", O, kAny, E(cuFileStreamRegister(nullptr, 0xFFFF0000u))),
    ROW(cuFileStreamDeregister, "NullStream", O, kAny, E(cuFileStreamDeregister(nullptr))),
};
// clang-format on

class BadInput : public ::testing::TestWithParam<Row> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    file_ = RandomBytes(kBuf, 1);
    WriteWholeFile(dir_->File("f"), file_);
  }
  static void TearDownTestSuite() { delete dir_; }
  static CUfileHandle_t Reg(int fd) {
    CUfileHandle_t fh = nullptr;
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    EXPECT_EQ(cuFileHandleRegister(&fh, &d).err, CU_FILE_SUCCESS);
    return fh;
  }
  void SetUp() override {
    CloseAll();
    const std::string f = dir_->File("f");
    c_.fd = ::open(f.c_str(), O_RDWR);
    c_.ro_fd = ::open(f.c_str(), O_RDONLY);
    c_.wo_fd = ::open(f.c_str(), O_WRONLY);
    c_.dir_fd = ::open(dir_->path().c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(c_.fd >= 0 && c_.ro_fd >= 0 && c_.wo_fd >= 0 && c_.dir_fd >= 0);
    pattern_ = RandomBytes(kBuf, 2);
    mem_ = pattern_;
    c_.buf = mem_.data();
    // A handle of a session that is over.
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    c_.stale = Reg(c_.fd);
    CloseAll();
    if (GetParam().state == State::kOpen) {
      ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
      c_.fh = Reg(c_.fd);
      c_.ro = Reg(c_.ro_fd);
      c_.wo = Reg(c_.wo_fd);
    }
  }
  void TearDown() override {
    CloseAll();
    for (int fd : {c_.fd, c_.ro_fd, c_.wo_fd, c_.dir_fd}) ::close(fd);
  }
  static TempDir *dir_;
  static std::vector<uint8_t> file_;
  Ctx c_;
  std::vector<uint8_t> pattern_, mem_;
};
TempDir *BadInput::dir_ = nullptr;
std::vector<uint8_t> BadInput::file_;

TEST_P(BadInput, ExactResultAndNothingTouched) {
  const Row &row = GetParam();
  errno = 0;
  const long got = row.call(c_);
  const int err = errno;
  if (row.expected != kAny) {
    EXPECT_EQ(got, row.expected);
  }
  if (row.err) {
    EXPECT_EQ(err, row.err) << std::strerror(err);
  }
  EXPECT_TRUE(mem_ == pattern_) << "the caller's buffer changed";
  EXPECT_TRUE(ReadWholeFile(dir_->File("f")) == file_) << "the file changed";
}

std::string RowName(const ::testing::TestParamInfo<Row> &info) {
  return std::string(info.param.fn) + "_" + info.param.what;
}

INSTANTIATE_TEST_SUITE_P(Rows, BadInput, ::testing::ValuesIn(kRows), RowName);

TEST(BadInputTable, CoversEveryEntryPoint) {
  // clang-format off
  const std::set<std::string> all = {
      "cuFileHandleRegister", "cuFileHandleDeregister", "cuFileBufRegister", "cuFileBufDeregister",
      "cuFileRead", "cuFileWrite", "cuFileDriverOpen", "cuFileDriverClose", "cuFileDriverClose_v2",
      "cuFileUseCount", "cuFileDriverGetProperties", "cuFileDriverSetPollMode",
      "cuFileDriverSetMaxDirectIOSize", "cuFileDriverSetMaxCacheSize",
      "cuFileDriverSetMaxPinnedMemSize", "cuFileBatchIOSetUp", "cuFileBatchIOSubmit",
      "cuFileBatchIOGetStatus", "cuFileBatchIOCancel", "cuFileBatchIODestroy", "cuFileReadAsync",
      "cuFileWriteAsync", "cuFileStreamRegister", "cuFileStreamDeregister", "cuFileGetVersion",
      "cuFileGetParameterSizeT", "cuFileGetParameterBool", "cuFileGetParameterString",
      "cuFileGetParameterMinMaxValue", "cuFileSetParameterSizeT", "cuFileSetParameterBool",
      "cuFileSetParameterString", "cuFileSetStatsLevel", "cuFileGetStatsLevel", "cuFileStatsStart",
      "cuFileStatsStop", "cuFileStatsReset", "cuFileGetStatsL1", "cuFileGetStatsL2",
      "cuFileGetStatsL3", "cuFileGetBARSizeInKB", "cuFileSetParameterPosixPoolSlabArray",
      "cuFileGetParameterPosixPoolSlabArray"};
  // clang-format on
  ASSERT_EQ(all.size(), 43u);
  std::set<std::string> covered;
  for (const Row &r : kRows) covered.insert(r.fn);
  EXPECT_EQ(covered, all);
}

TEST(BadInputTable, VersionIsAtLeast1150) {
  int v = 0;
  ASSERT_EQ(cuFileGetVersion(&v).err, CU_FILE_SUCCESS);
  EXPECT_GE(v, 1150);
  EXPECT_EQ(v % 10, 0) << "1000 * major + 10 * minor";
}

TEST(BadInputTable, BarSizeWithoutAGpuIsDeviceNotFound) {
  if (Cuda().available) GTEST_SKIP() << "a GPU is present";
  size_t kb = 12345;
  EXPECT_EQ(cuFileGetBARSizeInKB(0, &kb).err, CU_FILE_DEVICE_NOT_FOUND);
  EXPECT_EQ(cuFileGetBARSizeInKB(-1, &kb).err, CU_FILE_DEVICE_NOT_FOUND);
  EXPECT_EQ(kb, 12345u) << "a failed call must not write *barSize";
  CloseAll();
}

TEST(BadInputTable, UseCountWhileOpenIsOne) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 1);
  EXPECT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
}

}  // namespace
}  // namespace ufile::test
