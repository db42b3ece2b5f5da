// SPDX-License-Identifier: Apache-2.0
// graph500-bfs: Graph500's BFS benchmark over a graph file from
// graph500-gen. For each search mode (search_mode.h), an untimed warm-up
// search, then the searches from the same sampled roots, each tree validated
// by the specification's rules, then the specification's output block (TEPS
// over the searches: harmonic mean, quartiles) with the bytes read and the
// CPU cores used (CPU time / wall time of the searches alone).
//
//   graph500-bfs -f FILE [-m MODES] [-n ROOTS] [-t THREADS] [--seed N]
//                [--cold] [--validate N] [--validate-memory BYTES] [--gap BYTES]
//                [GPU options]
//
// MODES, comma-separated, from search_mode.h. --gap: file, gpu-devio and
// gpu-hostio read two lists in one request across a gap up to this many
// bytes (default 4096, gpu-hostio 32768). --queues, --depth, --staging,
// --warps, --sqthreads size gpu-devio's device queues; --hostio-buffer each
// of a gpu-hostio worker's two device buffers. --gpu-memory-limit
// BYTES (suffix k, M, G, T allowed): the GPU modes may use at most this much
// GPU memory (the rest is held in one allocation); a mode that needs more
// says "not run" and the others go on. construction_time is kernel 1 as
// graph500-gen timed it (the file's header); setup_time is the making of a
// mode's arrays, queues and threads. Trees are validated against the edge
// list regenerated from the generator (validated_runs.h). --cold drops the
// file's pages before each search. --validate N: only the first N roots'
// trees are validated; --validate-memory: the validator's arrays take at most
// this much (default a quarter of the machine's memory; more trees a pass,
// fewer passes). Each mode prints the reference's output block.
// Exit 0 all valid, 1 a search failed or a tree is invalid, 2 usage.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "search_mode.h"
#include "stats.h"
#include "validate.h"
#include "validated_runs.h"

namespace {

struct Args {
  std::string file;
  std::vector<std::string> modes{"host-do", "file"};
  uint64_t roots = 64, seed = 2, threads = 0;
  bool cold = false;
  uint64_t validate = UINT64_MAX;  // trees validated a mode: the first N roots' (default all)
  uint64_t validate_memory = 0;    // the validator's arrays at most (0: a quarter of memory)
  uint64_t gpu_memory_limit = 0;   // 0: none
  g500::SearchOptions search;
};

bool Has(const std::vector<std::string> &names, const std::string &m) {
  return std::find(names.begin(), names.end(), m) != names.end();
}

bool GpuMode(const std::string &m) {
#ifdef G500_HAVE_GPU
  return Has(g500::GpuModeNames(), m);
#else
  (void)m;
  return false;
#endif
}

// Usage text; with no reason (-h, --help) on stdout and exit 0.
int Usage(const std::string &why) {
  if (!why.empty()) std::fprintf(stderr, "graph500-bfs: %s\n", why.c_str());
  std::string modes;
  for (const auto &m : g500::CpuModeNames()) modes += (modes.empty() ? "" : ",") + m;
#ifdef G500_HAVE_GPU
  for (const auto &m : g500::GpuModeNames()) modes += "," + m;
#endif
  std::fprintf(why.empty() ? stdout : stderr,
               "usage: graph500-bfs -f FILE [-m %s] [-n ROOTS(1..1024, 64)] [-t THREADS(0: all)]"
               " [--seed N] [--cold] [--validate N(all)] [--validate-memory BYTES(memory/4)]"
               " [--gap BYTES] [--queues N] [--depth N]"
               " [--staging BYTES] [--warps N] [--sqthreads N] [--hostio-buffer BYTES(16M)]"
               " [--gpu-memory-limit BYTES]\n",
               modes.c_str());
  return why.empty() ? 0 : 2;
}

bool ParseOne(const std::string &k, const std::string &v, Args *a) {
  g500::SearchOptions &s = a->search;
  uint64_t n = 0;
  bool ok = true;
  auto u = [&](unsigned *dst, uint64_t lo, uint64_t hi) {
    ok = g500::ParseU64(v, lo, hi, &n);
    *dst = static_cast<unsigned>(n);
  };
  if (k == "-f")
    a->file = v;
  else if (k == "-n")
    ok = g500::ParseU64(v, 1, 1024, &a->roots);
  else if (k == "-t")
    ok = g500::ParseU64(v, 0, 4096, &a->threads), s.threads = static_cast<unsigned>(a->threads);
  else if (k == "--validate")
    ok = g500::ParseU64(v, 0, UINT64_MAX, &a->validate);
  else if (k == "--validate-memory")
    ok = g500::ParseBytes(v, 1, &a->validate_memory);
  else if (k == "--seed")
    ok = g500::ParseU64(v, 0, UINT64_MAX, &a->seed);
  else if (k == "--gap")
    ok = g500::ParseU64(v, 0, 1 << 24, &s.merge_gap_bytes);
  else if (k == "--queues")
    u(&s.queues, 1, 1024);
  else if (k == "--depth")
    u(&s.depth, 32, 4096);
  else if (k == "--staging")
    ok = g500::ParseU64(v, 4096, 1 << 24, &s.staging_bytes);
  else if (k == "--warps")
    u(&s.warps, 0, 1 << 20);
  else if (k == "--sqthreads")
    u(&s.sq_threads, 0, 1024);
  else if (k == "--hostio-buffer")
    ok = g500::ParseBytes(v, 4096, &s.hostio_buffer_bytes);
  else if (k == "--gpu-memory-limit")
    ok = g500::ParseBytes(v, 1, &a->gpu_memory_limit);
  else if (k == "-m") {
    a->modes.clear();
    std::stringstream ss(v);
    for (std::string m; std::getline(ss, m, ',');) {
      ok = ok && (Has(g500::CpuModeNames(), m) || GpuMode(m));
      a->modes.push_back(m);
    }
  } else
    ok = false;
  return ok;
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
    if (!ParseOne(k, v, a)) return *why = "bad option " + k + " " + v, false;
  }
  if (a->file.empty()) return *why = "-f is required", false;
  if (a->modes.empty()) return *why = "-m names no mode", false;
  return true;
}

// gpu-mem and gpu-zerocopy copy the graph when they open: no page cache to drop.
bool ReadsFileWhileSearching(const std::string &mode) {
  return mode != "gpu-mem" && mode != "gpu-zerocopy";
}

void DropPages(const Args &a, const g500::Csr &g, const g500::GraphFile &f,
               const std::string &mode) {
  if (!a.cold || !ReadsFileWhileSearching(mode)) return;
  g.ReleaseMappedPages();  // mapped pages are not dropped: unmap them first
  posix_fadvise(f.fd(), 0, 0, POSIX_FADV_DONTNEED);
}

// Opens the mode; true with *m set, or false with the exit status in *rc
// (0 when a mode does not fit under --gpu-memory-limit: it is not run).
bool OpenMode(const std::string &mode, const Args &a, const g500::Csr &g, const g500::GraphFile &f,
              std::unique_ptr<g500::SearchMode> *m, int *rc) {
  g500::Status s = GpuMode(mode) ? g500::OpenGpuMode(mode, g, f, a.search, m)
                                 : g500::OpenCpuMode(mode, g, f, a.search, m);
  if (s.ok()) return true;
  if (a.gpu_memory_limit > 0 && s.code == -ENOMEM) {
    std::printf("%s: not run: it cannot run under --gpu-memory-limit %llu: %s\n", mode.c_str(),
                static_cast<unsigned long long>(a.gpu_memory_limit), s.msg.c_str());
    *rc = 0;
    return false;
  }
  std::fprintf(stderr, "graph500-bfs: %s: %s\n", mode.c_str(), s.msg.c_str());
  *rc = 1;
  return false;
}

int RunMode(const std::string &mode, const Args &a, const g500::Csr &g, const g500::GraphFile &f,
            const std::vector<uint64_t> &roots) {
  std::unique_ptr<g500::SearchMode> m;
  const double p0 = g500::Now();
  int rc = 0;
  if (!OpenMode(mode, a, g, f, &m, &rc)) return rc;
  const double setup = g500::Now() - p0;
  // Untimed: the first search pays the kernels' loading and the libraries' set-up.
  DropPages(a, g, f, mode);
  g500::Status s = m->Search(roots.at(0));
  g500::ValidatedRuns runs(g, static_cast<unsigned>(a.threads), a.validate, a.validate_memory);
  std::vector<int64_t> parent(g.nv());
  double wall = 0, cpu = 0;
  for (size_t k = 0; s.ok() && k < roots.size(); k++) {
    const uint64_t root = roots[k];
    DropPages(a, g, f, mode);
    const double c0 = g500::CpuSeconds(), t0 = g500::Now();
    s = m->Search(root);
    const double t1 = g500::Now();
    cpu += g500::CpuSeconds() - c0;
    wall += t1 - t0;
    if (s.ok()) s = m->Tree(&parent);
    if (!s.ok()) {
      std::fprintf(stderr, "graph500-bfs: %s from %llu: %s\n", mode.c_str(),
                   static_cast<unsigned long long>(root), s.msg.c_str());
      return 1;
    }
    s = runs.Add(root, t1 - t0, parent);  // validates a batch when it is full
  }
  if (s.ok()) s = runs.Finish();
  if (!s.ok()) {
    std::fprintf(stderr, "graph500-bfs: %s: %s\n", mode.c_str(), s.msg.c_str());
    return 1;
  }
  const char *cold = !a.cold ? ""
                     : ReadsFileWhileSearching(mode)
                         ? " (cold page cache)"
                         : " (graph copied when opened; --cold does not apply)";
  g500::PrintGraph500(stdout, mode, cold, g.header(), runs.records());
  const g500::SearchCounters c = m->Counters();
  g500::PrintExtraFields(stdout, setup, c.bytes_read, c.reads, wall > 0 ? cpu / wall : 0, runs);
  if (!c.note.empty()) std::printf("%s\n", c.note.c_str());
  std::printf("\n");
  return 0;
}

// --gpu-memory-limit: holds the rest of the GPU; 1 on failure.
int LimitGpu(const Args &a, const g500::Csr &g) {
  if (a.gpu_memory_limit == 0) return 0;
#ifdef G500_HAVE_GPU
  uint64_t held = 0;
  const g500::Status s = g500::LimitGpuMemory(a.gpu_memory_limit, &held);
  if (!s.ok()) {
    std::fprintf(stderr, "graph500-bfs: --gpu-memory-limit: %s\n", s.msg.c_str());
    return 1;
  }
  std::printf(
      "graph500-bfs: GPU memory limit %llu bytes (%llu held back); the column indices are %llu "
      "bytes\n",
      static_cast<unsigned long long>(a.gpu_memory_limit), static_cast<unsigned long long>(held),
      static_cast<unsigned long long>(g.ne() * 4));
#else
  (void)g;
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
  if (roots.empty()) {
    std::fprintf(stderr, "graph500-bfs: %s: no vertex with an edge to search from\n",
                 a.file.c_str());
    return 1;
  }
  std::printf("graph500-bfs: %s: scale %u, %llu vertices, %llu column indices, %zu roots\n",
              a.file.c_str(), g.header().scale, static_cast<unsigned long long>(g.nv()),
              static_cast<unsigned long long>(g.ne()), roots.size());
  if (LimitGpu(a, g) != 0) return 1;
  for (const std::string &m : a.modes)
    if (RunMode(m, a, g, f, roots) != 0) return 1;
  return 0;
}
