// Multi-value register (AntidoteDB's antidote_crdt_register_mv, type
// MVREG = 6). The state is the set of <token, value> assignments no later
// operation has overwritten. An assign removes every assignment its replica
// saw and adds its own under a fresh token, so concurrent assigns all
// survive: the register reads every concurrent value, sorted by value bytes
// (a value assigned concurrently twice appears twice, as in AntidoteDB). A
// reset removes what it saw; a new or reset register reads as empty.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/register_update.hpp"
#include "crdt/token_set.hpp"

namespace tally {

struct mv_effect {
  /// The assignments the preparing replica saw (their tokens).
  token_set overwritten;
  /// Absent for a reset.
  std::optional<std::pair<unique_token, std::string>> assigned;

  void encode(byte_writer& out) const;
  static mv_effect decode(byte_reader& in);
  friend bool operator==(const mv_effect& a, const mv_effect& b) {
    return a.overwritten == b.overwritten && a.assigned == b.assigned;
  }
};

class mv_register {
public:
  /// errc::invalid_argument for an assign with a timestamp (last-writer-wins
  /// only).
  expected<mv_effect> prepare(const register_update& update,
                              downstream_context& ctx) const;
  /// Idempotent: applying an effect twice in a row equals applying it once.
  status apply(const mv_effect& effect);

  /// Every surviving value, sorted by bytes.
  std::vector<std::string> value() const;
  bool is_bottom() const noexcept { return values_.empty(); }

  void encode(byte_writer& out) const;
  static mv_register decode(byte_reader& in);

  friend bool operator==(const mv_register& a, const mv_register& b) {
    return a.values_ == b.values_;
  }

private:
  std::map<unique_token, std::string> values_;
};

} // namespace tally
