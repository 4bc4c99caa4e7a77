// Calls from a node's shard threads to partitions on other nodes
// (docs/PERFORMANCE.md, "The cluster path").
//
// One caller actor per shard thread, hosted on it (actors/shard_host.hpp):
// a request that a shard reads for a remote partition is handed to its own
// caller on the same thread, which sends one message
//   (p_call, call id, kind, encode_wire(request))
// to the remote partition actor and gets
//   (p_reply, call id, encode_wire(answer))
// back from it. No actor is spawned and no timer armed per call: the caller
// keeps its calls by id and, every sweep_period, fails the ones older than
// the request timeout (a remote node can die without answering:
// CAF-NOTES.md, "Multi-node"). What the middleman has queued for one peer
// leaves in one write, so calls and replies to a node travel batched.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>

#include "common/expected.hpp"

namespace caf {
class actor_system;
class execution_unit;
} // namespace caf

namespace tally {

class shard_inbox;

/// A remote call's outcome: the encoded answer, or errc::timeout (no answer
/// within the request timeout) / errc::unavailable.
using remote_reply_fn = std::function<void(expected<std::string>)>;

class remote_callers {
public:
  /// How often each caller fails its overdue calls.
  static constexpr std::chrono::milliseconds sweep_period{100};

  /// One caller hosted on each of `units` (the shards' units, in shard
  /// order, with their inboxes), or one on CAF's scheduler when `units` is
  /// empty (partitions not on shards).
  remote_callers(caf::actor_system& sys,
                 const std::vector<std::shared_ptr<caf::execution_unit>>& units,
                 const std::vector<std::shared_ptr<shard_inbox>>& inboxes,
                 std::chrono::milliseconds timeout);

  /// Sends (kind, bytes) to the remote partition `target`; `done` runs on
  /// the caller's thread (the shard's) with the answer. From any thread: the
  /// caller of the current shard takes it without a hop.
  void call(const caf::actor& target, caf::atom_value kind, std::string bytes,
            remote_reply_fn done) const;

  /// The caller actors (the node stops them with the others).
  const std::vector<caf::actor>& actors() const noexcept { return callers_; }

private:
  std::vector<caf::actor> callers_;
  std::vector<const shard_inbox*> inboxes_; // callers_[i] is hosted on inboxes_[i]
};

} // namespace tally
