// SPDX-License-Identifier: Apache-2.0
// Config loading: cufile.json layers and the environment overrides, both
// driven by the key table (base/config_keys.h): a key is applied to its
// Config field, or recorded as inert (it has no effect), or both. A bad
// value is logged with its dotted key and skipped; a bad file is logged and
// skipped whole.
#include "base/config.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>
#include <vector>

#include "base/config_keys.h"
#include "base/log.h"

namespace ufile {
namespace {

using json = nlohmann::json;

// Whether text is one of row.choices (any text where it has none).
bool IsChoice(const ConfigKey &row, const std::string &text) {
  if (!row.choices) return true;
  std::string_view rest = row.choices;
  while (!rest.empty()) {
    const size_t comma = rest.find(", ");
    if (rest.substr(0, comma) == text) return true;
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 2);
  }
  return false;
}

// Sets row's field from v, or says why not. Rows without a field and the
// slab arrays (applied together, by ApplySlabs) never come here.
bool ApplyValue(Config &c, const ConfigKey &row, const json &v, std::string *why) {
  const ConfigField &f = row.field;
  if (auto *b = std::get_if<bool Config::*>(&f)) {
    if (!v.is_boolean()) {
      *why = "expected true or false";
      return false;
    }
    c.*(*b) = v.get<bool>();
    return true;
  }
  if (auto *n = std::get_if<size_t Config::*>(&f)) {
    if (!v.is_number_unsigned()) {
      *why = "expected a non-negative integer";
      return false;
    }
    const size_t value = v.get<size_t>();
    if (!CheckKeyValue(row, value, why)) return false;
    c.*(*n) = value;
    return true;
  }
  if (auto *s = std::get_if<std::string Config::*>(&f)) {
    if (!v.is_string() || !IsChoice(row, v.get<std::string>())) {
      *why = row.choices ? std::string("expected one of ") + row.choices
                         : "expected a directory path string";
      return false;
    }
    c.*(*s) = v.get<std::string>();
    return true;
  }
  if (auto *l = std::get_if<LogLevel Config::*>(&f)) {
    if (v.is_string() && ParseLogLevel(v.get<std::string>(), &(c.*(*l)))) return true;
    *why = "expected one of NOTICE, ERROR, WARN, INFO, DEBUG, TRACE";
    return false;
  }
  if (auto *e = std::get_if<EngineKind Config::*>(&f)) {
    if (v.is_string() && ParseEngineKind(v.get<std::string>(), &(c.*(*e)))) return true;
    *why = "expected one of auto, io_uring, thread_pool";
    return false;
  }
  return false;
}

void AddUnique(std::vector<std::string> &list, const std::string &item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

std::string Quoted(const std::string &text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Appends v to *out in compact JSON, stopping once *out is past limit. Each
// level adds a character, so the recursion is at most limit deep: json::dump
// recurses once per level and overflowed the stack on a value nested a
// million deep (a 4 MiB file of '['; found by tests/fuzz).
void Render(const json &v, size_t limit, std::string *out) {
  if (!v.is_array() && !v.is_object()) {
    *out += v.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out->push_back(v.is_array() ? '[' : '{');
  for (auto it = v.begin(); it != v.end() && out->size() <= limit; ++it) {
    if (it != v.begin()) out->push_back(',');
    if (v.is_object()) *out += Quoted(it.key()) + ":";
    Render(*it, limit, out);
  }
  out->push_back(v.is_array() ? ']' : '}');
}

// A short, printable rendering of a JSON value for a log line.
std::string Brief(const json &v) {
  std::string s;
  Render(v, 64, &s);
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

// A key as a log line shows it: at most 128 bytes (a 3 MB key made a 3 MB
// line), quoted and escaped if it holds a control character (a NUL would cut
// the line short, a newline split it).
std::string KeyForLog(const std::string &key) {
  constexpr size_t kMax = 128;
  std::string shown = key.size() > kMax ? key.substr(0, kMax) : key;
  for (unsigned char c : shown)
    if (c < 0x20 || c == 0x7f) {
      shown = Quoted(shown);
      break;
    }
  if (key.size() > kMax) shown += "... (" + std::to_string(key.size()) + " bytes)";
  return shown;
}

// --- the walk ---------------------------------------------------------------

struct Walk {
  Config &cfg;
  ConfigSource source;
  const std::string &origin;
  const json *slab_sizes = nullptr;   // properties.posix_pool_slab_size_kb
  const json *slab_counts = nullptr;  // properties.posix_pool_slab_count
  // cfg.unknown_keys as a set: a file of a million unknown keys is linear.
  std::unordered_set<std::string> unknown_seen;
  size_t unknown_logged = 0;  // WARN lines for unknown keys of this file
};

// Unknown keys of one file: the first kMaxUnknownLogged get a WARN line each,
// the rest one line at the end of the file.
constexpr size_t kMaxUnknownLogged = 16;

void ApplyKey(Walk &w, const ConfigKey &row, const json &v) {
  if (auto *f = std::get_if<std::vector<size_t> Config::*>(&row.field))
    (*f == &Config::posix_pool_slab_size_kb ? w.slab_sizes : w.slab_counts) = &v;
  if (row.inert) {
    AddUnique(w.cfg.inert_keys, row.key);
    UFILE_LOG_DEBUG("%s: %s accepted, inert (%s)", w.origin.c_str(), row.key, row.inert);
  }
  if (std::holds_alternative<std::monostate>(row.field) ||
      std::holds_alternative<std::vector<size_t> Config::*>(row.field))
    return;
  std::string why;
  if (ApplyValue(w.cfg, row, v, &why)) {
    w.cfg.sources[row.key] = w.source;
  } else {
    UFILE_LOG_ERROR("%s: %s = %s: %s; value left as it was", w.origin.c_str(), row.key,
                    Brief(v).c_str(), why.c_str());
  }
}

void ApplyObject(Walk &w, const json &obj, const std::string &prefix) {
  for (const auto &[name, value] : obj.items()) {
    std::string dotted = prefix.empty() ? name : prefix + "." + name;
    if (const ConfigKey *row = FindJsonKey(dotted)) {
      ApplyKey(w, *row, value);
    } else if (IsConfigSection(dotted)) {
      if (value.is_object())
        ApplyObject(w, value, dotted);
      else
        UFILE_LOG_ERROR("%s: %s = %s: expected an object; section ignored", w.origin.c_str(),
                        dotted.c_str(), Brief(value).c_str());
    } else {
      if (w.unknown_seen.insert(dotted).second) w.cfg.unknown_keys.push_back(dotted);
      if (w.unknown_logged++ < kMaxUnknownLogged)
        UFILE_LOG_WARN("%s: unknown key %s ignored", w.origin.c_str(), KeyForLog(dotted).c_str());
    }
  }
}

// Reads a slab array; on error names its key and returns false.
bool ReadSlabArray(const Walk &w, const ConfigKey &row, const json &v, std::vector<size_t> *out) {
  std::string why;
  bool ok = v.is_array();
  if (!ok) why = "expected an array of non-negative integers";
  for (size_t i = 0; ok && i < v.size(); ++i) {
    if (!v[i].is_number_unsigned()) {
      why = "entry " + std::to_string(i) + " is not a non-negative integer";
      ok = false;
    } else {
      out->push_back(v[i].get<size_t>());
    }
  }
  if (ok) ok = CheckKeyArray(row, *out, &why);
  if (!ok)
    UFILE_LOG_ERROR("%s: %s = %s: %s; slab arrays left as they were", w.origin.c_str(), row.key,
                    Brief(v).c_str(), why.c_str());
  return ok;
}

// The slab arrays pair up entry by entry, so they are applied together: a
// file may give one of them only if its length matches the other's.
void ApplySlabs(Walk &w) {
  if (!w.slab_sizes && !w.slab_counts) return;
  const ConfigKey &sizes_row = *FindFieldKey(&Config::posix_pool_slab_size_kb);
  const ConfigKey &counts_row = *FindFieldKey(&Config::posix_pool_slab_count);
  std::vector<size_t> sizes = w.cfg.posix_pool_slab_size_kb;
  std::vector<size_t> counts = w.cfg.posix_pool_slab_count;
  if (w.slab_sizes) {
    sizes.clear();
    if (!ReadSlabArray(w, sizes_row, *w.slab_sizes, &sizes)) return;
  }
  if (w.slab_counts) {
    counts.clear();
    if (!ReadSlabArray(w, counts_row, *w.slab_counts, &counts)) return;
  }
  if (sizes.size() != counts.size()) {
    UFILE_LOG_ERROR("%s: %s has %zu entries but %s has %zu; slab arrays left as they were",
                    w.origin.c_str(), sizes_row.key, sizes.size(), counts_row.key, counts.size());
    return;
  }
  w.cfg.posix_pool_slab_size_kb = std::move(sizes);
  w.cfg.posix_pool_slab_count = std::move(counts);
  if (w.slab_sizes) w.cfg.sources[sizes_row.key] = w.source;
  if (w.slab_counts) w.cfg.sources[counts_row.key] = w.source;
}

// --- environment ------------------------------------------------------------

const char *GetEnv(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// Sets row's field from its environment variable's value v; logs and
// returns false if v does not parse.
bool ApplyEnvValue(Config &cfg, const ConfigKey &row, const char *v) {
  const ConfigField &f = row.field;
  if (auto *s = std::get_if<std::string Config::*>(&f)) {
    cfg.*(*s) = v;
    return true;
  }
  if (auto *l = std::get_if<LogLevel Config::*>(&f)) {
    if (ParseLogLevel(v, &(cfg.*(*l)))) return true;
    UFILE_LOG_ERROR("config: %s=%s is not a log level; ignored", row.env, v);
  } else if (auto *b = std::get_if<bool Config::*>(&f)) {
    if (ParseBool(v, &(cfg.*(*b)))) return true;
    UFILE_LOG_ERROR("config: %s=%s is not true or false; ignored", row.env, v);
  } else if (auto *e = std::get_if<EngineKind Config::*>(&f)) {
    if (ParseEngineKind(v, &(cfg.*(*e)))) return true;
    UFILE_LOG_ERROR("config: %s=%s is not auto, io_uring or thread_pool; ignored", row.env, v);
  }
  return false;
}

}  // namespace

bool ApplyJsonConfig(Config &cfg, const std::string &text, ConfigSource source,
                     const std::string &origin) {
  // The parser takes a NUL byte for the end of its input, so "{...}\0garbage"
  // would pass as the object alone.
  if (text.find('\0') != std::string::npos) {
    UFILE_LOG_ERROR("config: %s holds a NUL byte (not JSON text); whole file ignored",
                    origin.c_str());
    return false;
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded() || !doc.is_object()) {
    UFILE_LOG_ERROR("config: %s is not a JSON object; whole file ignored", origin.c_str());
    return false;
  }
  Walk w{cfg, source, origin};
  w.unknown_seen.insert(cfg.unknown_keys.begin(), cfg.unknown_keys.end());
  ApplyObject(w, doc, "");
  ApplySlabs(w);
  if (w.unknown_logged > kMaxUnknownLogged)
    UFILE_LOG_WARN("%s: %zu more unknown keys ignored", origin.c_str(),
                   w.unknown_logged - kMaxUnknownLogged);
  return true;
}

void ApplyEnvironment(Config &cfg) {
  for (const ConfigKey &row : ConfigKeys()) {
    const char *v = row.env ? GetEnv(row.env) : nullptr;
    if (v && ApplyEnvValue(cfg, row, v)) cfg.sources[row.key] = ConfigSource::kEnvironment;
  }
}

}  // namespace ufile
