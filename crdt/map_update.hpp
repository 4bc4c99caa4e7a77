// The operations of both maps (AntidoteDB's {update, {Key, Op}},
// {update, [..]}, {remove, Key}, {remove, [..]}, {batch, {Updates, Removes}}
// and {reset, {}}): nested updates by <key, type>, removals, or a reset. A
// grow-only map takes updates only. Keys must be distinct across `updates`
// and `removes`, as in AntidoteDB.
#pragma once

#include <vector>

#include "crdt/map_key.hpp"

namespace tally {

struct keyed_update; // crdt/any_crdt.hpp: a map_key and a nested any_update

struct map_update {
  std::vector<keyed_update> updates;
  std::vector<map_key> removes;
  /// Removes every entry the preparing replica saw; with nothing else.
  bool reset = false;
};

} // namespace tally
