// SPDX-License-Identifier: Apache-2.0
// graph500-bfs: Graph500's BFS benchmark over a graph file from
// graph500-gen. For each search mode, the searches from the same sampled
// roots, each tree validated by the specification's rules, then the
// specification's output block (TEPS over the searches: harmonic mean,
// quartiles) with the bytes read and the CPU cores used (CPU time / wall
// time of the searches alone).
//
//   graph500-bfs -f FILE [-m MODES] [-n ROOTS] [-t THREADS] [--seed N]
//                [--cold] [--validate N] [--gap BYTES] [GPU options]
//
// MODES, comma-separated: host (CPU over the mapped file, the page cache),
// host-do (the same, direction-optimizing), file (the CPU's search, reading
// the neighbour lists with cuFileRead); where built with CUDA, gpu-mem (the
// whole graph in GPU memory), gpu-devio (row offsets in GPU memory,
// neighbour lists read by the kernels through ufile's device queues;
// --queues, --depth, --staging, --warps, --sqthreads size them) and
// gpu-hostio (the GPU searches, host threads read the lists into GPU memory
// with cuFileRead). --gap: file, gpu-devio and gpu-hostio read two lists in
// one request across a gap up to this many bytes. construction_time is the
// upload of the GPU modes' arrays. --cold drops the file's pages before each
// search. --validate N: only the first N roots' trees are validated.
// Exit 0 all valid, 1 a search failed or a tree is invalid, 2 usage.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "bfs_file.h"
#include "bfs_host.h"
#include "cli.h"
#include "stats.h"
#include "validate.h"
#ifdef G500_HAVE_GPU
#include <ufile/device.h>

#include "bfs_gpu.h"
#include "bfs_hostio.h"
#endif

namespace {

struct Args {
  std::string file;
  std::vector<std::string> modes{"host", "file"};
  uint64_t roots = 64, seed = 2, threads = 0;
  bool cold = false;
  uint64_t validate = UINT64_MAX;  // trees validated a mode: the first N roots' (default all)
  uint64_t queues = 16, depth = 512, staging = 16384, warps = 0, sqthreads = 0, gap = 4096;
};

bool KnownMode(const std::string &m) {
  if (m == "host" || m == "host-do" || m == "file") return true;
#ifdef G500_HAVE_GPU
  if (m == "gpu-mem" || m == "gpu-devio" || m == "gpu-hostio") return true;
#endif
  return false;
}

// The GPU searches' state, made once per mode and kept for every root.
struct Gpu {
#ifdef G500_HAVE_GPU
  g500::gpu::MemGraph *mem = nullptr;
  g500::gpu::DevioGraph *dio = nullptr;
  g500::gpu::HostioGpu *hio = nullptr;
  g500::gpu::DevioStats st;
  ~Gpu() {
    g500::gpu::FreeGraph(mem);
    g500::gpu::CloseDevio(dio);
    g500::gpu::CloseHostioGpu(hio);
  }
#endif
};

// Usage text; with no reason (-h, --help) on stdout and exit 0.
int Usage(const std::string &why) {
  if (!why.empty()) std::fprintf(stderr, "graph500-bfs: %s\n", why.c_str());
  std::fprintf(why.empty() ? stdout : stderr,
               "usage: graph500-bfs -f FILE [-m host,host-do,file,gpu-mem,gpu-devio,gpu-hostio]"
               " [-n ROOTS(1..1024, 64)] [-t THREADS(0: all)] [--seed N] [--cold]"
               " [--validate N(all)] [--gap BYTES(4096)] [--queues N] [--depth N] [--staging "
               "BYTES] [--warps N]"
               " [--sqthreads N]\n");
  return why.empty() ? 0 : 2;
}

bool Parse(int argc, char **argv, Args *a, std::string *why) {
  for (int i = 1; i < argc; i++) {
    const std::string k = argv[i];
    if (k == "-h" || k == "--help") return *why = "", false;
    if (k == "--cold") {
      a->cold = true;
      continue;
    }
    if (i + 1 >= argc) return *why = k + " needs a value", false;
    const std::string v = argv[++i];
    bool ok = true;
    if (k == "-f")
      a->file = v;
    else if (k == "-n")
      ok = g500::ParseU64(v, 1, 1024, &a->roots);
    else if (k == "-t")
      ok = g500::ParseU64(v, 0, 4096, &a->threads);
    else if (k == "--validate")
      ok = g500::ParseU64(v, 0, UINT64_MAX, &a->validate);
    else if (k == "--seed")
      ok = g500::ParseU64(v, 0, UINT64_MAX, &a->seed);
    else if (k == "--gap")
      ok = g500::ParseU64(v, 0, 1 << 24, &a->gap);
    else if (k == "--queues")
      ok = g500::ParseU64(v, 1, 1024, &a->queues);
    else if (k == "--depth")
      ok = g500::ParseU64(v, 32, 4096, &a->depth);
    else if (k == "--staging")
      ok = g500::ParseU64(v, 4096, 1 << 24, &a->staging);
    else if (k == "--warps")
      ok = g500::ParseU64(v, 0, 1 << 20, &a->warps);
    else if (k == "--sqthreads")
      ok = g500::ParseU64(v, 0, 1024, &a->sqthreads);
    else if (k == "-m") {
      a->modes.clear();
      std::stringstream ss(v);
      for (std::string m; std::getline(ss, m, ',');) {
        ok = ok && KnownMode(m);
        a->modes.push_back(m);
      }
    } else
      ok = false;
    if (!ok) return *why = "bad option " + k + " " + v, false;
  }
  if (a->file.empty()) return *why = "-f is required", false;
  return true;
}

// The GPU modes' arrays and queues, made before the searches.
g500::Status Prepare(const std::string &mode, const Args &a, const g500::Csr &g,
                     const g500::GraphFile &f, Gpu &gpu) {
  int rc = 0;
  std::string err;
#ifdef G500_HAVE_GPU
  if (mode == "gpu-mem" && gpu.mem == nullptr)
    rc =
        g500::gpu::UploadGraph(g.offsets().data(), g.cols().data(), g.nv(), g.ne(), &gpu.mem, &err);
  if (mode == "gpu-devio" && gpu.dio == nullptr) {
    const g500::gpu::DevioOptions o{.queues = static_cast<unsigned>(a.queues),
                                    .depth = static_cast<unsigned>(a.depth),
                                    .staging_bytes = a.staging,
                                    .merge_gap_bytes = a.gap,
                                    .warps = static_cast<unsigned>(a.warps),
                                    .sq_threads = static_cast<unsigned>(a.sqthreads)};
    rc = g500::gpu::OpenDevio(f.handle(), f.offsets().data(), g.nv(), g.header().cols_off, o,
                              &gpu.dio, &err);
  }
  if (mode == "gpu-hostio" && gpu.hio == nullptr) {
    const g500::HostioOptions o;
    rc = g500::gpu::OpenHostioGpu(g.nv(), o.buffer_bytes / 4, o.index_entries, &gpu.hio, &err);
  }
#else
  (void)mode, (void)a, (void)g, (void)f, (void)gpu;
#endif
  return rc == 0 ? g500::Status::Ok() : g500::Status::Error(rc, err);
}

// One search in the given mode; error text on failure.
g500::Status Search(const std::string &mode, const Args &a, const g500::Csr &g,
                    const g500::GraphFile &f, Gpu &gpu, uint64_t root, std::vector<int64_t> *parent,
                    g500::FileBfsStats *st) {
  const auto threads = static_cast<unsigned>(a.threads);
  if (mode == "file")
    return g500::FileBfs(f, root, {.threads = threads, .merge_gap_bytes = a.gap}, parent, st);
#ifdef G500_HAVE_GPU
  if (mode == "gpu-hostio")
    return g500::HostioBfs(f, gpu.hio, root, {.threads = threads, .merge_gap_bytes = a.gap}, parent,
                           st);
  if (mode == "gpu-mem" || mode == "gpu-devio") {
    std::string err;
    parent->assign(g.nv(), -1);
    const int rc = mode == "gpu-mem"
                       ? g500::gpu::BfsInMemory(gpu.mem, root, parent->data(), &err)
                       : g500::gpu::BfsDevio(gpu.dio, root, parent->data(), &gpu.st, &err);
    st->bytes_read = gpu.st.bytes_read;
    return rc == 0 ? g500::Status::Ok() : g500::Status::Error(rc, err);
  }
#else
  (void)gpu;
#endif
  g500::HostBfs(g, root, {.threads = threads, .direction_optimizing = mode == "host-do"}, parent);
  return g500::Status::Ok();
}

uint64_t ComponentEdges(const g500::Csr &g, const std::vector<int64_t> &parent) {
  uint64_t n = 0;
  for (uint64_t v = 0; v < g.nv(); v++)
    if (parent[v] >= 0) n += g.Degree(v);
  return n / 2;
}

int RunMode(const std::string &mode, const Args &a, const g500::Csr &g, const g500::GraphFile &f,
            const std::vector<uint64_t> &roots) {
  Gpu gpu;
  const double p0 = g500::Now();
  const g500::Status prep = Prepare(mode, a, g, f, gpu);
  const double construction = g500::Now() - p0;
  if (!prep.ok()) {
    std::fprintf(stderr, "graph500-bfs: %s: %s\n", mode.c_str(), prep.msg.c_str());
    return 1;
  }
  std::vector<g500::RunRecord> runs;
  std::vector<int64_t> parent;
  g500::FileBfsStats st;
  double wall = 0, cpu = 0;
  for (uint64_t root : roots) {
    if (a.cold) {  // mapped pages are not dropped: unmap them first
      g.ReleaseMappedPages();
      posix_fadvise(f.fd(), 0, 0, POSIX_FADV_DONTNEED);
    }
    const double c0 = g500::CpuSeconds(), t0 = g500::Now();
    const g500::Status s = Search(mode, a, g, f, gpu, root, &parent, &st);
    const double t1 = g500::Now();
    cpu += g500::CpuSeconds() - c0;
    wall += t1 - t0;
    if (!s.ok()) {
      std::fprintf(stderr, "graph500-bfs: %s from %llu: %s\n", mode.c_str(),
                   static_cast<unsigned long long>(root), s.msg.c_str());
      return 1;
    }
    g500::Validation v;
    if (runs.size() < a.validate)
      v = g500::ValidateBfs(g, root, parent, static_cast<unsigned>(a.threads));
    if (!v.ok()) {
      std::fprintf(stderr, "graph500-bfs: %s from %llu: invalid tree (%s): %s\n", mode.c_str(),
                   static_cast<unsigned long long>(root), g500::BfsErrorName(v.error),
                   v.msg.c_str());
      return 1;
    }
    // An unvalidated tree's edge count: the input edges of its vertices.
    if (runs.size() >= a.validate) v.nedge = ComponentEdges(g, parent);
    runs.push_back({t1 - t0, v.nedge});
  }
  const std::string p = mode + ": ";
  std::printf("%smode: %s%s\n", p.c_str(), mode.c_str(), a.cold ? " (cold page cache)" : "");
  g500::PrintGraph500(stdout, p, g.header(), construction, runs);
  const uint64_t checked = std::min<uint64_t>(a.validate, runs.size());
  std::printf(
      "%sbytes_read: %llu\n%sreads: %llu\n%scpu_cores: %.2f\n%svalidation: %s (%llu of %zu "
      "trees)\n",
      p.c_str(), static_cast<unsigned long long>(st.bytes_read), p.c_str(),
      static_cast<unsigned long long>(st.reads), p.c_str(), wall > 0 ? cpu / wall : 0, p.c_str(),
      checked > 0 ? "passed" : "skipped", static_cast<unsigned long long>(checked), runs.size());
#ifdef G500_HAVE_GPU
  if (mode == "gpu-devio")
    std::printf("%sdevio_path: %s\n", p.c_str(), ufile_devio_path_name(gpu.st.path));
#endif
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  Args a;
  std::string why;
  if (!Parse(argc, argv, &a, &why)) return Usage(why);
  g500::Csr g;
  g500::GraphFile f;
  g500::Status s = g500::MapCsr(a.file, &g);
  if (s.ok()) s = f.Open(a.file);
  if (!s.ok()) {
    std::fprintf(stderr, "graph500-bfs: %s\n", s.msg.c_str());
    return 1;
  }
  const auto roots = g500::SampleRoots(g, static_cast<unsigned>(a.roots), a.seed);
  std::printf("graph500-bfs: %s: scale %u, %llu vertices, %llu column indices, %zu roots\n",
              a.file.c_str(), g.header().scale, static_cast<unsigned long long>(g.nv()),
              static_cast<unsigned long long>(g.ne()), roots.size());
  for (const std::string &m : a.modes)
    if (RunMode(m, a, g, f, roots) != 0) return 1;
  return 0;
}
