// The materializer (seed 004, section 2.2): builds the version of one object
// at a snapshot from a base version and the committed effects after it.
//
//   stable(s)            = base + every committed effect with commit time
//                          <= s (vector-clock <=), applied in commit order.
//                          Requires base.time <= s.
//   interactive(s, own)  = stable(s) + the transaction's own uncommitted
//                          effects in issue order (read-your-own-writes).
//
// Section 2.2 filters a journal payload with these two criteria; here the
// payload is already filtered to committed effects and sorted (object_entry),
// so a read is a fold. Multi-key reads call this once per key with one
// snapshot, which makes the result one consistent snapshot (DESIGN.md,
// "Transactions"); the caller guarantees that every commit <= s has been
// delivered (the partition's safe time is >= s).
//
// Pure functions: no I/O, no state.
#pragma once

#include <vector>

#include "cache/object_entry.hpp"
#include "clock/vector_clock.hpp"
#include "common/expected.hpp"
#include "crdt/crdt_object.hpp"
#include "journal/record.hpp"

namespace tally {

/// The stable version at `snapshot` from `base` and `effects` (which must be
/// sorted by effect_order_less and all after the base). Stops at the first
/// effect whose commit clock sum exceeds the snapshot's: commit order sorts
/// by that sum first, so no later effect can be <= snapshot.
/// Errors: errc::unavailable "snapshot older than the checkpoint" when
/// base.time is not <= snapshot; the CRDT's apply error (errc::overflow).
expected<crdt_object> materialize_stable(
  const object_version& base, const std::vector<committed_effect>& effects,
  const vector_clock& snapshot);

/// The stable version of `entry` at `snapshot`. Fast path: when snapshot >=
/// entry.latest().time the eagerly materialized latest version is returned
/// without replay. Errors as above.
expected<crdt_object> materialize_stable(const object_entry& entry,
                                         const vector_clock& snapshot);

/// The interactive version: the stable version of `entry` at `snapshot` with
/// `own_effects` (the reading transaction's uncommitted effects, in issue
/// order) applied after it. Errors as above, plus errc::wrong_type when an
/// own effect is not for this object's type.
expected<crdt_object> materialize_interactive(
  const object_entry& entry, const vector_clock& snapshot,
  const std::vector<crdt_effect>& own_effects);

/// True when the stable version of `entry` at `snapshot` needs no replay.
bool is_latest(const object_entry& entry, const vector_clock& snapshot) noexcept;

} // namespace tally
