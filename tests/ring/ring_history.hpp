// Random cluster histories for the ring-state property tests: every node
// keeps its own ring_state and the events are what the membership actors
// will do (admin joins, leaves and removals at any node, re-created
// copies, claimant steps, pairwise
// gossip), in a random order drawn from a seeded_rng.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ring/ring_state.hpp"
#include "tests/ring/ring_checks.hpp"
#include "tests/support/seeded_rng.hpp"

namespace tally::test {

class cluster_history {
public:
  cluster_history(seeded_rng& rng, std::uint32_t q, std::uint32_t n_val,
                  std::size_t pool_size)
      : rng_(rng), pool_(random_nodes(rng, pool_size)) {
    replicas_.emplace(pool_.front(), *ring_state::create(pool_.front(), q, n_val));
  }

  /// Every node's view, by node id.
  const std::map<node_id, ring_state>& replicas() const { return replicas_; }

  /// One random event.
  void step() {
    auto& [self, state] = pick_replica();
    const auto roll = rng_.uniform(0, 99);
    if (roll < 15) { // an admin asks any node to add a node (maybe again)
      const auto& node = pool_[rng_.uniform(0, pool_.size() - 1)];
      (void) state.join(node);
      replicas_.try_emplace(node, state); // it joins through `self`
    } else if (roll < 25) { // an admin asks any node to remove a member
      const auto& members = state.members();
      auto it = members.begin();
      std::advance(it, static_cast<long>(rng_.uniform(0, members.size() - 1)));
      (void) state.leave(it->first);
    } else if (roll < 29) { // an admin removes a member; an owner re-creates a copy
      const auto& members = state.members();
      auto it = members.begin();
      std::advance(it, static_cast<long>(rng_.uniform(0, members.size() - 1)));
      std::map<std::uint32_t, bool> held;
      for (int i = 0; i < 3; ++i)
        held[static_cast<std::uint32_t>(rng_.uniform(0, state.partition_count() - 1))] =
          rng_.chance(0.5);
      if (rng_.chance(0.5))
        (void) state.remove(it->first, rng_.uniform(1, 1000), held);
      else
        state.mark_recreated(static_cast<std::uint32_t>(
          rng_.uniform(0, state.partition_count() - 1)));
    } else if (roll < 45) { // the node runs a claimant step if it is one
      if (state.claimant() == self)
        (void) state.claim(self);
    } else { // gossip: self merges another node's state
      (void) state.merge(pick_replica().second);
    }
  }

  /// Merges every state into every other until nothing changes.
  void gossip_until_stable() {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& [a, sa] : replicas_)
        for (auto& [b, sb] : replicas_) {
          const auto before = sa;
          (void) sa.merge(sb);
          changed = changed || !(before == sa);
        }
    }
  }

private:
  std::pair<const node_id, ring_state>& pick_replica() {
    auto it = replicas_.begin();
    std::advance(it, static_cast<long>(rng_.uniform(0, replicas_.size() - 1)));
    return *it;
  }

  seeded_rng& rng_;
  std::vector<node_id> pool_;
  std::map<node_id, ring_state> replicas_;
};

/// States seen along `histories` random histories of `steps` events each
/// (ring sizes 8 to 64): what merges meet in practice. Grouped by history,
/// since only states of one ring (same size and n_val) merge.
inline std::vector<std::vector<ring_state>> sample_states(seeded_rng& rng, int histories,
                                                          int steps) {
  std::vector<std::vector<ring_state>> out;
  for (int h = 0; h < histories; ++h) {
    const auto q = static_cast<std::uint32_t>(8u << rng.uniform(0, 3));
    const auto n_val = static_cast<std::uint32_t>(rng.uniform(1, 3));
    cluster_history sim{rng, q, n_val, rng.uniform(2, 7)};
    out.emplace_back();
    for (int s = 0; s < steps; ++s) {
      sim.step();
      if (rng.chance(0.3))
        for (const auto& [node, state] : sim.replicas())
          out.back().push_back(state);
    }
  }
  return out;
}

/// Empty when merge(a, b) == merge(b, a), merge(merge(a, b), c) ==
/// merge(a, merge(b, c)) and merge(a, a) == a under `merge`; otherwise the
/// law that failed.
inline std::string merge_law_problem(
  const ring_state& a, const ring_state& b, const ring_state& c,
  const std::function<ring_state(ring_state, const ring_state&)>& merge) {
  if (!(merge(a, b) == merge(b, a)))
    return "merge is not commutative";
  if (!(merge(merge(a, b), c) == merge(a, merge(b, c))))
    return "merge is not associative";
  if (!(merge(a, a) == a))
    return "merge is not idempotent";
  return {};
}

} // namespace tally::test
