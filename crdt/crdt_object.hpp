// The CRDT type interface: one value type, crdt_object, that the journal, the
// cache and the protocol hold without knowing which CRDT is inside. A new
// type (register, set, map, flag: AntidoteDB's types) joins by adding its
// state, update, effect and value alternatives to the variants below and a
// case to crdt_object.cpp; callers do not change.
//
// Contract: crdt_object is a plain value (copyable, no I/O, not thread-safe),
// owned by one partition actor at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "common/expected.hpp"
#include "crdt/crdt_type.hpp"
#include "crdt/pn_counter.hpp"

namespace tally {

/// A client's request against one object.
using crdt_update = std::variant<counter_update>;
/// What the journal stores and replicas apply.
using crdt_effect = std::variant<counter_effect>;
/// What a read returns.
using crdt_value = std::variant<std::int64_t>;

class crdt_object {
public:
  /// The initial (bottom) object of `type`. errc::wrong_type for types Tally
  /// does not store yet, with the type's name in the message.
  static expected<crdt_object> make(crdt_type type);

  crdt_type type() const noexcept { return type_; }

  /// Generates the effect of `update` at this state. errc::wrong_type when
  /// the update is not for this object's type; the type's own errors (e.g.
  /// errc::overflow for counters) otherwise.
  expected<crdt_effect> prepare(const crdt_update& update) const;

  /// Applies an effect; on error the object is unchanged.
  status apply(const crdt_effect& effect);

  crdt_value value() const;

  /// Versioned, portable bytes (docs/FORMAT.md, "CRDT object").
  std::string encode() const;
  /// errc::corrupt for truncated, trailing, unknown-version or unknown-type
  /// bytes.
  static expected<crdt_object> decode(std::string_view bytes);

  friend bool operator==(const crdt_object& a, const crdt_object& b) {
    return a.type_ == b.type_ && a.state_ == b.state_;
  }

private:
  using state = std::variant<pn_counter>;
  crdt_object(crdt_type type, state s) : type_(type), state_(std::move(s)) {}

  crdt_type type_;
  state state_;
};

/// Versioned, portable bytes of one effect (docs/FORMAT.md, "CRDT effect").
std::string encode_effect(const crdt_effect& effect);
expected<crdt_effect> decode_effect(std::string_view bytes);

} // namespace tally
