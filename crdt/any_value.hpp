// What a read of any CRDT returns (AntidoteDB's value/1 of each type):
//   counter, fatcounter, bcounter   std::int64_t
//   flag_ew, flag_dw                bool
//   lwwreg                          std::string
//   mvreg, orset, rwset, gset       std::vector<std::string>, sorted
//   gmap, rrmap                     map_value: entries sorted by <key, type>
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "crdt/map_key.hpp"

namespace tally {

struct map_entry_value;

struct map_value {
  std::vector<map_entry_value> entries; // strictly increasing by key
  friend bool operator==(const map_value& a, const map_value& b);
};

using any_value =
  std::variant<std::int64_t, bool, std::string, std::vector<std::string>, map_value>;

struct map_entry_value {
  map_key key;
  any_value value;
  friend bool operator==(const map_entry_value& a, const map_entry_value& b) {
    return a.key == b.key && a.value == b.value;
  }
};

inline bool operator==(const map_value& a, const map_value& b) {
  return a.entries == b.entries;
}

} // namespace tally
