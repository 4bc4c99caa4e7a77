// Remove-wins set (AntidoteDB's antidote_crdt_set_rw, type RWSET = 10). For
// each element the state keeps the add tokens and the remove tokens no later
// operation has observed; an element is in the set when it has an add token
// and no remove token. Every add or remove clears the tokens of its element
// that its replica saw and leaves a fresh one, so a remove concurrent with an
// add leaves a remove token the add never saw: remove wins, until an
// operation that saw it. A reset clears every token seen (of every element,
// present or not) and adds none.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/expected.hpp"
#include "crdt/downstream_context.hpp"
#include "crdt/set_update.hpp"
#include "crdt/token_set.hpp"

namespace tally {

struct rw_set_effect {
  struct element {
    std::string value;
    token_set seen;    // add and remove tokens the preparing replica saw
    token_set added;   // zero or one fresh add token
    token_set removed; // zero or one fresh remove token
    friend bool operator==(const element& a, const element& b) {
      return a.value == b.value && a.seen == b.seen && a.added == b.added
             && a.removed == b.removed;
    }
  };
  std::vector<element> elements; // strictly increasing by value

  void encode(byte_writer& out) const;
  static rw_set_effect decode(byte_reader& in);
  friend bool operator==(const rw_set_effect& a, const rw_set_effect& b) {
    return a.elements == b.elements;
  }
};

class rw_set {
public:
  /// Never fails.
  expected<rw_set_effect> prepare(const set_update& update,
                                  downstream_context& ctx) const;
  /// Idempotent: applying an effect twice in a row equals applying it once.
  status apply(const rw_set_effect& effect);

  /// The elements, sorted by bytes.
  std::vector<std::string> value() const;
  bool is_bottom() const noexcept { return elements_.empty(); }

  void encode(byte_writer& out) const;
  static rw_set decode(byte_reader& in);

  friend bool operator==(const rw_set& a, const rw_set& b) {
    return a.elements_ == b.elements_;
  }

private:
  struct tokens {
    token_set adds;
    token_set removes;
    friend bool operator==(const tokens& a, const tokens& b) {
      return a.adds == b.adds && a.removes == b.removes;
    }
  };
  std::map<std::string, tokens> elements_; // never both token sets empty
};

} // namespace tally
