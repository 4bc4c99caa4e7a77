// Bounded counter (AntidoteDB's antidote_crdt_counter_b, type BCOUNTER = 15):
// a counter whose value never goes below 0 because every decrement spends
// rights its replica holds. An increment by replica r gives r that many
// rights; r may transfer rights to another replica; a decrement by r needs r
// to hold the amount. The state is the increments and transfers as sums per
// <from, to> pair (an increment is the pair <r, r>) and the decrements per
// replica; all effects are additions to these sums, so they commute.
//
// The guarantee "never below 0" holds when each replica id is prepared by
// one writer at a time, in sequence, against everything that writer has
// prepared before (only replica r spends r's rights, and its effects reach
// other replicas after the transfers they depend on: causal delivery). A
// partition must therefore check against its latest state minus the
// undecided decrements, not against a transaction's older snapshot, as it
// does for counter overflow (docs/DATATYPES.md, "Not done yet").
//
// Like the PN counter, applying an effect twice counts it twice: exactly-once
// comes from op ids (the FBF and the journal), not from the effect.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <variant>

#include "common/expected.hpp"
#include "crdt/byte_codec.hpp"

namespace tally {

/// The identity that holds rights: AntidoteDB uses the data centre id.
using replica_id = std::uint64_t;

struct b_counter_increment {
  std::uint64_t amount = 1;
  replica_id replica = 0;
};
struct b_counter_decrement {
  std::uint64_t amount = 1;
  replica_id replica = 0;
};
struct b_counter_transfer {
  std::uint64_t amount = 1;
  replica_id from = 0;
  replica_id to = 0;
};
using b_counter_update =
  std::variant<b_counter_increment, b_counter_decrement, b_counter_transfer>;

struct b_counter_effect {
  enum class kind : std::uint8_t { increment = 0, decrement = 1, transfer = 2 };
  kind what = kind::increment;
  std::uint64_t amount = 0; // > 0
  replica_id replica = 0;   // who increments, decrements or gives
  replica_id to = 0;        // transfer only

  void encode(byte_writer& out) const;
  static b_counter_effect decode(byte_reader& in);
  friend bool operator==(const b_counter_effect& a, const b_counter_effect& b) {
    return a.what == b.what && a.amount == b.amount && a.replica == b.replica
           && a.to == b.to;
  }
};

class b_counter {
public:
  /// errc::invalid_argument for an amount of 0 or a transfer to oneself;
  /// errc::no_permissions for a decrement or transfer beyond the replica's
  /// rights here; errc::overflow when the increments would pass 2^63-1.
  expected<b_counter_effect> prepare(const b_counter_update& update) const;
  /// errc::overflow, state unchanged, if a sum would leave its range.
  status apply(const b_counter_effect& effect);

  /// Increments minus decrements: >= 0 under the contract above.
  std::int64_t value() const noexcept;
  /// Rights `r` holds: its increments and the transfers it received, minus
  /// what it gave away and decremented.
  std::int64_t rights(replica_id r) const noexcept;
  bool is_bottom() const noexcept {
    return transfers_.empty() && decrements_.empty();
  }

  void encode(byte_writer& out) const;
  static b_counter decode(byte_reader& in);

  friend bool operator==(const b_counter& a, const b_counter& b) {
    return a.transfers_ == b.transfers_ && a.decrements_ == b.decrements_;
  }

private:
  /// <from, to> -> amount; <r, r> holds r's increments.
  std::map<std::pair<replica_id, replica_id>, std::uint64_t> transfers_;
  std::map<replica_id, std::uint64_t> decrements_;
};

} // namespace tally
