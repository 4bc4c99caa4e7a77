// Grow-only set (AntidoteDB's antidote_crdt_set_go; AntidoteDB's protocol has
// no type number for it: Tally's own formats call it 128, crdt_type::gset).
// The state is the set of elements ever added; an effect is the
// elements to add and applying it is set union: commutative and idempotent.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/expected.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/set_update.hpp"

namespace tally {

struct g_set_effect {
  std::vector<std::string> elements; // strictly increasing

  void encode(byte_writer& out) const;
  static g_set_effect decode(byte_reader& in);
  friend bool operator==(const g_set_effect& a, const g_set_effect& b) {
    return a.elements == b.elements;
  }
};

class g_set {
public:
  /// errc::wrong_type for a remove or reset: a grow-only set only grows.
  expected<g_set_effect> prepare(const set_update& update,
                                 downstream_context& ctx) const;
  status apply(const g_set_effect& effect);

  std::vector<std::string> value() const {
    return {elements_.begin(), elements_.end()};
  }
  bool is_bottom() const noexcept { return elements_.empty(); }

  void encode(byte_writer& out) const;
  static g_set decode(byte_reader& in);

  friend bool operator==(const g_set& a, const g_set& b) {
    return a.elements_ == b.elements_;
  }

private:
  std::set<std::string> elements_;
};

} // namespace tally
