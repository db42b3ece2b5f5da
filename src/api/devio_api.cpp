// SPDX-License-Identifier: Apache-2.0
// The ufile_devio_* C entry points (include/ufile/device.h): check
// arguments, call QueueSet, contain every exception.
#include <cerrno>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "base/log.h"
#include "devio/queue_set.h"
#include "ufile/device.h"

using ufile::devio::QueueSet;

struct ufile_devio {
  std::unique_ptr<QueueSet> set;
};

namespace {

template <class Body>
int Guard(const char *fn, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    UFILE_LOG_ERROR("%s: out of memory", fn);
    return -ENOMEM;
  } catch (const std::exception &e) {
    UFILE_LOG_ERROR("%s: internal error: %s", fn, e.what());
  } catch (...) {
    UFILE_LOG_ERROR("%s: internal error", fn);
  }
  return -EIO;
}

}  // namespace

extern "C" void ufile_devio_params_init(ufile_devio_params_t *p) {
  if (!p) return;
  *p = ufile_devio_params_t{};
  p->size = sizeof *p;
  p->num_queues = 4;
  p->queue_depth = 32;
  p->path = UFILE_DEVIO_PATH_AUTO;
  p->staging_bytes = 256 * 1024;
  p->timeout_us = 10ull * 1000 * 1000;
  p->options = UFILE_DEVIO_OPT_DEFAULT;
  p->sq_threads = 0;
  p->sq_idle_ms = 200;
  p->sq_cpu = -1;
  p->wake_poll_us = 50;
  p->proxy_threads = 0;
  p->proxy_spin_us = 100;
  p->destroy_wait_ms = 2000;
  p->poll_ns = 0;
  p->device = 0;
}

extern "C" int ufile_devio_create(ufile_devio_t **out, const CUfileHandle_t *handles,
                                  unsigned num_handles, const ufile_devio_params_t *params) {
  return Guard(__func__, [&] {
    if (!out) return -EINVAL;
    *out = nullptr;
    ufile_devio_params_t p;
    ufile_devio_params_init(&p);
    if (params) p = *params;
    std::unique_ptr<QueueSet> set;
    const int r = QueueSet::Create(handles, num_handles, p, &set);
    if (r < 0) return r;
    *out = new ufile_devio{std::move(set)};
    return 0;
  });
}

extern "C" int ufile_devio_destroy(ufile_devio_t *dio, unsigned flags) {
  return Guard(__func__, [&] {
    if (!dio || (flags & ~UFILE_DEVIO_DESTROY_FORCE)) return -EINVAL;
    const int r = dio->set->Destroy(flags);
    if (r == 0) delete dio;
    return r;
  });
}

extern "C" int ufile_devio_get_view(const ufile_devio_t *dio, ufile_devio_view_t *view) {
  if (!dio || !view) return -EINVAL;
  *view = dio->set->view();
  return 0;
}

extern "C" int ufile_devio_path(const ufile_devio_t *dio) {
  return dio ? dio->set->path() : -EINVAL;
}

extern "C" int ufile_devio_get_stats(ufile_devio_t *dio, ufile_devio_stats_t *stats) {
  return Guard(__func__, [&] {
    if (!dio || !stats) return -EINVAL;
    return dio->set->Stats(stats);
  });
}

extern "C" int ufile_devio_probe(char *why, size_t why_len) {
  return Guard(__func__, [&] {
    std::string reason;
    if (QueueSet::ProbeNoCpu(&reason)) return static_cast<int>(UFILE_DEVIO_PATH_NOCPU);
    if (why && why_len) std::snprintf(why, why_len, "%s", reason.c_str());
    return static_cast<int>(UFILE_DEVIO_PATH_PROXY);
  });
}

extern "C" const char *ufile_devio_path_name(int path) {
  switch (path) {
    case UFILE_DEVIO_PATH_AUTO:
      return "auto";
    case UFILE_DEVIO_PATH_NOCPU:
      return "nocpu";
    case UFILE_DEVIO_PATH_PROXY:
      return "proxy";
    default:
      return "unknown";
  }
}
