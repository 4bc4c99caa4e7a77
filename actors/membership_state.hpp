// The state of a node's membership actor (actors/membership.cpp), shared by
// the files that work on it: the copy plan (actors/copy_plan.hpp), the
// resolution of undecided transactions (actors/undecided_resolution.hpp)
// and the `cluster status` text (actors/membership_status.hpp). Functions
// that take a mem_self run on the membership actor's thread only.
// Internal to actors/ (it includes CAF).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/handoff.hpp"
#include "actors/membership.hpp"
#include "actors/node_context.hpp"
#include "common/ids.hpp"
#include "ring/ring_state.hpp"

namespace tally {

struct peer {
  caf::actor membership;          // null until connected
  std::uint64_t incarnation = 0;  // of its current run
  std::vector<caf::actor> parts;  // what it serves, size Q
  std::vector<caf::actor> copies; // n_val > 1: its replica copies, size Q
  std::set<std::uint32_t> stale;  // its copies that are stale
  std::set<std::uint32_t> filling; // its copies being filled after a removal
  // What it served when it went down: named in the routes of partitions
  // whose only copy it holds (not "handoff in progress; retry").
  std::set<std::uint32_t> served_when_down;
  // Wall time (us) it was last seen going down: a two-phase commit it took
  // part in around then may have lost messages (force_decision in
  // actors/undecided_resolution.cpp).
  std::uint64_t down_at_us = 0;
  // When its last gossip arrived, and whether its silence since was
  // logged (`ask_silent_peers`).
  std::chrono::steady_clock::time_point heard_at{};
  bool silence_logged = false;
  bool up = false;
  bool connecting = false;
};

// One transaction left prepared at a local partition, while it is resolved.
struct resolution {
  undecided_tx u;
  std::uint64_t attempt = 0; // the last attempt's number
  bool asking = false;       // an attempt's questions are out
  bool deciding = false;     // the decision is on its way to the partition
  bool warned = false;       // "cannot be decided" logged once
  // A commit on its coordinator's word was refused here behind a fence:
  // from then on that word is ignored and the participants decide (a
  // fence round), else each attempt would conclude the same refused commit
  // (docs/RELIABILITY.md, "The participant fence").
  bool coordinator_word_refused = false;
};

// The one partition this node is handing off (one at a time keeps the
// disk and network load of a rebalance bounded).
struct outgoing {
  std::uint64_t attempt = 0; // callbacks of an abandoned attempt are ignored
  std::uint32_t p = 0;
  node_id to;
  caf::actor dest; // the receiver's membership actor
  std::vector<std::string> files;
  std::size_t file = 0;
  std::uint64_t offset = 0;
};

struct membership_state {
  membership_config cfg;
  std::optional<ring_state> ring;
  std::map<node_id, peer> peers;
  std::vector<caf::actor> local;      // what this node serves, size Q
  std::set<std::uint32_t> closed;     // local partitions closed for handoff
  // Partition actors that handed off or were replaced: they forward what
  // stale routing tables still send them, until forwarder_lifetime after
  // the switch (gossip has long updated every table by then); each holds
  // a thread (partition actors are detached), so they do not stay forever.
  std::vector<std::pair<caf::actor, std::chrono::steady_clock::time_point>> forwarders;
  std::optional<outgoing> out;
  std::uint64_t attempts = 0;
  // Partitions found on disk at startup that another node owns (a handoff
  // was under way at a crash): never served here; shipped from disk, or
  // deleted once the owner serves them.
  std::set<std::uint32_t> unopened;
  // Partitions whose last handoff message (h_end) went to a node that never
  // answered: it may hold them now, so they are neither reopened nor
  // shipped elsewhere until it says it does not (h_query).
  std::map<std::uint32_t, node_id> end_sent;
  std::set<std::uint32_t> querying;
  std::map<std::uint32_t, incoming_partition> incoming;
  std::shared_ptr<routing> routes;
  // n_val 1: partitions whose route was kept on the actor it went to before
  // (its node up) while no reachable node serves them, with since when
  // (rebuild_routes: the moments after a handoff before this node reaches
  // the new owner).
  std::map<std::uint32_t, std::chrono::steady_clock::time_point> kept_routes;
  bool shutdown_requested = false;
  // Transactions left prepared here with no decision, being resolved with
  // the cluster (docs/CLUSTER.md, "Recovery of undecided transactions"), by
  // (partition, tx); each is asked about once at a time.
  std::map<std::pair<std::uint32_t, tx_id>, resolution> resolving;
  std::uint64_t resolution_attempts = 0;
  // Wall time (us) this run started: transactions recovered from before it
  // lost their messages with the crash (force_decision).
  std::uint64_t started_us = 0;
  bool peer_came_up = false; // since the last gossip handled
  // When a peer last went down or came up: for a while after, prepared
  // transactions are looked for 4 times a second, not once (messages of
  // two-phase commits in flight may have been lost with the links).
  std::chrono::steady_clock::time_point link_changed{};
  bool fast_ticking = false;
  // n_val > 1 (docs/REPLICATION.md; actors/replica_sets.hpp): this node's
  // copies of partitions others own, its copies found stale, what each
  // local copy was last configured as, and when this run started (copies
  // are configured only once the view has settled).
  std::vector<caf::actor> copies;
  std::set<std::uint32_t> stale;
  std::map<std::uint32_t, std::string> configured;
  // Copies this node re-creates after `cluster remove` of a node that held
  // one (docs/CLUSTER.md, "Removing a dead node"): they follow the primary
  // and may not lead until they have caught up with it (gossiped, so every
  // node plans alike); `checking` holds those whose catch-up is being asked.
  std::set<std::uint32_t> filling;
  std::set<std::uint32_t> checking;
  // Copies this node holds of partitions whose copy set no longer names it
  // (actors/copy_retirement.hpp), with when each was retired; `dropping`
  // holds those whose deletion is being checked.
  std::map<std::uint32_t, std::chrono::steady_clock::time_point> retired;
  std::set<std::uint32_t> dropping;
  // When the stale copies were last looked at (membership_config::expire_stale).
  std::optional<std::chrono::steady_clock::time_point> stale_expired_at;
  bool removed_stop = false; // this node learnt it was removed: stopping
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  bool settled_once = false; // see settled() in actors/copy_plan.cpp
  static inline const char* name = "membership";
};

using mem_self = caf::stateful_actor<membership_state>*;

inline const node_id& self_id(mem_self self) {
  return self->state.cfg.self;
}

// A member that owns nothing and will not come back as it is: it left
// (exited) or was removed.
inline bool gone(member_status s) {
  return s == member_status::exited || s == member_status::removed;
}

inline bool replicated(mem_self self) {
  return self->state.ring->n_val() > 1;
}

} // namespace tally
