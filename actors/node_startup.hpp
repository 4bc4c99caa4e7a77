// The steps of a node's start that come before any actor runs
// (actors/node.cpp, node::start; docs/NODE.md): the data dir, the node's
// identity, what it holds on disk, the ring, and its partitions opened and
// recovered. Each step is one function with one job; node::start calls
// them in order, then starts the shards, the partitions, the membership
// and the client port.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/membership.hpp"
#include "actors/node.hpp"
#include "actors/partition_actor.hpp"
#include "actors/partition_core.hpp"
#include "journal/background_syncer.hpp"
#include "ring/ring_state.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace tally {

/// Settings that are valid one by one but surprising together: warned
/// about, not refused (check_config refuses the impossible ones).
void warn_about_settings(const node_config& cfg);

/// The FBF configuration of the node's partitions (docs/NODE.md,
/// "Exactly-once").
fbf_config fbf_of(const node_config& cfg);

/// 1. The data dir: its folders created, locked against a second tallyd
/// (the returned descriptor holds the lock), leftovers of interrupted
/// handoffs and full copies tidied (actors/copy_leftovers.hpp), the node
/// link credentials written. Errors:
/// errc::io_error (unusable dir), errc::unavailable (locked by another
/// tallyd).
expected<int> lock_data_dir(const node_config& cfg);

/// 2. Who this node is: its id (the one this data dir was first started
/// with, else a new one) and the cluster port it listens on.
struct node_identity {
  std::string id;
  std::uint16_t cluster_port = 0;
};
expected<node_identity> identify_node(const node_config& cfg);

/// 3. The partitions this node holds on disk: their folders, and the
/// manifest's list (every folder, for a data dir from before the
/// manifest). errc::corrupt when a listed partition's folder is missing.
struct partitions_on_disk {
  std::vector<std::uint32_t> present; // folders, sorted
  std::set<std::uint32_t> listed;     // the manifest's partitions
  bool had_manifest = false;
};
expected<partitions_on_disk> read_partitions_on_disk(const node_config& cfg);

/// 4. The ring: the saved one, or joined through --join, or a new one with
/// this node owning everything (a founder); saved.
struct found_ring {
  ring_state ring;
  bool founder = false;
};
expected<found_ring> find_ring(caf::actor_system& sys, const node_config& cfg,
                               const std::string& id, const partitions_on_disk& disk);

/// 5. Which partitions this node serves now (`held`: every one for a
/// founder or a lone node) and which it has on disk for other owners
/// (`unopened`: a handoff under way at a crash; the membership ships them).
struct partition_plan {
  std::vector<std::uint32_t> held;
  std::vector<std::uint32_t> unopened;
};
partition_plan plan_partitions(const node_config& cfg, const found_ring& found,
                               const partitions_on_disk& disk, const std::string& id);

/// How this node opens a partition's copy: the options of partition i in
/// <data-dir>/<folder>/<i>, and the sync threads its journal uses when the
/// partitions run on the shard threads (journal/background_syncer.hpp).
class partition_opener {
public:
  partition_opener(const node_config& cfg, bool replicated);
  partition_options options(std::uint32_t i, bool must_exist,
                            const char* folder = "partitions") const;
  /// Null: the partitions sync on their own threads.
  const std::shared_ptr<background_syncer>& syncer() const noexcept { return syncer_; }
  bool replicated() const noexcept { return replicated_; }
  /// The partitions' periodic work (docs/NODE.md, "Timers").
  partition_timers timers() const;
  /// The replicas' dependency checks, added up for `cluster status`
  /// (docs/REPLICATION.md, "Dependency check").
  const std::shared_ptr<dependency_tally>& dependency_checks() const noexcept {
    return dependency_checks_;
  }

private:
  node_config cfg_;
  std::filesystem::path root_;
  bool replicated_ = false;
  bool sync_elsewhere_ = false;
  std::shared_ptr<background_syncer> syncer_;
  std::shared_ptr<dependency_tally> dependency_checks_ = std::make_shared<dependency_tally>();
};

/// 6. Every held partition opened and recovered, the manifest brought up
/// to date, and the transactions a crash left prepared resolved among this
/// node's partitions (`alone`: a one-member cluster decides them all; else
/// those with no decision here are left for the membership, which asks the
/// cluster: docs/CLUSTER.md, "Recovery of undecided transactions").
struct opened_partitions {
  std::vector<std::unique_ptr<partition_core>> cores;
  std::uint64_t max_clock = 0; // the highest partition clock recovered
  std::vector<undecided_tx> undecided;
};
expected<opened_partitions> open_held_partitions(const node_config& cfg,
                                                 const partition_opener& opener,
                                                 const partition_plan& plan,
                                                 const partitions_on_disk& disk, bool alone);

} // namespace tally
