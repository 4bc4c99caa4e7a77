// Operation-based PN counter (Shapiro et al., "A comprehensive study of
// CRDTs", 2011, spec 6; AntidoteDB's antidote_crdt_counter_pn). Increments
// and decrements commute, so concurrent updates never conflict and never need
// to abort (DESIGN.md, "Transactions").
//
// The state is the 64-bit sum of every applied effect. An effect that would
// move the value outside [INT64_MIN, INT64_MAX] is refused with
// errc::overflow and leaves the state unchanged: a counter never wraps.
#pragma once

#include <cstdint>
#include <limits>

#include "common/expected.hpp"

namespace tally {

/// What a client asks for: add `delta` (negative to decrement).
struct counter_update {
  std::int64_t delta = 1; // AntidoteDB: an absent `inc` means +1
};

/// What replicas apply (the "downstream" effect of op-based CRDTs).
struct counter_effect {
  std::int64_t delta = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(delta);
  }
  friend bool operator==(counter_effect a, counter_effect b) noexcept {
    return a.delta == b.delta;
  }
};

class pn_counter {
public:
  pn_counter() = default;
  explicit pn_counter(std::int64_t value) : value_(value) {}

  /// Generates the effect of `update` at this state (the prepare phase of an
  /// op-based CRDT). Fails with errc::overflow when applying it here would
  /// leave the 64-bit range, so an update that cannot be applied is refused
  /// before it is committed.
  expected<counter_effect> prepare(counter_update update) const;

  /// Applies an effect. Returns errc::overflow, state unchanged, if the sum
  /// would leave the 64-bit range (possible only when concurrent effects that
  /// were each valid at their own snapshot add up past the limit).
  status apply(counter_effect effect);

  std::int64_t value() const noexcept { return value_; }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(value_);
  }
  friend bool operator==(const pn_counter& a, const pn_counter& b) noexcept {
    return a.value_ == b.value_;
  }

private:
  std::int64_t value_ = 0;
};

/// a + b, or errc::overflow.
expected<std::int64_t> checked_add(std::int64_t a, std::int64_t b);

} // namespace tally
