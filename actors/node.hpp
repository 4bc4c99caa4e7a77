// A Tally node (docs/NODE.md, docs/CLUSTER.md). start() is a sequence of
// named steps: before any actor runs (actors/node_startup.hpp) the data
// dir is locked, the node's id found, its partitions on disk read, the ring
// found (saved, joined through --join, or new), and the partitions it holds
// opened and recovered, transactions a crash left prepared resolved among
// them; then the shard threads start (server/client_server.hpp), the
// partition actors run on them, the membership actor is published on the
// cluster port, and last the client port serves. stop() closes the client
// port and sends an exit message to every long-lived actor (CAF-NOTES.md,
// "Lifetime and shutdown"); await_stopped() waits for them, then ends the
// shard threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "actors/node_links.hpp"
#include "actors/node_context.hpp"
#include "common/expected.hpp"
#include "journal/journal.hpp"
#include "tls/tls_context.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace tally {

class client_server;

/// Where the partition actors run (tallyd --partition-threads).
enum class partition_threading {
  shards,    // on the client server's shard threads (default)
  detached,  // a thread each
  scheduler, // CAF's scheduler workers
};

struct node_config {
  std::string data_dir = "./data";
  std::string bind = "127.0.0.1";
  std::uint16_t port = 8087;
  std::uint32_t partitions = 64;
  /// Copies of each partition, for a new cluster (its founder's setting;
  /// nodes that join take the ring's): docs/REPLICATION.md.
  std::uint32_t n_val = 1;
  /// A peer silent this long (no heartbeat; CAF's middleman sends one
  /// every 250 ms) is down: its copies fail over (--peer-timeout-ms;
  /// docs/CLUSTER.md, "Failures").
  std::chrono::milliseconds peer_timeout{1000};
  durability mode = durability::batch;
  /// Durability periodic: sync each journal this often (--durability
  /// periodic:MS, default 1000).
  std::chrono::milliseconds periodic_sync{1000};
  node_limits limits;
  /// TLS on the client port (docs/SECURITY.md, "The client port"): a TLS
  /// listener on --bind:--client-tls-port (0: a free port) with this
  /// node's certificate and key (--client-tls-cert, --client-tls-key);
  /// --client-tls-ca requires client certificates it signed. None when
  /// absent. --no-plain-port leaves the plain port closed.
  std::optional<std::uint16_t> client_tls_port;
  tls_server_files client_tls;
  bool plain_client_port = true;
  /// Shard threads (--io-threads): client I/O and the partitions
  /// (server/client_server.hpp, actors/shard_host.hpp). Default: half the
  /// cores, at least one; on a 2-core machine one shard measured 1.28x the
  /// throughput of two at a fifth less CPU per operation, since every
  /// request then stays on the thread that read it (docs/PERFORMANCE.md).
  std::size_t io_threads = default_io_threads();
  static std::size_t default_io_threads() noexcept;
  /// Where the partition actors run (--partition-threads): on the shard
  /// threads (the default: a request is served on the thread that read
  /// it), a thread each, or the scheduler's two; docs/NODE.md, "Threading
  /// and disk I/O", has the measurements.
  /// Unset: shards, except with durability full, whose sync per commit
  /// would stall a shard's every connection: then detached.
  std::optional<partition_threading> partition_threads;
  partition_threading threading() const noexcept {
    return partition_threads.value_or(mode == durability::full ? partition_threading::detached
                                                               : partition_threading::shards);
  }
  /// Threads that sync the partitions' journals when the partitions run on
  /// the shard threads (--sync-threads; journal/background_syncer.hpp):
  /// fdatasyncs of different files overlap in the kernel and the device.
  std::size_t sync_threads = 16;
  /// Journals append through their write-ahead tail (journal_options::
  /// write_ahead_tail; docs/STORAGE.md, "The write-ahead tail").
  bool journal_tail = true;
  /// Records a journal's tail holds in memory before they move into LMDB
  /// in one transaction (--journal-tail-records; journal_options::
  /// tail_drain_records).
  std::uint64_t journal_tail_records = 256;
  /// The node-to-node port (docs/CLUSTER.md). nullopt: the one this data
  /// dir used before, else client port + 1000, else (client port 0) any.
  std::optional<std::uint16_t> cluster_port;
  /// HOST:PORT of a member's cluster port to join through (first start).
  std::string join;
  /// The address the cluster port listens on (--cluster-bind); empty:
  /// `bind`. A wildcard (0.0.0.0, ::) needs `advertise`.
  std::string cluster_bind;
  /// HOST:PORT where the other nodes reach this node's cluster port
  /// (--advertise): the node id, tally@HOST:PORT, fixed at the first start.
  /// Empty: the cluster bind address and the cluster port. The cluster port
  /// listened on is `cluster_port` if given, else PORT.
  std::string advertise;
  const std::string& cluster_address() const noexcept {
    return cluster_bind.empty() ? bind : cluster_bind;
  }
  /// The admin socket (--admin-socket): nullopt = <data-dir>/admin.sock;
  /// "" = none (admin requests are then refused everywhere).
  std::optional<std::string> admin_socket;
  /// TLS on node links (--tls-cert, --tls-key, --tls-ca): applied to the
  /// actor system's config before it is made (configure_node_links).
  node_link_security links;
  /// Called from an actor's thread when this node has left the cluster.
  std::function<void()> request_shutdown;
  /// How often each partition checkpoints and truncates its journal
  /// (--checkpoint-interval-ms; 0 = never). docs/NODE.md, "Checkpoints".
  std::chrono::milliseconds checkpoint_interval{10000};
  /// History kept below the safe time (--snapshot-retention-ms): a
  /// transaction can read for this long after its snapshot was taken; then
  /// "snapshot too old". Default 60 s, above the interactive idle timeout
  /// (30 s) plus the partition request timeout (10 s).
  std::chrono::milliseconds snapshot_retention{60000};
  /// Per-bucket FBF (tallyd_fbf_config): refresh period t
  /// (--fbf-refresh-ms), past filters N (--fbf-past-filters), retry timeout
  /// R (--fbf-retry-timeout-ms; (N+1)t >= R is required) and the target FPP
  /// of adaptive resizing (--fbf-target-fpp; 0 = not adaptive).
  std::chrono::milliseconds fbf_refresh{2000};
  std::size_t fbf_past_filters = 2;
  std::chrono::milliseconds fbf_retry_timeout{5000};
  double fbf_target_fpp = 1e-3;
  /// Memory for FBFs on this node (--fbf-memory-mb, 0 = no bound): each
  /// partition keeps the filters of at most memory / (Q x largest filter)
  /// buckets, at least one; older buckets' ids are then checked exactly
  /// (partition_options::max_fbfs).
  std::uint64_t fbf_memory_bytes = 512ull << 20;
  /// Each partition's LMDB map size in bytes (--map-size). A full map fails
  /// the writes of the batch that hit it with errc::storage_full; reads go
  /// on, and writes resume once a restart with a larger map (or a
  /// checkpoint's truncation) makes room.
  std::uint64_t map_size = std::uint64_t{1} << 30;
  /// How long copies set aside in <data-dir>/stale/ are kept before they
  /// are deleted (--stale-keep-hours; 0 = for ever): docs/REPLICATION.md,
  /// "Retired copies".
  std::chrono::hours stale_keep{168};
};

/// Refuses a configuration the node cannot run safely, with errc::bad_config
/// and a sentence naming the setting: an FBF that forgets ids before the
/// retry timeout ((N+1)t < R) or with bad adaptation settings (fbf_config's
/// validation), a zero snapshot retention. node::start calls it first;
/// tallyd calls it at parse time (exit code 2).
status check_config(const node_config& cfg);

class node {
public:
  /// Starts the node in `sys` (which must have the middleman loaded).
  /// Errors: errc::invalid_argument (bad partition count), errc::unavailable
  /// (data dir locked by another tallyd, port in use), errc::io_error
  /// (unusable data dir), journal recovery errors (errc::corrupt,
  /// errc::bad_config).
  static expected<std::unique_ptr<node>> start(caf::actor_system& sys,
                                               const node_config& cfg);
  ~node();

  node(const node&) = delete;
  node& operator=(const node&) = delete;

  /// The plain client port (0 with --no-plain-port) and the TLS client
  /// port (0: none).
  std::uint16_t port() const noexcept { return port_; }
  std::uint16_t tls_port() const noexcept { return tls_port_; }
  std::uint16_t cluster_port() const noexcept { return cluster_port_; }
  const std::string& id() const noexcept { return id_; }

  /// Stops the client server, then sends exit messages to the transaction manager, the
  /// membership and every partition (which flush what is staged first).
  /// Idempotent.
  void stop();

  /// After stop(): waits until every actor it stopped has terminated (each
  /// partition has flushed and closed its journal), at most `limit`. True
  /// when all have. docs/NODE.md, "Shutdown", says why tallyd then exits
  /// without the actor_system destructor.
  bool await_stopped(caf::actor_system& sys, std::chrono::milliseconds limit);

private:
  node() = default;

  // The steps of start() that run the node's threads and actors, after the
  // steps of actors/node_startup.hpp; `starting` carries what they share
  // (defined in node.cpp).
  struct starting;
  status start_shards(caf::actor_system& sys, const node_config& cfg, starting& s);
  void spawn_partitions(caf::actor_system& sys, starting& s);
  status start_membership(caf::actor_system& sys, const node_config& cfg, starting& s);
  status serve_clients(caf::actor_system& sys, const node_config& cfg, starting& s);

  caf::actor_system* sys_ = nullptr;
  std::unique_ptr<client_server> server_; // the client port and shard threads
  std::vector<caf::actor> actors_; // tx manager, membership, partitions
  std::vector<caf::actor> stopping_; // what stop() sent exits to
  // Partition actors the membership spawned after startup (handoffs); once
  // `stopping`, a new one is stopped at once.
  struct spawned_actors {
    std::mutex mutex;
    std::vector<caf::actor> actors;
    bool stopping = false;
  };
  std::shared_ptr<spawned_actors> spawned_;
  std::uint16_t port_ = 0;
  std::uint16_t tls_port_ = 0;
  std::uint16_t cluster_port_ = 0;
  std::string id_;
  int lock_fd_ = -1;
  bool stopped_ = false;
};

} // namespace tally
