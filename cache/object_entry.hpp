// The cache entry of one object (seed 004, section 2.4, extended with the two
// "future work" items of its conclusion: an operations cache and eager
// materialization).
//
//   base     the object at `base.time`: a checkpoint (section 2.5), or the
//            type's bottom object at the zero clock when there is none;
//   effects  every committed effect after the base (commit time not <= the
//            base time), kept sorted in commit order: by commit_order() of
//            their commit clocks, ties (one transaction's several updates)
//            by journal position, i.e. issue order;
//   latest   the base with every effect applied, maintained eagerly on each
//            commit, at the join of the base time and all commit times.
//
// Any snapshot s >= base.time is then served from memory (materializer.hpp);
// s >= latest.time needs no replay at all.
//
// Contract: a plain single-threaded value owned by one partition actor. Every
// mutator gives the strong guarantee: on error the entry is unchanged.
#pragma once

#include <cstddef>
#include <vector>

#include "clock/vector_clock.hpp"
#include "common/expected.hpp"
#include "crdt/crdt_object.hpp"
#include "journal/record.hpp"

namespace tally {

/// One materialized version of an object: the object and the time it
/// reflects (every commit <= `time` is in it, none other).
struct object_version {
  crdt_object object;
  vector_clock time;
};

/// Commit order of two committed effects: commit_order() of their commit
/// clocks, then the journal position. A strict weak order; equal positions
/// with equal clocks are the same effect.
bool effect_order_less(const committed_effect& a,
                       const committed_effect& b) noexcept;

class object_entry {
public:
  /// The bottom object of `type` at the zero clock, with no effects.
  /// errc::wrong_type for types Tally does not store.
  static expected<object_entry> make(crdt_type type);

  /// An entry from a base version and the committed effects after it, in any
  /// order (they are sorted here). Effects the base already covers (commit
  /// time <= base_time) are dropped, as are repeated journal positions.
  /// Errors: errc::invalid_argument for an effect with a zero commit time;
  /// the CRDT's apply error (errc::overflow for counters) when the latest
  /// version cannot be materialized.
  static expected<object_entry> make(crdt_object base, vector_clock base_time,
                                     std::vector<committed_effect> effects);

  crdt_type type() const noexcept { return base_.object.type(); }
  const object_version& base() const noexcept { return base_; }
  const object_version& latest() const noexcept { return latest_; }
  /// The committed effects after the base, in commit order.
  const std::vector<committed_effect>& effects() const noexcept {
    return effects_;
  }

  /// Adds one committed effect at its place in commit order (two-phase commit
  /// can deliver commits out of commit-time order) and updates the latest
  /// version. An effect covered by the base or whose journal position is
  /// already held is ignored, so re-delivery is harmless. Appending in order
  /// costs one apply; an out-of-order insert replays from the base.
  /// Errors (entry unchanged): errc::invalid_argument for a zero commit time;
  /// the CRDT's apply error, e.g. errc::overflow.
  status add(committed_effect effect);

  /// Replaces the base by `new_base` at `new_time` (a checkpoint) and drops
  /// the effects it covers (commit time <= new_time), so the effect list
  /// stays bounded. Versions at every snapshot >= new_time are unchanged;
  /// older snapshots become unavailable. `new_base` is checked against the
  /// version this entry materializes at `new_time`.
  /// Errors (entry unchanged): errc::wrong_type when new_base has another
  /// type; errc::invalid_argument when new_time is not >= the current base
  /// time or new_base disagrees with the cached history; apply errors.
  /// Returns the number of effects dropped.
  expected<std::size_t> rebase(crdt_object new_base, vector_clock new_time);

  /// rebase() onto this entry's own version at `new_time`.
  expected<std::size_t> rebase_to(const vector_clock& new_time);

private:
  object_entry(object_version base, object_version latest,
               std::vector<committed_effect> effects)
      : base_(std::move(base)),
        latest_(std::move(latest)),
        effects_(std::move(effects)) {}

  // The version at new_time, or why this entry cannot be rebased there.
  expected<crdt_object> rebase_to_check(const vector_clock& new_time) const;
  // Installs a checked base; returns the number of effects dropped.
  std::size_t commit_rebase(crdt_object new_base, vector_clock new_time);

  object_version base_;
  object_version latest_;
  std::vector<committed_effect> effects_;
};

} // namespace tally
