// Disable-wins flag (AntidoteDB's antidote_crdt_flag_dw, type FLAG_DW = 14).
// The state is two token sets, enables and disables not yet observed by a
// later operation; the flag reads true when some enable and no disable
// remains. A disable concurrent with an enable leaves its token behind, so
// disable wins until an operation that saw it (any enable, disable or reset)
// clears it.
#pragma once

#include <optional>

#include "common/expected.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/flag_update.hpp"
#include "crdt/token_set.hpp"

namespace tally {

/// Removes every token (enable or disable) the preparing replica saw, then
/// adds at most one fresh enable or disable token.
struct flag_dw_effect {
  token_set seen;
  std::optional<unique_token> enable;
  std::optional<unique_token> disable;

  void encode(byte_writer& out) const;
  static flag_dw_effect decode(byte_reader& in);
  friend bool operator==(const flag_dw_effect& a, const flag_dw_effect& b) {
    return a.seen == b.seen && a.enable == b.enable && a.disable == b.disable;
  }
};

class flag_dw {
public:
  /// Never fails: every flag operation applies to every state.
  expected<flag_dw_effect> prepare(flag_update update,
                                   downstream_context& ctx) const;
  /// Idempotent: applying an effect twice in a row equals applying it once.
  status apply(const flag_dw_effect& effect);

  bool value() const noexcept { return disables_.empty() && !enables_.empty(); }
  bool is_bottom() const noexcept {
    return enables_.empty() && disables_.empty();
  }

  void encode(byte_writer& out) const;
  static flag_dw decode(byte_reader& in);

  friend bool operator==(const flag_dw& a, const flag_dw& b) {
    return a.enables_ == b.enables_ && a.disables_ == b.disables_;
  }

private:
  token_set enables_;
  token_set disables_;
};

} // namespace tally
