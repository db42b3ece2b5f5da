// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as the text of a cufile.json, through
// ApplyJsonConfig, the function both file layers of LoadConfig call.
// Beyond "no crash, no leak, no hang" (the sanitizers and libFuzzer), it checks
// the contract of docs/CONFIG.md:
//   - text that is not a JSON object leaves the Config untouched and logs
//     an ERROR naming the origin;
//   - every key of the document is applied, recorded as inert or unknown, or
//     named in a log line ("<origin>: <key> = ..." / "unknown key <key>"; a
//     file's unknown keys past the 16th are counted in one line instead);
//   - every value that was applied is inside its documented range;
//   - applying the same document twice changes nothing more (layers compose).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "base/params.h"
#include "fuzz_util.h"

namespace {

using json = nlohmann::json;
using ufile::Config;
using ufile::fuzz::Fail;

constexpr const char *kOrigin = "fuzz.json";
constexpr const char *kSlabSizes = "properties.posix_pool_slab_size_kb";
constexpr const char *kSlabCounts = "properties.posix_pool_slab_count";

ufile::fuzz::LogTail *g_log = nullptr;

// Every value of cfg, in one comparable string (through the getters'
// tables, so a field added there is compared too).
std::string Snapshot(const Config &c) {
  std::string s;
  for (int p = 0; p <= CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS; ++p) {
    size_t v = 0;
    ufile::ReadSizeTParam(c, static_cast<CUFileSizeTConfigParameter_t>(p), &v);
    s += std::to_string(v) + ",";
  }
  for (int p = 0; p <= CUFILE_PARAM_STREAM_MEMOPS_BYPASS; ++p) {
    bool v = false;
    ufile::ReadBoolParam(c, static_cast<CUFileBoolConfigParameter_t>(p), &v);
    s += v ? "1," : "0,";
  }
  s += std::string(ufile::LogLevelName(c.log_level)) + "|" + c.log_dir + "|" + c.io_priority;
  s += "|" + std::to_string(static_cast<int>(c.engine)) + std::to_string(c.gds_rdma_write_support) +
       std::to_string(c.posix_unaligned_writes) + "|";
  for (size_t v : c.posix_pool_slab_size_kb) s += std::to_string(v) + ",";
  s += "|";
  for (size_t v : c.posix_pool_slab_count) s += std::to_string(v) + ",";
  for (const auto &[key, src] : c.sources) s += "|" + key + "=" + std::to_string(int(src));
  for (const auto &k : c.inert_keys) s += "|i:" + k;
  for (const auto &k : c.unknown_keys) s += "|u:" + k;
  return s;
}

void CheckRanges(const Config &c) {
  std::string why;
  for (int p = 0; p <= CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS; ++p) {
    auto param = static_cast<CUFileSizeTConfigParameter_t>(p);
    size_t v = 0;
    ufile::ReadSizeTParam(c, param, &v);
    if (!ufile::CheckSizeTParam(param, v, &why))
      Fail("value out of range after a successful apply", ufile::SizeTParamKey(param));
  }
  if (!ufile::CheckSlabSizes(c.posix_pool_slab_size_kb, &why) ||
      !ufile::CheckSlabCounts(c.posix_pool_slab_count, &why) ||
      c.posix_pool_slab_size_kb.size() != c.posix_pool_slab_count.size())
    Fail("slab arrays inconsistent", why);
  static const char *const kPriorities[] = {"default", "low", "med", "high"};
  if (std::none_of(std::begin(kPriorities), std::end(kPriorities),
                   [&](const char *p) { return c.io_priority == p; }))
    Fail("io_priority outside its values", c.io_priority);
}

// How a log line must show a key: its first 128 bytes, quoted and escaped
// when they hold a control character (a NUL would cut the line, a newline
// split it), then the whole key's length when it was cut.
std::string AsLogged(const std::string &key) {
  constexpr size_t kShown = 128;
  std::string shown = key.substr(0, kShown);
  for (unsigned char c : shown)
    if (c < 0x20 || c == 0x7f) {
      shown = json(shown).dump(-1, ' ', false, json::error_handler_t::replace);
      break;
    }
  if (key.size() > kShown) shown += "... (" + std::to_string(key.size()) + " bytes)";
  return shown;
}

bool Named(const std::string &log, const std::string &key) {
  const std::string k = AsLogged(key);
  return log.find(std::string(kOrigin) + ": " + k + " = ") != std::string::npos ||
         log.find("unknown key " + k + " ignored") != std::string::npos;
}

bool Contains(const std::vector<std::string> &list, const std::string &item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Each key of the document must be accounted for (see the file comment).
void CheckAccounted(const Config &c, const std::string &log, const json &obj,
                    const std::string &prefix) {
  for (const auto &[name, value] : obj.items()) {
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    if (c.sources.count(key) || Contains(c.inert_keys, key)) continue;
    if (Contains(c.unknown_keys, key) || Named(log, key)) {
      // A file's first 16 unknown keys get a line each, the rest one count.
      if (Contains(c.unknown_keys, key) && !Named(log, key) &&
          log.find(" more unknown keys ignored") == std::string::npos)
        Fail("unknown key neither logged nor counted", key);
      continue;
    }
    // One error line covers both slab arrays ("slab arrays left as they were").
    if ((key == kSlabSizes || key == kSlabCounts) &&
        log.find(std::string(kOrigin) + ": properties.posix_pool_slab_") != std::string::npos)
      continue;
    if (value.is_object()) {
      CheckAccounted(c, log, value, key);  // a section: its keys answer for it
      continue;
    }
    Fail("key neither applied nor reported", key + "\n--- log:\n" + log);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  g_log = new ufile::fuzz::LogTail(ufile::fuzz::ScratchDir() + "/config_fuzzer.log");
  Config log_cfg;
  log_cfg.log_file_path = g_log->path();
  log_cfg.log_level = ufile::LogLevel::kWarn;
  ufile::ConfigureLog(log_cfg);
  ufile::SetLogLineBudget(false);  // every refusal must show in the log
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  g_log->Skip();
  Config cfg;
  const std::string before = Snapshot(cfg);
  const bool applied =
      ufile::ApplyJsonConfig(cfg, text, ufile::ConfigSource::kEnvJson, kOrigin);
  const std::string log = g_log->Take();
  if (!applied) {
    if (Snapshot(cfg) != before) Fail("a refused document changed the Config", text);
    if (log.find(std::string(kOrigin) + " is not a JSON object") == std::string::npos &&
        log.find(std::string(kOrigin) + " holds a NUL byte") == std::string::npos)
      Fail("a refused document was not logged", log);
    return 0;
  }
  CheckRanges(cfg);
  for (const auto &[key, src] : cfg.sources)
    if (src != ufile::ConfigSource::kEnvJson) Fail("source not recorded as env_json", key);
  const json doc = json::parse(text, nullptr, false, true);
  CheckAccounted(cfg, log, doc, "");
  const std::string once = Snapshot(cfg);
  ufile::ApplyJsonConfig(cfg, text, ufile::ConfigSource::kEnvJson, kOrigin);
  if (Snapshot(cfg) != once) Fail("applying the same document twice changed the Config", text);
  return 0;
}
