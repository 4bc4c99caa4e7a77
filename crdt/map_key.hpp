// The key of a map entry: AntidoteDB keys map entries by {Key, Type}, so one
// map can hold "x" as a counter and "x" as a set side by side.
#pragma once

#include <ostream>
#include <string>
#include <tuple>

#include "crdt/crdt_type.hpp"

namespace tally {

struct map_key {
  std::string key;
  crdt_type type = crdt_type::counter;

  friend bool operator==(const map_key& a, const map_key& b) {
    return a.key == b.key && a.type == b.type;
  }
  friend bool operator!=(const map_key& a, const map_key& b) { return !(a == b); }
  friend bool operator<(const map_key& a, const map_key& b) {
    return std::tie(a.key, a.type) < std::tie(b.key, b.type);
  }
  friend std::ostream& operator<<(std::ostream& os, const map_key& k) {
    return os << k.key << ':' << k.type;
  }
};

} // namespace tally
