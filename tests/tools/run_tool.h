// SPDX-License-Identifier: Apache-2.0
// Runs a tool built with the tree and captures what it prints (tool tests).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace ufile::test {

struct ToolRun {
  int exit_code = -1;  // -1: did not exit normally
  std::string out;     // stdout and stderr together
};

// The tool's path: $env_name if set, else the path CMake compiled in.
inline std::string ToolPath(const char *env_name, const char *built) {
  const char *v = std::getenv(env_name);
  return v && *v ? v : built;
}

// text with every run of spaces made one space, so that tests can look for
// "Write ok 5 err 0" whatever the column widths.
inline std::string Squeeze(const std::string &text) {
  std::string out;
  for (char c : text)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

// The value of the line "  key   : value" of ufile-check's text output, or
// "(absent)".
inline std::string CheckLine(const std::string &text, const std::string &key) {
  const std::string squeezed = Squeeze(text);
  const std::string prefix = "\n " + key + " : ";
  const size_t at = squeezed.find(prefix);
  if (at == std::string::npos) return "(absent)";
  const size_t start = at + prefix.size();
  return squeezed.substr(start, squeezed.find('\n', start) - start);
}

// Runs path with args in directory cwd ("" for this one).
inline ToolRun RunTool(const std::string &path, const std::vector<std::string> &args,
                       const std::string &cwd = "") {
  int fds[2];
  ToolRun run;
  if (pipe(fds) != 0) return run;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char *> argv = {const_cast<char *>(path.c_str())};
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) run.out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
    run.exit_code = WEXITSTATUS(status);
  return run;
}

}  // namespace ufile::test
