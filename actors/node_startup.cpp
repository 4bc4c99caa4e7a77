#include "actors/node_startup.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actors/copy_leftovers.hpp"
#include "actors/handoff.hpp"
#include "actors/node_links.hpp"
#include "actors/partition_actor.hpp"
#include "common/log.hpp"
#include "journal/partition_manifest.hpp"
#include "ring/partition.hpp"

namespace tally {

namespace {

// Transactions left prepared by a crash: committed if any partition holds
// their commit record (at that time), aborted otherwise. A client was only
// acknowledged after every commit record was durable, so this never drops
// an acknowledged commit, and it makes a half-committed one whole. In a
// cluster (`alone` false) a transaction with no commit record here may have
// one on another node: it stays prepared and goes to `left`, which the
// membership actor resolves with the other nodes (docs/CLUSTER.md,
// "Recovery of undecided transactions").
status resolve_undecided(std::vector<std::unique_ptr<partition_core>>& cores, bool alone,
                         std::vector<undecided_tx>& left) {
  for (auto& core : cores) {
    auto pending = core->undecided(); // copy: stage_* change the core
    for (const auto& u : pending) {
      // The other participants here (every partition here when the prepare
      // record does not name them), one decision-index lookup each.
      std::optional<tx_outcome> outcome;
      std::uint64_t commit = 0;
      for (auto& other : cores) {
        if (other.get() == core.get()
            || (!u.participants.empty()
                && !std::binary_search(u.participants.begin(), u.participants.end(),
                                       other->index())))
          continue;
        auto found = other->find_decision(u.tx);
        if (!found)
          return found.err();
        if (found->outcome) {
          outcome = found->outcome;
          commit = found->commit_time;
          break;
        }
      }
      if (outcome == tx_outcome::committed) {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " committed at ", commit);
        if (auto st = core->stage_commit(u.tx, commit); !st)
          return st.err();
      } else if (outcome == tx_outcome::aborted) {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " prepared, aborted at another participant: aborted");
        if (auto st = core->stage_abort(u.tx); !st)
          return st.err();
      } else if (!alone) {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " prepared, no decision on this node: asking the cluster");
        left.push_back(undecided_tx{core->index(), u.tx, u.prepare_time, u.participants,
                                    u.coordinator});
      } else {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " prepared but never committed: aborted");
        if (auto st = core->stage_abort(u.tx); !st)
          return st.err();
      }
    }
  }
  // Synced here, whatever the durability: with the journals synced on the
  // sync threads (partition_options::sync_elsewhere), a flushed batch
  // applies only once a sync covers it, and nothing else would sync a
  // partition that gets no write: its decided transactions would stay
  // prepared, their keys unreadable and the node's stable time held.
  for (auto& core : cores) {
    if (auto st = core->flush(); !st)
      return st.err();
    if (core->has_unsynced())
      if (auto st = core->sync(); !st)
        return st.err();
  }
  return {};
}


// Buckets with an FBF per partition within --fbf-memory-mb: the node's
// budget over its Q partitions and the largest a bucket's filter can grow
// (N_max + 2 filters of m bits when adaptive).
std::size_t max_fbfs_of(const node_config& cfg) {
  if (cfg.fbf_memory_bytes == 0)
    return 0;
  auto f = fbf_of(cfg);
  auto filters = (f.adaptive ? f.max_past_filters : f.past_filters) + 2;
  std::uint64_t per_bucket = filters * ((f.bits_per_filter + 7) / 8);
  std::uint64_t n = cfg.fbf_memory_bytes / (std::uint64_t{cfg.partitions} * per_bucket);
  return static_cast<std::size_t>(std::max<std::uint64_t>(1, n));
}

// FBF tick: never longer than the refresh period, nor (adaptive) than the
// shortest refresh period adaptation may choose and the adaptation
// interval, so refreshes and adaptations run on time without traffic.
std::chrono::milliseconds fbf_tick_of(const fbf_config& f) {
  auto t = f.refresh_period;
  if (f.adaptive)
    t = std::min({t, f.min_refresh_period, f.adapt_interval});
  return std::chrono::duration_cast<std::chrono::milliseconds>(t);
}

// Binds a TCP socket on `bind`:`port` and returns the port it got (the
// kernel's choice for 0), then closes it: a probe, for a first start whose
// node id needs the cluster port before the cluster port is published.
expected<std::uint16_t> probe_port(const std::string& bind, std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return make_error(errc::io_error, std::string{"socket: "} + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, bind.c_str(), &a.sin_addr) != 1)
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0
      || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    int err = errno;
    ::close(fd);
    return make_error(errc::unavailable, "port " + std::to_string(port) + " on " + bind
                                           + ": " + std::strerror(err));
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string node_id_path(const std::filesystem::path& root) {
  return (root / "cluster" / "node").string();
}

// The node's id: the one this data dir was first started with (a ring
// names its members by id, so it never changes), else a new one from the
// cluster port.
expected<std::string> find_node_id(const std::filesystem::path& root,
                                   const node_config& cfg) {
  std::ifstream in{node_id_path(root)};
  std::string saved;
  if (in && std::getline(in, saved) && !saved.empty()) {
    auto addr = node_address(saved);
    if (!addr)
      return make_error(errc::corrupt, node_id_path(root) + ": " + addr.err().message());
    if (!cfg.advertise.empty()) {
      if ("tally@" + cfg.advertise != saved)
        return make_error(errc::bad_config,
                          "this data dir belongs to node " + saved + ": start it with --advertise "
                            + saved.substr(saved.find('@') + 1)
                            + " (a node's id, the address its peers reach it at, never "
                              "changes)");
      return saved;
    }
    if (cfg.cluster_port && *cfg.cluster_port != 0 && *cfg.cluster_port != addr->second)
      return make_error(errc::bad_config,
                        "this data dir belongs to node " + saved + ": start it with --cluster-port "
                          + std::to_string(addr->second) + " (or without --cluster-port)");
    return saved;
  }
  std::string id;
  if (!cfg.advertise.empty()) {
    id = "tally@" + cfg.advertise;
  } else {
    std::uint16_t port = 0;
    if (cfg.cluster_port && *cfg.cluster_port != 0)
      port = *cfg.cluster_port;
    else if (!cfg.cluster_port && cfg.port != 0 && cfg.port <= 65535 - 1000
             && probe_port(cfg.cluster_address(), static_cast<std::uint16_t>(cfg.port + 1000)))
      port = static_cast<std::uint16_t>(cfg.port + 1000);
    // Not asked for and client port + 1000 taken: any free port (the id
    // keeps it for every later start).
    if (port == 0) {
      auto free = probe_port(cfg.cluster_address(), 0);
      if (!free)
        return free.err();
      port = *free;
    }
    id = make_node_id(cfg.cluster_address(), port);
  }
  std::error_code ec;
  std::filesystem::create_directories(root / "cluster", ec);
  std::ofstream out{node_id_path(root), std::ios::trunc};
  out << id << "\n";
  out.flush();
  if (!out)
    return make_error(errc::io_error, "cannot write " + node_id_path(root));
  return id;
}

} // namespace

fbf_config fbf_of(const node_config& cfg) {
  return tallyd_fbf_config(cfg.fbf_refresh, cfg.fbf_past_filters,
                           cfg.fbf_retry_timeout, cfg.fbf_target_fpp);
}

void warn_about_settings(const node_config& cfg) {
  const auto oldest_tx = cfg.limits.tx_idle_timeout + cfg.limits.request_timeout;
  if (cfg.checkpoint_interval.count() > 0 && cfg.snapshot_retention < oldest_tx)
    log(log_level::warn, "--snapshot-retention-ms ",
        cfg.snapshot_retention.count(), " is below the interactive idle "
        "timeout plus the request timeout (", oldest_tx.count(),
        " ms): a slow interactive transaction may get \"snapshot too old\"");
}

expected<int> lock_data_dir(const node_config& cfg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path root{cfg.data_dir};
  fs::create_directories(root / "partitions", ec);
  if (!ec)
    fs::create_directories(root / "cluster", ec);
  if (ec)
    return make_error(errc::io_error, "unusable data dir " + cfg.data_dir
                                        + ": " + ec.message());
  // A full disk does not stop the start (nothing is written unless it
  // changed): the node serves reads, and writes fail with a clear error
  // until space returns (docs/NODE.md, "Damaged storage").
  if (auto space = fs::space(root, ec); !ec && space.available < (std::uintmax_t{1} << 20))
    log(log_level::warn, "the disk holding ", cfg.data_dir, " has ", space.available,
        " bytes free: reads are served; writes fail until space is freed, then resume");
  auto lock_path = (root / "LOCK").string();
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error(errc::io_error, "unusable data dir " + cfg.data_dir
                                        + ": cannot create " + lock_path + ": "
                                        + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return make_error(errc::unavailable,
                      "data dir " + cfg.data_dir
                        + " is in use by another tallyd (" + lock_path
                        + " is locked)");
  }
  auto fail = [fd](error e) {
    ::close(fd);
    return e;
  };
  if (auto left = remove_handoff_leftovers(cfg.data_dir); !left)
    return fail(left.err());
  else if (*left != 0)
    log(log_level::info, "removed ", *left, " leftover(s) of interrupted handoffs");
  // Before any copy opens: a full copy cut short leaves scratch folders, or
  // a store moved aside (actors/copy_leftovers.hpp).
  auto copies = tidy_copy_leftovers(cfg.data_dir);
  if (!copies)
    return fail(copies.err());
  for (const auto& r : copies->restored)
    log(log_level::warn, r, ": a full copy was cut short while it replaced this store; "
                           "the store it replaced is back in place");
  if (!copies->removed.empty())
    log(log_level::info, "removed ", copies->removed.size(),
        " leftover(s) of interrupted full copies");
  // The node's link credentials, before any link is opened (the join, the
  // cluster port); with the data dir locked, so that a second tallyd on it
  // never replaces the files a running node reads.
  if (auto st = write_node_link_files(cfg.links, cfg.data_dir); !st)
    return fail(st.err());
  return fd;
}

expected<node_identity> identify_node(const node_config& cfg) {
  auto id = find_node_id(std::filesystem::path{cfg.data_dir}, cfg);
  if (!id)
    return id.err();
  auto addr = node_address(*id);
  if (!addr)
    return addr.err();
  node_identity out;
  out.id = *id;
  // The port listened on: the id's, unless --advertise names another one
  // than --cluster-port (a port forwarded to this one).
  out.cluster_port = !cfg.advertise.empty() && cfg.cluster_port && *cfg.cluster_port != 0
                       ? *cfg.cluster_port
                       : addr->second;
  return out;
}

expected<partitions_on_disk> read_partitions_on_disk(const node_config& cfg) {
  partitions_on_disk out;
  auto present =
    present_partitions(cfg.data_dir, std::max<std::uint32_t>(cfg.partitions, max_partition_count));
  if (!present)
    return present.err();
  out.present = std::move(*present);
  // Each partition of the manifest (partition_manifest.hpp) must still have
  // its folder, and opens only with its data file whole.
  auto manifest = load_manifest(cfg.data_dir);
  if (!manifest)
    return manifest.err();
  out.had_manifest = manifest->has_value();
  if (out.had_manifest) {
    out.listed = **manifest;
    for (auto p : out.listed)
      if (!std::binary_search(out.present.begin(), out.present.end(), p))
        return make_error(errc::corrupt,
                          "partition " + std::to_string(p) + ": listed in "
                            + manifest_path(cfg.data_dir) + " but its folder "
                            + partition_dir(cfg.data_dir, p)
                            + " is missing (deleted?): this node's data of it is lost. Restore "
                              "the folder, or accept the loss by deleting the line \"partition "
                            + std::to_string(p)
                            + "\" from the manifest (docs/NODE.md, \"Damaged storage\")");
  } else {
    // A data dir from before the manifest: every folder there is held data.
    out.listed.insert(out.present.begin(), out.present.end());
  }
  return out;
}

expected<found_ring> find_ring(caf::actor_system& sys, const node_config& cfg,
                               const std::string& id, const partitions_on_disk& disk) {
  auto saved = load_ring(cfg.data_dir);
  if (!saved)
    return saved.err();
  std::optional<ring_state> ring = std::move(*saved);
  bool founder = false;
  if (ring) {
    if (ring->partition_count() != cfg.partitions)
      return make_error(errc::bad_config,
                        "this data dir holds a ring of " + std::to_string(ring->partition_count())
                          + " partitions: start with --partitions "
                          + std::to_string(ring->partition_count()));
  } else if (!cfg.join.empty()) {
    if (!disk.present.empty())
      return make_error(errc::bad_config,
                        "data dir " + cfg.data_dir + " already holds partitions of a "
                          "node that is in no cluster: use an empty data dir to join");
    auto seed = parse_host_port(cfg.join);
    if (!seed)
      return make_error(errc::invalid_argument, "--join: " + seed.err().message());
    log(log_level::info, "joining the cluster through ", cfg.join, " as ", id);
    auto joined = join_cluster(sys, seed->first, seed->second, id, cfg.partitions,
                               cfg.limits.request_timeout);
    if (!joined)
      return joined.err();
    ring = std::move(*joined);
  } else {
    auto fresh = ring_state::create(id, cfg.partitions, cfg.n_val);
    if (!fresh)
      return fresh.err();
    ring = std::move(*fresh);
    founder = disk.present.empty();
  }
  if (auto s = save_ring(cfg.data_dir, *ring); !s)
    return s.err();
  for (auto p : disk.present)
    if (p >= cfg.partitions)
      return make_error(errc::bad_config,
                        "data dir holds partition " + std::to_string(p) + " but the ring has "
                          + std::to_string(cfg.partitions) + " partitions");
  return found_ring{std::move(*ring), founder};
}

partition_plan plan_partitions(const node_config& cfg, const found_ring& found,
                               const partitions_on_disk& disk, const std::string& id) {
  // A founder creates every partition; any other node serves what it has
  // on disk and owns, and receives the rest by handoff. What it has on disk
  // but another node owns (a handoff under way at a crash) is not served:
  // the membership ships it, or deletes it once the owner serves it. A lone
  // node holds every partition: one with no folder and not in the manifest
  // is new (a founder's), or lost and accepted as lost by its operator
  // (docs/NODE.md, "Damaged storage"): it is created empty.
  partition_plan plan;
  if (found.founder || found.ring.members().size() == 1) {
    for (std::uint32_t i = 0; i < cfg.partitions; ++i)
      plan.held.push_back(i);
  } else {
    for (auto p : disk.present)
      (found.ring.owners().owners[p] == id ? plan.held : plan.unopened).push_back(p);
  }
  if (!plan.unopened.empty())
    log(log_level::info, plan.unopened.size(), " partition(s) on disk belong to other nodes "
                         "now: not served here, handed off");
  return plan;
}

partition_opener::partition_opener(const node_config& cfg, bool replicated)
    : cfg_(cfg), root_(cfg.data_dir), replicated_(replicated),
      // Journal syncs on threads of their own when the partitions share the
      // shard threads (journal/background_syncer.hpp): a shard never waits
      // for the disk.
      sync_elsewhere_(cfg.threading() == partition_threading::shards
                      && (cfg.mode == durability::batch || cfg.mode == durability::periodic)) {
  if (sync_elsewhere_)
    syncer_ = std::make_shared<background_syncer>(cfg.sync_threads);
}

partition_options partition_opener::options(std::uint32_t i, bool must_exist,
                                            const char* folder) const {
  partition_options po;
  po.index = i;
  po.path = (root_ / folder / std::to_string(i)).string();
  po.must_exist = must_exist;
  po.mode = cfg_.mode;
  po.fbf = fbf_of(cfg_); // docs/NODE.md, "Exactly-once"
  po.max_fbfs = max_fbfs_of(cfg_);
  po.map_size = cfg_.map_size;
  po.sync_elsewhere = sync_elsewhere_;
  po.write_ahead_tail = cfg_.journal_tail;
  po.tail_drain_records = cfg_.journal_tail_records;
  po.dependency_sink = dependency_checks_;
  po.snapshot_retention_us = static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::microseconds>(cfg_.snapshot_retention).count());
  // Issue 13: a transaction prepared 3 request timeouts ago (no live
  // coordinator commits it any more without being asked) stops holding the
  // checkpoints back. Not with replication: copies keep identical logs, and
  // the set-aside moves records.
  if (!replicated_)
    po.set_aside_after_us = 3 * static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(cfg_.limits.request_timeout)
        .count());
  return po;
}

partition_timers partition_opener::timers() const {
  partition_timers t;
  t.fbf_tick = fbf_tick_of(fbf_of(cfg_));
  t.checkpoint_interval = cfg_.checkpoint_interval;
  t.read_timeout = cfg_.limits.request_timeout;
  t.max_parked_reads = cfg_.limits.max_parked_reads;
  if (cfg_.mode == durability::periodic)
    t.sync_interval = cfg_.periodic_sync;
  return t;
}

expected<opened_partitions> open_held_partitions(const node_config& cfg,
                                                 const partition_opener& opener,
                                                 const partition_plan& plan,
                                                 const partitions_on_disk& disk, bool alone) {
  // Every held partition opened and recovered before anything is served.
  opened_partitions out;
  for (auto i : plan.held) {
    auto po = opener.options(i, disk.listed.count(i) != 0);
    auto core = partition_core::open(po);
    if (!core)
      return make_error(core.err().code(), "partition " + std::to_string(i) + " (" + po.path
                                             + "): " + core.err().message());
    out.max_clock = std::max(out.max_clock, (*core)->clock());
    out.cores.push_back(std::move(*core));
  }
  // Listed from now on: what was opened (a founder's new partitions
  // included) and what is on disk for other nodes.
  std::set<std::uint32_t> now(disk.present.begin(), disk.present.end());
  now.insert(plan.held.begin(), plan.held.end());
  if (!disk.had_manifest || now != disk.listed)
    if (auto s = save_manifest(cfg.data_dir, now); !s)
      return s.err();
  if (auto st = resolve_undecided(out.cores, alone, out.undecided); !st)
    return st.err();
  return out;
}

} // namespace tally
