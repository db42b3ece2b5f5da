// SPDX-License-Identifier: Apache-2.0
// Every libcufile a client could load instead of ufile (LD_PRELOAD,
// LD_LIBRARY_PATH, the linker cache and folders, CUDA toolkits, Python wheels,
// this process's mappings), what each file is, and which one a program built
// for NVIDIA's cuFile gets.
#include <dirent.h>
#include <glob.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "checks.h"
#include "lib_identity.h"

namespace ufile::check {
namespace {

constexpr const char *kSoname = "libcufile.so.0";

struct Candidates {
  std::vector<std::string> order;            // paths, first seen first
  std::map<std::string, std::string> where;  // path -> where it was found

  void Add(const std::string &path, const std::string &how) {
    auto [it, fresh] = where.emplace(path, how);
    if (fresh)
      order.push_back(path);
    else if (it->second.find(how) == std::string::npos)
      it->second += ", " + how;
  }
};

bool IsLibcufile(const std::string &name) {
  return name.rfind("libcufile", 0) == 0 && name.find(".so") != std::string::npos &&
         name.rfind("libcufile_", 0) != 0;
}

std::string Base(const std::string &path) {
  return path.substr(path.rfind('/') + 1);
}

std::vector<std::string> Split(const std::string &s, const char *seps) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = s.find_first_of(seps, pos);
    const std::string part =
        s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

void AddFolder(Candidates &c, const std::string &dir, const std::string &how) {
  DIR *d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (const dirent *e = readdir(d))
    if (IsLibcufile(e->d_name)) names.push_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string &n : names) c.Add(dir + "/" + n, how);
}

void AddGlob(Candidates &c, const std::string &pattern, const std::string &how) {
  glob_t g{};
  if (glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) AddFolder(c, g.gl_pathv[i], how);
  globfree(&g);
}

std::string Env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

// "libcufile.so.0 (libc6,x86-64) => /path" lines of `ldconfig -p`.
std::vector<std::pair<std::string, std::string>> LinkerCache() {
  std::vector<std::pair<std::string, std::string>> out;
  std::FILE *p = popen("ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null", "r");
  if (!p) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    const size_t arrow = s.find(" => ");
    if (arrow == std::string::npos || s.find("libcufile") == std::string::npos) continue;
    std::istringstream name(s);
    std::string n;
    name >> n;
    std::string path = s.substr(arrow + 4);
    path.erase(path.find_last_not_of(" \n\r\t") + 1);
    if (IsLibcufile(n)) out.emplace_back(n, path);
  }
  pclose(p);
  return out;
}

std::vector<std::string> DefaultFolders() {
  utsname u{};
  uname(&u);
  const std::string arch = std::string(u.machine) + "-linux-gnu";
  return {"/lib/" + arch, "/usr/lib/" + arch, "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
}

void AddWheels(Candidates &c) {
  std::vector<std::string> roots = {
      "/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages",
      "/usr/local/lib/python3*/*-packages", "/opt/conda/lib/python3*/site-packages"};
  for (const char *var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (!Env(var).empty()) roots.push_back(Env(var) + "/lib/python3*/site-packages");
  if (!Env("HOME").empty()) roots.push_back(Env("HOME") + "/.local/lib/python3*/site-packages");
  for (const std::string &r : roots) AddGlob(c, r + "/nvidia/*/lib", "Python wheel");
}

// Which file a program with NEEDED libcufile.so.0 (no RPATH) gets, and how.
std::pair<std::string, std::string> Resolve(
    const std::vector<std::pair<std::string, std::string>> &cache) {
  for (const std::string &p : Split(Env("LD_PRELOAD"), ": "))
    if (IsLibcufile(Base(p)) && access(p.c_str(), R_OK) == 0) return {p, "LD_PRELOAD"};
  for (const std::string &d : Split(Env("LD_LIBRARY_PATH"), ":;"))
    if (access((d + "/" + kSoname).c_str(), F_OK) == 0)
      return {d + "/" + kSoname, "LD_LIBRARY_PATH"};
  for (const auto &[name, path] : cache)
    if (name == kSoname) return {path, "the linker cache"};
  for (const std::string &d : DefaultFolders())
    if (access((d + "/" + kSoname).c_str(), F_OK) == 0)
      return {d + "/" + kSoname, "a default folder"};
  return {"", ""};
}

#ifndef UFILE_CHECK_DROPIN_FROM_BUILD
#define UFILE_CHECK_DROPIN_FROM_BUILD "../../src/libcufile.so.0"
#endif
#ifndef UFILE_CHECK_DROPIN_FROM_BINDIR
#define UFILE_CHECK_DROPIN_FROM_BINDIR "../lib/ufile/libcufile.so.0"
#endif

// ufile's drop-in beside this ufile-check: in its build tree, or where its
// install put it (both relative to the executable, so a moved tree works);
// "" when neither is there.
std::string OwnDropin() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  const std::string self(exe, static_cast<size_t>(n));
  const std::string dir = self.substr(0, self.rfind('/') + 1);
  for (const char *rel : {UFILE_CHECK_DROPIN_FROM_BUILD, UFILE_CHECK_DROPIN_FROM_BINDIR}) {
    char real[PATH_MAX];
    if (realpath((dir + rel).c_str(), real) && IdentifyLibrary(real).kind == LibIdentity::kUfile)
      return real;
  }
  return "";
}

// How to point the loader at ufile's drop-in: its folder and file when this
// ufile-check knows where it is.
std::string NameTheDropin() {
  const std::string dropin = OwnDropin();
  if (dropin.empty())
    return "LD_LIBRARY_PATH=<the folder of ufile's drop-in libcufile.so.0: build/src in a build "
           "tree, lib/ufile under the install prefix>, or LD_PRELOAD that file";
  return "LD_LIBRARY_PATH=" + dropin.substr(0, dropin.rfind('/')) + ", or LD_PRELOAD=" + dropin;
}

std::string Remedy(const std::string &where) {
  if (where.find("Python wheel") != std::string::npos)
    return "python -m ufile.dropin enable, with that environment's python (docs/PACKAGING.md)";
  if (where.find("LD_") != std::string::npos)
    return "name ufile's drop-in there instead: " + NameTheDropin();
  if (where.find("CUDA toolkit") != std::string::npos)
    return "python -m ufile.dropin enable --prefix <toolkit>, or LD_PRELOAD ufile's drop-in";
  return "python -m ufile.dropin enable --system, or LD_PRELOAD ufile's drop-in";
}

void AddFileLine(Section &s, const std::string &path, const std::string &where) {
  const LibIdentity id = IdentifyLibrary(path);
  char target[4096];
  const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
  const std::string link = n > 0 ? " -> " + std::string(target, n) : "";
  const std::string value = id.Describe() + link + " (" + where + ")";
  if (id.kind == LibIdentity::kUfile)
    s.Add(path, value, Status::kOk);
  else if (id.kind == LibIdentity::kNvidia)
    s.Add(path, value, Status::kWarn,
          "clients that load this file get NVIDIA's library: " + Remedy(where));
  else
    s.Add(path, value, Status::kWarn, "find out what installed it; ufile's tools leave it alone");
}

}  // namespace

void CheckLibcufile(Report &report) {
  Section &s = report.AddSection("libcufile");
  Candidates c;
  for (const std::string &p : Split(Env("LD_PRELOAD"), ": "))
    if (IsLibcufile(Base(p))) c.Add(p, "LD_PRELOAD");
  for (const std::string &d : Split(Env("LD_LIBRARY_PATH"), ":;"))
    AddFolder(c, d, "LD_LIBRARY_PATH");
  const auto cache = LinkerCache();
  for (const auto &entry : cache) c.Add(entry.second, "linker cache");
  for (const std::string &d : DefaultFolders()) AddFolder(c, d, "linker default folder");
  AddGlob(c, "/usr/local/cuda*/targets/*/lib", "CUDA toolkit");
  AddGlob(c, "/usr/local/cuda*/lib64", "CUDA toolkit");
  AddWheels(c);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash != std::string::npos && IsLibcufile(Base(line.substr(slash))))
      c.Add(line.substr(slash), "mapped by this process");
  }
  if (c.order.empty())
    s.Add("libcufile files", "none installed or mapped (ufile-check has ufile built in)");
  for (const std::string &p : c.order) AddFileLine(s, p, c.where[p]);
  const auto [got, how] = Resolve(cache);
  const std::string key = "a program built for NVIDIA's cuFile gets";
  if (got.empty()) {
    s.Add(key, std::string("no ") + kSoname + ": it does not start here", Status::kInfo,
          NameTheDropin());
  } else {
    const LibIdentity id = IdentifyLibrary(got);
    s.Add(key, got + " through " + how + ": " + id.Describe(),
          id.kind == LibIdentity::kUfile ? Status::kOk : Status::kWarn,
          id.kind == LibIdentity::kUfile ? "" : Remedy(how));
  }
}

}  // namespace ufile::check
