// SPDX-License-Identifier: Apache-2.0
// graph500-gen: writes a Graph500 Kronecker graph as a CSR file (csr.h),
// once, for graph500-bfs to read any number of times.
//
//   graph500-gen -s SCALE -o FILE [-e EDGEFACTOR] [--seed N] [-t THREADS]
//
// Exit 0 written, 1 failed (the file is removed), 2 usage.
#include <unistd.h>

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
  const double t0 = g500::Now();
  g500::Csr g;
  g500::Status s = g500::GenerateKronecker(p, &g);
  const double t1 = g500::Now();
  if (s.ok()) s = g500::WriteCsr(g, out);
  if (!s.ok()) {
    std::fprintf(stderr, "graph500-gen: %s\n", s.msg.c_str());
    unlink(out.c_str());
    return 1;
  }
  std::printf(
      "graph500-gen: %s: scale %u, edgefactor %u, seed %llu: %llu vertices, %llu column "
      "indices, %llu bytes; generated in %.3f s, written in %.3f s\n",
      out.c_str(), p.scale, p.edgefactor, static_cast<unsigned long long>(p.seed),
      static_cast<unsigned long long>(g.nv()), static_cast<unsigned long long>(g.ne()),
      static_cast<unsigned long long>(g500::CsrFileSize(g.nv(), g.ne())), t1 - t0,
      g500::Now() - t1);
  return 0;
}
