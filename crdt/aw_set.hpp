// Add-wins set, an observed-remove set (AntidoteDB's antidote_crdt_set_aw,
// type ORSET = 4). The state maps each present element to the add tokens no
// remove has observed; an element is in the set while it has one. A remove
// takes away only the tokens its replica saw, so an add concurrent with a
// remove survives it: add wins. A reset removes every element seen.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/expected.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/set_update.hpp"
#include "crdt/token_set.hpp"

namespace tally {

struct aw_set_effect {
  struct element {
    std::string value;
    token_set added;   // zero or one fresh token
    token_set removed; // the tokens of `value` the preparing replica saw
    friend bool operator==(const element& a, const element& b) {
      return a.value == b.value && a.added == b.added && a.removed == b.removed;
    }
  };
  std::vector<element> elements; // strictly increasing by value

  void encode(byte_writer& out) const;
  static aw_set_effect decode(byte_reader& in);
  friend bool operator==(const aw_set_effect& a, const aw_set_effect& b) {
    return a.elements == b.elements;
  }
};

class aw_set {
public:
  /// Never fails.
  expected<aw_set_effect> prepare(const set_update& update,
                                  downstream_context& ctx) const;
  /// Idempotent: applying an effect twice in a row equals applying it once.
  status apply(const aw_set_effect& effect);

  /// The elements, sorted by bytes.
  std::vector<std::string> value() const;
  bool is_bottom() const noexcept { return elements_.empty(); }

  void encode(byte_writer& out) const;
  static aw_set decode(byte_reader& in);

  friend bool operator==(const aw_set& a, const aw_set& b) {
    return a.elements_ == b.elements_;
  }

private:
  std::map<std::string, token_set> elements_; // never an empty token set
};

} // namespace tally
