// The CRDT type interface: one value type, crdt_object, that the journal, the
// cache and the protocol hold without knowing which CRDT is inside. Every
// AntidoteDB type of crdt/any_crdt.hpp fits (docs/DATATYPES.md): the state is
// an any_state, updates, effects and values are any_update, any_effect and
// any_value.
//
// Contract: crdt_object is a plain value (copyable, no I/O, not thread-safe),
// owned by one partition actor at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "common/expected.hpp"
#include "crdt/any_crdt.hpp"
#include "crdt/crdt_type.hpp"

namespace tally {

/// A client's request against one object.
using crdt_update = any_update;
/// What the journal stores and replicas apply.
using crdt_effect = any_effect;
/// What a read returns.
using crdt_value = any_value;

class crdt_object {
public:
  /// The initial (bottom) object of `type`: every known type (is_known_type).
  /// errc::wrong_type for a number that is no type.
  static expected<crdt_object> make(crdt_type type);

  crdt_type type() const noexcept { return type_; }
  const any_state& state() const noexcept { return state_; }

  /// Generates the effect of `update` at this state (AntidoteDB's
  /// downstream). errc::wrong_type when the update is not for this object's
  /// type; the type's own errors (errc::overflow, errc::no_permissions,
  /// errc::invalid_argument) otherwise. `ctx` gives the tokens and the clock.
  expected<crdt_effect> prepare(const crdt_update& update,
                                downstream_context& ctx) const;
  /// The same for counters and fatcounters, whose effects need no context;
  /// errc::invalid_argument for any other type.
  expected<crdt_effect> prepare(const crdt_update& update) const;

  /// Applies an effect; on error the object is unchanged.
  status apply(const crdt_effect& effect);

  crdt_value value() const;

  /// Versioned, portable bytes (docs/FORMAT.md, "CRDT object"): counters and
  /// fatcounters in format 1 (Cereal, as ever), every other type in format 2
  /// (crdt/crdt_codec.hpp). The first byte tells them apart.
  std::string encode() const;
  /// errc::corrupt for truncated, trailing, unknown-version or unknown-type
  /// bytes.
  static expected<crdt_object> decode(std::string_view bytes);

  friend bool operator==(const crdt_object& a, const crdt_object& b) {
    return a.type_ == b.type_ && a.state_ == b.state_;
  }

private:
  crdt_object(crdt_type type, any_state s) : type_(type), state_(std::move(s)) {}

  crdt_type type_;
  any_state state_;
};

/// The type an effect belongs to; nothing for a counter_effect (counter and
/// fatcounter share it).
std::optional<crdt_type> effect_type(const crdt_effect& effect) noexcept;

/// True for the effects of the PN counter (counter, fatcounter): the ones
/// built from the update alone and gated by op ids.
inline bool is_counter_effect(const crdt_effect& effect) noexcept {
  return std::holds_alternative<counter_effect>(effect);
}

/// Versioned, portable bytes of one effect (docs/FORMAT.md, "CRDT effect"):
/// a counter effect in format 1 (Cereal), any other in format 2
/// (encode_typed_effect).
std::string encode_effect(const crdt_effect& effect);
expected<crdt_effect> decode_effect(std::string_view bytes);

/// Bytes of a read value (docs/FORMAT.md, "CRDT value"), for node-to-node
/// messages: u8(kind) then sv(int) | bool | bytes | uv(n) bytes* |
/// uv(n) (key value)*. Bounds-checked like crdt_codec.
std::string encode_value(const crdt_value& value);
expected<crdt_value> decode_value(std::string_view bytes);

} // namespace tally
