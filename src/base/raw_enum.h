// SPDX-License-Identifier: Apache-2.0
// The int a C caller stored in an enum argument or field, read without
// loading a possibly out-of-range value as the C++ enum (undefined
// behaviour): a user may store any value there.
// Thread-safety: stateless.
#pragma once

#include <cstring>

namespace ufile {

template <class E>
int RawEnum(const E &e) {
  int v = 0;
  static_assert(sizeof v == sizeof e);
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace ufile
