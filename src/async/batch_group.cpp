// SPDX-License-Identifier: Apache-2.0
#include "async/batch_group.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "base/log.h"
#include "base/raw_enum.h"
#include "core/chunk_io.h"
#include "core/io_request.h"
#include "core/runtime.h"
#include "core/transfer.h"
#include "gpu/copy_lanes.h"
#include "gpu/cuda_api.h"
#include "observe/trace.h"

namespace ufile {
namespace {

constexpr const char *kSubmit = "cuFileBatchIOSubmit";
constexpr size_t kPage = 4096;
// The staging buffer's first page holds the gather ranges.
constexpr size_t kMaxStaged = kPage / sizeof(GatherRange);

size_t RoundUp(size_t v) {
  return (v + kPage - 1) / kPage * kPage;
}

Status RefuseEntry(const CUfileIOParams_t &p, const char *why, int value) {
  UFILE_LOG_ERROR("%s: entry with cookie %p refused: %s %d", kSubmit, p.cookie, why, value);
  return Status::Op(CU_FILE_INVALID_VALUE);
}

void Finish(GroupEntry &e, const Result<size_t> &r) {
  e.event.cookie = e.params.cookie;
  if (r.ok()) {
    e.event.status = CUFILE_COMPLETE;
    e.event.ret = r.value();
  } else {
    e.event.status = CUFILE_FAILED;
    e.event.ret = static_cast<size_t>(r.status().ToNegativeCode());
  }
  e.done = true;
}

void Cancel(GroupEntry &e) {
  e.event = CUfileIOEvents_t{e.params.cookie, CUFILE_CANCELED, 0};
  e.done = true;
}

// An entry that passed the checks.
struct Item {
  GroupEntry *entry = nullptr;
  std::shared_ptr<FileHandle> file;
  IoRequest req;
  bool fast = false;      // goes to the engine with the group
  bool staged = false;    // device memory: through its staging slot
  bool cache_first = false;  // an O_DIRECT read: the page cache first (PreferCache)
  size_t stage_off = 0;   // the slot, from the staging buffer's start
  CUcontext ctx = nullptr;
  EngineOp op;
};

class Group {
 public:
  Group(Runtime &rt, GroupEntry *e, size_t n, const std::function<bool()> &canceled)
      : rt_(rt), entries_(e), n_(n), canceled_(canceled) {}

  void Run() {
    items_.reserve(n_);
    for (size_t i = 0; i < n_; ++i) Check(entries_[i]);
    if (!Classify()) return;
    RunFast();
    for (Item &it : items_)
      if (!it.fast && !it.entry->done) RunSlow(it);
  }

 private:
  // Checks an entry as cuFileRead/Write would; a refused one is finished.
  void Check(GroupEntry &e) {
    const CUfileIOParams_t &p = e.params;
    const int mode = RawEnum(p.mode);
    const int op = RawEnum(p.opcode);
    if (mode != CUFILE_BATCH) return Finish(e, RefuseEntry(p, "mode", mode));
    if (op != CUFILE_READ && op != CUFILE_WRITE) return Finish(e, RefuseEntry(p, "opcode", op));
    const auto &b = p.u.batch;
    const IoArgs a{p.fh, b.devPtr_base, b.size, b.file_offset, b.devPtr_offset, op == CUFILE_WRITE};
    Result<PreparedIo> io = Prepare(a);
    if (!io.ok()) return Finish(e, io.status());
    if (a.size == 0) return Finish(e, size_t{0});
    Item it;
    it.entry = &e;
    it.file = std::move(io->file);
    it.req = io->req;
    items_.push_back(std::move(it));
  }

  // PrepareIo(kSubmit, rt_, a), with the descriptor check (an fstat) made
  // once per handle and direction for the group: every entry is checked
  // before any of the group's I/O starts, so one answer holds for all.
  Result<PreparedIo> Prepare(const IoArgs &a) {
    UFILE_RETURN_IF_ERROR(CheckIoArgs(kSubmit, a));
    Result<std::shared_ptr<FileHandle>> file = LookupHandle(kSubmit, rt_, a.fh);
    if (!file.ok()) return file.status();
    UFILE_RETURN_IF_ERROR(CheckOnce(*file, a.write));
    Result<IoRequest> req = PrepareIo(kSubmit, rt_, **file, a, Access::kChecked);
    if (!req.ok()) return req.status();
    return PreparedIo{std::move(*file), *req};
  }

  Status CheckOnce(const std::shared_ptr<FileHandle> &file, bool write) {
    for (const Checked &c : checked_)
      if (c.file == file && c.write == write) return c.status;
    checked_.push_back(Checked{file, write, CheckAccess(kSubmit, *file, write)});
    return checked_.back().status;
  }

  // Whether it can go to the engine with the group: a plain file, small,
  // and block-aligned for O_DIRECT (staging slots are page-aligned).
  static bool Fits(const Item &it) {
    const FileHandle &f = *it.file;
    if (f.is_fs_ops() || it.req.size > kGroupMaxEntry) return false;
    if (!f.direct()) return true;
    const size_t al = f.align();
    const bool host_ok =
        it.req.mem_info.needs_copy() || reinterpret_cast<uintptr_t>(it.req.mem) % al == 0;
    return static_cast<uint64_t>(it.req.file_off) % al == 0 && it.req.size % al == 0 && host_ok;
  }

  // Picks the fast items, their descriptors and staging slots; leases the
  // staging buffer. False (every entry finished) if that fails.
  bool Classify() {
    size_t staged_bytes = 0, staged = 0;
    const size_t room = std::min(kGroupStageBytes, rt_.staging().largest() - kPage);
    for (Item &it : items_) {
      if (!Fits(it)) continue;
      const bool copy = it.req.mem_info.needs_copy();
      if (copy && (staged == kMaxStaged || staged_bytes + RoundUp(it.req.size) > room)) continue;
      const FileHandle &f = *it.file;
      if (copy) {
        Result<CUcontext> ctx = rt_.contexts().ContextFor(it.req.mem_info);
        if (!ctx.ok()) {
          Finish(*it.entry, ctx.status());
          continue;
        }
        it.ctx = *ctx;
        it.staged = true;
        it.stage_off = kPage + staged_bytes;
        staged_bytes += RoundUp(it.req.size);
        ++staged;
      }
      it.fast = true;
      it.op.write = it.req.write;
      it.op.fd = f.fd();  // O_DIRECT: aligned entries only (PreferCache may read buffered)
      it.op.len = it.req.size;
      it.op.off = it.req.file_off;
      it.op.align = f.direct() ? f.align() : 1;
      it.op.buf = it.req.mem;  // staged ones point into the lease below
      PreferCache(it);
    }
    if (staged == 0) return true;
    Result<StagingLease> lease = rt_.staging().Lease(kPage + staged_bytes);
    if (!lease.ok()) {
      for (Item &it : items_)
        if (it.staged) Finish(*it.entry, lease.status());
      return false;
    }
    stage_ = std::move(*lease);
    for (Item &it : items_)
      if (it.staged) {
        it.op.buf = static_cast<char *>(stage_.data()) + it.stage_off;
        it.op.fixed = stage_.fixed();
      }
    return true;
  }

  // An O_DIRECT read takes what the page cache holds first, as a direct
  // chunk with cache_first does (core/chunk_io.h): when its first page is
  // resident, through the buffered descriptor with RWF_NOWAIT; DirectRest
  // reads the rest through O_DIRECT.
  void PreferCache(Item &it) {
    FileHandle &f = *it.file;
    if (it.req.write || !f.direct() || !rt_.config().page_cache_reads) return;
    it.cache_first = true;
    const int bfd = CachedReadFd(f, it.req.file_off);
    if (bfd < 0) return;
    it.op.fd = bfd;
    it.op.align = 1;
    it.op.nowait = true;
  }

  // After ops[0, n) ran (who[j] ran ops[j]): the reads the page cache did
  // not wholly give go on through O_DIRECT from the last aligned byte it
  // gave, all together.
  void DirectRest(EngineOp *ops, Item *const *who, size_t n) {
    std::vector<EngineOp> rest;
    std::vector<size_t> from;  // rest[i] continues ops[from[i]]
    for (size_t j = 0; j < n; ++j) {
      if (!who[j]->cache_first) continue;
      const EngineOp &op = ops[j];
      const size_t got = op.nowait && op.result.ok() ? op.result.value() : 0;
      CountPageCacheRead(got, got < op.len);
      if (!op.nowait || got == op.len) continue;
      const FileHandle &f = *who[j]->file;
      const size_t keep = got / f.align() * f.align();
      EngineOp r = op;
      r.nowait = false;
      r.fd = f.fd();
      r.align = f.align();
      r.buf += keep;
      r.len -= keep;
      r.off += static_cast<off_t>(keep);
      rest.push_back(r);
      from.push_back(j);
    }
    if (rest.empty()) return;
    rt_.engine().RunMany(rest.data(), rest.size());
    for (size_t i = 0; i < rest.size(); ++i) {
      EngineOp &op = ops[from[i]];
      const size_t keep = op.len - rest[i].len;
      op.result = rest[i].result.ok() ? Result<size_t>(keep + *rest[i].result) : rest[i].result;
    }
  }

  void RunFast() {
    GatherAll(false);  // device -> staging for the writes
    std::vector<EngineOp> ops;
    std::vector<Item *> who;
    for (Item &it : items_) {
      if (!it.fast || it.entry->done) continue;
      ops.push_back(it.op);
      who.push_back(&it);
    }
    Engine &engine = rt_.engine();
    const size_t step = std::max<size_t>(1, engine.together());
    for (size_t i = 0; i < ops.size(); i += step) {
      if (canceled_()) {
        for (size_t j = i; j < ops.size(); ++j) Cancel(*who[j]->entry);
        break;
      }
      const size_t k = std::min(step, ops.size() - i);
      for (size_t j = i; j < i + k; ++j) trace::IoStart(ops[j].write, ops[j].fd, ops[j].off, ops[j].len);
      engine.RunMany(&ops[i], k);
      DirectRest(&ops[i], &who[i], k);
      for (size_t j = i; j < i + k; ++j) {
        const EngineOp &op = ops[j];
        Item &it = *who[j];
        it.op.result = op.result;
        trace::IoDone(op.write, op.fd, op.off, op.len,
                      op.result.ok() ? static_cast<int64_t>(op.result.value())
                                     : op.result.status().ToNegativeCode());
        // Staged reads finish after their copy to the device.
        if (!it.staged || op.write || !op.result.ok() || op.result.value() == 0)
          Finish(*it.entry, op.result);
      }
    }
    GatherAll(true);  // staging -> device for the reads
  }

  // One GPU copy per context for the staged entries still running in one
  // direction: to_device (reads, their bytes read) or from the device
  // (writes, their whole size).
  void GatherAll(bool to_device) {
    std::vector<CUcontext> ctxs;
    for (const Item &it : items_)
      if (it.staged && !it.entry->done && it.req.write != to_device &&
          std::find(ctxs.begin(), ctxs.end(), it.ctx) == ctxs.end())
        ctxs.push_back(it.ctx);
    for (CUcontext ctx : ctxs) Gather(ctx, to_device);
  }

  void Gather(CUcontext ctx, bool to_device) {
    CudaApi &api = Cuda();
    ScopedContext scope(ctx);
    auto *host = static_cast<char *>(stage_.data());
    CUdeviceptr dev = 0;
    if (!stage_.pinned() ||
        api.cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                  reinterpret_cast<CUdeviceptr>(host)) != CUDA_SUCCESS)
      dev = 0;
    const uint64_t base = dev ? static_cast<uint64_t>(dev) : reinterpret_cast<uint64_t>(host);
    auto *ranges = reinterpret_cast<GatherRange *>(host);
    std::vector<Item *> mine;
    for (Item &it : items_) {
      if (!it.staged || it.entry->done || it.ctx != ctx || it.req.write == to_device) continue;
      const uint64_t stage = base + it.stage_off;
      const auto user = reinterpret_cast<uint64_t>(it.req.mem);
      const uint64_t len = to_device ? *it.op.result : it.req.size;
      ranges[mine.size()] = to_device ? GatherRange{stage, user, len} : GatherRange{user, stage, len};
      mine.push_back(&it);
    }
    Result<LaneLease> lane = rt_.lanes().Lease(ctx);
    Status failed;
    if (!lane.ok()) {
      failed = lane.status();
    } else {
      CUresult res = rt_.lanes().Gather(**lane, ranges, dev, mine.size());
      if (res == CUDA_SUCCESS) res = api.cuStreamSynchronize((*lane)->stream);
      if (res != CUDA_SUCCESS) {
        UFILE_LOG_ERROR("%s: copying %zu staged entries %s the GPU failed: %s", kSubmit,
                        mine.size(), to_device ? "to" : "from", CudaErrorString(res).c_str());
        failed = Status::Cuda(res);
      }
    }
    for (Item *it : mine) {
      if (!failed.ok())
        Finish(*it->entry, failed);
      else if (to_device)
        Finish(*it->entry, it->op.result);
    }
  }

  // Through RunIo, as a synchronous call would run it.
  void RunSlow(Item &it) {
    if (canceled_()) return Cancel(*it.entry);
    Finish(*it.entry, RunIo(rt_, it.req, IoOrigin::kBatch));
  }

  Runtime &rt_;
  GroupEntry *entries_;
  size_t n_;
  const std::function<bool()> &canceled_;
  std::vector<Item> items_;
  struct Checked {
    std::shared_ptr<FileHandle> file;
    bool write;
    Status status;
  };
  std::vector<Checked> checked_;  // CheckAccess's answers for this group
  StagingLease stage_;
};

}  // namespace

bool Groupable(const CUfileIOParams_t &p) {
  return p.u.batch.size <= kGroupMaxEntry;
}

size_t GroupCost(const CUfileIOParams_t &p) {
  return Groupable(p) ? RoundUp(p.u.batch.size) : 0;
}

void RunGroup(Runtime &rt, GroupEntry *entries, size_t n,
              const std::function<bool()> &canceled) noexcept {
  try {
    Group(rt, entries, n, canceled).Run();
  } catch (const std::exception &e) {  // a pool thread must not unwind
    UFILE_LOG_ERROR("%s: %zu entries: internal error: %s", kSubmit, n, e.what());
  } catch (...) {
    UFILE_LOG_ERROR("%s: %zu entries: internal error", kSubmit, n);
  }
  for (size_t i = 0; i < n; ++i)
    if (!entries[i].done) Finish(entries[i], Status::Op(CU_FILE_INTERNAL_ERROR));
}

}  // namespace ufile
