// Last-writer-wins register (AntidoteDB's antidote_crdt_register_lww, type
// LWWREG = 5). The state is one <timestamp, value>; an effect replaces it when
// it is larger in the order (timestamp, then value bytes), so concurrent
// assigns resolve to the larger timestamp and, on a tie, deterministically to
// the larger value on every replica. The initial state is <0, "">.
//
// Unlike AntidoteDB, the register has a reset: an assign of the empty value
// (a reset register reads "", like a new one).
#pragma once

#include <cstdint>
#include <string>

#include "common/expected.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/register_update.hpp"

namespace tally {

struct lww_effect {
  std::uint64_t timestamp = 0;
  std::string value;

  void encode(byte_writer& out) const;
  static lww_effect decode(byte_reader& in);
  friend bool operator==(const lww_effect& a, const lww_effect& b) {
    return a.timestamp == b.timestamp && a.value == b.value;
  }
};

class lww_register {
public:
  /// The effect's timestamp is the assign's own (else ctx.now_us), raised
  /// to one above the timestamp seen here so that a replica's later write
  /// always wins over its earlier one, whatever its clock did. Fails with
  /// errc::overflow only at the timestamp 2^64-1.
  expected<lww_effect> prepare(const register_update& update,
                               downstream_context& ctx) const;
  /// Idempotent and commutative: keeps the larger of state and effect.
  status apply(const lww_effect& effect);

  const std::string& value() const noexcept { return value_; }
  std::uint64_t timestamp() const noexcept { return timestamp_; }
  bool is_bottom() const noexcept { return timestamp_ == 0 && value_.empty(); }

  void encode(byte_writer& out) const;
  static lww_register decode(byte_reader& in);

  friend bool operator==(const lww_register& a, const lww_register& b) {
    return a.timestamp_ == b.timestamp_ && a.value_ == b.value_;
  }

private:
  std::uint64_t timestamp_ = 0;
  std::string value_;
};

} // namespace tally
