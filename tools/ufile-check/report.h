// SPDX-License-Identifier: Apache-2.0
// ufile-check's findings: sections of lines, each with a status and, for a
// problem, the remedy. Printed as text or as JSON (--json).
#pragma once

#include <cstdio>
#include <deque>
#include <string>
#include <vector>

namespace ufile::check {

enum class Status {
  kInfo,  // a fact
  kOk,    // works
  kWarn,  // works worse than it could, or a feature is missing; has a remedy
  kFail,  // ufile cannot work here; has a remedy
};

struct Line {
  std::string key;
  std::string value;
  Status status = Status::kInfo;
  std::string remedy;
};

struct Section {
  std::string name;
  std::vector<Line> lines;

  Line &Add(std::string key, std::string value, Status status = Status::kInfo,
            std::string remedy = "");
};

class Report {
 public:
  Section &AddSection(std::string name);
  // Whether any line is kFail: ufile cannot work here.
  bool Failed() const;
  int Count(Status status) const;
  void PrintText(std::FILE *out) const;
  std::string Json() const;

 private:
  std::deque<Section> sections_;  // deque: a Section& stays valid
};

const char *StatusName(Status status);

// printf into a std::string.
std::string Format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// 1536 -> "1.5 KiB"; exact byte count for small values.
std::string Bytes(unsigned long long bytes);

}  // namespace ufile::check
