// SPDX-License-Identifier: Apache-2.0
#include "report.h"

#include <cstdarg>
#include <nlohmann/json.hpp>

namespace ufile::check {

const char *StatusName(Status status) {
  switch (status) {
    case Status::kInfo:
      return "info";
    case Status::kOk:
      return "ok";
    case Status::kWarn:
      return "warn";
    case Status::kFail:
      return "fail";
  }
  return "info";
}

std::string Format(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string Bytes(unsigned long long bytes) {
  static const char *const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return Format("%llu B", bytes);
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return Format("%.1f %s", v, kUnits[u]);
}

Line &Section::Add(std::string key, std::string value, Status status, std::string remedy) {
  lines.push_back({std::move(key), std::move(value), status, std::move(remedy)});
  return lines.back();
}

Section &Report::AddSection(std::string name) {
  sections_.push_back({std::move(name), {}});
  return sections_.back();
}

int Report::Count(Status status) const {
  int n = 0;
  for (const Section &s : sections_)
    for (const Line &l : s.lines) n += l.status == status;
  return n;
}

bool Report::Failed() const {
  return Count(Status::kFail) > 0;
}

void Report::PrintText(std::FILE *out) const {
  for (const Section &s : sections_) {
    std::fprintf(out, "\n== %s ==\n", s.name.c_str());
    for (const Line &l : s.lines) {
      const char *tag = l.status == Status::kWarn   ? "  [WARN]"
                        : l.status == Status::kFail ? "  [FAIL]"
                                                    : "";
      std::fprintf(out, "  %-40s : %s%s\n", l.key.c_str(), l.value.c_str(), tag);
      if (!l.remedy.empty()) std::fprintf(out, "  %-40s   remedy: %s\n", "", l.remedy.c_str());
    }
  }
}

std::string Report::Json() const {
  nlohmann::json doc;
  doc["ok"] = !Failed();
  doc["warnings"] = Count(Status::kWarn);
  doc["failures"] = Count(Status::kFail);
  nlohmann::json sections = nlohmann::json::array();
  for (const Section &s : sections_) {
    nlohmann::json lines = nlohmann::json::array();
    for (const Line &l : s.lines) {
      nlohmann::json j = {{"key", l.key}, {"value", l.value}, {"status", StatusName(l.status)}};
      if (!l.remedy.empty()) j["remedy"] = l.remedy;
      lines.push_back(std::move(j));
    }
    sections.push_back({{"name", s.name}, {"lines", std::move(lines)}});
  }
  doc["sections"] = std::move(sections);
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ufile::check
