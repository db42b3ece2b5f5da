// SPDX-License-Identifier: Apache-2.0
// The key table (base/config_keys.h): its rows are consistent, and
// docs/CONFIG.md lists exactly its keys, with its parameter ranges.
#include "base/config_keys.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "base/config.h"

namespace ufile {
namespace {

// The repository's docs/CONFIG.md.
std::string ConfigDocPath() {
  return (std::filesystem::path(UFILE_SOURCE_ROOT) / "docs" / "CONFIG.md").string();
}

std::string Trim(const std::string &s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The cells of a Markdown table row, trimmed: "| a | b |" -> {a, b}.
std::vector<std::string> Cells(const std::string &line) {
  std::vector<std::string> cells;
  size_t start = line.find('|') + 1;
  for (size_t bar; (bar = line.find('|', start)) != std::string::npos; start = bar + 1)
    cells.push_back(Trim(line.substr(start, bar - start)));
  return cells;
}

// The `quoted` spans of a cell.
std::vector<std::string> Quoted(const std::string &cell) {
  std::vector<std::string> spans;
  for (size_t open = cell.find('`'); open != std::string::npos; open = cell.find('`', open)) {
    const size_t close = cell.find('`', open + 1);
    if (close == std::string::npos) break;
    spans.push_back(cell.substr(open + 1, close - open - 1));
    open = close + 1;
  }
  return spans;
}

// The keys a key-table cell names: `a.b`, `a.{b, c}`, or `a.b`, `c` (c in a).
std::vector<std::string> KeysOfCell(const std::string &cell) {
  std::vector<std::string> keys;
  std::string section;
  for (const std::string &span : Quoted(cell)) {
    const size_t brace = span.find('{');
    if (brace != std::string::npos) {
      const std::string prefix = span.substr(0, brace);
      std::istringstream items(span.substr(brace + 1, span.find('}') - brace - 1));
      for (std::string item; std::getline(items, item, ',');) keys.push_back(prefix + Trim(item));
    } else if (span.find('.') != std::string::npos) {
      section = span.substr(0, span.rfind('.') + 1);
      keys.push_back(span);
    } else {
      keys.push_back(section + span);
    }
  }
  return keys;
}

struct Doc {
  std::multiset<std::string> keys;  // rows of the tables under "## The JSON files"
  std::set<std::string> inert;      // those of them whose meaning starts with "Inert"
  std::map<std::string, std::tuple<size_t, size_t, size_t>> size_params;  // key -> min, max, step
  std::set<std::string> bool_params;
};

// Reads the key tables of "## The JSON files" and the size and bool tables of
// "## Parameters".
Doc ReadDoc(const std::string &path) {
  Doc doc;
  std::ifstream in(path);
  std::string chapter, table;  // the current "## " heading, the current table's first header
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) chapter = line;
    if (line.rfind("|", 0) != 0) {
      table.clear();
      continue;
    }
    const std::vector<std::string> cells = Cells(line);
    if (cells.empty() || cells[0].rfind("---", 0) == 0) continue;
    if (table.empty()) {
      table = cells[0];  // the header row
      continue;
    }
    if (chapter == "## The JSON files" && table == "key") {
      const bool inert = cells.back().rfind("Inert", 0) == 0;
      for (const std::string &key : KeysOfCell(cells[0])) {
        doc.keys.insert(key);
        if (inert) doc.inert.insert(key);
      }
    } else if (table == "`CUFileSizeTConfigParameter_t`" && cells.size() == 5) {
      const size_t step = cells[4].empty() ? 1 : std::stoull(cells[4]);
      doc.size_params[Quoted(cells[1]).at(0)] = {std::stoull(cells[2]), std::stoull(cells[3]),
                                                 step};
    } else if (table == "`CUFileBoolConfigParameter_t`" && cells.size() == 2) {
      doc.bool_params.insert(Quoted(cells[1]).at(0));
    }
  }
  return doc;
}

template <class T>
bool Holds(const ConfigKey &row) {
  return std::holds_alternative<T Config::*>(row.field);
}

TEST(ConfigKeysDoc, ListsExactlyTheTableKeys) {
  const std::string path = ConfigDocPath();
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const Doc doc = ReadDoc(path);
  std::set<std::string> table;
  for (const ConfigKey &row : ConfigKeys())
    if (row.json) table.insert(row.key);
  for (const std::string &key : table)
    EXPECT_EQ(doc.keys.count(key), 1u)
        << key << ": in the table, listed " << doc.keys.count(key) << " times in " << path;
  for (const std::string &key : doc.keys)
    EXPECT_EQ(table.count(key), 1u) << key << ": listed in " << path << ", not in the table";
}

// A key the table marks inert is documented as such ("Inert: ..." with the
// reason), and a key documented as inert is marked inert in the table, so
// that ufile-check says so.
TEST(ConfigKeysDoc, InertKeysAreTheTablesInertKeys) {
  const Doc doc = ReadDoc(ConfigDocPath());
  std::set<std::string> table;
  for (const ConfigKey &row : ConfigKeys())
    if (row.json && row.inert) table.insert(row.key);
  EXPECT_EQ(doc.inert, table);
}

TEST(ConfigKeysDoc, ParameterTablesMatch) {
  const Doc doc = ReadDoc(ConfigDocPath());
  std::map<std::string, std::tuple<size_t, size_t, size_t>> sizes;
  std::set<std::string> bools;
  for (const ConfigKey &row : ConfigKeys()) {
    if (row.param == kNoParam) continue;
    if (Holds<size_t>(row)) sizes[row.key] = {row.min, row.max, row.step};
    if (Holds<bool>(row)) bools.insert(row.key);
  }
  EXPECT_EQ(doc.size_params, sizes);
  EXPECT_EQ(doc.bool_params, bools);
  EXPECT_EQ(sizes.size(), 12u);  // every CUFileSizeTConfigParameter_t
  EXPECT_EQ(bools.size(), 12u);  // every CUFileBoolConfigParameter_t
}

TEST(ConfigKeys, RowsAreConsistent) {
  std::set<std::string> keys, envs;
  for (const ConfigKey &row : ConfigKeys()) {
    SCOPED_TRACE(row.key);
    EXPECT_TRUE(keys.insert(row.key).second);
    if (row.env) {
      EXPECT_TRUE(envs.insert(row.env).second) << row.env;
    }
    const std::string key = row.key;
    EXPECT_TRUE(IsConfigSection(key.substr(0, key.rfind('.'))));
    EXPECT_EQ(FindJsonKey(key), row.json ? &row : nullptr);
    // A key that is not inert sets a field; one with a field is found by it.
    const bool has_field = !std::holds_alternative<std::monostate>(row.field);
    EXPECT_TRUE(has_field || row.inert);
    EXPECT_EQ(has_field ? FindFieldKey(row.field) : &row, &row);
    if (Holds<size_t>(row) || Holds<std::vector<size_t>>(row)) {
      EXPECT_LE(row.min, row.max);
      EXPECT_GE(row.step, 1u);
      EXPECT_EQ(row.min % row.step, 0u);
      EXPECT_EQ(row.max % row.step, 0u);
    }
    EXPECT_TRUE(!row.choices || Holds<std::string>(row));
    EXPECT_TRUE(!row.inert || *row.inert) << "an inert key says why";
  }
}

// Settings whose mechanism ufile does not have are inert, each with its
// reason; the settings that do act are not.
TEST(ConfigKeys, SettingsWithoutEffectAreInert) {
  for (const char *key :
       {"properties.use_poll_mode", "properties.poll_mode_max_size_kb",
        "properties.skip_topology_detection", "properties.max_device_cache_size_kb",
        "properties.per_buffer_cache_size_kb", "fs.generic.posix_unaligned_writes",
        "miscellaneous.api_check_aggressive"}) {
    const ConfigKey *row = FindJsonKey(key);
    ASSERT_NE(row, nullptr) << key;
    EXPECT_NE(row->inert, nullptr) << key;
  }
  for (const char *key :
       {"properties.max_device_pinned_mem_size_kb", "execution.max_io_queue_depth",
        "properties.max_direct_io_size_kb", "properties.allow_system_memory"}) {
    const ConfigKey *row = FindJsonKey(key);
    ASSERT_NE(row, nullptr) << key;
    EXPECT_EQ(row->inert, nullptr) << key;
  }
}

// execution.max_io_queue_depth takes exactly the depths the engine's rings
// are made with (engine/uring_engine.cpp clamps to the same constants).
TEST(ConfigKeys, QueueDepthRangeIsTheEngines) {
  const ConfigKey &row = *FindParamKey(CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH);
  EXPECT_EQ(row.min, 4u);
  EXPECT_EQ(row.max, 4096u);
  EXPECT_EQ(row.min, kMinIoQueueDepth);
  EXPECT_EQ(row.max, kMaxIoQueueDepth);
  std::string why;
  EXPECT_FALSE(CheckKeyValue(row, 32768, &why));
  EXPECT_EQ(why, "must be in [4, 4096]");
  EXPECT_FALSE(CheckKeyValue(row, 1, &why));
  EXPECT_TRUE(CheckKeyValue(row, 4096, &why));
}

TEST(ConfigKeys, ParametersFindTheirRows) {
  for (int p = CUFILE_PARAM_PROFILE_STATS; p <= CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS; ++p) {
    const ConfigKey *row = FindParamKey(static_cast<CUFileSizeTConfigParameter_t>(p));
    ASSERT_NE(row, nullptr) << p;
    EXPECT_TRUE(Holds<size_t>(*row)) << row->key;
  }
  for (int p = CUFILE_PARAM_PROPERTIES_USE_POLL_MODE; p <= CUFILE_PARAM_STREAM_MEMOPS_BYPASS; ++p) {
    const ConfigKey *row = FindParamKey(static_cast<CUFileBoolConfigParameter_t>(p));
    ASSERT_NE(row, nullptr) << p;
    EXPECT_TRUE(Holds<bool>(*row)) << row->key;
  }
  EXPECT_STREQ(FindParamKey(CUFILE_PARAM_LOGGING_LEVEL)->key, "logging.level");
  EXPECT_STREQ(FindParamKey(CUFILE_PARAM_ENV_LOGFILE_PATH)->key, "logging.file_path");
  EXPECT_STREQ(FindParamKey(CUFILE_PARAM_LOG_DIR)->key, "logging.dir");
  EXPECT_STREQ(FindParamKey(CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB)->key,
               "properties.posix_pool_slab_size_kb");
  EXPECT_STREQ(FindParamKey(CUFILE_PARAM_POSIX_POOL_SLAB_COUNT)->key,
               "properties.posix_pool_slab_count");
  EXPECT_EQ(FindParamKey(static_cast<CUFileSizeTConfigParameter_t>(12)), nullptr);
  EXPECT_EQ(FindParamKey(static_cast<CUFileBoolConfigParameter_t>(-1)), nullptr);
  EXPECT_EQ(FindParamKey(static_cast<CUFileStringConfigParameter_t>(3)), nullptr);
}

TEST(ConfigKeys, ValueText) {
  Config cfg;
  auto text = [&](const char *key) {
    for (const ConfigKey &row : ConfigKeys())
      if (std::string(row.key) == key) return ConfigValueText(cfg, row);
    ADD_FAILURE() << key;
    return std::string();
  };
  EXPECT_EQ(text("logging.level"), "ERROR");
  EXPECT_EQ(text("logging.dir"), "(cwd)");
  EXPECT_EQ(text("logging.file_path"), "(none)");
  EXPECT_EQ(text("execution.max_io_threads"), "0 (auto)");
  EXPECT_EQ(text("profile.cufile_stats"), "0");
  EXPECT_EQ(text("properties.posix_pool_slab_size_kb"), "[4, 1024, 4096]");
  EXPECT_EQ(text("execution.parallel_io"), "true");
  EXPECT_EQ(text("ufile.engine"), "auto");
  cfg.max_io_threads = 8;
  cfg.log_dir = "/var/log";
  cfg.engine = EngineKind::kThreadPool;
  EXPECT_EQ(text("execution.max_io_threads"), "8");
  EXPECT_EQ(text("logging.dir"), "/var/log");
  EXPECT_EQ(text("ufile.engine"), "thread_pool");
}

TEST(ConfigKeys, Checks) {
  const ConfigKey &sizes = *FindParamKey(CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB);
  const ConfigKey &counts = *FindParamKey(CUFILE_PARAM_POSIX_POOL_SLAB_COUNT);
  std::string why;
  EXPECT_TRUE(CheckKeyArray(sizes, {4, 8}, &why));
  EXPECT_FALSE(CheckKeyArray(sizes, {4, 6}, &why));
  EXPECT_EQ(why, "entry 1 (6) must be a multiple of 4 in [4, 2147483648]");
  EXPECT_FALSE(CheckKeyArray(counts, {1, 0}, &why));
  EXPECT_EQ(why, "entry 1 (0) must be in [1, 65536]");
  EXPECT_FALSE(CheckKeyArray(counts, std::vector<size_t>(kMaxSlabs + 1, 1), &why));
  EXPECT_EQ(why, "needs 1 to 16 entries, got 17");
  const ConfigKey &batch = *FindParamKey(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE);
  EXPECT_FALSE(CheckKeyValue(batch, 4097, &why));
  EXPECT_EQ(why, "must be in [1, 4096]");
  const ConfigKey &direct = *FindParamKey(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB);
  EXPECT_FALSE(CheckKeyValue(direct, 4098, &why));
  EXPECT_EQ(why, "must be a multiple of 4");
}

}  // namespace
}  // namespace ufile
