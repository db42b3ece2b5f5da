// SPDX-License-Identifier: Apache-2.0
#include "cufile_fns.h"

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "memory.h"

namespace bench {

const CuFileFns &LinkedCuFile() {
  static const CuFileFns fns = [] {
    CuFileFns f;
#define BENCH_CUFILE_LINK(name) f.name = &::name;
    BENCH_CUFILE_FUNCTIONS(BENCH_CUFILE_LINK)
#undef BENCH_CUFILE_LINK
    f.driver_close = &::cuFileDriverClose_v2;
    f.origin = "ufile (in-process)";
    return f;
  }();
  return fns;
}

namespace {

bool Optional(const char *name) {
  return std::strncmp(name, "cuFileBatch", 11) == 0 || std::strstr(name, "Async") ||
         std::strstr(name, "Stream");
}

Status Resolve(void *lib, const std::string &path, CuFileFns *f) {
  std::string missing;
  // dlsym on this handle only: our own cuFile symbols are never looked at.
#define BENCH_CUFILE_SYM(name)                                      \
  f->name = reinterpret_cast<decltype(f->name)>(dlsym(lib, #name)); \
  if (!f->name && !Optional(#name)) missing += std::string(" ") + #name;
  BENCH_CUFILE_FUNCTIONS(BENCH_CUFILE_SYM)
#undef BENCH_CUFILE_SYM
  f->driver_close = reinterpret_cast<decltype(f->driver_close)>(dlsym(lib, "cuFileDriverClose_v2"));
  if (!f->driver_close)
    f->driver_close = reinterpret_cast<decltype(f->driver_close)>(dlsym(lib, "cuFileDriverClose"));
  if (!f->driver_close) missing += " cuFileDriverClose_v2";
  if (!missing.empty()) return Fail("%s lacks:%s", path.c_str(), missing.c_str());
  f->origin = path;
  return {};
}

}  // namespace

Status LoadCuFile(const std::string &path, const CuFileFns **out) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<CuFileFns>> loaded;  // never unloaded
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(path);
  if (it != loaded.end()) {
    *out = it->second.get();
    return {};
  }
  // RTLD_LOCAL: its symbols stay out of the global scope (ours are linked in).
  // RTLD_NODELETE: vendor libraries tend to run threads that outlive close.
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) return Fail("dlopen %s: %s", path.c_str(), dlerror());
  auto fns = std::make_unique<CuFileFns>();
  Status st = Resolve(lib, path, fns.get());
  if (!st.ok()) return st;
  *out = fns.get();
  loaded.emplace(path, std::move(fns));
  return {};
}

std::string CuFileError(CUfileError_t err) {
  std::string text =
      std::to_string(static_cast<int>(err.err)) + " (" + cufileop_status_error(err.err) + ")";
  if (IS_CUDA_ERR(err)) text += ": " + CudaError(err.cu_err);
  return text;
}

std::string CuFileIoError(ssize_t ret, int err) {
  if (ret == -1) return std::string("-1, errno ") + std::strerror(err);
  if (IS_CUFILE_ERR(ret)) return std::to_string(ret) + " (" + CUFILE_ERRSTR(ret) + ")";
  return std::to_string(ret);
}

}  // namespace bench
