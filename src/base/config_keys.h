// SPDX-License-Identifier: Apache-2.0
// The table of every configuration key: one row per key of cufile.json (and
// logging.file_path, which has no JSON key), holding the Config field it
// sets, its cuFile parameter, its range, its environment variable, whether
// it is inert (and why) and how ufile-check prints it. The JSON loader
// (base/config.cpp), the environment overrides, the parameter getters and
// setters (base/params.cpp) and ufile-check read it; docs/CONFIG.md
// describes the same keys (tests/cpu/config_keys_test.cpp compares them).
// Thread-safety: the table is immutable.
#pragma once

#include <cufile.h>

#include <cstddef>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "base/config.h"

namespace ufile {

// The Config field a key sets; std::monostate: none (an inert key whose
// value is not stored).
using ConfigField =
    std::variant<std::monostate, bool Config::*, size_t Config::*, std::vector<size_t> Config::*,
                 std::string Config::*, LogLevel Config::*, EngineKind Config::*>;

constexpr int kNoParam = -1;

struct ConfigKey {
  const char *key;  // dotted: "properties.io_batchsize"
  ConfigField field;
  // The cuFile parameter of the field's type (CUFileBoolConfigParameter_t
  // for a bool, CUFileSizeTConfigParameter_t for a size_t,
  // CUFileStringConfigParameter_t for a string or level,
  // CUFileArrayConfigParameter_t for a slab array), or kNoParam.
  int param = kNoParam;
  // Sizes, and each entry of a slab array: min <= value <= max and
  // value % step == 0 (KiB sizes are whole 4 KiB pages).
  size_t min = 0;
  size_t max = 0;
  size_t step = 1;
  // A string field: the values it takes, ", "-separated; nullptr: any.
  const char *choices = nullptr;
  // The environment variable that overrides it, or nullptr.
  const char *env = nullptr;
  // false: not a key of cufile.json (set by the environment or the API only).
  bool json = true;
  // Inert: accepted (and stored, where it has a field) but without effect on
  // what ufile does; why, as ufile-check prints it ("needs nvidia-fs").
  // nullptr: the key takes effect.
  const char *inert = nullptr;
  // ufile-check: whether it lists the value, and what it prints for 0 or ""
  // (nullptr: the value itself).
  bool listed = true;
  const char *unset_text = nullptr;
};

// Every row, in the order ufile-check lists them.
std::span<const ConfigKey> ConfigKeys();

// The row of a dotted JSON key (json rows only), or nullptr.
const ConfigKey *FindJsonKey(const std::string &dotted);
// The row that sets field, or nullptr.
const ConfigKey *FindFieldKey(const ConfigField &field);
// The row of a cuFile parameter, or nullptr for an unknown one.
const ConfigKey *FindParamKey(CUFileSizeTConfigParameter_t param);
const ConfigKey *FindParamKey(CUFileBoolConfigParameter_t param);
const ConfigKey *FindParamKey(CUFileStringConfigParameter_t param);
const ConfigKey *FindParamKey(CUFileArrayConfigParameter_t param);

// The sections of cufile.json that hold keys ("properties", "fs.beegfs", ...).
bool IsConfigSection(const std::string &dotted);

// Most entries of a slab array.
constexpr size_t kMaxSlabs = 16;

// false (with why) when value is outside row's range or off its step.
bool CheckKeyValue(const ConfigKey &row, size_t value, std::string *why);
// The same for a slab array: 1 to kMaxSlabs entries, each in row's range.
bool CheckKeyArray(const ConfigKey &row, const std::vector<size_t> &values, std::string *why);

// row's value in cfg as ufile-check prints it: "true", "1024", "[4, 1024]",
// "INFO", or row.unset_text for 0 or "".
std::string ConfigValueText(const Config &cfg, const ConfigKey &row);

}  // namespace ufile
