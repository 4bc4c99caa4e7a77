// Random client operations for every CRDT type, drawn from small pools of
// elements and keys so that concurrent operations collide. Shared by the
// property tests of tests/crdt.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "crdt/any_crdt.hpp"
#include "tests/support/seeded_rng.hpp"

namespace tally::test {

struct update_options {
  /// Number of replicas: bounded-counter transfers pick a target below it.
  std::size_t replicas = 3;
  /// Leave counter types (whose effects are not idempotent) out of maps.
  bool idempotent_only = false;
  /// Maps nest at most this deep.
  int max_depth = 2;
};

inline const std::vector<crdt_type>& all_types() {
  static const std::vector<crdt_type> types{
    crdt_type::counter, crdt_type::orset,  crdt_type::lwwreg,
    crdt_type::mvreg,   crdt_type::gmap,   crdt_type::rwset,
    crdt_type::rrmap,   crdt_type::fatcounter, crdt_type::flag_ew,
    crdt_type::flag_dw, crdt_type::bcounter,   crdt_type::gset};
  return types;
}

inline bool is_counter_type(crdt_type t) {
  return t == crdt_type::counter || t == crdt_type::fatcounter
         || t == crdt_type::bcounter;
}

inline std::string random_element(seeded_rng& rng) {
  return std::string(1, static_cast<char>('a' + rng.uniform(0, 4)));
}

inline std::vector<std::string> random_elements(seeded_rng& rng) {
  std::vector<std::string> out;
  const auto n = rng.uniform(1, 3);
  for (std::uint64_t i = 0; i < n; ++i)
    out.push_back(random_element(rng));
  return out;
}

inline crdt_type random_nested_type(seeded_rng& rng, const update_options& o,
                                    int depth) {
  for (;;) {
    const auto& types = all_types();
    auto t = types[rng.uniform(0, types.size() - 1)];
    if (o.idempotent_only && is_counter_type(t))
      continue;
    if (depth + 1 >= o.max_depth
        && (t == crdt_type::gmap || t == crdt_type::rrmap))
      continue;
    return t;
  }
}

any_update random_update(crdt_type type, const any_state& state,
                         std::size_t self, seeded_rng& rng,
                         const update_options& o, int depth = 0);

inline std::vector<keyed_update>
random_nested_updates(const any_state& state, std::size_t self,
                      seeded_rng& rng, const update_options& o, int depth,
                      std::vector<map_key>& used) {
  std::vector<keyed_update> out;
  const auto n = rng.uniform(1, 2);
  for (std::uint64_t i = 0; i < n; ++i) {
    map_key key{"k" + std::to_string(rng.uniform(0, 2)),
                random_nested_type(rng, o, depth)};
    if (std::find(used.begin(), used.end(), key) != used.end())
      continue;
    used.push_back(key);
    const keyed_state* entry = nullptr;
    if (const auto* g = std::get_if<g_map>(&state))
      entry = g->find(key);
    else if (const auto* r = std::get_if<rr_map>(&state))
      entry = r->find(key);
    const auto nested = entry ? entry->state : make_state(key.type);
    out.push_back(
      {key, random_update(key.type, nested, self, rng, o, depth + 1)});
  }
  return out;
}

inline any_update random_update(crdt_type type, const any_state& state,
                                std::size_t self, seeded_rng& rng,
                                const update_options& o, int depth) {
  switch (type) {
    case crdt_type::counter:
    case crdt_type::fatcounter:
      return counter_update{rng.uniform_signed(-100, 100)};
    case crdt_type::flag_ew:
    case crdt_type::flag_dw:
      return static_cast<flag_update>(rng.uniform(0, 2));
    case crdt_type::lwwreg:
    case crdt_type::mvreg: {
      if (rng.chance(0.15))
        return register_update{register_reset{}};
      register_assign a{random_element(rng), std::nullopt};
      // Explicit small timestamps make ties between replicas common.
      if (type == crdt_type::lwwreg && rng.chance(0.3))
        a.timestamp = rng.uniform(1, 4);
      return register_update{a};
    }
    case crdt_type::orset:
    case crdt_type::rwset:
    case crdt_type::gset: {
      const auto pick = type == crdt_type::gset ? 0 : rng.uniform(0, 9);
      if (pick == 9)
        return set_update{set_reset{}};
      if (pick >= 5)
        return set_update{set_remove{random_elements(rng)}};
      return set_update{set_add{random_elements(rng)}};
    }
    case crdt_type::bcounter: {
      const auto& c = std::get<b_counter>(state);
      const auto held = c.rights(self);
      const auto pick = rng.uniform(0, 2);
      if (held > 0 && pick == 1)
        return b_counter_update{b_counter_decrement{
          rng.uniform(1, static_cast<std::uint64_t>(held)), self}};
      if (held > 0 && pick == 2 && o.replicas > 1) {
        auto to = rng.uniform(0, o.replicas - 2);
        if (to >= self)
          ++to;
        return b_counter_update{b_counter_transfer{
          rng.uniform(1, static_cast<std::uint64_t>(held)), self, to}};
      }
      return b_counter_update{b_counter_increment{rng.uniform(1, 10), self}};
    }
    case crdt_type::gmap:
    case crdt_type::rrmap: {
      map_update u;
      std::vector<map_key> used;
      if (type == crdt_type::rrmap && rng.chance(0.1)) {
        u.reset = true;
        return u;
      }
      if (type == crdt_type::gmap || rng.chance(0.7))
        u.updates = random_nested_updates(state, self, rng, o, depth, used);
      if (type == crdt_type::rrmap && (u.updates.empty() || rng.chance(0.4))) {
        // Mostly an entry that exists here, so that removes take effect.
        const auto present = std::get<map_value>(value_of(state)).entries;
        map_key key{"k" + std::to_string(rng.uniform(0, 2)),
                    random_nested_type(rng, o, depth)};
        if (!present.empty() && rng.chance(0.7))
          key = present[rng.uniform(0, present.size() - 1)].key;
        if (std::find(used.begin(), used.end(), key) == used.end())
          u.removes.push_back(key);
      }
      return u;
    }
  }
  return counter_update{};
}

} // namespace tally::test
