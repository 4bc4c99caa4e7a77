// What a resent map update has in common with its original, as bytes: the
// identity the partition's exactly-once gate compares for a map effect that
// carries an op id (docs/CRDT.md, "Every type, with an example and its
// exactly-once gate").
//
// A counter effect is the same every time its update is prepared, so its
// encoding is its identity. A map effect is not: a resend is prepared again
// at the coordinator, against a newer snapshot, and its nested set, register
// and flag effects get fresh tokens and LWW timestamps, and its removes
// reset what the resend saw (nothing, once the original's remove applied).
// What stays the same is what the client asked for and what adds: the
// entries its updates touch, by key and type, each nested counter's delta,
// and the same recursively for nested maps.
//
// Contract: a pure function, no I/O.
#pragma once

#include <optional>
#include <string>

#include "crdt/any_crdt.hpp"

namespace tally {

/// For a g_map_effect or rr_map_effect: the updated entries' keys in key
/// order, each followed by its nested counter delta (counter, fatcounter)
/// or its nested map's shape, recursively; removes and other nested
/// contents are left out. nullopt for every other effect (its encoding is
/// its identity).
std::optional<std::string> map_op_shape(const any_effect& effect);

/// True when a counter (or fatcounter) update sits somewhere inside the
/// map update `u`, at any depth: its effects add, so the update needs an op
/// id to be applied exactly once.
bool has_nested_counter(const map_update& u);

} // namespace tally
