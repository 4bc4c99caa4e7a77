// The ring state (docs/RING.md, "Ring state and merge"): the member table
// and the ownership table, versioned and merged deterministically so that
// nodes gossiping their states converge to identical states.
//
// Contract: a plain value (copyable, no I/O, no clock, not thread-safe). The
// membership actor of each node owns one copy, applies admin requests
// (join, leave), merges every state it receives, and, when it is the
// claimant, runs claim() and hands the returned moves to the partition
// actors. Merge is commutative, associative and idempotent.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.hpp"
#include "ring/claim.hpp"
#include "ring/partition.hpp"

namespace tally {

/// DESIGN.md, "Cluster and ring": three replicas per partition by default.
constexpr std::uint32_t default_n_val = 3;

/// Largest n_val accepted: more replicas than this never pay for their
/// writes, and claim's search grows with n_val.
constexpr std::uint32_t max_n_val = 16;

/// Longest node id accepted: "name@host:port" with a 253-byte host name
/// fits; the bound also caps what a decoder allocates for one id.
constexpr std::size_t max_node_id_length = 1024;

/// Success for a non-empty id of at most max_node_id_length bytes;
/// errc::invalid_argument otherwise.
status check_node_id(std::string_view node);

/// A member's lifecycle. The numbers are the merge order at equal
/// incarnation and the wire values: never renumber.
enum class member_status : std::uint8_t {
  joining = 0, // asked to join; owns nothing until the next claim
  valid = 1,   // owns partitions
  leaving = 2, // asked to leave; the next claim gives its partitions away
  exited = 3,  // owns nothing; kept as a tombstone so merges never revive it
  removed = 4, // gone for good (`tally cluster remove`): owns nothing, hands
               // nothing off; its copies are re-created on the others
};

std::string_view to_string(member_status s) noexcept;

inline std::ostream& operator<<(std::ostream& os, member_status s) {
  return os << to_string(s);
}

struct member_info {
  member_status status = member_status::joining;
  /// Bumped when an exited or leaving node joins again, so the new joining
  /// entry supersedes the old one in every merge.
  std::uint64_t incarnation = 0;

  friend bool operator==(const member_info& a, const member_info& b) {
    return a.status == b.status && a.incarnation == b.incarnation;
  }
  friend bool operator!=(const member_info& a, const member_info& b) {
    return !(a == b);
  }
};

/// The merge order of member entries: larger incarnation, then larger
/// status. Merge keeps the larger entry per node.
bool precedes(const member_info& a, const member_info& b) noexcept;

/// Who owns which partition, as computed by one claimant at one epoch.
struct ownership {
  std::uint64_t epoch = 0;
  node_id claimant;
  owner_table owners; // size Q

  /// Hash of the owner table (not of epoch or claimant), fixed forever.
  std::uint64_t content_hash() const noexcept;
  /// 24 bits of a hash of the claimant and the owner table: what tells two
  /// views of one epoch apart (view_rank).
  std::uint32_t view_tag() const noexcept;

  friend bool operator==(const ownership& a, const ownership& b) {
    return a.epoch == b.epoch && a.claimant == b.claimant && a.owners == b.owners;
  }
  friend bool operator!=(const ownership& a, const ownership& b) { return !(a == b); }
};

/// The merge order of ownerships: (epoch, view tag, claimant, content
/// hash, owners) compared lexicographically; merge keeps the larger.
bool precedes(const ownership& a, const ownership& b);

/// The rank of a view for replication's fences (docs/REPLICATION.md,
/// "Views of one epoch"): the epoch in the high 40 bits, the view tag in
/// the low 24. Ranks order views as `precedes` does whenever their epochs
/// or tags differ: two views of one epoch (two claimants in a split
/// membership) rank apart, the one the merge keeps above, unless their
/// tags collide (1 in 2^24). Epochs reach 2^40 only after that many
/// ownership changes.
std::uint64_t view_rank(const ownership& o) noexcept;
/// A rank as logs show it: "<epoch>/<tag in hex>".
std::string view_rank_name(std::uint64_t rank);

/// A partition whose copy on a removed node is gone (`tally cluster
/// remove`, docs/CLUSTER.md "Removing a dead node"): its new owner
/// re-creates its copy instead of waiting for a handoff that cannot come.
struct removed_copy {
  node_id from;            // the removed node
  std::uint64_t at_us = 0; // when it was removed (wall clock, microseconds)
  /// That node held the partition's only copy: the data is lost and the
  /// partition re-created empty (only with --force).
  bool only_copy = false;
  /// The owner has re-created its copy (so a later owner waits for a
  /// handoff as usual).
  bool recreated = false;

  friend bool operator==(const removed_copy& a, const removed_copy& b) {
    return a.from == b.from && a.at_us == b.at_us && a.only_copy == b.only_copy
           && a.recreated == b.recreated;
  }
  friend bool operator!=(const removed_copy& a, const removed_copy& b) { return !(a == b); }
};

/// The merge order of removal records: (at_us, from, only_copy, recreated)
/// compared lexicographically; merge keeps the larger, so `recreated`
/// spreads and a later removal supersedes an earlier one.
bool precedes(const removed_copy& a, const removed_copy& b);

/// One entry of a preference list.
struct replica {
  std::uint32_t partition = 0;
  node_id node;

  friend bool operator==(const replica& a, const replica& b) {
    return a.partition == b.partition && a.node == b.node;
  }
  friend bool operator!=(const replica& a, const replica& b) { return !(a == b); }
};

class ring_state {
public:
  /// A new ring whose only member, `founder`, is valid and owns every
  /// partition (epoch 0, claimant `founder`). errc::invalid_argument for a
  /// bad node id, a ring size that is not a power of two in [1, 2^16], or
  /// n_val outside [1, max_n_val].
  static expected<ring_state> create(const node_id& founder,
                                     std::uint32_t partitions = default_partition_count,
                                     std::uint32_t n_val = default_n_val);

  std::uint32_t partition_count() const noexcept { return partitions_; }
  std::uint32_t n_val() const noexcept { return n_val_; }
  const std::map<node_id, member_info>& members() const noexcept { return members_; }
  const ownership& owners() const noexcept { return ownership_; }

  /// Members that own partitions after the next claim: joining and valid.
  std::vector<node_id> active_members() const;

  /// Adds `node` as joining. A no-op for a joining or valid member; a
  /// leaving, exited or removed node joins again with its incarnation
  /// bumped.
  /// errc::invalid_argument for a bad node id.
  status join(const node_id& node);

  /// Marks `node` leaving; a no-op when it is already leaving.
  /// errc::not_found when `node` is not a member, has exited or was removed;
  /// errc::invalid_argument when it is the last joining or valid member
  /// (its partitions would have no owner).
  status leave(const node_id& node);

  /// Removes `node`, a member that is gone for good: it becomes removed
  /// (owns nothing after the next claim, hands nothing off, is never
  /// connected to again). `held`: the partitions it held a copy of, each
  /// with true when that copy was the only one; each is recorded as a
  /// removed_copy at `now_us`, so its next owner re-creates it.
  /// An exited node may be removed too (it left, died before handing
  /// everything off, and holds partitions nobody else has).
  /// errc::not_found when `node` is not a member or was removed;
  /// errc::invalid_argument when it is the last joining or valid member. Whether it is down, and whether losing an only copy is
  /// allowed, the caller decides (it knows liveness).
  status remove(const node_id& node, std::uint64_t now_us,
                const std::map<std::uint32_t, bool>& held);

  /// Records that the owner of `partition` re-created its copy after a
  /// removal. A no-op when no removal of it is pending.
  void mark_recreated(std::uint32_t partition);

  /// The partitions whose copy on a removed node is gone, by partition.
  const std::map<std::uint32_t, removed_copy>& removals() const noexcept {
    return removals_;
  }

  /// The one member allowed to change ownership: the smallest valid member
  /// id, or, with no valid member, the smallest joining one. Every node
  /// computes the same claimant from the same state.
  std::optional<node_id> claimant() const;

  /// The claimant step, run by the membership actor of `self`. Recomputes
  /// ownership incrementally from the current table over active_members()
  /// (claim_ownership), marks joining members valid and leaving members
  /// exited, and, when the table changed, bumps the epoch and records
  /// `self` as its claimant. Returns the handoffs, moves(old, new) (empty
  /// when nothing changed). errc::invalid_argument when `self` is not the
  /// claimant; the state is unchanged on error.
  expected<std::vector<handoff>> claim(const node_id& self);

  /// Merges `other` into this state: per node the entry that precedes the
  /// other loses; the ownership that precedes the other loses.
  /// errc::invalid_argument when the ring sizes or n_vals differ (states of
  /// different clusters); this state is unchanged then.
  status merge(const ring_state& other);

  /// The n partitions p, p+1, ..., p+n-1 (mod Q) with their owners, n =
  /// effective_n_val(Q, distinct owners, n_val). errc::invalid_argument for
  /// p >= Q.
  expected<std::vector<replica>> preference_list(std::uint32_t partition) const;

  /// preference_list(partition_for(bucket, key)).
  std::vector<replica> preference_list(std::string_view bucket,
                                       std::string_view key) const;

  /// Versioned, portable bytes (docs/RING.md, "Format"). Equal states give
  /// equal bytes.
  std::string encode() const;

  /// errc::corrupt for truncated bytes, trailing bytes, an unknown version
  /// and any field outside its domain. Never throws.
  static expected<ring_state> decode(std::string_view bytes);

  friend bool operator==(const ring_state& a, const ring_state& b) {
    return a.partitions_ == b.partitions_ && a.n_val_ == b.n_val_
           && a.members_ == b.members_ && a.ownership_ == b.ownership_
           && a.removals_ == b.removals_;
  }
  friend bool operator!=(const ring_state& a, const ring_state& b) { return !(a == b); }

private:
  ring_state() = default;

  std::uint32_t partitions_ = default_partition_count;
  std::uint32_t n_val_ = default_n_val;
  std::map<node_id, member_info> members_;
  ownership ownership_;
  std::map<std::uint32_t, removed_copy> removals_;
};

} // namespace tally
