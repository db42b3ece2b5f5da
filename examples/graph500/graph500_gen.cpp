// SPDX-License-Identifier: Apache-2.0
// graph500-gen: writes a Graph500 Kronecker graph as a CSR file (csr.h),
// once, for graph500-bfs to read any number of times: the edge list is
// generated in memory (graph_generation), kernel 1 builds the CSR from it
// (construction_time; both recorded in the file's header for graph500-bfs
// to report), then the file is written and fsynced. Every thread works in
// each step; the file is the same for any thread count. Memory: 12 bytes an
// input edge (the edge list) plus the CSR (8 bytes an edge and a vertex) at
// the peak: about 88 GB at scale 28.
//
//   graph500-gen -s SCALE -o FILE [-e EDGEFACTOR] [--seed N] [-t THREADS]
//
// Exit 0 written; 1 failed (a file it began to write is removed; an output
// that is not a regular file is refused before generating); 2 usage.
#include <cstdio>
#include <string>

#include "cli.h"
#include "kronecker.h"

namespace {

// Usage text; with no reason (-h, --help) on stdout and exit 0.
int Usage(const std::string &why) {
  if (!why.empty()) std::fprintf(stderr, "graph500-gen: %s\n", why.c_str());
  std::fprintf(why.empty() ? stdout : stderr,
               "usage: graph500-gen -s SCALE(1..32) -o FILE [-e EDGEFACTOR(1..1024, 16)]"
               " [--seed N(1)] [-t THREADS(0: all)]\n");
  return why.empty() ? 0 : 2;
}

}  // namespace

int main(int argc, char **argv) {
  g500::KroneckerParams p;
  std::string out;
  bool have_scale = false;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") return Usage("");
    if (i + 1 >= argc) return Usage(a + " needs a value");
    const std::string v = argv[++i];
    uint64_t n = 0;
    if (a == "-s" && g500::ParseU64(v, 1, 32, &n))
      p.scale = static_cast<uint32_t>(n), have_scale = true;
    else if (a == "-e" && g500::ParseU64(v, 1, 1024, &n))
      p.edgefactor = static_cast<uint32_t>(n);
    else if (a == "--seed" && g500::ParseU64(v, 0, UINT64_MAX, &n))
      p.seed = n;
    else if (a == "-t" && g500::ParseU64(v, 0, 4096, &n))
      p.threads = static_cast<unsigned>(n);
    else if (a == "-o" && !v.empty())
      out = v;
    else
      return Usage("bad option " + a + " " + v);
  }
  if (!have_scale || out.empty()) return Usage("-s and -o are required");
  g500::Csr g;
  g500::BuildTimes t;
  g500::Status s = g500::CheckCsrOutput(out);  // before minutes of generation
  if (s.ok()) s = g500::GenerateKronecker(p, &g, &t);
  const double w0 = g500::Now();
  if (s.ok()) s = g500::WriteCsr(g, out, p.threads);
  if (!s.ok()) {
    std::fprintf(stderr, "graph500-gen: %s\n", s.msg.c_str());
    return 1;
  }
  std::printf(
      "graph500-gen: %s: scale %u, edgefactor %u, seed %llu: %llu vertices, %llu column "
      "indices, %llu bytes, %u threads\n"
      "graph_generation:               %.6g\n"
      "construction_time:              %.6g\n"
      "write_time:                     %.6g\n",
      out.c_str(), p.scale, p.edgefactor, static_cast<unsigned long long>(p.seed),
      static_cast<unsigned long long>(g.nv()), static_cast<unsigned long long>(g.ne()),
      static_cast<unsigned long long>(g500::CsrFileSize(g.nv(), g.ne())), g500::Threads(p.threads),
      t.generation_s, t.construction_s, g500::Now() - w0);
  return 0;
}
