// Every CRDT type behind one set of variants: what map entries hold, and
// what crdt_object will hold once the other types are wired in
// (docs/DATATYPES.md, "Not done yet"). Each function takes the AntidoteDB
// type number alongside the state, because COUNTER and FATCOUNTER share one
// state type.
//
// Contract: plain values and pure functions (no I/O, not thread-safe); the
// prepare/apply split is AntidoteDB's downstream/update.
#pragma once

#include <optional>
#include <variant>

#include "common/expected.hpp"
#include "crdt/any_value.hpp"
#include "crdt/aw_set.hpp"
#include "crdt/b_counter.hpp"
#include "crdt/crdt_type.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/flag_dw.hpp"
#include "crdt/flag_ew.hpp"
#include "crdt/g_map.hpp"
#include "crdt/g_set.hpp"
#include "crdt/lww_register.hpp"
#include "crdt/map_update.hpp"
#include "crdt/mv_register.hpp"
#include "crdt/pn_counter.hpp"
#include "crdt/rr_map.hpp"
#include "crdt/rw_set.hpp"

namespace tally {

/// The state of one object of any type.
using any_state = std::variant<pn_counter, flag_ew, flag_dw, lww_register,
                               mv_register, aw_set, rw_set, g_set, b_counter,
                               g_map, rr_map>;

/// A client's operation on an object of any type: counter_update for
/// counter and fatcounter, flag_update for both flags, register_update for
/// both registers, set_update for the three sets, b_counter_update for
/// bcounter, map_update for both maps.
using any_update = std::variant<counter_update, flag_update, register_update,
                                set_update, b_counter_update, map_update>;

/// The effect ("downstream operation") of an update, one alternative per
/// state type.
using any_effect =
  std::variant<counter_effect, flag_ew_effect, flag_dw_effect, lww_effect,
               mv_effect, aw_set_effect, rw_set_effect, g_set_effect,
               b_counter_effect, g_map_effect, rr_map_effect>;

struct keyed_state {
  map_key key;
  any_state state;
  friend bool operator==(const keyed_state& a, const keyed_state& b) {
    return a.key == b.key && a.state == b.state;
  }
};
struct keyed_update {
  map_key key;
  any_update update;
};
struct keyed_effect {
  map_key key;
  any_effect effect;
  friend bool operator==(const keyed_effect& a, const keyed_effect& b) {
    return a.key == b.key && a.effect == b.effect;
  }
};

/// True for every crdt_type value (all AntidoteDB types and gset).
bool is_known_type(crdt_type type) noexcept;

/// The initial (bottom) state of `type`.
any_state make_state(crdt_type type);

/// The effect of `update` on an object of `type` at `state`. errc::wrong_type
/// when the update is not an operation of the type; the type's own errors
/// otherwise (overflow, no_permissions, invalid_argument).
expected<any_effect> prepare(crdt_type type, const any_state& state,
                             const any_update& update, downstream_context& ctx);

/// Applies an effect. errc::wrong_type, state unchanged, when it is not an
/// effect of `type`; on any other error the state is unchanged too.
status apply(crdt_type type, any_state& state, const any_effect& effect);

any_value value_of(const any_state& state);

/// True when `state` equals its type's initial state.
bool is_bottom(const any_state& state);

/// The reset operation of `type`, or nothing for types without one (counter,
/// fatcounter, bcounter, gset, gmap: AntidoteDB's types without {reset, {}}).
std::optional<any_update> reset_update(crdt_type type);

/// Payload encodings, without a version or type (the caller holds both):
/// the building blocks of crdt_codec.hpp and of the map encodings.
void encode_state(byte_writer& out, crdt_type type, const any_state& state);
any_state decode_state(byte_reader& in, crdt_type type);
void encode_effect(byte_writer& out, crdt_type type, const any_effect& effect);
any_effect decode_effect(byte_reader& in, crdt_type type);

/// A type number read from bytes: fails `in` unless it is a known type.
crdt_type read_type(byte_reader& in);
void write_type(byte_writer& out, crdt_type type);

inline bool operator==(const g_map_effect& a, const g_map_effect& b) {
  return a.updates == b.updates;
}
inline bool operator==(const rr_map_effect& a, const rr_map_effect& b) {
  return a.updates == b.updates && a.removes == b.removes;
}
inline bool operator==(const g_map& a, const g_map& b) {
  return a.entries_ == b.entries_;
}
inline bool operator==(const rr_map& a, const rr_map& b) {
  return a.entries_ == b.entries_;
}

} // namespace tally
