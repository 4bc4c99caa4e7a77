#include "actors/node.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/client_gateway.hpp"
#include "actors/handoff.hpp"
#include "journal/background_syncer.hpp"
#include "journal/partition_manifest.hpp"
#include "common/log.hpp"
#include "actors/membership.hpp"
#include "actors/node_links.hpp"
#include "actors/partition_actor.hpp"
#include "actors/partition_core.hpp"
#include "actors/remote_callers.hpp"
#include "actors/shard_host.hpp"
#include "ring/partition.hpp"
#include "server/client_server.hpp"
#include "server/shard_inbox.hpp"

namespace tally {

namespace {

// The client server of node `cfg` (its shard threads and ports).
server_options server_options_of(const node_config& cfg, const std::string& admin_socket) {
  server_options so;
  so.bind = cfg.bind;
  so.port = cfg.port;
  so.plain = cfg.plain_client_port;
  so.tls_port = cfg.client_tls_port;
  so.tls = cfg.client_tls;
  so.threads = cfg.io_threads;
  so.max_frame_size = cfg.limits.max_frame_size;
  so.max_connections = cfg.limits.max_connections;
  so.max_in_flight = cfg.limits.max_in_flight;
  so.max_pending_output = cfg.limits.max_pending_output;
  so.max_shard_in_flight = cfg.limits.max_shard_in_flight;
  so.requests = cfg.limits.requests;
  so.max_request_memory = cfg.limits.max_request_memory;
  so.idle_timeout = cfg.limits.idle_timeout;
  so.evict_idle_after = cfg.limits.evict_idle_after;
  so.request_read_timeout = cfg.limits.request_read_timeout;
  so.admin_socket = admin_socket;
  return so;
}

// The shards' CAF units (actors/shard_host.hpp): where the partitions, and
// the remote callers, run with --partition-threads shards; none otherwise.
std::vector<std::shared_ptr<caf::execution_unit>>
shard_units_of(caf::actor_system& sys, const node_config& cfg, const client_server& server) {
  std::vector<std::shared_ptr<caf::execution_unit>> units;
  if (cfg.threading() == partition_threading::shards)
    for (std::size_t i = 0; i < server.shards(); ++i)
      units.push_back(std::make_shared<shard_unit>(sys, server.tasks(i)));
  return units;
}

// Where partition i's actor runs (--partition-threads): with `shards`,
// on shard i mod n (partitions dealt out in turn, so that each shard hosts
// as many).
std::function<partition_placement(std::uint32_t)>
placement_of(const node_config& cfg, std::vector<std::shared_ptr<caf::execution_unit>> units) {
  switch (cfg.threading()) {
    case partition_threading::detached:
      return [](std::uint32_t) { return partition_placement::detached(); };
    case partition_threading::scheduler:
      return [](std::uint32_t) { return partition_placement::scheduler(); };
    case partition_threading::shards:
      break;
  }
  return [units](std::uint32_t p) {
    return partition_placement::on_shard(units[p % units.size()]);
  };
}

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
      std::optional<std::uint64_t> commit;
      for (auto& other : cores) {
        if (other.get() == core.get())
          continue;
        auto found = other->find_commit(u.tx);
        if (!found)
          return found.err();
        if (*found) {
          commit = *found;
          break;
        }
      }
      if (commit) {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " committed at ", *commit);
        if (auto st = core->stage_commit(u.tx, *commit); !st)
          return st.err();
      } else if (!alone) {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " prepared, no commit record on this node: asking the cluster");
        left.push_back(undecided_tx{core->index(), u.tx, u.prepare_time});
      } else {
        log(log_level::info, "partition ", core->index(), ": recovered ",
            u.tx, " prepared but never committed: aborted");
        if (auto st = core->stage_abort(u.tx); !st)
          return st.err();
      }
    }
  }
  for (auto& core : cores)
    if (auto st = core->flush(); !st)
      return st.err();
  return {};
}

fbf_config fbf_of(const node_config& cfg) {
  return tallyd_fbf_config(cfg.fbf_refresh, cfg.fbf_past_filters,
                           cfg.fbf_retry_timeout, cfg.fbf_target_fpp);
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

status check_config(const node_config& cfg) {
  if (auto f = forgetful_bloom_filter::make(fbf_of(cfg)); !f)
    return make_error(errc::bad_config,
                      "bad FBF settings (--fbf-refresh-ms, --fbf-past-filters, "
                      "--fbf-retry-timeout-ms, --fbf-target-fpp): "
                        + f.err().message());
  if (cfg.advertise.empty()
      && (cfg.cluster_address() == "0.0.0.0" || cfg.cluster_address() == "::"))
    return make_error(errc::bad_config,
                      "the cluster port on " + cfg.cluster_address()
                        + " (every address) needs --advertise HOST:PORT: the address the other "
                          "nodes reach this node at, which is its id");
  if (!cfg.advertise.empty())
    if (auto hp = parse_host_port(cfg.advertise); !hp)
      return make_error(errc::bad_config, "--advertise: " + hp.err().message());
  // TLS on the client port: the flags together, and files that load
  // (checked here so that a bad file is a bad flag, exit 2, before any
  // data is opened).
  bool tls_files = !cfg.client_tls.cert.empty() || !cfg.client_tls.key.empty()
                   || !cfg.client_tls.client_ca.empty();
  if (!cfg.client_tls_port && tls_files)
    return make_error(errc::bad_config, "--client-tls-cert, --client-tls-key and "
                                        "--client-tls-ca need --client-tls-port");
  if (!cfg.client_tls_port && !cfg.plain_client_port)
    return make_error(errc::bad_config,
                      "--no-plain-port needs --client-tls-port: a node needs a client port");
  if (cfg.client_tls_port) {
    if (cfg.client_tls.cert.empty() || cfg.client_tls.key.empty())
      return make_error(errc::bad_config, std::string{"--client-tls-port needs "}
                                            + (cfg.client_tls.cert.empty()
                                                 ? "--client-tls-cert"
                                                 : "--client-tls-key")
                                            + " (the node's PEM certificate and key)");
    if (cfg.plain_client_port && *cfg.client_tls_port != 0 && *cfg.client_tls_port == cfg.port)
      return make_error(errc::bad_config, "--client-tls-port must differ from --port");
    if (auto ctx = tls_context::server(cfg.client_tls); !ctx)
      return make_error(errc::bad_config, "TLS client port: " + ctx.err().message());
  }
  if (cfg.limits.max_request_memory > 0
      && cfg.limits.max_request_memory < frame_length_size + cfg.limits.max_frame_size)
    return make_error(errc::bad_config,
                      "--max-request-memory " + std::to_string(cfg.limits.max_request_memory)
                        + " is below a frame at --max-frame-size ("
                        + std::to_string(frame_length_size + cfg.limits.max_frame_size)
                        + " bytes with its length): such a frame could never be admitted; "
                          "raise --max-request-memory or lower --max-frame-size");
  if (cfg.snapshot_retention.count() <= 0)
    return make_error(errc::bad_config,
                      "--snapshot-retention-ms must be positive: a checkpoint "
                      "at the safe time would refuse snapshots taken a moment "
                      "before it");
  return {};
}

expected<std::unique_ptr<node>> node::start(caf::actor_system& sys,
                                            const node_config& cfg) {
  if (auto ok = check_partition_count(cfg.partitions); !ok)
    return ok.err();
  if (auto ok = check_config(cfg); !ok)
    return ok.err();
  const auto oldest_tx = cfg.limits.tx_idle_timeout + cfg.limits.request_timeout;
  if (cfg.checkpoint_interval.count() > 0 && cfg.snapshot_retention < oldest_tx)
    log(log_level::warn, "--snapshot-retention-ms ",
        cfg.snapshot_retention.count(), " is below the interactive idle "
        "timeout plus the request timeout (", oldest_tx.count(),
        " ms): a slow interactive transaction may get \"snapshot too old\"");
  std::unique_ptr<node> self{new node};
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
  ec.clear();
  auto lock_path = (root / "LOCK").string();
  self->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (self->lock_fd_ < 0)
    return make_error(errc::io_error, "unusable data dir " + cfg.data_dir
                                        + ": cannot create " + lock_path + ": "
                                        + std::strerror(errno));
  if (::flock(self->lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return make_error(errc::unavailable,
                      "data dir " + cfg.data_dir
                        + " is in use by another tallyd (" + lock_path
                        + " is locked)");
  if (auto left = remove_handoff_leftovers(cfg.data_dir); !left)
    return left.err();
  else if (*left != 0)
    log(log_level::info, "removed ", *left, " leftover(s) of interrupted handoffs");
  // The node's link credentials, before any link is opened (the join
  // below, the cluster port); with the data dir locked, so that a second
  // tallyd on it never replaces the files a running node reads.
  if (auto st = write_node_link_files(cfg.links, cfg.data_dir); !st)
    return st.err();
  auto id = find_node_id(root, cfg);
  if (!id)
    return id.err();
  self->id_ = *id;
  auto addr = node_address(*id);
  if (!addr)
    return addr.err();
  // The port listened on: the id's, unless --advertise names another one
  // than --cluster-port (a port forwarded to this one).
  self->cluster_port_ = !cfg.advertise.empty() && cfg.cluster_port && *cfg.cluster_port != 0
                          ? *cfg.cluster_port
                          : addr->second;
  auto present = present_partitions(cfg.data_dir, std::max<std::uint32_t>(cfg.partitions, max_partition_count));
  if (!present)
    return present.err();
  // The partitions whose data this node holds on disk (partition_manifest.hpp):
  // each must still have its folder, and opens only with its data file whole.
  auto manifest = load_manifest(cfg.data_dir);
  if (!manifest)
    return manifest.err();
  std::set<std::uint32_t> listed;
  if (*manifest) {
    listed = **manifest;
    for (auto p : listed)
      if (!std::binary_search(present->begin(), present->end(), p))
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
    listed.insert(present->begin(), present->end());
  }
  // The ring: saved, joined, or new with this node owning everything.
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
    if (!present->empty())
      return make_error(errc::bad_config,
                        "data dir " + cfg.data_dir + " already holds partitions of a "
                          "node that is in no cluster: use an empty data dir to join");
    auto seed = parse_host_port(cfg.join);
    if (!seed)
      return make_error(errc::invalid_argument, "--join: " + seed.err().message());
    log(log_level::info, "joining the cluster through ", cfg.join, " as ", *id);
    auto joined = join_cluster(sys, seed->first, seed->second, *id, cfg.partitions,
                               cfg.limits.request_timeout);
    if (!joined)
      return joined.err();
    ring = std::move(*joined);
  } else {
    auto fresh = ring_state::create(*id, cfg.partitions, cfg.n_val);
    if (!fresh)
      return fresh.err();
    ring = std::move(*fresh);
    founder = present->empty();
  }
  if (auto s = save_ring(cfg.data_dir, *ring); !s)
    return s.err();
  for (auto p : *present)
    if (p >= cfg.partitions)
      return make_error(errc::bad_config,
                        "data dir holds partition " + std::to_string(p) + " but the ring has "
                          + std::to_string(cfg.partitions) + " partitions");
  // A founder creates every partition; any other node serves what it has
  // on disk and owns, and receives the rest by handoff. What it has on disk
  // but another node owns (a handoff under way at a crash) is not served:
  // the membership ships it, or deletes it once the owner serves it.
  std::vector<std::uint32_t> held, unopened;
  // A lone node holds every partition: one with no folder and not in the
  // manifest is new (a founder's), or lost and accepted as lost by its
  // operator (docs/NODE.md, "Damaged storage"): it is created empty.
  if (founder || ring->members().size() == 1) {
    for (std::uint32_t i = 0; i < cfg.partitions; ++i)
      held.push_back(i);
  } else {
    for (auto p : *present)
      (ring->owners().owners[p] == *id ? held : unopened).push_back(p);
  }
  if (!unopened.empty())
    log(log_level::info, unopened.size(), " partition(s) on disk belong to other nodes "
                         "now: not served here, handed off");
  const bool replicated = ring->n_val() > 1;
  // Journal syncs on threads of their own when the partitions share the
  // shard threads (journal/background_syncer.hpp): a shard never waits for
  // the disk.
  const bool sync_elsewhere = cfg.threading() == partition_threading::shards
                              && (cfg.mode == durability::batch
                                  || cfg.mode == durability::periodic);
  auto syncer = sync_elsewhere ? std::make_shared<background_syncer>(cfg.sync_threads)
                               : nullptr;
  // The replicas' dependency checks, added up for `cluster status`
  // (docs/REPLICATION.md, "Dependency check").
  auto dependency_checks = std::make_shared<dependency_tally>();
  auto opts_for = [cfg, root, sync_elsewhere, dependency_checks](
                    std::uint32_t i, bool must_exist, const char* folder = "partitions") {
    partition_options po;
    po.index = i;
    po.path = (root / folder / std::to_string(i)).string();
    po.must_exist = must_exist;
    po.mode = cfg.mode;
    po.fbf = fbf_of(cfg); // docs/NODE.md, "Exactly-once"
    po.max_fbfs = max_fbfs_of(cfg);
    po.map_size = cfg.map_size;
    po.sync_elsewhere = sync_elsewhere;
    po.dependency_sink = dependency_checks;
    po.snapshot_retention_us = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
        cfg.snapshot_retention)
        .count());
    return po;
  };
  // Open and recover every held partition before serving anything.
  std::vector<std::unique_ptr<partition_core>> cores;
  std::uint64_t max_clock = 0;
  for (auto i : held) {
    auto po = opts_for(i, listed.count(i) != 0);
    auto core = partition_core::open(po);
    if (!core)
      return make_error(core.err().code(), "partition " + std::to_string(i)
                                             + " (" + po.path + "): "
                                             + core.err().message());
    max_clock = std::max(max_clock, (*core)->clock());
    cores.push_back(std::move(*core));
  }
  {
    // Listed from now on: what was opened (a founder's new partitions
    // included) and what is on disk for other nodes.
    std::set<std::uint32_t> now(present->begin(), present->end());
    now.insert(held.begin(), held.end());
    if (!*manifest || now != listed)
      if (auto s = save_manifest(cfg.data_dir, now); !s)
        return s.err();
  }
  std::vector<undecided_tx> undecided;
  if (auto st = resolve_undecided(cores, ring->members().size() == 1, undecided); !st)
    return st.err();
  auto ctx = std::make_shared<node_context>();
  ctx->q = cfg.partitions;
  ctx->owner = *id;
  // Admin requests only on a Unix socket that file permissions guard
  // (docs/SECURITY.md, "Admin"). The default is in the data dir; a data
  // dir whose path is too long for a socket gets none, with a warning.
  if (cfg.admin_socket) {
    ctx->admin_socket = *cfg.admin_socket;
  } else {
    auto path = (root / "admin.sock").string();
    if (path.size() < 100)
      ctx->admin_socket = path;
    else
      log(log_level::warn, "no admin socket: ", path, " is too long for a Unix socket; "
                           "give --admin-socket a shorter path to use admin commands");
  }
  ctx->incarnation = std::max(wall_clock_us(), max_clock + 1);
  ctx->limits = cfg.limits;
  ctx->board = std::make_shared<safe_board>(cfg.partitions);
  partition_timers timers;
  timers.fbf_tick = fbf_tick_of(fbf_of(cfg));
  timers.checkpoint_interval = cfg.checkpoint_interval;
  timers.read_timeout = cfg.limits.request_timeout;
  timers.max_parked_reads = cfg.limits.max_parked_reads;
  if (cfg.mode == durability::periodic)
    timers.sync_interval = cfg.periodic_sync;
  // The client server's shard threads first: the partitions run on them
  // (--partition-threads shards, docs/PERFORMANCE.md "The request path");
  // clients are served only at the end, once every actor is up.
  auto server = client_server::create(server_options_of(cfg, ctx->admin_socket));
  if (!server)
    return server.err();
  self->server_ = std::move(*server);
  self->sys_ = &sys;
  auto units = shard_units_of(sys, cfg, *self->server_);
  auto place = placement_of(cfg, units);
  {
    std::vector<std::shared_ptr<shard_inbox>> inboxes;
    for (std::size_t i = 0; i < units.size(); ++i)
      inboxes.push_back(self->server_->tasks(i));
    auto callers = std::make_shared<remote_callers>(sys, units, inboxes,
                                                    cfg.limits.request_timeout);
    for (const auto& a : callers->actors())
      self->actors_.push_back(a);
    ctx->callers = std::move(callers);
  }
  std::vector<caf::actor> local(cfg.partitions);
  for (auto& core : cores) {
    auto i = core->index();
    local[i] = spawn_partition(sys, std::move(core), place(i), board_slot(ctx->board, i),
                               timers, replicated, syncer);
    self->actors_.push_back(local[i]);
  }
  ctx->routes->store(local_routes(local, *id));
  // Partitions opened later (received by handoff, reopened) are spawned by
  // the membership actor through this function; the node stops them too.
  auto spawned = std::make_shared<spawned_actors>();
  self->spawned_ = spawned;
  membership_config mc;
  mc.self = *id;
  mc.root = cfg.data_dir;
  mc.q = cfg.partitions;
  mc.request_timeout = cfg.limits.request_timeout;
  mc.request_shutdown = cfg.request_shutdown;
  mc.incarnation = ctx->incarnation;
  mc.coordinating = ctx->coordinating;
  mc.remote = ctx->remote;
  mc.dependency_checks = dependency_checks;
  mc.undecided = std::move(undecided);
  mc.unopened = std::move(unopened);
  auto board = ctx->board;
  // Spawns a partition actor opened later and registers it with the node,
  // which stops it too.
  auto adopt = [&sys, board, place, timers, spawned, replicated,
                syncer](std::uint32_t i, std::unique_ptr<partition_core> core) {
    auto a = spawn_partition(sys, std::move(core), place(i), board_slot(board, i), timers,
                             replicated, syncer);
    std::lock_guard<std::mutex> guard{spawned->mutex};
    if (spawned->stopping) // opened while the node stops: stop it too
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    else
      spawned->actors.push_back(a);
    return a;
  };
  mc.open_partition = [opts_for, adopt](std::uint32_t i) -> expected<caf::actor> {
    auto core = partition_core::open(opts_for(i, true)); // reopened: its data is there
    if (!core)
      return core.err();
    return adopt(i, std::move(*core));
  };
  mc.create_partition = [opts_for, adopt, data_dir = cfg.data_dir](
                          std::uint32_t i) -> expected<caf::actor> {
    auto core = partition_core::open(opts_for(i, false)); // new and empty
    if (!core)
      return core.err();
    // Listed once it exists, so a restart that finds it missing refuses
    // to start (docs/NODE.md, "Damaged storage").
    if (auto st = manifest_add(data_dir, i); !st)
      return st.err();
    return adopt(i, std::move(*core));
  };
  if (replicated) {
    mc.has_copy = [root](std::uint32_t i) {
      std::error_code ec;
      return std::filesystem::exists(root / "replicas" / std::to_string(i), ec);
    };
    // A replica copy has no slot on the safe board (it serves no reads;
    // when it becomes primary, reads wait at the partition itself).
    auto open_copy = [opts_for, adopt](std::uint32_t i,
                                       const char* folder) -> expected<caf::actor> {
      auto po = opts_for(i, false, folder);
      auto core = partition_core::open(po);
      if (!core)
        return make_error(core.err().code(), "copy of partition " + std::to_string(i) + " ("
                                               + po.path + "): " + core.err().message());
      return adopt(i, std::move(*core));
    };
    mc.open_copy = [open_copy](std::uint32_t i) { return open_copy(i, "replicas"); };
    mc.replace_copy = [open_copy, root](std::uint32_t i,
                                        bool owned) -> expected<caf::actor> {
      const char* folder = owned ? "partitions" : "replicas";
      auto from = root / folder / std::to_string(i);
      auto aside = root / "stale"
                   / (std::to_string(i) + "." + folder + "." + std::to_string(wall_clock_us()));
      std::error_code ec;
      std::filesystem::create_directories(aside.parent_path(), ec);
      if (!ec)
        std::filesystem::rename(from, aside, ec);
      if (ec)
        return make_error(errc::io_error, "cannot move " + from.string() + " to "
                                            + aside.string() + ": " + ec.message());
      log(log_level::warn, "partition ", i, ": stale copy kept in ", aside.string(),
          " (delete it once the cluster is healthy)");
      return open_copy(i, folder);
    };
  }
  ctx->membership = spawn_membership(sys, std::move(mc), std::move(*ring), local, ctx->routes);
  self->actors_.push_back(ctx->membership);
  auto published =
    publish_on_cluster_port(sys, ctx->membership, self->cluster_port_, cfg.cluster_address());
  if (!published) {
    self->stop();
    return make_error(errc::unavailable,
                      "cannot listen on cluster port " + cfg.cluster_address() + ":"
                        + std::to_string(self->cluster_port_) + ": "
                        + published.err().message()
                        + " (in use? pick another with --cluster-port)");
  }
  log(cfg.links.mode == link_auth::none ? log_level::warn : log_level::info,
      describe_node_links(cfg.links), "; cluster port ", cfg.cluster_address(), ":",
      self->cluster_port_, ", reached by peers at ", self->id_.substr(self->id_.find('@') + 1));
  auto gateway = make_client_gateway(sys, ctx);
  self->actors_.push_back(gateway.sweeper);
  if (auto st = self->server_->serve(gateway.handler); !st) {
    self->stop();
    return st.err();
  }
  self->port_ = self->server_->port();
  self->tls_port_ = self->server_->tls_port();
  log(log_level::info, "node ", *id, " serving ", held.size(), " of ", cfg.partitions,
      " partitions from ", cfg.data_dir, " (durability ", cfg.mode, ") on ", cfg.bind, ":",
      self->port_ == 0 ? std::string{"(no plain port)"} : std::to_string(self->port_),
      self->tls_port_ == 0 ? std::string{}
                           : ", TLS on " + std::to_string(self->tls_port_)
                               + (cfg.client_tls.client_ca.empty()
                                    ? std::string{}
                                    : " (client certificates required)"),
      ", cluster port ", self->cluster_port_);
  log(log_level::debug, "checkpoints every ", cfg.checkpoint_interval.count(),
      " ms, snapshot retention ", cfg.snapshot_retention.count(),
      " ms; FBF tick ", timers.fbf_tick.count(), " ms, adaptive ",
      cfg.fbf_target_fpp > 0.0 ? "on" : "off");
  return self;
}

std::size_t node_config::default_io_threads() noexcept {
  return std::max<std::size_t>(1, std::thread::hardware_concurrency() / 2);
}

void node::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  // The client port first (no new requests; replies still under way are
  // dropped), then the other actors, then the partitions, which flush what
  // is staged. The shard threads go on running the partitions hosted there
  // until await_stopped() has seen them quit.
  if (server_)
    server_->stop_serving();
  for (auto i = actors_.rbegin(); i != actors_.rend(); ++i)
    caf::anon_send_exit(*i, caf::exit_reason::user_shutdown);
  stopping_ = std::move(actors_);
  actors_.clear();
  if (spawned_) {
    std::lock_guard<std::mutex> guard{spawned_->mutex};
    spawned_->stopping = true;
    for (auto& a : spawned_->actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    stopping_.insert(stopping_.end(), spawned_->actors.begin(), spawned_->actors.end());
    spawned_->actors.clear();
  }
}

bool node::await_stopped(caf::actor_system& sys, std::chrono::milliseconds limit) {
  std::size_t left = 0;
  {
    caf::scoped_actor me{sys};
    for (auto& a : stopping_) {
      me->monitor(a); // an actor already gone answers at once
      ++left;
    }
    stopping_.clear();
    bool timed_out = false;
    while (left > 0 && !timed_out)
      me->receive([&](caf::down_msg&) { --left; },
                  caf::after(limit) >> [&] { timed_out = true; });
  }
  // The partitions hosted on the shard threads are gone (or given up on):
  // the threads can end.
  if (server_)
    server_->stop();
  return left == 0;
}

node::~node() {
  stop();
  if (sys_ && server_ && !stopping_.empty())
    await_stopped(*sys_, std::chrono::seconds{30});
  server_.reset();
  if (lock_fd_ >= 0)
    ::close(lock_fd_);
}

} // namespace tally
