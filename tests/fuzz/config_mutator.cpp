// SPDX-License-Identifier: Apache-2.0
// config_fuzzer's custom mutator. Byte mutations rarely turn a valid file
// into another valid file with one value of an unexpected type (measured: a
// parser crash on `"engine": null` was not found in 400k byte-level runs).
// So half of the mutations parse the input as JSON and change its structure:
// a node gets a value of another type, a member is dropped, or copied into
// another object or to the top level under its dotted name. The other half,
// and any input that is not a JSON object, go to libFuzzer's byte mutator
// (syntax errors, comments, odd bytes).
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

namespace {

using json = nlohmann::json;
using Rng = std::minstd_rand;

json RandomValue(Rng &rng) {
  static const json kScalars[] = {
      nullptr, true, false, 0, 1, 3, 4, 7, -1, 4096, 4097, 1048576, 1048580, 2147483648LL,
      4294967296LL, 9223372036854775807LL, 18446744073709551615ULL, -9223372036854775807LL - 1,
      1.5, -0.0, 1e300, "", "auto", "io_uring", "thread_pool", "INFO", "warning", "med", "x",
      "/tmp", std::string(300, 'a'), std::string("a\0b", 3), "\n"};
  const size_t n = sizeof(kScalars) / sizeof(kScalars[0]);
  switch (rng() % 8) {
    case 0: {  // an array of small values
      json a = json::array();
      for (unsigned i = rng() % 5; i > 0; --i) a.push_back(kScalars[rng() % n]);
      return a;
    }
    case 1:
      return json::object({{"x", kScalars[rng() % n]}});
    default:
      return kScalars[rng() % n];
  }
}

// Every node's path, parents first (iterative: an input may nest deeply).
std::vector<json::json_pointer> Paths(const json &doc) {
  std::vector<json::json_pointer> out{json::json_pointer()};
  for (size_t i = 0; i < out.size() && out.size() < 512; ++i) {
    const json &node = doc.at(out[i]);
    if (node.is_object())
      for (const auto &[key, value] : node.items()) out.push_back(out[i] / key);
    else if (node.is_array())
      for (size_t k = 0; k < node.size(); ++k) out.push_back(out[i] / k);
  }
  return out;
}

std::string Dotted(const json::json_pointer &p) {
  std::string s = p.to_string();  // "/a/b": fine for the key names that matter
  for (char &c : s) c = c == '/' ? '.' : c;
  return s.empty() ? s : s.substr(1);
}

void MutateDoc(json &doc, Rng &rng) {
  const std::vector<json::json_pointer> paths = Paths(doc);
  const json::json_pointer &target = paths[rng() % paths.size()];
  const json::json_pointer &place = paths[rng() % paths.size()];
  switch (target.empty() ? 0 : rng() % 4) {
    case 0:
      doc[target.empty() ? json::json_pointer("/" + std::to_string(rng() % 4)) : target] =
          RandomValue(rng);
      break;
    case 1:
      if (doc.at(target.parent_pointer()).is_object())
        doc.at(target.parent_pointer()).erase(target.back());
      break;
    case 2:
      if (doc.at(place).is_object()) doc.at(place)[target.back()] = json(doc.at(target));
      break;
    default:
      doc[Dotted(target)] = rng() % 2 ? json(doc.at(target)) : RandomValue(rng);
      break;
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Rng rng(seed);
  if (rng() % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  json doc = json::parse(data, data + size, nullptr, false, true);
  if (doc.is_discarded() || !doc.is_object()) return LLVMFuzzerMutate(data, size, max_size);
  try {
    MutateDoc(doc, rng);
  } catch (const json::exception &) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  const std::string out = doc.dump(rng() % 2 ? -1 : 1, ' ', false, json::error_handler_t::replace);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
