// Helpers shared by the cache suite: effects, random vector clocks and the
// brute-force reference the materializer is checked against.
#pragma once

#include <cstdint>
#include <vector>

#include "cache/object_entry.hpp"
#include "clock/vector_clock.hpp"
#include "crdt/crdt_object.hpp"
#include "journal/record.hpp"
#include "tests/support/seeded_rng.hpp"

namespace tally::test {

inline committed_effect effect_at(lsn position, vector_clock commit_time,
                                  std::int64_t delta) {
  committed_effect e;
  e.position = position;
  e.tx = tx_id{1, position};
  e.commit_time = std::move(commit_time);
  e.effect = counter_effect{delta};
  return e;
}

inline std::int64_t counter_value(const crdt_object& obj) {
  return std::get<std::int64_t>(obj.value());
}

/// A clock over data centres 1..dcs with entries in [lo, hi] (0 drops the
/// entry).
inline vector_clock random_clock(seeded_rng& rng, std::uint32_t dcs,
                                 std::uint64_t lo, std::uint64_t hi) {
  vector_clock c;
  for (dc_id dc = 1; dc <= dcs; ++dc)
    c.set(dc, rng.uniform(lo, hi));
  return c;
}

/// A non-zero clock that is not <= `floor` (a commit after a checkpoint at
/// `floor`): the join with `floor`, one entry bumped past it.
inline vector_clock random_commit_time(seeded_rng& rng, std::uint32_t dcs,
                                       std::uint64_t spread,
                                       const vector_clock& floor) {
  vector_clock c = random_clock(rng, dcs, 0, spread);
  auto dc = static_cast<dc_id>(rng.uniform(1, dcs));
  c.set(dc, floor.get(dc) + rng.uniform(1, spread));
  return c;
}

/// Brute force (seed 004, section 2.2): the bottom counter plus every effect
/// with commit time <= snapshot. Counters commute, so order does not matter
/// here, which makes this independent of the commit-order logic under test.
inline std::int64_t reference_value(const std::vector<committed_effect>& all,
                                    const vector_clock& snapshot) {
  std::int64_t sum = 0;
  for (const auto& e : all)
    if (e.commit_time <= snapshot)
      sum += std::get<counter_effect>(e.effect).delta;
  return sum;
}

} // namespace tally::test
