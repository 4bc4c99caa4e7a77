#include "cache/materializer.hpp"

namespace tally {

namespace {

// The same sum commit_order() sorts by first (clock/vector_clock.cpp): exact
// in 128 bits, so it never wraps.
__extension__ using u128 = unsigned __int128; // GCC/Clang; -Wpedantic-clean

u128 clock_sum(const vector_clock& c) noexcept {
  u128 s = 0;
  for (const auto& e : c.entries())
    s += e.time;
  return s;
}

} // namespace

expected<crdt_object> materialize_stable(
  const object_version& base, const std::vector<committed_effect>& effects,
  const vector_clock& snapshot) {
  if (!(base.time <= snapshot))
    return make_error(errc::unavailable,
                      "snapshot older than the checkpoint: snapshot "
                        + to_string(snapshot) + " is not >= base time "
                        + to_string(base.time));
  crdt_object obj = base.object;
  const u128 snapshot_sum = clock_sum(snapshot);
  for (const auto& e : effects) {
    if (e.commit_time <= snapshot) {
      if (auto st = obj.apply(e.effect); !st)
        return st.err();
    } else if (clock_sum(e.commit_time) > snapshot_sum) {
      break; // every later effect has an equal or larger sum
    }
  }
  return obj;
}

bool is_latest(const object_entry& entry, const vector_clock& snapshot) noexcept {
  return entry.latest().time <= snapshot;
}

expected<crdt_object> materialize_stable(const object_entry& entry,
                                         const vector_clock& snapshot) {
  // Eager materialization (seed 004, conclusion): the latest version already
  // holds base + every effect, and s >= latest.time means every effect is
  // <= s (and so is the base, since latest.time >= base.time).
  if (is_latest(entry, snapshot))
    return entry.latest().object;
  return materialize_stable(entry.base(), entry.effects(), snapshot);
}

expected<crdt_object> materialize_interactive(
  const object_entry& entry, const vector_clock& snapshot,
  const std::vector<crdt_effect>& own_effects) {
  auto obj = materialize_stable(entry, snapshot);
  if (!obj)
    return obj;
  // Section 2.2, criterion 2: the transaction's own operations, in their
  // execution order, on top of the committed ones.
  for (const auto& e : own_effects)
    if (auto st = obj->apply(e); !st)
      return st.err();
  return obj;
}

} // namespace tally
