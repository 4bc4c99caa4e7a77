#include "actors/node.hpp"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/client_gateway.hpp"
#include "actors/copy_leftovers.hpp"
#include "journal/partition_manifest.hpp"
#include "common/log.hpp"
#include "actors/membership.hpp"
#include "actors/node_links.hpp"
#include "actors/node_startup.hpp"
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

// What node::start carries from one step to the next.
struct node::starting {
  node_identity who;
  std::optional<found_ring> found;
  partition_plan plan;
  std::shared_ptr<const partition_opener> opener;
  opened_partitions opened;
  std::shared_ptr<node_context> ctx;
  std::function<partition_placement(std::uint32_t)> place;
  std::vector<caf::actor> local; // the partition actors by index (null: not here)
};

expected<std::unique_ptr<node>> node::start(caf::actor_system& sys,
                                            const node_config& cfg) {
  if (auto ok = check_partition_count(cfg.partitions); !ok)
    return ok.err();
  if (auto ok = check_config(cfg); !ok)
    return ok.err();
  warn_about_settings(cfg);
  std::unique_ptr<node> self{new node};
  starting s;
  // Before any actor: the data dir, who this node is, what it holds, the
  // ring, its partitions opened and recovered (actors/node_startup.hpp).
  auto lock = lock_data_dir(cfg);
  if (!lock)
    return lock.err();
  self->lock_fd_ = *lock;
  auto who = identify_node(cfg);
  if (!who)
    return who.err();
  s.who = std::move(*who);
  self->id_ = s.who.id;
  self->cluster_port_ = s.who.cluster_port;
  auto disk = read_partitions_on_disk(cfg);
  if (!disk)
    return disk.err();
  auto found = find_ring(sys, cfg, s.who.id, *disk);
  if (!found)
    return found.err();
  s.found = std::move(*found);
  s.plan = plan_partitions(cfg, *s.found, *disk, s.who.id);
  s.opener = std::make_shared<const partition_opener>(cfg, s.found->ring.n_val() > 1);
  auto opened = open_held_partitions(cfg, *s.opener, s.plan, *disk,
                                     s.found->ring.members().size() == 1);
  if (!opened)
    return opened.err();
  s.opened = std::move(*opened);
  // Then the threads and actors: the shards, the partitions on them, the
  // membership on the cluster port, and last the client port.
  if (auto st = self->start_shards(sys, cfg, s); !st)
    return st.err();
  self->spawn_partitions(sys, s);
  if (auto st = self->start_membership(sys, cfg, s); !st) {
    self->stop();
    return st.err();
  }
  if (auto st = self->serve_clients(sys, cfg, s); !st) {
    self->stop();
    return st.err();
  }
  log(log_level::info, "node ", s.who.id, " serving ", s.plan.held.size(), " of ",
      cfg.partitions, " partitions from ", cfg.data_dir, " (durability ", cfg.mode, ") on ",
      cfg.bind, ":",
      self->port_ == 0 ? std::string{"(no plain port)"} : std::to_string(self->port_),
      self->tls_port_ == 0 ? std::string{}
                           : ", TLS on " + std::to_string(self->tls_port_)
                               + (cfg.client_tls.client_ca.empty()
                                    ? std::string{}
                                    : " (client certificates required)"),
      ", cluster port ", self->cluster_port_);
  log(log_level::debug, "checkpoints every ", cfg.checkpoint_interval.count(),
      " ms, snapshot retention ", cfg.snapshot_retention.count(), " ms; FBF tick ",
      s.opener->timers().fbf_tick.count(), " ms, adaptive ",
      cfg.fbf_target_fpp > 0.0 ? "on" : "off");
  return self;
}

// The node's shared context, the shard threads (serving nothing yet), and
// the remote callers on them: the partitions run there
// (--partition-threads shards, docs/PERFORMANCE.md "The request path").
status node::start_shards(caf::actor_system& sys, const node_config& cfg, starting& s) {
  auto ctx = std::make_shared<node_context>();
  ctx->q = cfg.partitions;
  ctx->owner = s.who.id;
  // Admin requests only on a Unix socket that file permissions guard
  // (docs/SECURITY.md, "Admin"). The default is in the data dir; a data
  // dir whose path is too long for a socket gets none, with a warning.
  if (cfg.admin_socket) {
    ctx->admin_socket = *cfg.admin_socket;
  } else {
    auto path = (std::filesystem::path{cfg.data_dir} / "admin.sock").string();
    if (path.size() < 100)
      ctx->admin_socket = path;
    else
      log(log_level::warn, "no admin socket: ", path, " is too long for a Unix socket; "
                           "give --admin-socket a shorter path to use admin commands");
  }
  ctx->incarnation = std::max(wall_clock_us(), s.opened.max_clock + 1);
  ctx->limits = cfg.limits;
  ctx->board = std::make_shared<safe_board>(cfg.partitions);
  auto server = client_server::create(server_options_of(cfg, ctx->admin_socket));
  if (!server)
    return server.err();
  server_ = std::move(*server);
  sys_ = &sys;
  auto units = shard_units_of(sys, cfg, *server_);
  s.place = placement_of(cfg, units);
  std::vector<std::shared_ptr<shard_inbox>> inboxes;
  for (std::size_t i = 0; i < units.size(); ++i)
    inboxes.push_back(server_->tasks(i));
  auto callers =
    std::make_shared<remote_callers>(sys, units, inboxes, cfg.limits.request_timeout);
  for (const auto& a : callers->actors())
    actors_.push_back(a);
  ctx->callers = std::move(callers);
  s.ctx = std::move(ctx);
  return {};
}

// An actor for every partition opened at the start, where --partition-threads
// says.
void node::spawn_partitions(caf::actor_system& sys, starting& s) {
  s.local.assign(s.ctx->q, caf::actor{});
  for (auto& core : s.opened.cores) {
    auto i = core->index();
    s.local[i] = spawn_partition(sys, std::move(core), s.place(i), board_slot(s.ctx->board, i),
                                 s.opener->timers(), s.opener->replicated(),
                                 s.opener->syncer());
    actors_.push_back(s.local[i]);
  }
  s.opened.cores.clear();
  s.ctx->routes->store(local_routes(s.local, s.who.id));
}

// The membership actor (docs/CLUSTER.md), with what it needs to open
// partitions later (handoffs, copies), published on the cluster port.
status node::start_membership(caf::actor_system& sys, const node_config& cfg, starting& s) {
  // Partitions opened later are spawned by the membership through `adopt`;
  // the node stops them too.
  auto spawned = std::make_shared<spawned_actors>();
  spawned_ = spawned;
  auto& ctx = *s.ctx;
  membership_config mc;
  mc.self = s.who.id;
  mc.root = cfg.data_dir;
  mc.q = cfg.partitions;
  mc.request_timeout = cfg.limits.request_timeout;
  mc.request_shutdown = cfg.request_shutdown;
  mc.incarnation = ctx.incarnation;
  mc.coordinating = ctx.coordinating;
  mc.remote = ctx.remote;
  mc.dependency_checks = s.opener->dependency_checks();
  mc.undecided = std::move(s.opened.undecided);
  mc.unopened = std::move(s.plan.unopened);
  auto opener = s.opener;
  auto adopt = [&sys, board = ctx.board, place = s.place, opener,
                spawned](std::uint32_t i, std::unique_ptr<partition_core> core) {
    auto a = spawn_partition(sys, std::move(core), place(i), board_slot(board, i),
                             opener->timers(), opener->replicated(), opener->syncer());
    std::lock_guard<std::mutex> guard{spawned->mutex};
    if (spawned->stopping) // opened while the node stops: stop it too
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    else
      spawned->actors.push_back(a);
    return a;
  };
  mc.open_partition = [opener, adopt](std::uint32_t i) -> expected<caf::actor> {
    auto core = partition_core::open(opener->options(i, true)); // reopened: its data is there
    if (!core)
      return core.err();
    return adopt(i, std::move(*core));
  };
  mc.create_partition = [opener, adopt, data_dir = cfg.data_dir](
                          std::uint32_t i) -> expected<caf::actor> {
    auto core = partition_core::open(opener->options(i, false)); // new and empty
    if (!core)
      return core.err();
    // Listed once it exists, so a restart that finds it missing refuses
    // to start (docs/NODE.md, "Damaged storage").
    if (auto st = manifest_add(data_dir, i); !st)
      return st.err();
    return adopt(i, std::move(*core));
  };
  if (opener->replicated()) {
    std::filesystem::path root{cfg.data_dir};
    mc.has_copy = [root](std::uint32_t i) {
      std::error_code ec;
      return std::filesystem::exists(root / "replicas" / std::to_string(i), ec);
    };
    // A replica copy has no slot on the safe board (it serves no reads;
    // when it becomes primary, reads wait at the partition itself).
    auto open_copy = [opener, adopt](std::uint32_t i,
                                     const char* folder) -> expected<caf::actor> {
      auto po = opener->options(i, false, folder);
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
      std::filesystem::path aside = stale_copy_path(root.string(), i, folder, wall_clock_us());
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
    mc.drop_copy = [root](std::uint32_t i, bool keep_aside) {
      return drop_copy_folder(root.string(), i, keep_aside, wall_clock_us());
    };
  }
  if (cfg.stale_keep.count() > 0) {
    const auto keep_us = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(cfg.stale_keep).count());
    mc.expire_stale = [root = cfg.data_dir, keep_us, hours = cfg.stale_keep.count()] {
      auto gone = expire_stale_copies(root, keep_us, wall_clock_us());
      if (!gone) {
        log(log_level::error, "cannot delete old stale copies: ", gone.err().to_string());
        return;
      }
      for (const auto& name : *gone)
        log(log_level::info, "deleted the stale copy ", root, "/stale/", name, ", kept ",
            hours, " hours (--stale-keep-hours)");
    };
  }
  ctx.membership =
    spawn_membership(sys, std::move(mc), std::move(s.found->ring), s.local, ctx.routes);
  actors_.push_back(ctx.membership);
  auto published = publish_on_cluster_port(sys, ctx.membership, cluster_port_,
                                            cfg.cluster_address());
  if (!published)
    return make_error(errc::unavailable,
                      "cannot listen on cluster port " + cfg.cluster_address() + ":"
                        + std::to_string(cluster_port_) + ": " + published.err().message()
                        + " (in use? pick another with --cluster-port)");
  log(cfg.links.mode == link_auth::none ? log_level::warn : log_level::info,
      describe_node_links(cfg.links), "; cluster port ", cfg.cluster_address(), ":",
      cluster_port_, ", reached by peers at ", id_.substr(id_.find('@') + 1));
  return {};
}

// The client port (and TLS port, and admin socket), last: every actor a
// request may reach is up.
status node::serve_clients(caf::actor_system& sys, const node_config&, starting& s) {
  auto gateway = make_client_gateway(sys, s.ctx);
  actors_.push_back(gateway.sweeper);
  if (auto st = server_->serve(gateway.handler); !st)
    return st;
  port_ = server_->port();
  tls_port_ = server_->tls_port();
  return {};
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
