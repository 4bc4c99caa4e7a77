// Remove-resets map (AntidoteDB's antidote_crdt_map_rr, type RRMAP = 11):
// entries keyed by <key, type> holding nested CRDTs, as in the grow-only map,
// plus removal. Removing an entry applies the nested type's reset to what the
// removing replica saw of it, and an entry whose nested state is back to its
// initial (bottom) state disappears. So an update concurrent with a remove
// survives with just the concurrent update's effect (the reset cleared what
// the remover saw): updates win over removes at the granularity of the
// nested type. Types without a reset (counter, fatcounter, bcounter, gset,
// gmap) are left as they are by a remove, as in AntidoteDB.
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

struct rr_map_effect {
  std::vector<keyed_effect> updates; // strictly increasing by key
  /// Nested reset effects, one per removed entry whose type has a reset.
  std::vector<keyed_effect> removes; // strictly increasing by key

  void encode(byte_writer& out) const;
  static rr_map_effect decode(byte_reader& in);
  friend bool operator==(const rr_map_effect& a, const rr_map_effect& b);
};

class rr_map {
public:
  /// errc::invalid_argument for a key named twice, a reset together with
  /// updates or removes, or maps nested deeper than byte_reader::max_depth;
  /// the nested type's error for a nested update.
  expected<rr_map_effect> prepare(const map_update& update,
                                  downstream_context& ctx) const;
  /// All or nothing: on a nested error the map is unchanged.
  status apply(const rr_map_effect& effect);

  map_value value() const;
  bool is_bottom() const noexcept { return entries_.empty(); }
  const keyed_state* find(const map_key& key) const;

  void encode(byte_writer& out) const;
  static rr_map decode(byte_reader& in);

  friend bool operator==(const rr_map& a, const rr_map& b);

private:
  std::vector<keyed_state> entries_; // strictly increasing, none bottom
};

} // namespace tally
