// Grow-only map (AntidoteDB's antidote_crdt_map_go, type GMAP = 8): entries
// keyed by <key, type>, each holding a nested CRDT of that type, created on
// first update and never removed. An update names nested updates; its effect
// is the nested effects, each generated against the nested state seen here
// (or the type's initial state), and applying it applies each nested effect.
// Concurrent updates resolve entry by entry by the nested type's own rules.
//
// Include crdt/any_crdt.hpp to use it: the entries hold any CRDT, maps too.
#pragma once

#include <vector>

#include "common/expected.hpp"
#include "crdt/any_value.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/map_update.hpp"

namespace tally {

struct keyed_state;  // crdt/any_crdt.hpp
struct keyed_effect; // crdt/any_crdt.hpp

struct g_map_effect {
  std::vector<keyed_effect> updates; // strictly increasing by key

  void encode(byte_writer& out) const;
  static g_map_effect decode(byte_reader& in);
  friend bool operator==(const g_map_effect& a, const g_map_effect& b);
};

class g_map {
public:
  /// errc::wrong_type for a remove or reset; errc::invalid_argument for a
  /// key named twice or maps nested deeper than byte_reader::max_depth;
  /// the nested type's error for a nested update.
  expected<g_map_effect> prepare(const map_update& update,
                                 downstream_context& ctx) const;
  /// All or nothing: on a nested error the map is unchanged.
  status apply(const g_map_effect& effect);

  map_value value() const;
  bool is_bottom() const noexcept { return entries_.empty(); }
  /// The nested state under `key`, or nullptr.
  const keyed_state* find(const map_key& key) const;

  void encode(byte_writer& out) const;
  static g_map decode(byte_reader& in);

  friend bool operator==(const g_map& a, const g_map& b);

private:
  std::vector<keyed_state> entries_; // strictly increasing by key
};

} // namespace tally
