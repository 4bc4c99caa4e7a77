// Enable-wins flag (AntidoteDB's antidote_crdt_flag_ew, type FLAG_EW = 13).
// The state is the set of enable tokens not yet observed by a disable or
// reset; the flag reads true while that set is non-empty. An enable concurrent
// with a disable survives it (the disable removes only the tokens it saw), so
// enable wins.
#pragma once

#include <optional>

#include "common/expected.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/flag_update.hpp"
#include "crdt/token_set.hpp"

namespace tally {

/// Removes the tokens the preparing replica saw; an enable adds one fresh
/// token.
struct flag_ew_effect {
  token_set seen;
  std::optional<unique_token> enable;

  void encode(byte_writer& out) const;
  static flag_ew_effect decode(byte_reader& in);
  friend bool operator==(const flag_ew_effect& a, const flag_ew_effect& b) {
    return a.seen == b.seen && a.enable == b.enable;
  }
};

class flag_ew {
public:
  /// Never fails: every flag operation applies to every state.
  expected<flag_ew_effect> prepare(flag_update update,
                                   downstream_context& ctx) const;
  /// Idempotent: applying an effect twice in a row equals applying it once.
  status apply(const flag_ew_effect& effect);

  bool value() const noexcept { return !enables_.empty(); }
  bool is_bottom() const noexcept { return enables_.empty(); }

  void encode(byte_writer& out) const { write_tokens(out, enables_); }
  static flag_ew decode(byte_reader& in);

  friend bool operator==(const flag_ew& a, const flag_ew& b) {
    return a.enables_ == b.enables_;
  }

private:
  token_set enables_;
};

} // namespace tally
