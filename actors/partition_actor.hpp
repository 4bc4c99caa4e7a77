// The partition actor (DESIGN.md, "The partition actor"; docs/NODE.md).
//
// Protocol (messages in actors/messages.hpp), one actor per partition:
//   part_read_req    -> part_read_resp   when safe time >= snapshot
//   part_prepare_req -> part_time_resp   once its records are durable
//   part_commit_req  -> part_ack         once the commit record is durable
//   part_abort_req   -> part_ack         at once
//   part_read_call, part_prepare_call, part_commit_call (anon_send from the
//                    client server):
//                    as the read and prepare above, answered through the
//                    call's function instead of a promise
//   exit message     -> flushes what is staged, then quits.
// Timer (a `tick` the actor delayed_sends to itself, docs/NODE.md "Timers"):
//   every tick       partition_core::advance_filters() (FBF refreshes and
//                    adaptations run without traffic);
//   every k ticks    partition_core::checkpoint() (k = checkpoint interval /
//                    tick period).
// The tick period is at most 1 s: CAF keeps an actor_system alive until a
// pending delayed message fires, so a short tick bounds the shutdown delay.
//
// The actor runs on a shard thread of the client server (actors/shard_host.hpp:
// a request read by the shard that hosts its partition is served on the same
// thread), on a thread of its own, or on CAF's scheduler (docs/NODE.md,
// "Threading and disk I/O").
// Group commit: handlers stage records and send `flush` to themselves, which
// runs after every message already queued, so one append + sync covers all
// the work that arrived meanwhile. In durability `full` each commit is
// appended and synced on its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace caf {
class actor;
class actor_system;
class execution_unit;
} // namespace caf

namespace tally {

class background_syncer;
class partition_core;

/// The partition's periodic work; 0 turns an item off (both off: no timer,
/// as in the deterministic actor tests).
struct partition_timers {
  /// How often every FBF is advanced: at most the refresh period (and the
  /// adaptation interval), so refreshes and adaptations run on time.
  std::chrono::milliseconds fbf_tick{0};
  /// How often a checkpoint runs (rounded to a multiple of the tick).
  std::chrono::milliseconds checkpoint_interval{0};
  /// Durability periodic: how often the journal is synced (0: never here).
  std::chrono::milliseconds sync_interval{0};
  /// A read parked longer than this (its snapshot not reached) gets a
  /// timeout error at the next tick; 0: never (the requester's timer only).
  std::chrono::milliseconds read_timeout{0};
  /// Not a period but its companion bound: reads parked at once; one more
  /// gets errc::unavailable at once (0: no bound).
  std::size_t max_parked_reads = 0;
  /// The longest tick: bounds how long a pending tick delays shutdown.
  static constexpr std::chrono::milliseconds max_tick{1000};
  /// The tick period: the smallest non-zero setting, capped at max_tick;
  /// 0 when both are off.
  std::chrono::milliseconds tick() const noexcept;
  /// Ticks between checkpoints (0: never).
  std::uint64_t checkpoint_every() const noexcept;
  /// Ticks per `interval`, at least 1 (0: interval or tick off).
  std::uint64_t ticks_per(std::chrono::milliseconds interval) const noexcept;
  /// How long partition `index` waits for its first tick: one period plus
  /// a phase of its own, (index mod 64) 64ths of a period. The partitions
  /// of a shard then tick (and sync, in durability periodic) spread over
  /// the period, not all in one wake-up of their shard thread. Below two
  /// periods (and so below 2 max_tick).
  std::chrono::milliseconds first_tick(std::uint32_t index) const noexcept;
  /// Whether partition `index` checkpoints at its `tick`-th tick (1, 2,
  /// ...): once every checkpoint_every() ticks, at ticks of its own
  /// ((tick + index) mod checkpoint_every() = 0), so that a node's
  /// partitions checkpoint a few at a time across the interval. All at the
  /// same tick, the 64 checkpoints of one shard held its thread for 50 to
  /// 400 ms every 10 s, the p99 of a load at half the peak
  /// (docs/PERFORMANCE.md, "Latency at half load").
  bool checkpoint_due(std::uint64_t tick, std::uint32_t index) const noexcept;
};

/// Where a partition actor runs (tallyd --partition-threads).
struct partition_placement {
  enum class kind {
    shard,     // on a shard thread of the client server (the default)
    detached,  // a thread of its own
    scheduler, // CAF's scheduler workers (measurements only)
  };
  kind where = kind::detached;
  std::shared_ptr<caf::execution_unit> unit; // kind::shard: the shard's unit

  static partition_placement on_shard(std::shared_ptr<caf::execution_unit> u) noexcept {
    return {kind::shard, std::move(u)};
  }
  static partition_placement detached() noexcept { return {kind::detached, nullptr}; }
  static partition_placement scheduler() noexcept { return {kind::scheduler, nullptr}; }
};

/// Spawns the partition actor owning `core` where `placement` says
/// (actors/shard_host.hpp for shard threads). `syncer`: the node's sync
/// threads, for a core opened with partition_options::sync_elsewhere (null:
/// its syncs run on the partition's own thread).
/// `replicated`: the ring keeps several copies of each partition; the copy
/// starts as a replica that serves no client until the membership makes it
/// primary (actors/partition_replication.hpp).
/// `board_slot` is where it publishes blocked_from() (node_context::board);
/// the actor shares ownership of it, so the board outlives every partition
/// thread even when the node is torn down after a failed start.
caf::actor spawn_partition(caf::actor_system& sys,
                           std::unique_ptr<partition_core> core,
                           partition_placement placement = partition_placement::detached(),
                           std::shared_ptr<std::atomic<std::uint64_t>> board_slot = nullptr,
                           partition_timers timers = {},
                           bool replicated = false,
                           std::shared_ptr<background_syncer> syncer = nullptr);

} // namespace tally
